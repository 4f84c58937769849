"""This suite's own arithmetic for a lane's footprint, independent of devlane's: Kubernetes quantities, and a pod's
requests as the scheduler counts them."""

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
