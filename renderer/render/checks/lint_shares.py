"""lint's whole-repository checks over two cores: the reach of every service (`reach.undeclared`, most of a large
repository's checking) split in two, the second share in a forked child while this process checks the first share
and runs the other checks.

Each service's reach findings depend on it alone, so the shares joined in order are what one pass finds. The child
sends its problems back as rows; a child that fails or sends what cannot be read is as if it never ran, and its share
is checked here (`core.parallel`). Without a spare core, with another thread alive (it could hold a lock the child
would wait for forever), or for a small repository, everything runs here in turn.
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Callable

from ...core import parallel
from ...errors import Problem
from ..model.records import Model
from . import reach

BESIDE_UNITS = 400  # fewer services than this: forking costs more than the share it saves
# the child's share of the units: this process also runs the other checks (the unwirable edges, most of them), about
# a quarter of the reach's work, so the child takes 5/8 and both end together (an even split left the child idle
# for a quarter of the checking at 5,000 services)
CHILD_SHARE = 5 / 8


def undeclared_beside(model: Model, shared_stores: frozenset[str], others: Callable[[], list[Problem]]
                      ) -> tuple[list[Problem], list[Problem]]:
    """(`reach.undeclared(model, shared_stores)`, `others()`), with a spare core at once (see the module's doc)."""
    units = reach.lint_units(model)
    if (len(units) < BESIDE_UNITS or parallel.available_cpus() < 2 or not parallel.can_fork()
            or threading.active_count() > 1):
        return reach.undeclared(model, shared_stores, units), others()
    mine = len(units) - round(len(units) * CHILD_SHARE)  # this process checks units[:mine], the child the rest
    here: list[list[Problem]] = []

    def child(_share: str) -> bytes:
        gc.disable()  # a collection would walk (and so copy) the parent's whole heap: the child ends soon anyway
        found = reach.undeclared(model, shared_stores, units[mine:])
        return json.dumps([p.as_row() for p in found]).encode()

    def local(_shares: range) -> None:
        here.append(reach.undeclared(model, shared_stores, units[:mine]))
        here.append(others())

    sent = parallel.fork_map(["first", "second"], [range(0, 1), range(1, 2)], child, local)
    second = _rows(sent[1])
    if second is None:
        second = reach.undeclared(model, shared_stores, units[mine:])
    return here[0] + second, here[1]


def _rows(data: bytes | None) -> list[Problem] | None:
    """The child's problems; None when it sent none or what cannot be read."""
    if data is None:
        return None
    try:
        return [Problem.from_row(row) for row in json.loads(data)]
    except (TypeError, KeyError, ValueError):
        return None
