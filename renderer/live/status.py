"""`devlane status`: each object of a rendered lane, found in the cluster by its kind, namespace and name, and its
readiness (`health`); with `--wait`, polled until the lane is ready, an object fails, or the time is up."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import DevlaneError, Problem, Where
from .health import STATES, WAITING, Health, health
from .kube import ApiRefusal, Cluster
from .lane import LaneObject, Reported, shown

POLL_FIRST, POLL_MOST = 0.25, 1.0  # seconds between polls: quick at first, then every second


@dataclass(frozen=True)
class ObjectStatus(Reported):
    state: str = "missing"

    def line(self) -> str:
        return f"{self.state:<11}  {self.shown()}: {self.message}"

    def as_dict(self) -> dict:
        return {**super().as_dict(), "state": self.state}


@dataclass(frozen=True)
class StatusReport:
    """The lane's objects in the cluster. `ready`: every one is ready (or never awaited); `failed`: one failed."""

    flow_id: str
    server: str
    objects: list[ObjectStatus]
    waited: float = 0.0  # seconds `--wait` waited
    timed_out: bool = False

    @property
    def failed(self) -> bool:
        return any(o.state == "failed" for o in self.objects)

    @property
    def ready(self) -> bool:
        return all(o.state in ("ready", "skipped") for o in self.objects)

    @property
    def state(self) -> str:
        return "failed" if self.failed else "ready" if self.ready else "not ready"

    def counts(self) -> dict[str, int]:
        return {s: n for s in STATES if (n := sum(o.state == s for o in self.objects))}

    def pending(self) -> list[ObjectStatus]:
        return [o for o in self.objects if o.state in WAITING]

    def summary(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items())
        why = f"; timed out after {self.waited:.0f} s" if self.timed_out else ""
        return f"flow {self.flow_id} in the cluster at {self.server}: {self.state} ({counts}{why})"

    def as_dict(self) -> dict:
        return {"flow": self.flow_id, "server": self.server, "state": self.state, "ready": self.ready,
                "timedOut": self.timed_out, "waited": round(self.waited, 1), "counts": self.counts(),
                "objects": [o.as_dict() for o in self.objects]}


def check(cluster: Cluster, objects: list[LaneObject]) -> list[ObjectStatus]:
    """Each object's state now. A kind the cluster does not serve (its CRD is not installed) is missing."""
    out = []
    for expected in objects:
        kind = cluster.kind_of(expected.api_version, expected.kind)
        namespace = (expected.namespace or cluster.namespace) if kind is None or kind.namespaced else None
        if kind is None:
            found = health(expected, None)
            if found.state == "missing":
                found = Health("missing", f"the cluster serves no kind {expected.kind} in {expected.api_version} (is "
                                          "its CustomResourceDefinition installed?)")
        else:
            try:
                found = health(expected, cluster.get(kind, namespace, expected.name))
            except ApiRefusal as refusal:
                doing = f"read {shown(expected.kind, namespace, expected.name)}"
                if refusal.status == 403:
                    raise cluster.forbidden(refusal, doing) from None
                raise DevlaneError(Problem(f"the cluster at {cluster.server} did not {doing}: {refusal.message}",
                                           Where(file=expected.file), code="cluster")) from None
        out.append(ObjectStatus(expected.api_version, expected.kind, namespace, expected.name, found.message,
                                expected.file, found.state))
    return out


def watch(cluster: Cluster, objects: list[LaneObject], flow_id: str, wait: bool = False, timeout: float = 300.0,
          on_poll: Callable[[StatusReport], None] | None = None) -> StatusReport:
    """The lane's status; with `wait`, polled (a quarter of a second at first, then every second) until it is ready
    or an object failed, or for `timeout` seconds. Each poll asks only about the objects not ready yet, and a lane
    that looks ready is asked about whole once more before it is said to be. `on_poll` sees each report that is not
    the last."""
    started = time.monotonic()
    cluster.deadline = started + timeout if wait else None
    pause = POLL_FIRST
    states, partly = check(cluster, objects), False
    while True:
        report = StatusReport(flow_id, cluster.server, list(states), time.monotonic() - started)
        if not wait or report.failed or (report.ready and not partly):
            return report
        if report.ready:  # from polls of the objects not ready: the whole lane once more (nothing went back)
            states, partly = check(cluster, objects), False
            continue
        left = started + timeout - time.monotonic()
        if left <= 0:
            return replace(report, timed_out=True)
        if on_poll is not None:
            on_poll(report)
        time.sleep(min(pause, left))
        pause = min(pause * 2, POLL_MOST)
        again = [i for i, o in enumerate(states) if o.state not in ("ready", "skipped")]
        for i, found in zip(again, check(cluster, [objects[i] for i in again]), strict=True):
            states[i] = found
        partly = True
