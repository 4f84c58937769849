"""`policy.budget`: a lane over any limit fails, one error per limit, naming the limit, the lane's value and the
objects that contribute most, so the fix is in the message (lower this, or raise that in the trusted config).

Limits are on requests (what the scheduler reserves), as the footprint computes them from the rendered objects.
The lanes limit counts the flows of one output directory, so it is checked where the output is written.
"""

from __future__ import annotations

from decimal import Decimal

from ...core.quantity import bytes_text, cpu_text
from ...errors import Problem, Where
from ..settings.lifecycle import Budget, Prices
from .footprint import Footprint, WorkloadUse, cost_parts

TOP = 3
WHERE = Where(file=".devlane.yaml")
HINT = ("make the lane smaller (requests, replicas: in .devlane.yaml, fewer dev services), or raise "
        "policy.budget.{limit} where the budget is set (a pull request can only lower it)")


def _error(flow_id: str, limit: str, value: str, cap: str, most: list[str]) -> Problem:
    contributors = f"; most: {', '.join(most[:TOP])}" + (f" and {len(most) - TOP} more" if len(most) > TOP else "")
    return Problem(f"flow {flow_id} is over policy.budget.{limit}: {value}, the budget is {cap}{contributors}",
                   WHERE, HINT.format(limit=limit), code="budget")


def over(fp: Footprint, budget: Budget, flow_id: str, prices: Prices | None) -> list[Problem]:
    """One error per limit of `budget` the footprint exceeds."""
    out: list[Problem] = []
    if budget.dev_copies is not None and fp.dev_copies > budget.dev_copies:
        out.append(_error(flow_id, "devCopies", f"{fp.dev_copies} dev workloads", str(budget.dev_copies),
                          [w.ref for w in fp.workloads]))
    requests = fp.requests
    by_cpu = sorted(fp.workloads, key=lambda w: (-w.requests.cpu, w.ref))
    if budget.cpu is not None and requests.cpu > budget.cpu:
        out.append(_error(flow_id, "cpu", f"its pods request {cpu_text(requests.cpu)} CPU", cpu_text(budget.cpu),
                          [f"{w.ref} {cpu_text(w.requests.cpu)}{_times(w)}" for w in by_cpu
                           if w.requests.cpu]))
    by_memory = sorted(fp.workloads, key=lambda w: (-w.requests.memory, w.ref))
    if budget.memory is not None and requests.memory > budget.memory:
        out.append(_error(flow_id, "memory", f"its pods request {bytes_text(requests.memory)} of memory",
                          bytes_text(budget.memory),
                          [f"{w.ref} {bytes_text(w.requests.memory)}{_times(w)}" for w in by_memory
                           if w.requests.memory]))
    if budget.storage is not None and fp.storage > budget.storage:
        volumes = sorted(fp.volumes, key=lambda v: (-v[1], v[0]))
        out.append(_error(flow_id, "storage", f"its volumes claim {bytes_text(fp.storage)}",
                          bytes_text(budget.storage), [f"{ref} {bytes_text(size)}" for ref, size in volumes if size]))
    for kind, cap in sorted(budget.resources.items()):
        keys = [k for k in fp.cloud if k == kind or k.rpartition("/")[2] == kind]
        count = sum(fp.cloud[k] for k in keys)
        if count > cap:
            out.append(_error(flow_id, f"resources.{kind}", f"{count} {kind}", str(cap),
                              [f"{k.rpartition('/')[2]}/{n}" for k in keys for n in fp.cloud_objects.get(k, [])]))
    if budget.cost_per_day is not None:
        out += _cost(fp, budget.cost_per_day, flow_id, prices)
    return out


def _times(w: WorkloadUse) -> str:
    if w.scaled_by:  # counted at the most its autoscaler may give it
        return f" ({w.replicas} replicas, the most {w.scaled_by} may scale it to)"
    return f" ({w.replicas} replicas)" if w.replicas != 1 else ""


def _cost(fp: Footprint, cap: Decimal, flow_id: str, prices: Prices | None) -> list[Problem]:
    if prices is None:
        return [Problem("policy.budget.costPerDay needs footprint.prices: without a price table devlane cannot "
                        "estimate a cost", WHERE, "add footprint.prices (cpuHour, memoryGiBHour, storageGiBMonth, "
                        "resources) to .devlane.yaml", code="budget")]
    if fp.cost is None or fp.cost <= cap:
        return []
    parts = cost_parts(fp, prices)
    most = [f"{name} {value:.2f}" for name, value in sorted(parts.items(), key=lambda p: (-p[1], p[0])) if value]
    return [_error(flow_id, "costPerDay", f"an estimated {fp.cost:.2f} {prices.currency} per day",
                   f"{cap:.2f}", most)]


def lanes(count: int, cap: int | None, flow_id: str) -> list[Problem]:
    """The lanes limit: `count` flows would be in the output directory once this one is written."""
    if cap is None or count <= cap:
        return []
    return [Problem(f"flow {flow_id} would be lane {count} of the output directory, over policy.budget.lanes "
                    f"({cap})", WHERE, "remove lanes that are done (devlane gc --keep-file OPEN_PRS, or devlane "
                    "delete --flow ID), or raise policy.budget.lanes where the budget is set", code="budget")]
