"""What "ready" means for a lane's object in the cluster: kubectl's `rollout status` rules for workloads, Job
conditions, phases for pods, claims and namespaces, and kstatus's conventions (observedGeneration, the Ready and
Stalled conditions) for every other kind. Pure functions of the rendered object and the live one.

The live object must also be the rendered one: a workload whose containers run other images, or set other literal
env values, than the rendered flow says is `outdated` (the GitOps engine has not applied this push yet), so that
`status --wait` right after a push does not report the previous push's lane as ready. Images and env values are
compared because a push changes them and the API server never rewrites them.

Some objects are never awaited (`skipped`): Argo CD's PostDelete, PreDelete and SyncFail hooks, which run only at
those moments; a hook Argo CD deletes once it succeeds (`hook-delete-policy: HookSucceeded`) when it is gone; an
object Flux does not reconcile (`kustomize.toolkit.fluxcd.io/reconcile: disabled`) when it is not there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..core.k8s import all_containers, pod_spec
from .lane import LaneObject

State = Literal["ready", "progressing", "outdated", "missing", "failed", "skipped"]
STATES: tuple[State, ...] = ("ready", "progressing", "outdated", "missing", "failed", "skipped")
WAITING: frozenset[str] = frozenset({"progressing", "outdated", "missing"})  # what `--wait` waits out
HOOK, HOOK_DELETE = "argocd.argoproj.io/hook", "argocd.argoproj.io/hook-delete-policy"
FLUX_RECONCILE = "kustomize.toolkit.fluxcd.io/reconcile"
NOT_RUNNING_HOOKS = ("PostDelete", "PreDelete", "SyncFail")
POD_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"})


@dataclass(frozen=True)
class Health:
    state: State
    message: str


def health(expected: LaneObject, live: dict | None) -> Health:
    """The state of one object of the lane, from the cluster's copy of it (None: not there)."""
    skip = _skipped(expected, live)
    if skip is not None:
        return Health("skipped", skip)
    if live is None:
        return Health("missing", "not in the cluster")
    if _meta(live).get("deletionTimestamp"):
        return Health("progressing", "being deleted")
    older = outdated(expected.obj, live) if expected.kind in POD_KINDS else None
    if older is not None:
        return Health("outdated", f"the cluster has another version: {older}")
    return RULES.get(expected.kind, _generic)(live)


def _skipped(expected: LaneObject, live: dict | None) -> str | None:
    annotations = expected.annotations
    hooks = {h.strip() for h in str(annotations.get(HOOK, "")).split(",") if h.strip()}
    phase = next((h for h in NOT_RUNNING_HOOKS if h in hooks), None)
    if phase is not None:
        return f"an Argo CD {phase} hook: it runs then, not as part of the running lane"
    if live is None and hooks and "HookSucceeded" in str(annotations.get(HOOK_DELETE, "")):
        return "not in the cluster: an Argo CD hook that is deleted once it succeeds (hook-delete-policy HookSucceeded)"
    if live is None and str(annotations.get(FLUX_RECONCILE, "")) == "disabled":
        return f"not in the cluster: Flux does not apply it ({FLUX_RECONCILE}: disabled)"
    return None


def outdated(rendered: dict, live: dict) -> str | None:
    """How the live pod template differs from the rendered one in what a push changes (each container's image and
    literal env values), or None. An image the cluster pinned to a digest (`image@sha256:...`) is the same image."""
    live_containers = {c.get("name"): c for c in all_containers(pod_spec(live))}
    for want in all_containers(pod_spec(rendered)):
        name = want.get("name")
        have = live_containers.get(name)
        if have is None:
            return f"no container {name}"
        image, running = str(want.get("image")), str(have.get("image"))
        if running != image and not running.startswith(f"{image}@"):
            return f"container {name} runs {running} (rendered: {image})"
        values = {e.get("name"): e.get("value") for e in have.get("env") or [] if isinstance(e, dict)}
        for env in want.get("env") or []:
            if isinstance(env, dict) and "value" in env and str(values.get(env.get("name"))) != str(env["value"]):
                return f"container {name} sets {env.get('name')}={values.get(env.get('name'))!r} " \
                       f"(rendered: {env['value']!r})"
    return None


def _meta(obj: dict) -> dict:
    found = obj.get("metadata")
    return found if isinstance(found, dict) else {}


def _part(obj: dict, key: str) -> dict:
    found = obj.get(key)
    return found if isinstance(found, dict) else {}


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _condition(obj: dict, kind: str) -> dict | None:
    for c in _part(obj, "status").get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def _is(obj: dict, kind: str, status: str = "True") -> dict | None:
    found = _condition(obj, kind)
    return found if found is not None and found.get("status") == status else None


def _said(condition: dict) -> str:
    return ": ".join(str(condition[k]) for k in ("reason", "message") if condition.get(k))


def _unobserved(live: dict) -> Health | None:
    """The controller has not acted on the object's newest spec yet."""
    generation = _int(_meta(live).get("generation"))
    observed = _part(live, "status").get("observedGeneration")
    if isinstance(observed, int) and observed < generation:
        return Health("progressing", f"waiting for the controller to observe generation {generation}")
    return None


def _observed(rule: Callable[[dict], Health]) -> Callable[[dict], Health]:
    """`rule`, once the controller has acted on the object's newest spec (progressing until then)."""

    @functools.wraps(rule)
    def judge(live: dict) -> Health:
        return _unobserved(live) or rule(live)

    return judge


@_observed
def _deployment(live: dict) -> Health:
    stuck = _condition(live, "Progressing")
    if stuck is not None and stuck.get("reason") == "ProgressDeadlineExceeded":
        return Health("failed", f"progress deadline exceeded: {stuck.get('message', '')}".rstrip(": "))
    status = _part(live, "status")
    want = _int(_part(live, "spec").get("replicas"), 1)
    updated, total, available = (_int(status.get(k)) for k in ("updatedReplicas", "replicas", "availableReplicas"))
    if updated < want:
        return Health("progressing", f"{updated} of {want} replicas updated")
    if total > updated:
        return Health("progressing", f"{total - updated} old replicas pending termination")
    if available < updated:
        return Health("progressing", f"{available} of {updated} updated replicas available")
    return Health("ready", f"{available} of {want} replicas updated and available")


@_observed
def _statefulset(live: dict) -> Health:
    spec, status = _part(live, "spec"), _part(live, "status")
    want = _int(spec.get("replicas"), 1)
    ready, available = _int(status.get("readyReplicas")), _int(status.get("availableReplicas"), want)
    if ready < want or available < want:
        return Health("progressing", f"{min(ready, available)} of {want} replicas ready")
    strategy = _part(spec, "updateStrategy")
    partition = _int(_part(strategy, "rollingUpdate").get("partition"))
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        updated = _int(status.get("updatedReplicas"))
        if partition and updated < want - partition:
            return Health("progressing", f"{updated} of {want - partition} replicas above the partition updated")
        if not partition and status.get("updateRevision") != status.get("currentRevision"):
            return Health("progressing", f"rolling update: {updated} of {want} replicas updated")
    return Health("ready", f"{ready} of {want} replicas ready")


@_observed
def _daemonset(live: dict) -> Health:
    status = _part(live, "status")
    want = _int(status.get("desiredNumberScheduled"))
    updated, available = _int(status.get("updatedNumberScheduled")), _int(status.get("numberAvailable"))
    if updated < want:
        return Health("progressing", f"{updated} of {want} pods updated")
    if available < want:
        return Health("progressing", f"{available} of {want} updated pods available")
    return Health("ready", f"{available} of {want} pods updated and available")


@_observed
def _replicaset(live: dict) -> Health:
    want = _int(_part(live, "spec").get("replicas"), 1)
    available = _int(_part(live, "status").get("availableReplicas"))
    if available < want:
        return Health("progressing", f"{available} of {want} replicas available")
    return Health("ready", f"{available} of {want} replicas available")


def _job(live: dict) -> Health:
    failed = _is(live, "Failed")
    if failed is not None:
        return Health("failed", f"failed: {_said(failed)}".rstrip(": "))
    if _is(live, "Complete") is not None or _is(live, "SuccessCriteriaMet") is not None:
        return Health("ready", "complete")
    if _part(live, "spec").get("suspend") is True:
        return Health("progressing", "suspended")
    status = _part(live, "status")
    want = _int(_part(live, "spec").get("completions"), 1)
    return Health("progressing", f"{_int(status.get('active'))} running, {_int(status.get('succeeded'))} of {want} "
                                 "succeeded")


def _pod(live: dict) -> Health:
    status = _part(live, "status")
    phase = status.get("phase")
    if phase == "Succeeded":
        return Health("ready", "succeeded")
    if phase == "Failed":
        return Health("failed", f"failed: {status.get('message') or status.get('reason')}")
    if phase == "Running" and _is(live, "Ready") is not None:
        return Health("ready", "running and ready")
    return Health("progressing", str(phase or "Pending"))


def _phase(ready: str, failed: str | None = None) -> Callable[[dict], Health]:
    """A kind whose `status.phase` says it all (claims, namespaces)."""

    def judge(live: dict) -> Health:
        phase = str(_part(live, "status").get("phase") or "Pending")
        if phase == ready:
            return Health("ready", phase)
        return Health("failed" if phase == failed else "progressing", phase)

    return judge


@_observed
def _generic(live: dict) -> Health:
    """kstatus's conventions: (observedGeneration,) the Stalled, Reconciling and Ready conditions; an object with
    none of them is ready once it exists (a Service, a ConfigMap)."""
    stalled = _is(live, "Stalled")
    if stalled is not None:
        return Health("failed", f"stalled: {_said(stalled)}".rstrip(": "))
    reconciling = _is(live, "Reconciling")
    if reconciling is not None:
        return Health("progressing", f"reconciling: {_said(reconciling)}".rstrip(": "))
    ready = _condition(live, "Ready")
    if ready is not None and ready.get("status") != "True":
        return Health("progressing", f"not ready: {_said(ready)}".rstrip(": "))
    return Health("ready", "ready" if ready is not None else "exists")


RULES: dict[str, Callable[[dict], Health]] = {
    "Deployment": _deployment, "StatefulSet": _statefulset, "DaemonSet": _daemonset, "ReplicaSet": _replicaset,
    "ReplicationController": _replicaset, "Job": _job, "Pod": _pod,
    "PersistentVolumeClaim": _phase("Bound", "Lost"), "Namespace": _phase("Active"),
}
