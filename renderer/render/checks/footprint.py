"""A lane's footprint, computed from its rendered objects alone: what applying it reserves and creates.

Why: what users of per-pull-request environments pay for is what the lanes leave running; a reviewer should see
it before merge, and `policy.budget` refuses a lane over its limits. Everything here comes from the objects the
flow directory holds, so it is the same whoever computes it:
- dev copies: the workloads of the lane (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod, and
  a KEDA ScaledJob);
- CPU and memory requests and limits, per pod as the scheduler counts them (the larger of the app containers
  plus sidecars and each init container plus the sidecars started before it; a missing request is the
  container's limit, else its namespace's LimitRange default), times replicas (a Job's or
  CronJob's parallelism; a DaemonSet counts one pod, per node); containers without requests are named;
- what scales: a workload that a HorizontalPodAutoscaler (its `maxReplicas`) or a KEDA ScaledObject (its
  `maxReplicaCount`, 100 when unset, as KEDA defaults it) of the lane targets counts at the most replicas it
  may run (the larger of that and its own), and a ScaledJob at `maxReplicaCount` jobs of its parallelism: what
  the lane may reserve, not what it starts with. A VerticalPodAutoscaler adds no replicas and its
  recommendations have no bound unless it sets one, so it changes nothing here (the requests counted are the
  pods' own);
- storage: each PersistentVolumeClaim's request, and a StatefulSet's claim templates times its replicas;
- cloud resources: custom resources by group/Kind (an RDS instance, a Neon branch, a topic), but for the mesh
  routes devlane itself renders;
- with `footprint.prices`, an estimated cost per day on requests.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ...core import quantity
from ...core.k8s import pod_spec
from ..plugins.object_refs import pod_spec_at
from ..settings.lifecycle import Prices

WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job", "CronJob", "Pod")
RESOURCES = ("cpu", "memory")
ROUTING_GROUPS = ("networking.istio.io", "security.istio.io", "telemetry.istio.io")  # devlane's own routes
AUTOSCALING = "keda.sh"  # KEDA: in-cluster scaling, not a cloud resource
KEDA_MAX_REPLICAS = 100  # KEDA's default maxReplicaCount (ScaledObject and ScaledJob)
GIB = Decimal(2**30)
LIFECYCLE_LABEL = "devlane.dev/lifecycle"  # `output.lifecycle`'s objects


@dataclass(frozen=True)
class Usage:
    """CPU in millicores and memory in bytes."""

    cpu: int = 0
    memory: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.cpu + other.cpu, self.memory + other.memory)

    def times(self, n: int) -> Usage:
        return Usage(self.cpu * n, self.memory * n)

    def as_dict(self, unset: bool = False) -> dict[str, int | None]:
        """`unset`: these are limits, and 0 means no container sets one: null, as the text says `none`."""
        if unset:
            return {"cpuMillicores": self.cpu or None, "memoryBytes": self.memory or None}
        return {"cpuMillicores": self.cpu, "memoryBytes": self.memory}


@dataclass(frozen=True)
class WorkloadUse:
    ref: str  # Kind/name
    replicas: int
    requests: Usage  # all replicas
    limits: Usage
    per_node: bool = False  # a DaemonSet: one pod per node, counted once
    scaled_by: str = ""  # the autoscaler whose maximum `replicas` is (Kind/name)

    def as_dict(self) -> dict[str, Any]:
        return {"object": self.ref, "replicas": self.replicas, "requests": self.requests.as_dict(),
                "limits": self.limits.as_dict(unset=True), **({"perNode": True} if self.per_node else {}),
                **({"scaledBy": self.scaled_by} if self.scaled_by else {})}


@dataclass(frozen=True)
class Footprint:
    workloads: list[WorkloadUse]
    without_requests: list[str]  # "Deployment/x container c: cpu, memory"
    volumes: list[tuple[str, int]]  # (PersistentVolumeClaim/x or StatefulSet/x claim y (n replicas), bytes)
    cloud: dict[str, int]  # group/Kind -> count
    cloud_objects: dict[str, list[str]] = field(default_factory=dict)  # group/Kind -> names
    cost: Decimal | None = None  # per day, on requests
    currency: str = "USD"

    @property
    def dev_copies(self) -> int:
        return len(self.workloads)

    @property
    def requests(self) -> Usage:
        return sum((w.requests for w in self.workloads), Usage())

    @property
    def limits(self) -> Usage:
        return sum((w.limits for w in self.workloads), Usage())

    @property
    def storage(self) -> int:
        return sum(size for _, size in self.volumes)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "devCopies": self.dev_copies, "replicas": sum(w.replicas for w in self.workloads),
            "requests": self.requests.as_dict(), "limits": self.limits.as_dict(unset=True),
            "storageBytes": self.storage, "cloudResources": dict(sorted(self.cloud.items())),
            "workloads": [w.as_dict() for w in self.workloads], "withoutRequests": self.without_requests,
            "volumes": [{"object": ref, "bytes": size} for ref, size in self.volumes],
        }
        if self.cost is not None:
            out["estimate"] = {"costPerDay": float(round(self.cost, 2)), "currency": self.currency,
                               "basis": "requests; an estimate from footprint.prices, not a bill"}
        return out


def compute(objects: Iterable[dict], prices: Prices | None = None) -> Footprint:
    """The footprint of a flow's rendered objects (any order; the result is sorted)."""
    workloads, missing, volumes, cloud, names = [], [], [], {}, {}
    objects = list(objects)
    defaults = _limit_range_defaults(objects)
    scalers = _scalers(objects)
    for obj in objects:
        kind, name = obj.get("kind"), (obj.get("metadata") or {}).get("name")
        if LIFECYCLE_LABEL in _mapping((obj.get("metadata") or {}).get("labels")):
            continue  # devlane's sleep schedule and quota: not what the lane runs
        if (kind in WORKLOADS and _group(obj) in ("", "apps", "batch")) or _scaled_job(obj):
            namespace = (obj.get("metadata") or {}).get("namespace")
            use, unrequested = _workload(obj, defaults.get(namespace, {}), scalers.get((namespace, kind, name)))
            workloads.append(use)
            missing += unrequested
            if kind == "StatefulSet":
                volumes += _claim_templates(obj, use.replicas)
        elif kind == "PersistentVolumeClaim" and _group(obj) == "":
            volumes.append((f"PersistentVolumeClaim/{name}", _storage(_mapping(obj.get("spec")))))
        elif _custom(obj):
            key = f"{_group(obj)}/{kind}"
            cloud[key] = cloud.get(key, 0) + 1
            names.setdefault(key, []).append(str(name))
    out = Footprint(sorted(workloads, key=lambda w: w.ref), sorted(missing), sorted(volumes), cloud,
                    {k: sorted(v) for k, v in names.items()})
    if prices is None:
        return out
    return Footprint(out.workloads, out.without_requests, out.volumes, out.cloud, out.cloud_objects,
                     cost_per_day(out, prices), prices.currency)


def cost_parts(fp: Footprint, prices: Prices) -> dict[str, Decimal]:
    """The estimated cost per day, on requests, by what makes it: CPU (cores x 24 x per vCPU-hour), memory (GiB x 24
    x per GiB-hour), storage (GiB x per GiB-month / 30), and each custom resource kind (count x its price per day,
    by group/Kind, else by Kind)."""
    requests = fp.requests
    parts = {"CPU": Decimal(requests.cpu) / 1000 * 24 * prices.cpu_hour,
             "memory": Decimal(requests.memory) / GIB * 24 * prices.memory_gib_hour,
             "storage": Decimal(fp.storage) / GIB * prices.storage_gib_month / 30}
    for key, count in sorted(fp.cloud.items()):
        parts[key] = prices.resources.get(key, prices.resources.get(key.rpartition("/")[2], Decimal(0))) * count
    return parts


def cost_per_day(fp: Footprint, prices: Prices) -> Decimal:
    return sum(cost_parts(fp, prices).values(), Decimal(0))


def _group(obj: dict) -> str:
    version = obj.get("apiVersion")
    return version.rpartition("/")[0] if isinstance(version, str) else ""


def _custom(obj: dict) -> bool:
    """A custom resource: an API group of its own (a dot in it), not Kubernetes' (`*.k8s.io`), not a mesh route."""
    group = _group(obj)
    return "." in group and not group.endswith(".k8s.io") and group not in (*ROUTING_GROUPS, AUTOSCALING)


def _count(value: object, default: int) -> int:
    """A replica count as the API reads it: a non-negative integer, else `default`."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _scaled_job(obj: dict) -> bool:
    return obj.get("kind") == "ScaledJob" and _group(obj) == AUTOSCALING


def _scalers(objects: list[dict]) -> dict[tuple[Any, Any, Any], tuple[int, str]]:
    """Per target workload (namespace, kind, name), the most replicas an autoscaler of the lane may give it and
    that autoscaler (Kind/name): HorizontalPodAutoscalers (`maxReplicas`) and KEDA ScaledObjects
    (`maxReplicaCount`, default 100; a target's kind defaults to Deployment). The largest wins."""
    out: dict[tuple[Any, Any, Any], tuple[int, str]] = {}
    for obj in objects:
        kind, group, spec = obj.get("kind"), _group(obj), _mapping(obj.get("spec"))
        if kind == "HorizontalPodAutoscaler" and group == "autoscaling":
            most, default_kind = spec.get("maxReplicas"), None
            if not isinstance(most, int) or isinstance(most, bool) or most < 1:
                continue  # the API server refuses it; strict validation names it
        elif kind == "ScaledObject" and group == AUTOSCALING:
            most, default_kind = _count(spec.get("maxReplicaCount"), KEDA_MAX_REPLICAS), "Deployment"
        else:
            continue
        target = _mapping(spec.get("scaleTargetRef"))
        meta = _mapping(obj.get("metadata"))
        key = (meta.get("namespace"), target.get("kind") or default_kind, target.get("name"))
        found = (most, f"{kind}/{meta.get('name')}")
        if key not in out or (found[0], out[key][1]) > (out[key][0], found[1]):  # a tie: the first by name
            out[key] = found
    return out


def _replicas(obj: dict) -> tuple[int, bool]:
    spec = _mapping(obj.get("spec"))
    kind = obj.get("kind")
    if kind == "DaemonSet":
        return 1, True
    if kind == "Pod":
        return 1, False
    if _scaled_job(obj):  # up to maxReplicaCount jobs at once, each of its parallelism
        return (_count(spec.get("maxReplicaCount"), KEDA_MAX_REPLICAS)
                * _count(_mapping(spec.get("jobTargetRef")).get("parallelism"), 1)), False
    if kind == "Job":
        value = spec.get("parallelism", 1)
    elif kind == "CronJob":
        value = _mapping(_mapping(spec.get("jobTemplate")).get("spec")).get("parallelism", 1)
    else:
        value = spec.get("replicas", 1)
    return _count(value, 1), False


def _mapping(value: object) -> dict:
    """`value` when it is a mapping, else {}: a malformed field counts as absent (strict validation names it)."""
    return value if isinstance(value, dict) else {}


def _resources(container: dict, field_name: str) -> dict:
    return _mapping(_mapping(container.get("resources")).get(field_name))


def _container_usage(container: dict, field_name: str) -> Usage:
    values = _resources(container, field_name)
    return Usage(_amount(values.get("cpu"), quantity.millicores), _amount(values.get("memory"), quantity.whole))


def _amount(value: object, unit: Any) -> int:
    if value is None:
        return 0
    try:
        return unit(quantity.parse(value))
    except (ValueError, ArithmeticError):
        return 0  # the API server refuses it; strict validation names it


def _pod_usage(spec: dict, field_name: str) -> Usage:
    """One pod as the scheduler counts it (KEP-753 sidecars: init containers with restartPolicy Always keep running)."""
    app = sum((_container_usage(c, field_name) for c in spec.get("containers") or [] if isinstance(c, dict)), Usage())
    sidecars, peak = Usage(), Usage()
    for c in spec.get("initContainers") or []:
        if not isinstance(c, dict):
            continue
        use = _container_usage(c, field_name)
        if c.get("restartPolicy") == "Always":
            sidecars = sidecars + use
            peak = Usage(max(peak.cpu, sidecars.cpu), max(peak.memory, sidecars.memory))
        else:
            peak = Usage(max(peak.cpu, sidecars.cpu + use.cpu), max(peak.memory, sidecars.memory + use.memory))
    running = app + sidecars
    return Usage(max(running.cpu, peak.cpu), max(running.memory, peak.memory))


def _limit_range_defaults(objects: list[dict]) -> dict[str | None, dict]:
    """Per namespace, the default container requests a LimitRange among the objects gives (the API server's
    admission fills them in for containers that set none, as `lifecycle.quota` renders one)."""
    out: dict[str | None, dict] = {}
    for obj in objects:
        if obj.get("kind") == "LimitRange" and _group(obj) == "":
            ns = (obj.get("metadata") or {}).get("namespace")
            for limit in _mapping(obj.get("spec")).get("limits") or []:
                if isinstance(limit, dict) and limit.get("type") == "Container":
                    out[ns] = {**out.get(ns, {}), **_mapping(limit.get("defaultRequest"))}
    return out


def _workload(obj: dict, default_request: dict | None = None,
              scaled: tuple[int, str] | None = None) -> tuple[WorkloadUse, list[str]]:
    ref = f"{obj['kind']}/{obj['metadata']['name']}"
    found = pod_spec_at(obj) if _scaled_job(obj) else None  # its pod spec is its job target's
    spec = _mapping(found[1]) if found is not None else pod_spec(obj)
    replicas, per_node = _replicas(obj)
    scaled_by = ""
    if scaled is not None and not per_node and scaled[0] >= replicas:
        replicas, scaled_by = scaled
    missing = []
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or []:
            if not isinstance(c, dict):
                continue
            requests = _resources(c, "requests")
            # Kubernetes defaults requests to limits: a container with limits only does request them
            limits = _resources(c, "limits")
            lacking = [r for r in RESOURCES if r not in requests and r not in limits]
            if lacking:
                missing.append(f"{ref} container {c.get('name')}: no {' or '.join(lacking)} request")
    requests = _pod_usage(_requests_defaulted(spec, default_request or {}), "requests")
    return WorkloadUse(ref, replicas, requests.times(replicas), _pod_usage(spec, "limits").times(replicas),
                       per_node, scaled_by), missing


def _requests_defaulted(spec: dict, default_request: dict) -> dict:
    """The pod spec with each container's missing requests taken from its limits, as the API server defaults them,
    then from its namespace's LimitRange `default_request`, as admission does."""
    out = dict(spec)
    for group in ("initContainers", "containers"):
        containers = []
        for c in spec.get(group) or []:
            if isinstance(c, dict):
                requests = {**default_request, **_resources(c, "limits"), **_resources(c, "requests")}
                c = {**c, "resources": {**_mapping(c.get("resources")), "requests": requests}}
            containers.append(c)
        if group in spec:
            out[group] = containers
    return out


def _storage(spec: dict) -> int:
    return _amount(_resources(spec, "requests").get("storage"), quantity.whole)


def _claim_templates(obj: dict, replicas: int) -> list[tuple[str, int]]:
    out = []
    for t in _mapping(obj.get("spec")).get("volumeClaimTemplates") or []:
        if isinstance(t, dict):
            name = (t.get("metadata") or {}).get("name")
            out.append((f"StatefulSet/{obj['metadata']['name']} claim {name} ({replicas} replicas)",
                        _storage(_mapping(t.get("spec"))) * replicas))
    return out


def summary(record: dict, lifecycle: dict | None = None) -> list[tuple[str, str]]:
    """The footprint as `flow.metadata` records it (and the lane's expiry), as short (what, value) rows: one table
    for the flow README, the PR comment, `plan` and `preview`."""
    req, lim = record["requests"], record["limits"]
    pods = f" ({record['replicas']} pods)" if record["replicas"] != record["devCopies"] else ""

    def pair(key: str, text: Any) -> str:  # no limit (null; 0 in records written before): no container sets one
        return f"{text(req[key])} / {text(lim[key]) if lim[key] else 'none'}"

    rows = [("Dev workloads", f"{record['devCopies']}{pods}"),
            ("CPU requests / limits", pair("cpuMillicores", quantity.cpu_text)),
            ("Memory requests / limits", pair("memoryBytes", quantity.bytes_text))]
    scaled = [w for w in record.get("workloads") or [] if w.get("scaledBy")]
    if scaled:
        more = f" and {len(scaled) - 2} more" if len(scaled) > 2 else ""
        rows.append(("Autoscaled", "; ".join(f"{w['object']} up to {w['replicas']} pods ({w['scaledBy']})"
                                            for w in scaled[:2]) + more))
    missing = record.get("withoutRequests") or []
    if missing:
        more = f" and {len(missing) - 2} more" if len(missing) > 2 else ""
        rows.append(("Without requests", f"{len(missing)}: {'; '.join(missing[:2])}{more}"))
    if record["volumes"]:
        rows.append(("Storage", f"{quantity.bytes_text(record['storageBytes'])} in {len(record['volumes'])} "
                                f"volume{'s' if len(record['volumes']) != 1 else ''}"))
    if record["cloudResources"]:
        rows.append(("Cloud resources", ", ".join(f"{n} {k.rpartition('/')[2]}"
                                                  for k, n in record["cloudResources"].items())))
    estimate = record.get("estimate")
    if estimate:
        rows.append(("Estimated cost", f"~{estimate['costPerDay']:.2f} {estimate['currency']} per day (an estimate "
                                       "on requests, from footprint.prices)"))
    if lifecycle:
        rows.append(("Expires", f"{lifecycle['expires']} (ttl {lifecycle['ttl']} from {lifecycle['created']})"))
    return rows
