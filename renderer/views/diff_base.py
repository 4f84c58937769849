"""The base's side of `devlane diff`, rendered beside the head's: with a spare core, in a forked child while this
process renders the head, when this process has no other thread.

A pull request that bumps every service renders a flow of every service twice, and the two renders share nothing
but their inputs' parses (through the cache); run one after the other they were two thirds of the diff. The child is
forked once the head is loaded and its targets are known, after the sandbox probe has ended (no thread of this
process may hold a lock the child needs); it opens its own session at the base (its own git reader: it never
touches the head's), sends back what the report reads of the base as JSON (each flow's files and objects, the
plugin definitions whose args `validate_change` compares, or why the base could not be read or rendered), and
exits. A child that fails in any way (a crash, a kill, something JSON cannot carry) is as if it never ran: this
process renders the base itself, so the report is the same either way.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .. import api
from ..core import parallel, progress
from ..core.cache import Uncacheable, encode
from ..errors import DevlaneError, Problem
from ..host.confine import confinement
from ..render.model.topology import build_model
from ..render.plan.flow_spec import FlowSpec
from ..session import Options

T = TypeVar("T")


@dataclass(frozen=True)
class Flow:
    """A rendered flow as the report reads it: its files' text by name and its objects in the same order."""

    flow_id: str
    files: dict[str, str]
    objects: list[dict]


@dataclass(frozen=True)
class Base:
    """What the report reads of the base: its flows (None: it did not render, `error` says why), or `unopened`
    (the repository's directory is not there at the base); the plugin definitions there (instance -> plugin, args),
    or the problems that kept them from being read."""

    flows: list[Flow] | None = None
    error: str = ""
    unopened: str | None = None
    defs: dict[str, tuple[str, Any]] = field(default_factory=dict)
    defs_problems: list[Problem] = field(default_factory=list)
    beside: bool = False  # rendered in a forked child beside the head's render

    def encoded(self) -> bytes:
        return encode({"flows": None if self.flows is None else [[f.flow_id, f.files, f.objects] for f in self.flows],
                       "error": self.error, "unopened": self.unopened,
                       "defs": {k: list(v) for k, v in self.defs.items()},
                       "defsProblems": [p.as_row() for p in self.defs_problems]})

    @classmethod
    def decoded(cls, payload: bytes) -> Base:
        data = json.loads(payload)
        flows = None if data["flows"] is None else [Flow(i, f, o) for i, f, o in data["flows"]]
        return cls(flows, data["error"], data["unopened"], {k: (v[0], v[1]) for k, v in data["defs"].items()},
                   [Problem.from_row(r) for r in data["defsProblems"]])


def render_base(options: Options, commit: str, flow: FlowSpec) -> Base:
    """The base's side: its session opened at `commit`, the flow rendered there, its plugin definitions."""
    try:
        at_base = api.open_session(replace(options, ref=commit), "preview", collect=True)
    except DevlaneError as exc:  # no such directory at base: nothing to compare with, nor to validate against
        return Base(unopened=exc.problems[0].message)
    with at_base:
        try:
            result, error = api.render_in(at_base, flow), ""
        except DevlaneError as exc:
            result, error = None, exc.problems[0].message if exc.problems else ""
        flows = None if result is None else [Flow(f.flow_id, dict(f.files), list(f.objects)) for f in result.flows]
        try:
            model = result.model if result is not None and result.model.documents is at_base.loaded.documents \
                else build_model(at_base.loaded.documents, at_base.loaded.config.namespace)
        except DevlaneError as exc:
            return Base(flows, error, defs_problems=exc.problems)
        return Base(flows, error, defs={n: (d.name, d.args) for n, d in model.plugin_defs.items()})


def with_base(options: Options, commit: str, flow: FlowSpec, render_head: Callable[[], T]) -> tuple[T, Base]:
    """`render_head()` here and the base's side, at once where there is a core for each (see the module's doc)."""
    with contextlib.suppress(Exception):  # what the probe found is the render's to say
        confinement()  # the sandbox probe's thread ends before the fork (its lock must not be held in the child)
    if parallel.available_cpus() < 2 or not parallel.can_fork() or threading.active_count() > 1:
        # another thread (a --timeout's timer, a caller's own) could hold a lock the child would wait for forever
        head = render_head()
        return head, render_base(options, commit, flow)
    heads: list[T] = []

    def child(_job: str) -> bytes | None:
        progress.install(None)  # one display per terminal: the parent's
        try:
            return render_base(options, commit, flow).encoded()
        except Uncacheable:
            return None

    done = parallel.fork_map(["head", "base"], [range(0, 1), range(1, 2)], child, lambda _: heads.append(render_head()))
    base = None
    if done[1] is not None:
        try:
            base = replace(Base.decoded(done[1]), beside=True)
        except (ValueError, TypeError, KeyError):
            base = None
    return heads[0], base if base is not None else render_base(options, commit, flow)
