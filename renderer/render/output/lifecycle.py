"""What makes a lane end and stay small, as objects and metadata of the flow: its expiry, its sleep schedule, its
namespace quota.

- Expiry (`--ttl`, `lifecycle.ttl`): `created + ttl` in `flow.metadata`, `created` being `--created` or the
  rendered commit's committer time, never the clock, so the same commit renders the same bytes; `devlane gc
  --expired` removes lanes past it.
- Sleep (`lifecycle.sleep`): two CronJobs per namespace of the lane's Deployments and StatefulSets, one scaling
  them to zero at `down`, one back to their rendered replicas at `up`, run as a ServiceAccount whose Role may
  only get and scale those workloads, by name.
- Quota (`lifecycle.quota`, isolation namespace): a ResourceQuota from `policy.budget` (CPU, memory and storage
  requests) and a LimitRange giving containers without requests the defaults (a quota on requests refuses such
  pods otherwise), in each flow namespace.

Every object is named `<name>-<flowId>`, labelled with the flow, and passes the output policy a plugin's would.
"""

from __future__ import annotations

from datetime import datetime

from ...core.names import flow_labels
from ...core.quantity import bytes_exact, cpu_text, parse
from ...errors import Problem, UsageError, Where
from ..checks.footprint import LIFECYCLE_LABEL
from ..settings.lifecycle import Budget, LifecycleSettings, expires, parse_duration, rfc3339

KUBECTL = "registry.k8s.io/kubectl:v1.34.1"  # by tag: `lifecycle.sleep.image` pins it (--strict requires that)
SCALED = {"Deployment": "deployment", "StatefulSet": "statefulset"}
DEFAULT_REQUEST = {"cpu": "100m", "memory": "128Mi"}


def commit_time(root: str, revision: str | None) -> datetime | None:
    """The committer time of `revision` in the repository at `root` (None when there is no such commit)."""
    if not revision:
        return None
    import git  # only with a ttl: the render path never imports GitPython otherwise

    try:
        return git.Repo(root, search_parent_directories=True).commit(revision).committed_datetime
    except (git.GitError, ValueError, OSError, OverflowError):  # a time datetime cannot hold: none to count from
        return None


def expiry(settings: LifecycleSettings, committed: datetime | None) -> tuple[dict | None, list[Problem]]:
    """`flow.metadata` `lifecycle`: created, ttl and expires (RFC 3339, UTC); None without a ttl. With no time to
    count from, `--ttl` is a usage error; `lifecycle.ttl` (a checkout without git history, as an Argo CD
    repo-server may have) records no expiry, with a warning, rather than fail every render of the repository."""
    if not settings.ttl:
        return None, []
    created = settings.created or committed
    if created is None and settings.ttl_given:
        raise UsageError("--ttl needs a time to count from: pass --created TIME (RFC 3339), or render a commit of a "
                         "git repository (its committer time is used)")
    if created is None:
        return None, [Problem("lifecycle.ttl: no commit to count from (not a git checkout), so this render records no "
                              "expiry", Where(file=".devlane.yaml"), "render from a git checkout, or pass --ttl with "
                              "--created TIME", severity="warning", code="ttl")]
    ends = expires(created, parse_duration(settings.ttl))
    if ends is None:
        raise settings.past_last(created)
    return {"created": rfc3339(created), "ttl": settings.ttl, "expires": rfc3339(ends)}, []


def _restricted(container: dict) -> dict:
    return {**container, "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                             "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}}}


def _meta(name: str, flow_id: str, namespace: str | None, part: str) -> dict:
    return {"name": f"{name}-{flow_id}", **({"namespace": namespace} if namespace else {}),
            "labels": {**flow_labels(flow_id), LIFECYCLE_LABEL: part}}


def without_replicas(objects: list[dict]) -> tuple[list[dict], list[Problem]]:
    """The flow's objects with `spec.replicas: 1` left out of its Deployments and StatefulSets (1 is the default):
    a field the manifests do not set is not Argo CD's or Flux's to restore, so the sleep schedule's scale sticks
    until the wake job's. A workload of more replicas keeps them, with a warning: a sync would wake it."""
    out, problems = [], []
    for obj in objects:
        spec = obj.get("spec") if obj.get("kind") in SCALED and obj.get("apiVersion") == "apps/v1" else None
        if isinstance(spec, dict) and spec.get("replicas", 1) == 1:
            obj = {**obj, "spec": {k: v for k, v in spec.items() if k != "replicas"}}
        elif isinstance(spec, dict):
            problems.append(Problem(
                f"lifecycle.sleep: {obj['kind']}/{obj['metadata']['name']} keeps replicas: {spec.get('replicas')}, "
                "which Argo CD self-heal or a Flux reconcile re-applies, waking it before the wake job",
                Where(file=".devlane.yaml"), "render the lane with replicas: 1 (the default), or have Argo CD ignore "
                "/spec/replicas (ignoreDifferences with RespectIgnoreDifferences=true)", severity="warning",
                code="sleep"))
        out.append(obj)
    return out, problems


def sleep_objects(objects: list[dict], flow_id: str, sleep: dict) -> tuple[list[dict], list[Problem]]:
    """The sleep schedule of the lane's Deployments and StatefulSets (`objects`: the flow's), per namespace."""
    by_ns: dict[str | None, list[tuple[str, str, int]]] = {}
    for obj in objects:
        if obj.get("kind") in SCALED and obj.get("apiVersion") == "apps/v1":
            replicas = (obj.get("spec") or {}).get("replicas", 1)
            by_ns.setdefault(obj["metadata"].get("namespace"), []).append(
                (obj["kind"], obj["metadata"]["name"], replicas if isinstance(replicas, int) else 1))
    image = sleep.get("image") or KUBECTL
    out: list[dict] = []
    for ns, workloads in sorted(by_ns.items(), key=lambda e: e[0] or ""):
        workloads.sort()
        account = f"devlane-sleep-{flow_id}"
        names = sorted({name for _, name, _ in workloads})
        rules = [{"apiGroups": ["apps"], "resources": sorted({f"{SCALED[k]}s" for k, _, _ in workloads}),
                  "resourceNames": names, "verbs": ["get"]},
                 {"apiGroups": ["apps"], "resources": sorted({f"{SCALED[k]}s/scale" for k, _, _ in workloads}),
                  "resourceNames": names, "verbs": ["get", "patch", "update"]}]
        out += [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("devlane-sleep", flow_id, ns, "sleep")},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": _meta("devlane-sleep", flow_id, ns, "sleep"), "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": _meta("devlane-sleep", flow_id, ns, "sleep"),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
             "subjects": [{"kind": "ServiceAccount", "name": account, **({"namespace": ns} if ns else {})}]},
            _cronjob("sleep", flow_id, ns, sleep["down"], sleep.get("timeZone"), account,
                     [_scale("scale-to-0", image, 0, workloads, ns)]),
            _cronjob("wake", flow_id, ns, sleep["up"], sleep.get("timeZone"), account,
                     [_scale(f"scale-to-{n}", image, n, [w for w in workloads if w[2] == n], ns)
                      for n in sorted({r for _, _, r in workloads})]),
        ]
    problems = []
    if "@sha256:" not in image:
        problems.append(Problem(f"lifecycle.sleep runs {image}, which is not pinned by digest: the image a lane "
                                "scales itself with could change under the same tag", Where(file=".devlane.yaml"),
                                "set lifecycle.sleep.image to the image pinned by digest (IMAGE@sha256:...)",
                                severity="warning", code="unpinned-image"))
    return out, problems


def _scale(name: str, image: str, replicas: int, workloads: list[tuple[str, str, int]], ns: str | None) -> dict:
    targets = [f"{SCALED[kind]}/{wname}" for kind, wname, _ in workloads]
    return _restricted({"name": name, "image": image, "command": ["kubectl"],
                        "args": ["scale", f"--replicas={replicas}", *([f"--namespace={ns}"] if ns else []), *targets],
                        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}})


def _cronjob(name: str, flow_id: str, ns: str | None, schedule: str, zone: str | None, account: str,
             containers: list[dict]) -> dict:
    spec: dict = {"schedule": schedule, **({"timeZone": zone} if zone else {}), "concurrencyPolicy": "Forbid",
                  "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1,
                  "jobTemplate": {"spec": {"backoffLimit": 2, "template": {
                      "metadata": {"labels": {**flow_labels(flow_id), LIFECYCLE_LABEL: "sleep"}},
                      "spec": {"serviceAccountName": account, "restartPolicy": "OnFailure",
                               "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                                   "seccompProfile": {"type": "RuntimeDefault"}},
                               "containers": containers}}}}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(name, flow_id, ns, "sleep"), "spec": spec}


def quota_objects(namespaces: list[str], flow_id: str, budget: Budget, quota: dict) -> list[dict]:
    """A ResourceQuota (from the budget's CPU, memory and storage) and a LimitRange in each flow namespace."""
    hard = {}
    if budget.cpu is not None:
        hard["requests.cpu"] = cpu_text(budget.cpu)
    if budget.memory is not None:
        hard["requests.memory"] = bytes_exact(budget.memory)
    if budget.storage is not None:
        hard["requests.storage"] = bytes_exact(budget.storage)
    default = dict(quota.get("default") or {})
    # the built-in default request, where a default limit below it would make the API server refuse the LimitRange
    request = {r: v for r, v in DEFAULT_REQUEST.items() if r not in default or parse(v) <= parse(default[r])}
    limit: dict = {"type": "Container", "defaultRequest": {**request, **(quota.get("defaultRequest") or {})}}
    if default:
        limit["default"] = default
    out = []
    for ns in sorted(namespaces):
        if hard:
            out.append({"apiVersion": "v1", "kind": "ResourceQuota",
                        "metadata": _meta("devlane-quota", flow_id, ns, "quota"), "spec": {"hard": hard}})
        out.append({"apiVersion": "v1", "kind": "LimitRange", "metadata": _meta("devlane-limits", flow_id, ns, "quota"),
                    "spec": {"limits": [limit]}})
    return out
