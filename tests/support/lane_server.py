"""A GitOps tool's hands and a reviewer's eyes on a real API server (tests/cluster/test_lanes.py).

Hands: a rendered lane is applied the way Argo CD (a directory of files) or Flux (`kustomize build` of it) applies
one: server-side apply of each document as it was written, which the API server itself parses (no client reads and
re-writes it on the way), Namespaces first, the destination namespace for objects that name none, a field manager
per application; CRDs come first, from ../shared/crds. It is pruned the way they prune: every object of every served
type that carries devlane's lane labels and has no owner is deleted (the controllers collect what those own).
The REST API is called directly, side by side on kept-alive connections: a `kubectl apply` process reads the
server's OpenAPI documents before it applies anything, which costs more than the apply.

Eyes: every fact the tests assert is read from the server (EndpointSlices, pods and their owners, resourceVersions,
SubjectAccessReviews, admission's answers), never taken from devlane's report.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import http.client
import json
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import yamlc
from .controlplane import ControlPlane
from .isolation import labels_match_map, pod_template
from .paths import CRDS

FLOW = "devlane.dev/flow"
MANAGED_BY = "app.kubernetes.io/managed-by"
LANE_SELECTOR = f"{MANAGED_BY}=devlane"
PV_LABEL = "devlane-tests/provisioned-for"  # PersistentVolumes the tests make for claims (no provisioner here)
DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "DaemonSet")
SCALABLE = {"Deployment": "deployments", "StatefulSet": "statefulsets", "ReplicaSet": "replicasets",
            "ReplicationController": "replicationcontrollers"}
# read on every look at a lane: what the controllers make from it (and what `Watcher` watches)
ALWAYS_READ = (("", "Pod"), ("", "Service"), ("discovery.k8s.io", "EndpointSlice"), ("", "PersistentVolumeClaim"),
               ("", "ReplicationController"), *(("apps", k) for k in ("Deployment", "StatefulSet", "ReplicaSet",
                                                                      "DaemonSet")))

Key = tuple[str, str, str, str]  # group, kind, namespace ("" when cluster-scoped), name


class Refused(AssertionError):
    """The server refused what the GitOps tool applied."""


def group_of(obj: dict) -> str:
    api = str(obj.get("apiVersion") or "")
    return api.split("/", 1)[0] if "/" in api else ""


def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def labels(obj: dict) -> dict:
    return meta(obj).get("labels") or {}


def show(key: Key) -> str:
    _group, kind, ns, name = key
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: frozenset[str]

    @property
    def arg(self) -> str:
        """The type as kubectl takes it, unambiguously: plural.version.group (the plural alone for the core group)."""
        return f"{self.plural}.{self.version}.{self.group}" if self.group else self.plural

    @property
    def path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


class Server:
    """The control plane as a GitOps tool and a reviewer see it, through its REST API: server-side apply of
    documents as they were written (the server parses them), lists, deletes, reviews and dry runs. Calls go side by
    side on a few kept-alive connections (a kubectl process per call costs more than the call: it reads the
    server's OpenAPI documents first)."""

    def __init__(self, cluster: ControlPlane):
        self.cluster = cluster
        url = urllib.parse.urlsplit(cluster.server)
        self._address = (url.hostname, url.port)
        self._tls = ssl.create_default_context(cafile=str(cluster.ca_file))
        self._local = threading.local()
        self._pool = concurrent.futures.ThreadPoolExecutor(8, thread_name_prefix="lane-server")
        self._types: dict[tuple[str, str], Resource] | None = None
        self._provisioned: set[str] = set()

    def close(self) -> None:
        self._pool.shutdown()

    # ---- REST
    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                accept: str = "application/json") -> tuple[int, Any]:
        """(status, parsed body) of one call; a refusal is an answer, not an exception. `body`: bytes as they are,
        anything else as JSON."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.cluster.token}", "Accept": accept,
                   **({"Content-Type": content_type} if data is not None else {})}
        for attempt in range(1, 40):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = http.client.HTTPSConnection(*self._address, context=self._tls, timeout=30)
            try:
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except (http.client.HTTPException, OSError):  # a kept-alive connection the server closed meanwhile
                conn.close()
                self._local.conn = None
                if attempt >= 2:
                    raise
                continue
            if response.status != 429:  # 429: a new type's storage is still initializing: the server says wait
                break
            time.sleep(0.2)
        return response.status, json.loads(raw or b"{}")

    def map(self, call: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """`call` on every item, side by side (calls wait on the server, not on this process)."""
        return list(self._pool.map(call, items))

    # ---- discovery
    def types(self, refresh: bool = False) -> dict[tuple[str, str], Resource]:
        """Every served (group, kind), at its preferred version (aggregated discovery: two requests)."""
        if self._types is None or refresh:
            found: dict[tuple[str, str], Resource] = {}
            for root in ("/api", "/apis"):
                status, body = self.request("GET", root, accept=DISCOVERY)
                assert status == 200, f"discovery {root}: {status} {body}"
                for group in body["items"]:
                    name = meta(group).get("name") or ""
                    for version in group.get("versions") or []:  # preferred first
                        for r in version.get("resources") or []:
                            kind = (r.get("responseKind") or {}).get("kind")
                            if kind and (name, kind) not in found:
                                found[(name, kind)] = Resource(name, version["version"], kind, r["resource"],
                                                               r.get("scope") == "Namespaced",
                                                               frozenset(r.get("verbs") or ()))
            self._types = found
        return self._types

    def resource(self, group: str, kind: str) -> Resource:
        got = self.types().get((group, kind))
        if got is None:
            raise AssertionError(f"the server does not serve {kind} ({group or 'core'}): install its CRD first "
                                 f"(install_crds, from {CRDS})")
        return got

    def key(self, obj: dict, destination: str | None = None) -> Key:
        """The object's identity on the server; a namespaced object that names no namespace is in `destination`."""
        group, kind = group_of(obj), obj["kind"]
        namespaced = self.resource(group, kind).namespaced
        return group, kind, (meta(obj).get("namespace") or destination or "") if namespaced else "", meta(obj)["name"]

    def url(self, key: Key) -> str:
        group, kind, ns, name = key
        r = self.resource(group, kind)
        return f"{r.path}{f'/namespaces/{ns}' if ns else ''}/{r.plural}/{name}"

    # ---- CRDs
    def install_crds(self, objects: Iterable[dict]) -> list[str]:
        """Installs, from ../shared/crds, the CRD of every kind among `objects` that the server does not serve yet,
        and waits until they are established and served; returns the CRDs' names."""
        wanted = sorted({(group_of(o), o["kind"]) for o in objects} - set(self.types()))
        if not wanted:
            return []
        crds = [crd_definition(group, kind) for group, kind in wanted]
        self.apply([(json.dumps(c).encode(), c) for c in crds], None, "gitops-crds")
        names = [meta(c)["name"] for c in crds]

        def established(name: str) -> bool:
            _, crd = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            return any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in (crd.get("status") or {}).get("conditions") or [])

        self.cluster.wait_for(lambda: all(self.map(established, names)) and set(wanted) <= set(
            self.types(refresh=True)), what=f"CRDs {', '.join(names)} to be established and served")
        return names

    # ---- reading
    def list(self, resource: Resource, selector: str | None = None, namespace: str | None = None) -> list[dict]:
        """Every object of a type (in `namespace`, else in the whole cluster), each with its apiVersion and kind (a
        list's items lack them)."""
        query = f"?labelSelector={urllib.parse.quote(selector)}" if selector else ""
        where = f"/namespaces/{namespace}" if namespace and resource.namespaced else ""
        status, body = self.request("GET", f"{resource.path}{where}/{resource.plural}{query}")
        assert status == 200, f"listing {resource.arg}: {status} {body.get('message', body)}"
        api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
        return [{"apiVersion": api_version, "kind": resource.kind, **o} for o in body.get("items") or []]

    def read(self, kinds: Iterable[tuple[str, str]] = (), namespaces: Iterable[str] | None = None) -> Snapshot:
        """Every object of these types (and of `ALWAYS_READ`), listed side by side: in `namespaces` (and the
        cluster-scoped ones), else in the whole cluster."""
        resources = sorted({self.resource(g, k) for g, k in (*ALWAYS_READ, *kinds)}, key=lambda r: r.arg)
        places = sorted(namespaces) if namespaces is not None and len(set(namespaces)) <= 4 else [None]
        calls = [(r, ns) for r in resources for ns in (places if r.namespaced else [None])]
        return Snapshot(self, [o for batch in self.map(lambda c: self.list(c[0], namespace=c[1]), calls)
                               for o in batch])

    def get(self, key: Key) -> dict | None:
        status, body = self.request("GET", self.url(key))
        return body if status == 200 else None

    # ---- a GitOps tool's hands
    def apply(self, documents: list[tuple[bytes, dict]], destination: str | None, manager: str) -> list[Key]:
        """Server-side apply of each document as it was written (the server parses it: `application/apply-patch+yaml`),
        in the stages Argo CD's kind order and Flux's staged apply share: Namespaces, then what admission reads
        when pods are created (ResourceQuotas, LimitRanges), then the rest side by side; an object that names no
        namespace goes to `destination`. `manager` is the field manager: one per GitOps application, so that an
        object two of them claimed would conflict. Raises `Refused` with every refusal; returns the objects'
        identities. (Applied side by side with the Deployments, a LimitRange could come after a lane's first pods,
        which then had no default requests: a race of this harness, not of Argo CD or Flux.)"""
        keys = [self.key(parsed, destination) for _, parsed in documents]
        stage = {"Namespace": 0, "ResourceQuota": 1, "LimitRange": 1}
        order = tuple([i for i, k in enumerate(keys) if stage.get(k[1], 2) == n] for n in range(3))

        def one(i: int) -> str | None:
            query = f"?fieldManager={manager}&fieldValidation=Strict"
            status, answer = self.request("PATCH", self.url(keys[i]) + query, documents[i][0],
                                          content_type="application/apply-patch+yaml")
            return None if status in (200, 201) else f"{show(keys[i])}: {status} {answer.get('message', answer)}"

        refused = [m for step in order for m in self.map(one, step) if m]
        if refused:
            raise Refused(f"the server refused {manager}'s objects:\n  " + "\n  ".join(refused))
        return keys

    def apply_objects(self, objects: list[dict], destination: str | None, manager: str) -> list[Key]:
        """Server-side apply of objects (a baseline, which the tests build as data)."""
        return self.apply([(json.dumps(o).encode(), o) for o in objects], destination, manager)

    def apply_directory(self, flow_dir: Path, destination: str | None, *, kustomize: bool) -> list[Key]:
        """Applies a rendered flow directory, the server reading devlane's bytes: as an Argo CD directory source does
        (each file kustomization.yaml lists, as written) or as Flux does (`kustomize`: the documents `kubectl
        kustomize` builds from it). Nothing is parsed and re-written on the way, which would hide a value a YAML
        reader takes for a number or a boolean. The field manager is the lane's."""
        if kustomize:
            built = self.cluster.kubectl("kustomize", str(flow_dir)).stdout
            texts = [t for t in re.split(r"(?m)^---[ \t]*$", built) if t.strip()]
        else:
            texts = [(flow_dir / f).read_text() for f in flow_files(flow_dir)]
        documents = [(t.encode(), yamlc.safe_load(t)) for t in texts]
        return self.apply(documents, destination, f"gitops-{flow_dir.name}")

    def lanes_held(self, flows: Iterable[str]) -> dict[str, list[Key]]:
        """What Argo CD and Flux would prune of each lane: every object of every served type that carries the lane's
        labels (`devlane.dev/flow`, `app.kubernetes.io/managed-by: devlane`) and that no other object owns (the
        garbage collector and the namespace controller remove what those own). One list per type for all `flows`:
        each lane's objects are fixed once applied, so lanes pruned one after another can be listed together."""
        types = [r for r in self.types().values() if {"list", "delete"} <= r.verbs and r.kind != "Event"]
        wanted = sorted(set(flows))
        selector = f"{FLOW} in ({','.join(wanted)}),{LANE_SELECTOR}"
        held: dict[str, list[Key]] = {flow: [] for flow in wanted}
        for batch in self.map(lambda r: self.list(r, selector), types):
            for o in batch:
                if not meta(o).get("ownerReferences"):
                    held[labels(o)[FLOW]].append(self.key(o))
        return held

    def prune(self, flow: str, held: list[Key] | None = None) -> list[Key]:
        """Deletes the lane as Argo CD and Flux prune it: what `lanes_held` finds of it (`held`, when listed
        already). Returns what it deleted."""
        tops = self.lanes_held([flow])[flow] if held is None else held

        def delete(key: Key) -> str | None:
            status, answer = self.request("DELETE", self.url(key), {"propagationPolicy": "Background"})
            return None if status in (200, 202, 404) else f"{show(key)}: {status} {answer.get('message', answer)}"

        failed = [m for m in self.map(delete, tops) if m]
        assert not failed, f"pruning lane {flow}: " + "; ".join(failed)
        return tops

    # ---- reviews and dry runs: admission answers a question
    def reviews(self, questions: list[tuple[str, dict]]) -> list[bool]:
        """SubjectAccessReviews for (service account `ns:name`, resourceAttributes), answered by the RBAC
        authorizer with the groups a service account's token carries."""

        def ask(question: tuple[str, dict]) -> bool:
            account, attributes = question
            ns, name = account.split(":")
            body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "spec": {"user": f"system:serviceaccount:{ns}:{name}", "resourceAttributes": attributes,
                             "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}",
                                        "system:authenticated"]}}
            status, answer = self.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
            assert status == 201, f"SubjectAccessReview: {status} {answer}"
            return bool(answer["status"].get("allowed"))

        return self.map(ask, questions)

    def create(self, obj: dict, *, dry_run: bool = False) -> tuple[int, dict]:
        """Admission's answer to creating `obj` (`dry_run`: every admission plugin runs, nothing is stored)."""
        r = self.resource(group_of(obj), obj["kind"])
        ns = f"/namespaces/{meta(obj)['namespace']}" if r.namespaced else ""
        return self.request("POST", f"{r.path}{ns}/{r.plural}?fieldValidation=Strict{'&dryRun=All' * dry_run}", obj)

    # ---- the control plane's stand-in for a storage provisioner
    def provision(self, snap: Snapshot, namespaces: set[str], owner: str) -> int:
        """A PersistentVolume bound ahead to each pending claim in `namespaces` (this cluster has no provisioner, and
        a StatefulSet's pods wait for their claims); returns how many it made."""
        volumes = []
        for pvc in snap.of_kind("PersistentVolumeClaim", namespaces):
            spec = pvc.get("spec") or {}
            m = meta(pvc)
            if (pvc.get("status") or {}).get("phase") != "Pending" or spec.get("volumeName") \
                    or m["uid"] in self._provisioned:
                continue
            self._provisioned.add(m["uid"])
            size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
            volumes.append({"apiVersion": "v1", "kind": "PersistentVolume",
                            "metadata": {"name": f"pv-{m['uid']}", "labels": {PV_LABEL: owner}},
                            "spec": {"capacity": {"storage": size},
                                     "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                                     "volumeMode": spec.get("volumeMode") or "Filesystem",
                                     "storageClassName": spec.get("storageClassName") or "",
                                     "persistentVolumeReclaimPolicy": "Retain",
                                     "hostPath": {"path": f"/var/lib/devlane-tests/{m['uid']}"},
                                     "claimRef": {"namespace": m["namespace"], "name": m["name"],
                                                  "uid": m["uid"]}}})
        if volumes:
            self.apply_objects(volumes, None, "gitops-provisioner")
        return len(volumes)


class Snapshot:
    """Objects as the server listed them, at one moment, indexed by identity, by namespace and kind, and by uid."""

    def __init__(self, server: Server, items: list[dict], keys: list[Key] | None = None):
        self.items = items
        self.by_key: dict[Key, dict] = {}
        self._by_place: dict[tuple[str, str], list[dict]] = {}
        self._by_uid: dict[str, dict] = {}
        for i, o in enumerate(items):
            self.by_key[keys[i] if keys is not None else server.key(o)] = o
            self._by_place.setdefault((meta(o).get("namespace") or "", o["kind"]), []).append(o)
            self._by_uid[meta(o).get("uid", "")] = o

    def get(self, key: Key) -> dict | None:
        return self.by_key.get(key)

    def of_kind(self, kind: str, namespaces: Iterable[str]) -> list[dict]:
        return [o for ns in sorted(namespaces) for o in self._by_place.get((ns, kind), ())]

    def in_namespaces(self, namespaces: Iterable[str]) -> list[dict]:
        wanted = set(namespaces)
        return [o for (ns, _), objs in self._by_place.items() if ns in wanted for o in objs]

    def pods(self, namespaces: Iterable[str]) -> list[dict]:
        return self.of_kind("Pod", namespaces)

    def owner_chain_top(self, obj: dict) -> dict:
        """The object at the top of `obj`'s controller owners (a pod's Deployment, say)."""
        for _ in range(10):
            ref = next((r for r in meta(obj).get("ownerReferences") or [] if r.get("controller")), None)
            if ref is None or ref.get("uid") not in self._by_uid:
                break
            obj = self._by_uid[ref["uid"]]
        return obj

    def endpoints(self, service: dict) -> list[tuple[str, str]]:
        """(pod name, address) of every endpoint the EndpointSlice controller lists for `service`."""
        ns, name = meta(service)["namespace"], meta(service)["name"]
        return [((e.get("targetRef") or {}).get("name", ""), address)
                for s in self.of_kind("EndpointSlice", {ns})
                if labels(s).get("kubernetes.io/service-name") == name
                for e in s.get("endpoints") or [] for address in e.get("addresses") or []]

    def selected_pods(self, service: dict) -> list[dict]:
        """The running pods (with an IP, not being deleted) that `service`'s selector matches."""
        selector = (service.get("spec") or {}).get("selector") or {}
        return [p for p in self.pods({meta(service)["namespace"]}) if labels_match_map(selector, labels(p))
                and (p.get("status") or {}).get("phase") == "Running" and (p.get("status") or {}).get("podIP")
                and not meta(p).get("deletionTimestamp")]

    def unsettled(self, namespaces: Iterable[str]) -> list[str]:
        """What the controllers (or kwok, or the provisioner) still have to do in `namespaces`, in words."""
        out = []
        for o in self.in_namespaces(namespaces):
            m, kind, status, spec = meta(o), o["kind"], o.get("status") or {}, o.get("spec") or {}
            where = f"{kind} {m.get('namespace')}/{m['name']}"
            if m.get("deletionTimestamp") and kind in ("Pod", *WORKLOADS):
                out.append(f"{where} is being deleted")
            elif kind in WORKLOADS and kind != "DaemonSet":
                want = spec.get("replicas", 1)
                rolled = kind != "Deployment" or status.get("updatedReplicas", 0) == want
                if status.get("observedGeneration", 0) < m.get("generation", 1) or not rolled \
                        or status.get("readyReplicas", 0) != want or status.get("replicas", 0) != want:
                    out.append(f"{where}: {status.get('readyReplicas', 0)}/{want} ready{_failing(status)}")
            elif kind == "DaemonSet" and (not status.get("desiredNumberScheduled")
                                          or status.get("numberReady") != status.get("desiredNumberScheduled")):
                out.append(f"{where}: {status.get('numberReady', 0)}/{status.get('desiredNumberScheduled')} ready")
            elif kind == "Pod" and not (status.get("phase") in ("Succeeded", "Failed")
                                        or (status.get("phase") == "Running" and status.get("podIP"))):
                out.append(f"{where} is {status.get('phase')}{_failing(status)}")
            elif kind == "Service" and spec.get("selector") and spec.get("type") != "ExternalName":
                want_pods = {meta(p)["name"] for p in self.selected_pods(o)}
                listed = {pod for pod, _ in self.endpoints(o)}
                if want_pods != listed:
                    out.append(f"{where}: endpoints {sorted(listed)}, pods {sorted(want_pods)}")
        return sorted(out)


class Watcher:
    """The settling types (pods, workloads, Services, EndpointSlices, claims) of the whole cluster as watches keep
    them (a list, then the server's change events: as controllers and Argo CD watch), for waiting: `settle` wakes on
    each change, and answers with an authoritative read once the cache looks settled. It also binds a
    PersistentVolume to each pending claim in a watched namespace (this cluster has no provisioner, and a
    StatefulSet's pods wait for their claims)."""

    KINDS = ALWAYS_READ

    def __init__(self, server: Server):
        self.server = server
        self._cache: dict[str, dict[Key, dict]] = {}  # namespace ("" for cluster-scoped) -> identity -> object
        self._owners: dict[str, str] = {}  # watched namespace -> who the volumes made for its claims belong to
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._conns: list[http.client.HTTPSConnection] = []
        self._threads = [threading.Thread(target=self._watch, args=(server.resource(g, k),), daemon=True,
                                          name=f"watch-{k}") for g, k in self.KINDS]
        self._synced = threading.Semaphore(0)

    def __enter__(self) -> Watcher:
        for t in self._threads:
            t.start()
        for _ in self._threads:  # every type listed once before anyone waits
            assert self._synced.acquire(timeout=60), f"a watch never listed its type: {self._error!r}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for conn in list(self._conns):
            with contextlib.suppress(OSError):
                conn.sock and conn.sock.shutdown(socket.SHUT_RDWR)
        for t in self._threads:
            t.join(10)

    def watch(self, namespaces: Iterable[str], owner: str) -> None:
        with self._lock:
            self._owners.update(dict.fromkeys(namespaces, owner))

    def forget(self, owner: str) -> None:
        with self._lock:
            self._owners = {ns: o for ns, o in self._owners.items() if o != owner}

    def _watch(self, resource: Resource) -> None:
        """List, then watch from the list's resourceVersion; list again when the watch ends too late (410 Gone) or its
        connection breaks (a few times in a row is an error every waiter is told)."""
        api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
        base = f"{resource.path}/{resource.plural}"
        first, broken = True, 0
        while not self._stop.is_set():
            try:
                status, body = self.server.request("GET", base)
                assert status == 200, f"listing {resource.arg}: {status} {body}"
                version = body["metadata"]["resourceVersion"]
                with self._lock:
                    for objects in self._cache.values():
                        for key in [k for k in objects if k[:2] == (resource.group, resource.kind)]:
                            del objects[key]
                    for o in body.get("items") or []:
                        self._put({"apiVersion": api_version, "kind": resource.kind, **o})
                if first:
                    self._synced.release()
                    first = False
                while not self._stop.is_set() and version is not None:
                    version = self._stream(f"{base}?watch=1&allowWatchBookmarks=true&timeoutSeconds=60"
                                           f"&resourceVersion={version}", api_version, resource.kind)
                    broken = 0
            except (OSError, http.client.HTTPException) as exc:
                broken += 1
                if broken < 5 and not self._stop.is_set():
                    continue
                self._error = self._error or exc
                return
            except BaseException as exc:
                if not self._stop.is_set():
                    self._error = self._error or exc
                return

    def _stream(self, path: str, api_version: str, kind: str) -> str | None:
        """One watch request: applies its events to the cache; returns the last resourceVersion seen (None: gone)."""
        conn = http.client.HTTPSConnection(*self.server._address, context=self.server._tls, timeout=120)
        self._conns.append(conn)
        version = path.rsplit("=", 1)[1]
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {self.server.cluster.token}"})
            response = conn.getresponse()
            assert response.status == 200, f"watching {path}: {response.status} {response.read()[:300]!r}"
            for line in response:
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    return None if obj.get("code") == 410 else version
                version = meta(obj).get("resourceVersion", version)
                if event.get("type") == "BOOKMARK":
                    continue
                obj = {"apiVersion": api_version, "kind": kind, **obj}
                with self._lock:
                    if event.get("type") == "DELETED":
                        key = self.server.key(obj)
                        self._cache.get(key[2], {}).pop(key, None)
                    else:
                        self._put(obj)
            return version
        except OSError:
            if self._stop.is_set():
                return version
            raise
        finally:
            self._conns.remove(conn)
            conn.close()

    def _put(self, obj: dict) -> None:
        key = self.server.key(obj)
        self._cache.setdefault(key[2], {})[key] = obj

    def cached(self, namespaces: Iterable[str]) -> Snapshot:
        """The cache's objects in `namespaces`, as a snapshot (not authoritative: for deciding when to read)."""
        with self._lock:
            if self._error is not None:
                raise AssertionError(f"watching the cluster failed: {self._error!r}")
            keyed = [(k, o) for ns in set(namespaces) for k, o in self._cache.get(ns, {}).items()]
        return Snapshot(self.server, [o for _, o in keyed], [k for k, _ in keyed])

    def stop(self) -> None:
        """Waits in progress end now (with an error), and no new one starts."""
        self._stop.set()

    def settle(self, namespaces: set[str], kinds: Iterable[tuple[str, str]],
               also: Callable[[Snapshot], list[str]] | None = None, timeout: float = 120) -> Snapshot:
        """Waits until the controllers are done with `namespaces` (and `also` has nothing more to say): every
        workload has its replicas ready at its generation, every pod runs with an IP (or has finished), none is
        being deleted, and every Service's EndpointSlices list exactly the running pods its selector matches.
        Looks at the watches' cache each time, and once that looks settled, reads the server, whose state it
        returns (with the objects of `kinds`)."""
        with self._lock:
            owner = next((self._owners[ns] for ns in namespaces if ns in self._owners), "")
        last, read_at = ["nothing read yet"], [0.0]

        def settled() -> Snapshot | None:
            if self._stop.is_set():
                raise AssertionError("stopped: the tier is ending")
            cached = self.cached(namespaces)
            self.server.provision(cached, namespaces, owner)
            last[:] = cached.unsettled(namespaces) + (also(cached) if also else [])
            if last or time.monotonic() - read_at[0] < 1:  # the server is read at most once a second
                return None
            read_at[0] = time.monotonic()
            snap = self.server.read(kinds, namespaces)  # the cache agrees with itself: ask the server
            last[:] = snap.unsettled(namespaces) + (also(snap) if also else [])
            return None if last else snap

        try:
            return self.server.cluster.wait_for(settled, timeout=timeout, interval=0.25,
                                                what=f"namespaces {', '.join(sorted(namespaces))} to settle")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; still:\n  " + "\n  ".join(last[:25])) from None


def _failing(status: dict) -> str:
    """Why a workload or pod is not there yet, from its conditions (a ReplicaSet's pods refused by admission, a
    pod the scheduler cannot place)."""
    said = [f"{c.get('reason')}: {c.get('message')}" for c in status.get("conditions") or []
            if c.get("message") and (c.get("status") == "False" or c.get("type") == "ReplicaFailure")]
    return f" ({'; '.join(said)})" if said else ""


@functools.cache
def crd_definition(group: str, kind: str) -> dict:
    """The CustomResourceDefinition of (group, kind) in ../shared/crds, read from the files that mention it."""
    for path in sorted(CRDS.rglob("*.y*ml")):
        text = path.read_text()
        if f"kind: {kind}" not in text or group not in text:
            continue
        for doc in yamlc.safe_load_all(text):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition" and \
                    (doc.get("spec") or {}).get("group") == group and doc["spec"]["names"]["kind"] == kind:
                return doc
    raise AssertionError(f"no CRD for {kind} ({group}) in {CRDS}: add the upstream file there")


def flow_files(flow_dir: Path) -> list[str]:
    """The files of a rendered flow, as its kustomization.yaml lists them (what a GitOps tool applies)."""
    return (yamlc.safe_load((flow_dir / "kustomization.yaml").read_text()) or {}).get("resources") or []


def flow_objects(flow_dir: Path) -> list[dict]:
    """The objects of a rendered flow (libyaml: a few thousand documents a run)."""
    return [d for f in flow_files(flow_dir) for d in yamlc.safe_load_all((flow_dir / f).read_text())
            if isinstance(d, dict) and d.get("kind")]


def quantity_milli(value: str) -> int:
    """A CPU quantity ("2", "500m", "1.5") in millicores."""
    value = str(value)
    return int(value[:-1]) if value.endswith("m") else round(float(value) * 1000)


def pod_selected_by(objects: list[dict], service: dict) -> bool:
    """Does some workload among (rendered) `objects`, in the Service's namespace, run pods its selector matches?"""
    selector = (service.get("spec") or {}).get("selector") or {}
    ns = meta(service).get("namespace")
    return any(meta(o).get("namespace") == ns and labels_match_map(selector, (pod_template(o) or {}).get(
        "metadata", {}).get("labels") or {}) for o in objects if pod_template(o) is not None)
