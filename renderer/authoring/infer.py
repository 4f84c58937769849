"""Inference for `devlane init`: a repository's model -> typed facts, each with its evidence.

`infer_edges` (dependency edges, and the shared configuration that gives none), `infer_roles` (stateful and
external services, entry points, the edges nobody can infer); the records are in `infer_facts`. Nothing here
writes anything.
"""

from __future__ import annotations

from ..render.model.records import Model
from .infer_edges import infer_edges, shared_configs
from .infer_facts import Inference
from .infer_roles import infer_entries, infer_roles, infer_unwired


def infer(model: Model, editable: frozenset[str] = frozenset()) -> Inference:
    """Everything `devlane init` infers from the model, each fact with its evidence."""
    shared = shared_configs(model)
    edges = infer_edges(model, shared)
    roles = infer_roles(model)
    entries = infer_entries(model, edges)
    unwired = infer_unwired(model, edges, entries, roles, shared)
    return Inference(model, tuple(edges), tuple(roles), tuple(entries), tuple(unwired), editable, tuple(shared))
