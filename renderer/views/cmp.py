"""Argo CD Config Management Plugin (sidecar) mode: `devlane cmp generate` and `devlane cmp params`.

The cmp-server unpacks the repository into a temporary directory, resets file modes and runs the
command in the Application's path with the environment Argo CD builds: `ARGOCD_ENV_<NAME>` for the
plugin's env, `ARGOCD_APP_PARAMETERS` (a JSON list of `{name, string|array|map}`) and the flattened
`PARAM_<NAME>[_<i>]` variables for parameters, `ARGOCD_APP_REVISION`, and `ARGOCD_EXEC_TIMEOUT`
(a Go duration; the whole process group is killed when it runs out). Argo CD parses stdout as the
manifests, so only objects go there; an empty stream with `prune: true` deletes the whole app, so an
empty result is an error.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .. import api
from ..core import durations
from ..core.images import image_problem, shown
from ..core.names import flow_labels
from ..core.source import resolve_commit
from ..core.yamlio import dump, parse_documents
from ..errors import DevlaneError, Problem, Where
from ..host.confine import confinement
from ..render.plan.flow_spec import FlowRequest
from ..render.plan.targets import AutoFlow, NoServiceChanged

DEFAULT_EXEC_TIMEOUT = 90.0  # Argo CD's default ARGOCD_EXEC_TIMEOUT
MARGIN = 5.0  # finish before the cmp-server's SIGTERM (at most a tenth of a short budget)
def go_duration(text: str) -> float:
    """Seconds in a Go duration such as `90s`, `2m`, `1m30s` or `500ms` (core.durations: Go's own grammar)."""
    try:
        return durations.parse_positive(text) / durations.SECOND
    except durations.DurationError as exc:
        raise DevlaneError(Problem(f"ARGOCD_EXEC_TIMEOUT={text!r} is not a duration ({exc})",
                                   hint="use a positive Go duration such as 90s or 2m")) from None


def _flat(name: str) -> str:
    return "PARAM_" + re.sub(r"[^A-Z0-9_]", "_", name.upper())


def parameters(env: Mapping[str, str]) -> dict[str, object]:
    """Parameters from `ARGOCD_APP_PARAMETERS`, else from the flattened `PARAM_*` variables."""
    raw = env.get("ARGOCD_APP_PARAMETERS")
    if raw:
        try:
            items = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DevlaneError(Problem(f"ARGOCD_APP_PARAMETERS is not JSON: {exc}")) from None
        except RecursionError:  # Python's JSON decoder recurses once per level
            raise DevlaneError(Problem("ARGOCD_APP_PARAMETERS is nested too deeply",
                                       hint="pass a flat list of {name, string|array|map}")) from None
        if not isinstance(items, list):
            raise DevlaneError(Problem("ARGOCD_APP_PARAMETERS must be a JSON list of {name, string|array|map}"))
        out: dict[str, object] = {}
        for item in items:
            for key in ("string", "array", "map"):
                if isinstance(item, dict) and key in item:
                    out[str(item.get("name"))] = item[key]
        return out
    out = {}
    for name in ("flow-id", "image-template", "services"):
        value = env.get(_flat(name))
        if value is not None:
            out[name] = value
    prefix = _flat("services") + "_"
    indexed = sorted((int(k[len(prefix):]), v) for k, v in env.items() if k.startswith(prefix)
                     and k[len(prefix):].isdigit())
    if indexed:
        out["services"] = [v for _, v in indexed]
    return out


@dataclass
class Request:
    flow_id: str
    images: dict[str, str]
    revision: str | None
    timeout: float
    auto: bool = False  # `services: auto`: the services changed between BASE_REF and the revision
    image_template: str = ""
    base: str = ""
    pr: str | None = None


def request(env: Mapping[str, str]) -> Request:
    """What the Application asks for; every missing or malformed piece is a clear error."""
    params = parameters(env)
    flow_id = env.get("ARGOCD_ENV_FLOW_ID") or params.get("flow-id")
    if not isinstance(flow_id, str) or not flow_id:
        raise DevlaneError(Problem("no flow id: set the plugin env FLOW_ID or the parameter flow-id",
                                   hint="in the Application: spec.source.plugin.env: [{name: FLOW_ID, value: pr-7}]"))
    services = params.get("services") or []
    if isinstance(services, str):
        services = [s for s in re.split(r"[,\s]+", services) if s]
    if not isinstance(services, list):
        raise DevlaneError(Problem("parameter services must be an array of NAME=IMAGE, or auto"))
    budget = go_duration(env["ARGOCD_EXEC_TIMEOUT"]) if env.get("ARGOCD_EXEC_TIMEOUT") else DEFAULT_EXEC_TIMEOUT
    timeout = budget - min(MARGIN, budget / 10)
    if services == ["auto"]:
        return _auto(flow_id, params, env, timeout)
    images = {}
    for item in services:
        name, sep, image = str(item).partition("=")
        if not sep or not name or not image:
            raise DevlaneError(Problem(f"parameter services item {shown(str(item))}: expected NAME=IMAGE"))
        problem = image_problem(image)
        if problem:
            raise DevlaneError(Problem(f"parameter services item for {name!r}: the image {shown(image)} {problem}",
                                       hint="in the Application: spec.source.plugin.parameters services, "
                                            "NAME=IMAGE with an image a registry accepts", code="bad-image"))
        images[name] = image
    return Request(flow_id, images, env.get("ARGOCD_APP_REVISION"), timeout)


def _auto(flow_id: str, params: dict[str, object], env: Mapping[str, str], timeout: float) -> Request:
    """`services: auto`, as `render --services auto`: the base branch from the plugin env BASE_REF (the pull request
    generator's `{{.target_branch}}`), `{pr}` from PR, the image template from the parameter image-template."""
    template = params.get("image-template")
    base = env.get("ARGOCD_ENV_BASE_REF", "").strip()
    if not isinstance(template, str) or not template.strip() or not base:
        raise DevlaneError(Problem(
            "parameter services is auto, which needs the plugin env BASE_REF and the parameter image-template",
            hint="in the ApplicationSet: plugin.env [{name: BASE_REF, value: '{{.target_branch}}'}, {name: PR, "
                 "value: '{{.number}}'}] and parameters [{name: image-template, string: "
                 "'ghcr.io/acme/{service}:{short_sha}'}]"))
    return Request(flow_id, {}, env.get("ARGOCD_APP_REVISION"), timeout, True, template.strip(), base,
                   env.get("ARGOCD_ENV_PR") or None)


def served_api_versions(env: Mapping[str, str]) -> set[str] | None:
    """`KUBE_API_VERSIONS` (the destination cluster's `group/version` and `group/version/Kind` list), if set."""
    raw = env.get("KUBE_API_VERSIONS", "").strip()
    return {v.strip() for v in raw.split(",") if v.strip()} if raw else None


def unserved(objects: list[dict], served: set[str]) -> list[str]:
    """`apiVersion kind` of the objects the cluster cannot take: neither served nor defined by a CRD in the stream."""
    defined = set()
    for o in objects:
        if o.get("kind") == "CustomResourceDefinition":
            spec = o.get("spec") or {}
            for v in spec.get("versions") or []:
                defined.add(f"{spec.get('group')}/{v.get('name')}")
    missing = set()
    for o in objects:
        api_version, kind = str(o.get("apiVersion")), str(o.get("kind"))
        if api_version not in served and f"{api_version}/{kind}" not in served and api_version not in defined:
            missing.add(f"{api_version} {kind}")
    return sorted(missing)


def repository_dir(app_dir: Path, env: Mapping[str, str]) -> Path | None:
    """The repository the Application's path lies in (an overlay's bases sit beside it): the working directory
    minus ARGOCD_APP_SOURCE_PATH, when it ends with it."""
    rel = PurePosixPath(env.get("ARGOCD_APP_SOURCE_PATH") or ".")
    if rel.is_absolute() or ".." in rel.parts or str(rel) == ".":
        return None
    here = Path(os.path.realpath(app_dir))
    parts = here.parts
    if tuple(parts[-len(rel.parts):]) != rel.parts:
        return None
    return Path(*parts[: -len(rel.parts)])


def generate(app_dir: Path, env: Mapping[str, str] | None = None,
             log: Callable[[str], None] = lambda line: None, cache: bool = True) -> tuple[str, list[Problem]]:
    """The manifests for the Application (stdout) and the warnings (stderr). Progress goes to `log`."""
    env = os.environ if env is None else env
    req = request(env)
    if not req.images and not req.auto:
        raise DevlaneError(Problem("the flow changes no service: the parameter services is empty",
                                   hint="in the Application: spec.source.plugin.parameters: "
                                        "[{name: services, array: [NAME=IMAGE]}], or [{name: services, string: "
                                        "auto}]"))
    app = env.get("ARGOCD_APP_NAME") or "(no ARGOCD_APP_NAME)"
    revision = req.revision or "(no ARGOCD_APP_REVISION)"
    targets = f"the services changed since {req.base}" if req.auto else ", ".join(sorted(req.images))
    log(f"cmp: application {app}, revision {revision}, path {env.get('ARGOCD_APP_SOURCE_PATH') or '.'}: "
        f"flow {req.flow_id}, targets {targets}, budget {req.timeout:g}s")
    spec: api.FlowInput = api.resolve(FlowRequest(flow_id=req.flow_id, images=req.images)) if not req.auto else \
        AutoFlow(FlowRequest(flow_id=req.flow_id), _base(app_dir, req.base), req.image_template, req.pr)

    try:
        with api.open_session(api.Options(repo=app_dir, timeout=req.timeout, timeout_by="ARGOCD_EXEC_TIMEOUT",
                                          top=repository_dir(app_dir, env), cache=cache)) as s:
            if s.settings.routes.mode == "istio":  # before anything is read or run
                raise DevlaneError(Problem(
                    "routing istio cannot be rendered by the Config Management Plugin: Istio sidecars need one "
                    "VirtualService per host listing every flow (flows/_mesh/), and the plugin renders one flow at "
                    "a time without seeing the others", Where(file=".devlane.yaml"),
                    hint="use routing: gateway-api (Istio implements Gateway API for the mesh, and each flow then "
                         "owns its routes), or publish with `devlane render` in CI and point Argo CD at flows/"))
            try:
                result = api.render_in(s, spec)
            except NoServiceChanged as exc:  # no lane: one object that says so, as an empty stream prunes the app
                log(f"cmp: {exc.problems[0].message}")
                return _no_lane(exc, env), []
    finally:  # what confined this render's plugins, in the repo-server's log: nobody runs `plugins describe` there
        log(f"cmp: {confinement().summary()}")
    stream = result.stream()
    try:
        objects = [d for d in parse_documents(stream.encode(), "the rendered stream") if d]
    except DevlaneError as exc:  # a bug: never hand Argo CD a stream it cannot split
        raise DevlaneError(Problem(f"the rendered stream is not valid YAML: {exc}")) from None
    if not objects:
        raise DevlaneError(Problem(f"flow {req.flow_id} rendered no objects; refusing an empty result, which "
                                   "Argo CD would prune the whole application for",
                                   hint="check the flow's services (parameter services: NAME=IMAGE)"))
    served = served_api_versions(env)
    missing = unserved(objects, served) if served is not None else []
    if missing:
        raise DevlaneError(Problem(f"the destination cluster does not serve {', '.join(missing)} (KUBE_API_VERSIONS)",
                                   hint="install those APIs in the cluster (CRDs such as Gateway API or Istio), or "
                                        "change `routing` in .devlane.yaml"))
    log(f"cmp: flow {req.flow_id} at revision {revision}: {len(objects)} objects")
    return stream, result.messages


def _base(app_dir: Path, branch: str) -> str:
    """The base branch as the repo-server's clone has it (`origin/<branch>`, fetched with every branch), else as a
    local ref; none there (no `.git` in what the plugin was sent, a shallow fetch) is an error saying how to fix it."""
    if not any((d / ".git").exists() for d in (app_dir.resolve(), *app_dir.resolve().parents)):
        raise DevlaneError(Problem(
            "parameter services is auto, but the plugin was sent no .git: the changed services are read from the "
            "history", hint="keep .git in what the repo-server sends (ARGOCD_REPO_SERVER_PLUGIN_TAR_EXCLUSIONS / "
            "reposerver.plugin.tar.exclusions must not drop it), or list the services as NAME=IMAGE"))
    for ref in (f"origin/{branch}", branch):
        try:
            resolve_commit(app_dir, ref)
            return ref
        except DevlaneError:
            continue
    raise DevlaneError(Problem(f"BASE_REF {branch}: no such branch in the repo-server's clone (origin/{branch})",
                               hint="set BASE_REF to '{{.target_branch}}' of the pull request generator"))


def _no_lane(exc: NoServiceChanged, env: Mapping[str, str]) -> str:
    """The stream of a pull request that changes no service: one ConfigMap saying so (Argo CD prunes the lane an
    earlier push made, and shows why there is none)."""
    meta: dict = {"name": f"devlane-no-lane-{exc.flow_id}", "labels": flow_labels(exc.flow_id)}
    if env.get("ARGOCD_APP_NAMESPACE"):
        meta["namespace"] = env["ARGOCD_APP_NAMESPACE"]
    return "---\n" + dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                            "data": {"reason": exc.problems[0].message}})


def announcements(app_dir: Path) -> list[dict]:
    """`parameters.dynamic` output: the flow parameters, with the repository's services and plugins."""
    repo = api.read(api.Options(repo=app_dir))
    services = sorted(n for n, s in repo.model.services.items() if s.workload is not None)
    plugins = sorted({p.name for p in repo.model.plugin_defs.values()})
    return [
        {"name": "flow-id", "title": "Flow id (DNS-1123 label, at most 40 characters)", "required": True,
         "collectionType": "string"},
        {"name": "services", "title": "Services to change, as NAME=IMAGE items, or auto", "collectionType": "array",
         "itemType": "string", "tooltip": "services in this repository: " + ", ".join(services)},
        {"name": "image-template", "title": "With services auto: the image CI builds, e.g. "
         "ghcr.io/acme/{service}:{short_sha}", "collectionType": "string"},
        {"name": "repo-services", "title": "Services in this repository (information)", "collectionType": "array",
         "array": services},
        {"name": "repo-plugins", "title": "Plugins this repository uses (information)", "collectionType": "array",
         "array": plugins},
    ]
