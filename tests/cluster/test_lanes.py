"""Every lane meets the server (issue 42, point 3): the bundled examples and real public apps (plain YAML, kustomize
and Helm), each applied as its baseline with server-side apply, then its lanes on top of it, in both isolation modes
and with gateway-api routing where the app has HTTP routes, as Argo CD and Flux apply them.

Computed from the server's objects, never from devlane's report:
- every object is accepted (strict field validation; custom resources against the CRDs of ../shared/crds);
- from the real EndpointSlices: every lane Service's endpoints are pods of that lane, run by that lane's workloads,
  and every baseline Service's are baseline pods; a Service whose selector matches a workload has endpoints;
- no baseline object changes (resourceVersion, spec) when the lanes are applied, pushed again or pruned;
- a second push (new images, changed env) re-applies with no error, selectors unchanged, and the server holds the
  env values and ConfigMap data that look like numbers, booleans or nulls as the very strings they are;
- `lifecycle.sleep`'s ServiceAccount may scale the lane's workloads and nothing of the baseline (SubjectAccessReview);
- `lifecycle.quota` is enforced by admission (a pod beyond it is refused, one within it admitted);
- pruning a lane by devlane's labels (as Argo CD and Flux prune) removes every object of that lane and nothing of
  the baseline or of the app's other lanes, and the garbage collector then leaves nothing of it behind.

The first push is applied as an Argo CD directory source (each file as devlane wrote it), the second as Flux does
(what `kubectl kustomize` builds from the directory); the server parses the bytes either way. One namespace (or the
app's own namespaces) per app, one flow id per lane, all of an app's lanes side by side over one baseline.

One test, one control plane: the apps are rendered one after the other in this process and go through the cluster
a few at a time (most of a lane's time is the controllers' latency), so the tier stays within its budget; a failure
names the app, the lane, the object and the server's words.
"""

from __future__ import annotations

import concurrent.futures
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.isolation import pod_template
from support.lane_apps import APPS, STRINGS, App, Source, configure, image, push_env, render
from support.lane_server import (
    FLOW,
    PV_LABEL,
    SCALABLE,
    Key,
    Server,
    Snapshot,
    Watcher,
    flow_objects,
    group_of,
    labels,
    meta,
    pod_selected_by,
    quantity_milli,
    show,
)

MODES = (("suffix", "none", "s"), ("namespace", "none", "n"), ("suffix", "gateway-api", "g"))
GATEWAY_API = ("Gateway", "GatewayClass", "HTTPRoute", "GRPCRoute", "ReferenceGrant")
IN_FLIGHT = 4  # apps going through the cluster at once
ZONES = ("zone-a", "zone-b")  # apps spread their pods over zones (topologySpreadConstraints)


@dataclass
class Lane:
    flow: str
    isolation: str
    routing: str
    dirs: list[Path]  # per push
    objects: list[list[dict]] = field(default_factory=list)  # per push, as rendered
    keys: set[Key] = field(default_factory=set)  # on the server, the same for both pushes

    @property
    def namespaces(self) -> set[str]:
        return {k[2] for k in self.keys if k[2]}

    def __str__(self) -> str:
        return f"lane {self.flow} ({self.isolation}, routing {self.routing})"


@dataclass
class Prepared:
    """An app rendered and ready for the cluster: its baseline and its lanes' two pushes."""

    app: App
    source: Source
    destination: str | None  # the namespace of baseline objects that name none
    lanes: list[Lane]
    base_keys: set[Key]
    kinds: set[tuple[str, str]]

    @property
    def base_ns(self) -> set[str]:
        return {k[2] for k in self.base_keys if k[2]}

    @property
    def owner(self) -> str:
        return f"lanes-{APPS.index(self.app)}"


@dataclass
class Outcome:
    app: App
    lanes: int = 0
    applied: int = 0  # objects applied: the baseline and every lane's two pushes
    seconds: float = 0.0
    failure: str | None = None


@pytest.fixture(scope="module")
def server(cluster) -> Iterator[Server]:
    """The cluster with the Gateway API CRDs installed first (every lane's routes are checked against them; other
    CRDs a lane or a baseline uses are installed before it is applied) and Nodes in two zones."""
    s = Server(cluster)
    try:
        s.install_crds({"apiVersion": "gateway.networking.k8s.io/v1", "kind": k} for k in GATEWAY_API)
        nodes = sorted(meta(n)["name"] for n in s.list(s.resource("", "Node")))
        s.apply_objects([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {
            "topology.kubernetes.io/zone": ZONES[i % len(ZONES)], "topology.kubernetes.io/region": "lanes"}}}
            for i, n in enumerate(nodes)], None, "gitops-nodes")
        yield s
    finally:
        s.close()


def test_every_lane_meets_the_server(server: Server, tmp_path: Path, record_property):
    began = time.monotonic()
    outcomes: list[Outcome] = []
    skipped: list[str] = []
    with Watcher(server) as watcher:
        pool = concurrent.futures.ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="lane-app")
        try:
            running = []
            for app in APPS:  # rendered here, one at a time (in this thread); through the cluster a few at a time
                try:
                    prepared = _prepare(server, app, tmp_path / f"app-{APPS.index(app)}")
                except pytest.skip.Exception as exc:
                    skipped.append(f"{app.id}: {exc}")
                    continue
                except AssertionError as exc:
                    outcomes.append(Outcome(app, failure=str(exc)))
                    continue
                running.append(pool.submit(_through_the_cluster, server, watcher, prepared))
            outcomes += [f.result() for f in running]
        finally:  # on a failure or Ctrl-C, the apps still in the cluster stop waiting and clean up
            watcher.stop()
            pool.shutdown(cancel_futures=True)
    if not outcomes:
        pytest.skip("; ".join(skipped))
    lanes, applied = sum(o.lanes for o in outcomes), sum(o.applied for o in outcomes)
    record_property("lanes", lanes)
    record_property("objects_applied", applied)
    print(f"\ncluster tier: {len(outcomes)} apps, {lanes} lanes, {applied} objects applied in "
          f"{time.monotonic() - began:.0f} s" + "".join(f"\n  {o.app.id} ({o.app.form}): {o.lanes} lanes, {o.applied} "
                                                      f"objects, {o.seconds:.1f} s" for o in outcomes)
          + "".join(f"\n  skipped {why}" for why in skipped))
    failed = [f"{o.app.id} ({o.app.form}): {o.failure}" for o in outcomes if o.failure]
    assert not failed, f"{len(failed)} of {len(outcomes)} apps failed on the server:\n\n" + "\n\n".join(failed)


def _prepare(server: Server, app: App, work: Path) -> Prepared:
    """The app's repository, its settings, both pushes of each lane rendered, and the CRDs it needs installed."""
    number = APPS.index(app)
    source = app.make(work)
    floating = any(not meta(o).get("namespace") and server.resource(group_of(o), o["kind"]).namespaced
                   for o in source.baseline if (group_of(o), o["kind"]) in server.types())
    destination = f"lanes-{number}-{secrets.token_hex(3)}" if floating else None
    configure(source.root, destination, f"{destination or 'gateways'}/lanes")
    lanes = []
    for isolation, routing, tag in MODES:
        if routing != "none" and not app.mesh:
            continue
        flow = f"pr-{number}{tag}"
        dirs = [render(source, flow, isolation, routing, push, work / f"push{push}-{tag}") for push in (1, 2)]
        lanes.append(Lane(flow, isolation, routing, dirs, [flow_objects(d) for d in dirs]))
    server.install_crds([*source.baseline, *(o for lane in lanes for push in lane.objects for o in push)])
    for lane in lanes:
        keys = [{server.key(o, destination) for o in push} for push in lane.objects]
        assert keys[0] == keys[1], f"{lane}: the second push renders other objects than the first: " \
            f"{sorted(map(show, keys[0] ^ keys[1]))}"
        lane.keys = keys[0]
    base_keys = {server.key(o, destination) for o in source.baseline}
    kinds = {(k[0], k[1]) for k in base_keys} | {(k[0], k[1]) for lane in lanes for k in lane.keys}
    return Prepared(app, source, destination, lanes, base_keys, kinds)


def _through_the_cluster(server: Server, watcher: Watcher, p: Prepared) -> Outcome:
    began = time.monotonic()
    outcome = Outcome(p.app, lanes=len(p.lanes))
    everywhere = p.base_ns.union(*(lane.namespaces for lane in p.lanes))
    watcher.watch(everywhere, p.owner)
    try:
        _apply_check_push_prune(server, watcher, p, outcome)
    except AssertionError as exc:
        outcome.failure = str(exc)
    finally:
        watcher.forget(p.owner)
        _clean_up(server, everywhere, p.owner)
        outcome.seconds = time.monotonic() - began
    return outcome


def _apply_check_push_prune(server: Server, watcher: Watcher, p: Prepared, outcome: Outcome) -> None:
    # the baseline, settled: every workload ready, every Service's EndpointSlices complete
    named = {meta(o).get("namespace") for o in p.source.baseline} | {p.destination}
    made = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in sorted(named - {None})
            if not any(o["kind"] == "Namespace" and meta(o)["name"] == ns for o in p.source.baseline)]
    server.apply_objects(made + p.source.baseline, p.destination, "gitops-baseline")
    outcome.applied += len(p.source.baseline)
    before = watcher.settle(p.base_ns, p.kinds)
    baseline = p.source.baseline
    _endpoints_stay_home(before, p.base_ns, [], baseline)
    base_pods = {meta(pod)["uid"] for pod in before.pods(p.base_ns)}
    everywhere = p.base_ns.union(*(lane.namespaces for lane in p.lanes))

    # first push, as an Argo CD directory source; then second push (new images, env values that look like numbers)
    # as Flux applies (kustomize build)
    applied = None
    for push in (0, 1):
        selectors = _selectors(applied, p.lanes) if applied else None
        for lane in p.lanes:
            keys = server.apply_directory(lane.dirs[push], p.destination, kustomize=push == 1)
            assert set(keys) == lane.keys, f"{lane}: applied {sorted(map(show, set(keys) ^ lane.keys))}"
            outcome.applied += len(keys)
        applied = watcher.settle(everywhere, p.kinds)
        when = ("applying the lanes", "the second push")[push]
        missing = [f"{lane.flow}: {show(k)}" for lane in p.lanes for k in lane.keys if applied.get(k) is None]
        assert not missing, f"objects the server does not hold after {when}: {missing}"
        _endpoints_stay_home(applied, everywhere, p.lanes, baseline, push)
        _unchanged(before, applied, p.base_keys, when)
        _pushed_values_are_strings(applied, p.lanes, p.source.targets, p.app.strings, push + 1)
        if push == 0:
            _sleep_scales_the_lane_only(server, p.lanes, p.base_keys)
            _quota_is_enforced(server, applied, p.lanes)
        else:
            moved = {k: (v, w) for k, v in selectors.items() if (w := _selectors(applied, p.lanes).get(k)) != v}
            assert not moved, f"selectors changed on the second push: {moved}"

    # prune lane by lane, as Argo CD and Flux do: the lane goes, the baseline and the other lanes stay
    held = server.lanes_held(lane.flow for lane in p.lanes)
    for i, lane in enumerate(p.lanes):
        deleted = set(server.prune(lane.flow, held[lane.flow]))
        after = server.read(p.kinds, everywhere)
        others = set().union(*(other.keys for other in p.lanes[i + 1:]))
        assert not deleted & (p.base_keys | others), f"pruning {lane} deleted " \
            f"{sorted(map(show, deleted & (p.base_keys | others)))}"
        left = [show(k) for k in lane.keys if (o := after.get(k)) is not None and not meta(o).get("deletionTimestamp")]
        assert not left, f"pruning {lane} by its labels left {left}"
        gone = [show(k) for k in others if (o := after.get(k)) is None or meta(o).get("deletionTimestamp")]
        assert not gone, f"pruning {lane} removed objects of the app's other lanes: {gone}"
        _unchanged(before, after, p.base_keys, f"pruning {lane}")
        lost = base_pods - {meta(pod)["uid"] for pod in after.pods(p.base_ns) if not meta(pod).get("deletionTimestamp")}
        assert not lost, f"pruning {lane} deleted baseline pods"

    def strays(snap: Snapshot) -> list[str]:  # what the garbage collector has still to take
        return [f"{o['kind']} {meta(o)['namespace']}/{meta(o)['name']} of {labels(o)[FLOW]} is left"
                for o in snap.in_namespaces(p.base_ns) if FLOW in labels(o)]

    final = watcher.settle(p.base_ns, p.kinds, strays)
    _unchanged(before, final, p.base_keys, "pruning every lane")


def _clean_up(server: Server, namespaces: set[str], owner: str) -> None:
    """The app's namespaces and the volumes made for its claims, deleted without waiting."""
    for ns in sorted(namespaces):
        server.request("DELETE", f"/api/v1/namespaces/{ns}", {"propagationPolicy": "Background"})
    for pv in server.list(server.resource("", "PersistentVolume"), f"{PV_LABEL}={owner}"):
        server.request("DELETE", f"/api/v1/persistentvolumes/{meta(pv)['name']}")


def _selectors(snap: Snapshot, lanes: list[Lane]) -> dict[str, object]:
    return {show(k): ((snap.get(k) or {}).get("spec") or {}).get("selector") for lane in lanes for k in lane.keys
            if k[1] in (*SCALABLE, "DaemonSet", "Service")}


def _endpoints_stay_home(snap: Snapshot, namespaces: set[str], lanes: list[Lane], baseline: list[dict],
                         push: int = 0) -> None:
    """From the EndpointSlices: a lane Service's endpoints are running pods of its lane, run by its lane's workloads
    (their owners' labels), a baseline Service's are baseline pods; every Service whose selector matches a workload
    of its own side has endpoints."""
    flows = {lane.flow: lane for lane in lanes}
    wrong, empty = [], []
    for svc in snap.of_kind("Service", namespaces):
        spec = svc.get("spec") or {}
        side = labels(svc).get(FLOW)
        if not spec.get("selector") or spec.get("type") == "ExternalName" or (side and side not in flows):
            continue
        where = f"Service {meta(svc)['namespace']}/{meta(svc)['name']} ({f'lane {side}' if side else 'baseline'})"
        pods = {meta(pod)["name"]: pod for pod in snap.pods({meta(svc)["namespace"]})}
        listed = snap.endpoints(svc)
        for name, address in listed:
            pod = pods.get(name)
            if pod is None or (pod.get("status") or {}).get("podIP") != address:
                wrong.append(f"{where}: endpoint {address} is not pod {name}'s address")
                continue
            top = snap.owner_chain_top(pod)
            if labels(pod).get(FLOW) != side or labels(top).get(FLOW) != side:
                wrong.append(f"{where}: endpoint {address} is pod {name} of {labels(pod).get(FLOW) or 'the baseline'}"
                             f", run by {top['kind']} {meta(top)['name']}")
        own = flows[side].objects[push] if side else baseline
        if not listed and pod_selected_by([_in(o, meta(svc)["namespace"]) for o in own], svc):
            empty.append(where)
    assert not wrong, "EndpointSlices cross the lane boundary:\n  " + "\n  ".join(wrong)
    assert not empty, f"Services whose workloads run but that list no endpoints: {empty}"


def _in(obj: dict, namespace: str) -> dict:
    """A rendered object that names no namespace, as applied to the destination `namespace`."""
    return obj if meta(obj).get("namespace") else {**obj, "metadata": {**meta(obj), "namespace": namespace}}


def _unchanged(before: Snapshot, after: Snapshot, keys: set[Key], when: str) -> None:
    """No baseline object changed: the same resourceVersion (so the same spec, data and metadata)."""
    changed = []
    for key in sorted(keys):
        old, new = before.get(key), after.get(key)
        if new is None or meta(new).get("deletionTimestamp"):
            changed.append(f"{show(key)} was deleted")
        elif meta(old)["resourceVersion"] != meta(new)["resourceVersion"]:
            what = [f for f in ("spec", "data", "metadata") if _content(old, f) != _content(new, f)] or ["status"]
            managers = sorted({m.get("manager", "?") for m in meta(new).get("managedFields") or []
                               if m not in (meta(old).get("managedFields") or [])})
            changed.append(f"{show(key)}: resourceVersion {meta(old)['resourceVersion']} -> "
                           f"{meta(new)['resourceVersion']}, {'/'.join(what)} changed (by {', '.join(managers)})")
    assert not changed, f"baseline objects changed by {when}:\n  " + "\n  ".join(changed)


def _content(obj: dict, part: str) -> object:
    if part != "metadata":
        return obj.get(part)
    return {k: v for k, v in meta(obj).items() if k not in ("resourceVersion", "managedFields")}


def _pushed_values_are_strings(snap: Snapshot, lanes: list[Lane], targets: tuple[str, ...], strings: bool,
                               push: int) -> None:
    """The push's images and env values, and the ConfigMap data, read back from the server as the very strings
    they were (a YAML reader on the way could have turned "1e3" into 1000 or "yes" into true)."""
    problems = []
    for lane in lanes:
        workloads = [o for k in lane.keys if pod_template(o := snap.get(k) or {}) is not None]
        for target in targets:
            want = image(target, lane.flow, push)
            found = [c for w in workloads for c in pod_template(w)["spec"].get("containers") or []
                     if c.get("image") == want]
            if not found:
                problems.append(f"{lane}: no workload runs {want}")
            for c in found:
                env = {e["name"]: e.get("value") for e in c.get("env") or []}
                bad = {k: env.get(k) for k, v in push_env(push).items() if env.get(k) != v}
                if bad:
                    problems.append(f"{lane}: {want} reads env {bad} back, not {push_env(push)}")
        if strings:
            held = [o for k in lane.keys if k[1] == "ConfigMap" and (o := snap.get(k))
                    and set(STRINGS) <= set(o.get("data") or {})]
            if not held:
                problems.append(f"{lane}: no ConfigMap of the lane holds the values that look like numbers")
            for cm in held:
                bad = {k: cm["data"][k] for k, v in STRINGS.items() if cm["data"][k] != v}
                if bad:
                    problems.append(f"{lane}: ConfigMap {meta(cm)['name']} reads {bad} back")
    assert not problems, "\n".join(problems)


def _sleep_scales_the_lane_only(server: Server, lanes: list[Lane], base_keys: set[Key]) -> None:
    """`lifecycle.sleep` runs as a ServiceAccount (the one its CronJobs use) that may get and scale each of the lane's
    Deployments and StatefulSets, and may not touch the baseline: scale, patch or delete a baseline workload, read
    its Secrets, create pods (SubjectAccessReviews, answered by the RBAC authorizer)."""
    questions: list[tuple[str, dict, bool, str]] = []  # account, resourceAttributes, allowed?, in words
    base_ns = sorted({k[2] for k in base_keys if k[2]})
    for lane in lanes:
        accounts = {}
        for o in lane.objects[0]:
            if o["kind"] == "CronJob":
                spec = o["spec"]["jobTemplate"]["spec"]["template"]["spec"]
                accounts[meta(o)["namespace"]] = f"{meta(o)['namespace']}:{spec.get('serviceAccountName', 'default')}"
        mine = sorted(k for k in lane.keys if k[1] in ("Deployment", "StatefulSet"))
        assert not mine or accounts, f"{lane}: lifecycle.sleep is set, but no CronJob of the lane scales its workloads"
        for group, kind, ns, name in mine:
            assert ns in accounts, f"{lane}: no sleep CronJob in namespace {ns}, where {kind} {name} runs"
            for verb, sub in (("get", ""), ("patch", "scale")):
                questions.append((accounts[ns], {"namespace": ns, "verb": verb, "group": group,
                                                 "resource": SCALABLE[kind], "subresource": sub, "name": name},
                                  True, f"{lane}: {verb} {kind} {ns}/{name}{'/' * bool(sub)}{sub}"))
        for account in accounts.values():
            for group, kind, ns, name in sorted(k for k in base_keys if k[1] in SCALABLE):
                for verb, sub in (("patch", "scale"), ("delete", "")):
                    questions.append((account, {"namespace": ns, "verb": verb, "group": group,
                                                "resource": SCALABLE[kind], "subresource": sub, "name": name},
                                      False, f"{account}: {verb} baseline {kind} {ns}/{name}{'/' * bool(sub)}{sub}"))
            for ns in base_ns:
                for verb, resource in (("get", "secrets"), ("create", "pods")):
                    questions.append((account, {"namespace": ns, "verb": verb, "resource": resource}, False,
                                      f"{account}: {verb} {resource} in the baseline's namespace {ns}"))
    answers = server.reviews([(account, attrs) for account, attrs, _, _ in questions])
    wrong = [f"{what}: {'allowed' if got else 'denied'}"
             for (_, _, want, what), got in zip(questions, answers, strict=True) if got != want]
    assert not wrong, "the sleep ServiceAccount's RBAC, as the authorizer answers:\n  " + "\n  ".join(wrong)


def _quota_is_enforced(server: Server, snap: Snapshot, lanes: list[Lane]) -> None:
    """In namespace isolation `lifecycle.quota` renders a ResourceQuota per flow namespace: admission refuses a pod
    beyond it and admits one within it, and every lane pod there got CPU requests (the LimitRange's defaults)."""
    for lane in lanes:
        if lane.isolation != "namespace":
            continue
        quotas = sorted(k for k in lane.keys if k[1] == "ResourceQuota")
        assert quotas, f"{lane}: lifecycle.quota is set, but the lane has no ResourceQuota"
        for key in quotas:
            # admission refuses what a quota covers until the controller has computed its usage
            quota = server.cluster.wait_for(lambda key=key: (q := server.get(key) or {}).get("status", {}).get("used")
                                            and q, what=f"the usage of ResourceQuota {key[2]}/{key[3]}")
            hard, used = quota["status"]["hard"], quota["status"]["used"]
            beyond = quantity_milli(hard["requests.cpu"]) - quantity_milli(used.get("requests.cpu", "0")) + 1000
            for milli, admitted in ((beyond, False), (10, True)):
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"probe-{milli}m", "namespace": key[2]},
                       "spec": {"containers": [{"name": "probe", "image": "registry.example/probe:1",
                                                "resources": {"requests": {"cpu": f"{milli}m", "memory": "1Mi"}}}]}}
                # the pod beyond the quota is really created (admission refuses it); the one within, in a dry run
                status, answer = server.create(pod, dry_run=admitted)
                if admitted:
                    assert status == 201, f"{lane}: a pod within ResourceQuota {key[3]} was refused: {answer}"
                else:
                    assert status == 403 and "exceeded quota" in answer.get("message", ""), \
                        f"{lane}: a pod requesting {milli}m CPU beyond ResourceQuota {key[3]} ({hard}, used {used}) " \
                        f"was not refused: {status} {answer.get('message', answer)}"
            bare = [f"{meta(pod)['name']}/{c['name']}" for pod in snap.pods({key[2]}) for c in pod["spec"]["containers"]
                    if "cpu" not in ((c.get("resources") or {}).get("requests") or {})]
            assert not bare, f"{lane}: pods in {key[2]} without CPU requests despite the LimitRange: {bare}"
