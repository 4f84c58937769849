"""A lane's neighbourhood: the baseline services one hop from it (they call a service of the lane, or one of the
lane's calls them), each with those services.

Why: review surfaces (`plan`, `preview`) show a lane, not the cluster. At 10,000 services a one-service lane has a
handful of dev copies and a few neighbours; listing (or drawing) every baseline service buries them, and unrolling
the call tree from the entries grows with the whole graph. One pass over the dependency edges: linear.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..model.records import Model

NOT_AFFECTED = "not affected by the flow"  # the planner's reason for a baseline service nothing else is said of


@dataclass(frozen=True)
class Neighbour:
    """A baseline service one hop from the lane."""

    name: str
    calls: tuple[str, ...]  # the lane's services it calls
    called_by: tuple[str, ...]  # the lane's services that call it

    def why(self, reasons: tuple[str, ...] | list[str] = ()) -> str:
        """Whom it calls and is called by, after the plan's own `reasons` for it (a cycle member kept baseline on
        a mesh says so), the generic one left out."""
        parts = [r for r in reasons if r != NOT_AFFECTED]
        parts += ([f"calls {', '.join(self.calls)}"] if self.calls else []) + \
            ([f"called by {', '.join(self.called_by)}"] if self.called_by else [])
        return "; ".join(parts)

    def as_dict(self) -> dict:
        return {"name": self.name, "calls": list(self.calls), "calledBy": list(self.called_by)}


def neighbours(model: Model, lane: Iterable[str]) -> dict[str, Neighbour]:
    """The baseline services (of the model, outside `lane`) one hop from `lane`, by name."""
    members = set(lane)
    calls: dict[str, set[str]] = {}
    called_by: dict[str, set[str]] = {}
    for name in model.services:
        inside = name in members
        for dep in model.edges(name):
            if inside and dep not in members:
                called_by.setdefault(dep, set()).add(name)
            elif not inside and dep in members:
                calls.setdefault(name, set()).add(dep)
    return {n: Neighbour(n, tuple(sorted(calls.get(n, ()))), tuple(sorted(called_by.get(n, ()))))
            for n in sorted(calls.keys() | called_by.keys())}
