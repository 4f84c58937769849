"""Inference for `devlane init`: a repository's model -> typed facts, each with its evidence.

`infer_edges` (dependency edges, and the shared configuration that gives none), `infer_telemetry` (tracing,
metrics and log sinks: no dependency), `infer_roles` (stateful and external services, entry points, the edges
nobody can infer); the records are in `infer_facts`. Nothing here
writes anything.
"""

from __future__ import annotations

from dataclasses import replace

from ..render.model.records import Model
from .infer_edges import infer_edges, shared_configs
from .infer_facts import Inference
from .infer_roles import infer_entries, infer_roles, infer_unwired
from .infer_telemetry import split_telemetry


def infer(model: Model, editable: frozenset[str] = frozenset()) -> Inference:
    """Everything `devlane init` infers from the model, each fact with its evidence."""
    shared = shared_configs(model)
    edges, telemetry = split_telemetry(model, infer_edges(model, shared))
    sinks = {t.service for t in telemetry}
    shared = [replace(c, readers=tuple(r for r in c.readers if r not in sinks)) for c in shared]
    roles = [r for r in infer_roles(model) if r.service not in sinks]
    entries = infer_entries(model, edges)
    unwired = infer_unwired(model, edges, entries, roles, shared, sinks)
    return Inference(model, tuple(edges), tuple(roles), tuple(entries), tuple(unwired), editable, tuple(shared),
                     tuple(telemetry))
