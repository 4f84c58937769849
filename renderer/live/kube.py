"""The cluster, through the `kubernetes` client: the kubeconfig as kubectl finds it, plain REST requests, discovery,
and the errors a user reads.

The client is used for what it is good at and what has stayed put across its releases: loading a kubeconfig
(contexts, certificates, tokens, exec plugins, in-cluster service accounts) and sending a request through the
dynamic client's `request`. Discovery is devlane's own (`/api`, `/apis`, one request per group version, kept for
the command): the dynamic client's discoverer writes a cache file under the temporary directory and trusts it for
ten minutes, which a command about what the cluster has now cannot use.

The client is imported inside the functions: importing this module costs nothing, and `render` never loads it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from ..core.yamlio import load_one
from ..errors import DevlaneError, Problem, UsageError, Where, fail

FIELD_MANAGER = "devlane"  # the field manager of `verify --server`'s dry-run applies (kubectl's is "kubectl")
CONNECT_TIMEOUT = 10.0  # seconds to open a connection to the API server
READ_TIMEOUT = 60.0  # seconds to wait for one answer
PAGE = 500  # items a list request asks for at once (kubectl's chunk size)
REQUESTS_AT_ONCE = 8  # requests in flight when asking about every kind
T, R = TypeVar("T"), TypeVar("R")
IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
KUBECTL_HINT = "kubectl with the same kubeconfig and context (`kubectl cluster-info`) shows what it reaches"


@dataclass(frozen=True)
class KubeOptions:
    """Which cluster, as kubectl's flags say it: `--kubeconfig`, `--context`, `--namespace` (for objects that name
    none; default: the context's namespace, else `default`)."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None


@dataclass(frozen=True)
class Kind:
    """One API resource as discovery lists it (`deployments` in `apps/v1`)."""

    group: str
    version: str
    resource: str  # the plural name in the URL
    kind: str
    namespaced: bool
    verbs: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The URL path of the collection (in `namespace`, or across all of them) or of one object."""
        out = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            out += f"/namespaces/{quote(namespace, safe='')}"
        out += f"/{self.resource}"
        return out + (f"/{quote(name, safe='')}" if name else "")


class ApiRefusal(Exception):
    """The API server answered a request with an error: its HTTP status, the Status `reason` (NotFound, Invalid,
    Forbidden, Conflict, ...) and `message`, which is what the user reads."""

    def __init__(self, status: int, reason: str, message: str):
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


def kubeconfig_files(flag: str | None) -> tuple[list[Path], str]:
    """The kubeconfig files kubectl would read, and how to name them: `--kubeconfig FILE` (which must exist), else
    the existing files `$KUBECONFIG` lists (merged, the first one winning), else `~/.kube/config`. Read at each call,
    never cached: `$KUBECONFIG` and `$HOME` are the caller's now."""
    if flag is not None:
        path = Path(flag).expanduser()
        if not path.is_file():
            raise UsageError(Problem(f"--kubeconfig {flag}: no such file", hint="pass the path of a kubeconfig file"))
        return [path], f"kubeconfig {path}"
    env = os.environ.get("KUBECONFIG", "")
    if env.strip(os.pathsep):
        named = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
        return [p for p in named if p.is_file()], f"$KUBECONFIG ({env})"
    default = Path("~/.kube/config").expanduser()
    return ([default] if default.is_file() else []), f"kubeconfig {default}"


def connect(options: KubeOptions) -> Cluster:
    """A client for the cluster the options name. No request is made yet: an unreachable server is found, and
    named with the kubeconfig, by the first one."""
    files, where = kubeconfig_files(options.kubeconfig)
    if not files:
        if options.kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST") and options.context is None:
            return _in_cluster(options)
        raise fail(f"no kubeconfig: {where} names no file that exists", code="kubeconfig",
                   hint="pass --kubeconfig FILE, set $KUBECONFIG, or write ~/.kube/config (`kubectl config view` "
                        "shows what kubectl reads)")
    contexts, current = _contexts(files)
    name = options.context or current
    if options.context is not None and options.context not in contexts:
        raise UsageError(Problem(f"--context {options.context}: {where} has no such context",
                                 hint=f"its contexts: {', '.join(contexts) or 'none'}"))
    if not name:
        raise fail(f"{where} sets no current-context", code="kubeconfig",
                   hint=f"pass --context NAME (its contexts: {', '.join(contexts) or 'none'})")
    if name not in contexts:
        raise fail(f"{where}: its current-context {name} is none of its contexts", code="kubeconfig",
                   hint=f"pass --context NAME (its contexts: {', '.join(contexts) or 'none'})")
    import yaml
    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    try:
        api = config.new_client_from_config(config_file=os.pathsep.join(str(f) for f in files), context=name,
                                            persist_config=False)
    except (ConfigException, yaml.YAMLError, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise fail(f"{where}: cannot use it: {_first_line(exc)}", code="kubeconfig",
                   hint="fix the kubeconfig or pick another (--kubeconfig, --context); `kubectl config view` shows "
                        "what it holds") from None
    namespace = options.namespace or contexts[name].get("namespace") or "default"
    return Cluster(api, str(api.configuration.host), f"{where}, context {name}", str(namespace))


def _contexts(files: list[Path]) -> tuple[dict[str, dict], str | None]:
    """The contexts of the kubeconfig files, merged as kubectl merges them (the first file naming a context or a
    current-context wins), and the current-context."""
    contexts: dict[str, dict] = {}
    current = None
    for path in files:
        try:
            doc = load_one(path.read_bytes(), str(path))
        except OSError as exc:
            raise fail(f"cannot read the kubeconfig {path}: {exc.strerror}", code="kubeconfig") from None
        except DevlaneError as exc:  # its YAML, named by line
            raise exc.with_problems([replace(p, hint="fix the kubeconfig, or pick another (--kubeconfig, "
                                             "$KUBECONFIG)", code="kubeconfig") for p in exc.problems]) from None
        if not isinstance(doc, dict):
            continue
        current = current or (str(doc["current-context"]) if doc.get("current-context") else None)
        for entry in doc.get("contexts") or []:
            if isinstance(entry, dict) and entry.get("name") is not None:
                found = entry.get("context")
                contexts.setdefault(str(entry["name"]), found if isinstance(found, dict) else {})
    return contexts, current


def _in_cluster(options: KubeOptions) -> Cluster:
    """Inside a pod with no kubeconfig: its service account, as kubectl does."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, OSError) as exc:
        raise fail(f"no kubeconfig, and the in-cluster service account cannot be used: {_first_line(exc)}",
                   code="kubeconfig", hint="pass --kubeconfig FILE or set $KUBECONFIG") from None
    try:
        namespace = IN_CLUSTER_NAMESPACE.read_text().strip() or "default"
    except OSError:
        namespace = "default"
    return Cluster(client.ApiClient(configuration), str(configuration.host), "the in-cluster service account",
                   options.namespace or namespace)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:400]


class _NoDiscovery:
    """The dynamic client's discoverer slot, left empty: `Cluster` discovers (see the module's docstring)."""

    def __init__(self, client: object, cache_file: object) -> None:
        pass


@dataclass
class Cluster:
    """One cluster for one command: requests, discovery (kept for the command), and the names its errors use."""

    api: Any  # kubernetes.client.ApiClient
    server: str  # the API server's URL
    where: str  # the kubeconfig and context it came from, for messages
    namespace: str  # for objects that name none
    deadline: float | None = None  # time.monotonic() after which no request waits (`status --wait --timeout`)
    _versions: dict[str, dict[str, Kind]] = field(default_factory=dict)
    _dynamic: Any = None

    def request(self, method: str, path: str, *, query: list[tuple[str, Any]] | None = None,
                body: Any = None, content_type: str = "application/json") -> Any:
        """The parsed JSON answer of one request. An error status raises `ApiRefusal` (the caller decides what it
        means); a server it cannot reach, or one that refuses the credentials, is a `DevlaneError` naming the server
        and the kubeconfig."""
        import urllib3
        from kubernetes.client.rest import ApiException

        if self._dynamic is None:
            from kubernetes.dynamic import DynamicClient

            self._dynamic = DynamicClient(self.api, discoverer=_NoDiscovery)
        read = READ_TIMEOUT
        if self.deadline is not None:
            read = max(1.0, min(read, self.deadline - time.monotonic()))
        try:
            answer = self._dynamic.request(method.lower(), path, body=body, serialize=False, content_type=content_type,
                                           query_params=list(query or []),
                                           _request_timeout=(min(CONNECT_TIMEOUT, read), read))
            data = answer.data
        except ApiException as exc:
            raise self._refusal(exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise fail(f"cannot reach the cluster at {self.server} ({self.where}): {_why(exc)}", code="cluster",
                       hint=f"check that the cluster is up and that the kubeconfig names it; {KUBECTL_HINT}") from None
        try:
            return json.loads(data) if data else {}
        except ValueError:
            raise fail(f"the cluster at {self.server} answered {method} {path} with something other than JSON",
                       code="cluster", hint=f"is {self.server} a Kubernetes API server? {KUBECTL_HINT}") from None

    def _refusal(self, exc: Any) -> Exception:
        body = exc.body.decode("utf-8", "replace") if isinstance(exc.body, bytes) else str(exc.body or "")
        try:
            status = json.loads(body)
        except ValueError:
            status = None
        status = status if isinstance(status, dict) else {}
        message = str(status.get("message") or body.strip() or exc.reason or f"HTTP {exc.status}")
        if exc.status == 401:
            return DevlaneError(Problem(
                f"the cluster at {self.server} refused the credentials of {self.where} (401 Unauthorized)",
                hint=f"renew them (log in again), or pick another context; {KUBECTL_HINT}", code="cluster"))
        return ApiRefusal(int(exc.status or 0), str(status.get("reason") or exc.reason or ""), message)

    def forbidden(self, refusal: ApiRefusal, doing: str) -> DevlaneError:
        """A 403 where devlane cannot go on: the API's message names the user and the missing right."""
        return DevlaneError(Problem(f"the cluster at {self.server} does not let {self.where} {doing}: "
                                    f"{refusal.message}", hint="ask for that RBAC right, or use a kubeconfig or "
                                    "context that has it", code="cluster"))

    # ---- discovery

    def kind_of(self, api_version: str, kind: str) -> Kind | None:
        """The resource of `kind` in `api_version`; None when the cluster serves no such kind there (its CRD is not
        installed, or the version is not served): that group version is asked again next time (a waiting command
        may see the CRD come)."""
        found = self._group_version(api_version).get(kind)
        if found is None:
            self._versions.pop(api_version, None)
        return found

    def _group_version(self, api_version: str) -> dict[str, Kind]:
        if api_version not in self._versions:
            path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            try:
                doc = self.request("GET", path)
            except ApiRefusal as refusal:
                if refusal.status != 404:
                    raise
                doc = {}
            group, _, version = api_version.rpartition("/")
            kinds: dict[str, Kind] = {}
            for r in doc.get("resources") or []:
                if not isinstance(r, dict) or "/" in str(r.get("name")):  # subresources (deployments/scale)
                    continue
                kinds.setdefault(str(r.get("kind")), Kind(group, version, str(r.get("name")), str(r.get("kind")),
                                                          bool(r.get("namespaced")), frozenset(r.get("verbs") or ())))
            self._versions[api_version] = kinds
        return self._versions[api_version]

    def all_kinds(self) -> tuple[list[Kind], list[Problem]]:
        """Every resource of the cluster (the core group, then each group at its preferred version), and a warning
        for each group version that does not answer (an aggregated API that is down, as kubectl warns)."""
        groups = self.request("GET", "/apis").get("groups") or []
        versions = ["v1", *(str((g.get("preferredVersion") or {}).get("groupVersion")) for g in groups
                            if isinstance(g, dict) and g.get("preferredVersion"))]
        kinds: list[Kind] = []
        problems: list[Problem] = []
        for api_version, found in zip(versions, self.each(self._group_version, versions), strict=True):
            if isinstance(found, ApiRefusal):
                problems.append(Problem(f"the cluster at {self.server} did not list the kinds of {api_version}: "
                                        f"{found.message}", Where(object=api_version), severity="warning",
                                        hint="objects of those kinds were not looked at", code="cluster"))
            else:
                kinds += found.values()
        return kinds, problems

    def each(self, call: Callable[[T], R], items: list[T]) -> list[R | ApiRefusal]:
        """`call` on every item, a few requests at a time (a sweep asks about every kind the cluster serves), the
        results in order; an `ApiRefusal` is returned in its item's place, any other error raised."""
        pool = ThreadPoolExecutor(min(REQUESTS_AT_ONCE, max(1, len(items))), thread_name_prefix="devlane-kube")
        try:
            return list(pool.map(functools.partial(_refusal_as_result, call), items))
        finally:  # on an error or Ctrl-C too: no request not started yet is made
            pool.shutdown(wait=False, cancel_futures=True)

    # ---- objects

    def get(self, kind: Kind, namespace: str | None, name: str) -> dict | None:
        """The object, or None when there is none."""
        try:
            return self.request("GET", kind.path(namespace, name))
        except ApiRefusal as refusal:
            if refusal.status == 404:
                return None
            raise

    def selected(self, kind: Kind, selector: str) -> Iterator[dict]:
        """Every object of `kind` that `selector` selects, in every namespace, a page at a time; each with its
        `apiVersion` and `kind` (a list's items carry neither)."""
        token = None
        while True:
            query: list[tuple[str, Any]] = [("labelSelector", selector), ("limit", PAGE)]
            if token:
                query.append(("continue", token))
            page = self.request("GET", kind.path(), query=query)
            for item in page.get("items") or []:
                if isinstance(item, dict):
                    yield {"apiVersion": kind.api_version, "kind": kind.kind, **item}
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def delete(self, kind: Kind, namespace: str | None, name: str, uid: str, resource_version: str) -> bool:
        """Delete the object if it is still the one listed (its uid and resourceVersion, as preconditions: a
        changed one is a 409 `ApiRefusal`, for the caller to look at again); its dependents go in the background,
        as kubectl deletes. False when it is gone already."""
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
                   "preconditions": {"uid": uid, "resourceVersion": resource_version}}
        try:
            self.request("DELETE", kind.path(namespace, name), body=options)
        except ApiRefusal as refusal:
            if refusal.status == 404:
                return False
            raise
        return True

    def dry_run_apply(self, kind: Kind, namespace: str | None, obj: dict, manager: str) -> dict:
        """A server-side apply of `obj` that changes nothing (`dryRun=All`): admission, validation and the update
        rules of the object already there run as for a real apply. Conflicts with other managers are forced, as
        `kubectl apply --server-side --force-conflicts` does: the question is what the server refuses."""
        name = str((obj.get("metadata") or {}).get("name"))
        query = [("dryRun", "All"), ("fieldManager", manager), ("force", "true")]
        return self.request("PATCH", kind.path(namespace, name), query=query, body=obj,
                            content_type="application/apply-patch+yaml")


def _refusal_as_result(call: Callable[[T], R], item: T) -> R | ApiRefusal:
    try:
        return call(item)
    except ApiRefusal as refusal:
        return refusal


def _why(exc: BaseException) -> str:
    """What went wrong on the way to the server, in a few words (urllib3 nests the cause in long reprs)."""
    text = str(getattr(exc, "reason", None) or exc)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return "its TLS certificate does not verify against the kubeconfig's certificate authority"
    errno = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if errno:
        return errno.group(1).strip()
    if "timed out" in text.lower():
        return "the connection timed out"
    return _first_line(exc)
