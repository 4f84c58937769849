"""This suite's own arithmetic for a lane's footprint, independent of devlane's: Kubernetes quantities, a pod's
requests as the scheduler counts them, and the most pods a workload may run under the lane's autoscalers."""

from __future__ import annotations

import re
from decimal import Decimal

UNITS = {"": 1, "m": Decimal("0.001"), "k": 1000, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}

def q(text: str | int) -> Decimal:
    number, unit = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(text)).groups()
    return Decimal(number) * UNITS[unit]


def pod_requests(spec: dict, key: str, resource: str) -> Decimal:
    """One pod as the scheduler counts it: app containers plus sidecars, or an init container plus the sidecars
    started before it, whichever is larger (a missing request is its limit, else 0)."""
    def amount(c: dict) -> Decimal:
        res = c.get("resources") or {}
        value = (res.get(key) or {}).get(resource) or (res.get("limits") or {}).get(resource) if key == "requests" \
            else (res.get(key) or {}).get(resource)
        return q(value) if value else Decimal(0)

    sidecars, peak = Decimal(0), Decimal(0)
    for c in spec.get("initContainers") or []:
        if c.get("restartPolicy") == "Always":
            sidecars += amount(c)
            peak = max(peak, sidecars)
        else:
            peak = max(peak, sidecars + amount(c))
    return max(sum((amount(c) for c in spec["containers"]), Decimal(0)) + sidecars, peak)


def most_pods(workload: dict, objects: list[dict]) -> tuple[int, str | None]:
    """The most pods a workload may run, by this suite's own reading of the autoscalers beside it: a
    HorizontalPodAutoscaler's maxReplicas or a KEDA ScaledObject's maxReplicaCount (100 when unset, KEDA's default)
    naming it as its scale target (a ScaledObject's target kind defaults to Deployment), when that is at least its
    own replicas; a KEDA ScaledJob runs maxReplicaCount jobs (100 when unset) of its parallelism. Returns the count
    and the autoscaler that sets it (Kind/name), or None."""
    spec = workload["spec"]
    if workload["kind"] == "ScaledJob":
        return spec.get("maxReplicaCount", 100) * spec["jobTargetRef"].get("parallelism", 1), None
    most, by = spec.get("replicas", 1), None
    for other in objects:
        api, kind, target = other.get("apiVersion", ""), other["kind"], other.get("spec", {}).get("scaleTargetRef", {})
        if api.startswith("autoscaling/") and kind == "HorizontalPodAutoscaler":
            limit, target_kind = other["spec"]["maxReplicas"], target.get("kind")
        elif api.startswith("keda.sh/") and kind == "ScaledObject":
            limit, target_kind = other["spec"].get("maxReplicaCount", 100), target.get("kind", "Deployment")
        else:
            continue
        if (target_kind, target.get("name")) == (workload["kind"], workload["metadata"]["name"]) and limit >= most:
            most, by = limit, f"{kind}/{other['metadata']['name']}"
    return most, by
