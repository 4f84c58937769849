"""The model as JSON, for the early cutoff (`reuse`): written after a render built it, read back by the next
render whose repository has the same heads.

Documents are written as their place in `Model.documents`; the lookup tables are not written, as they
follow from the nodes (`model.assemble`). The passes over every document that a flow's render runs (selector
keys, baseline selectors, their index and pods, Services' selectors) are written with it (`model.Tables`).
"""

from __future__ import annotations

import json
from dataclasses import fields

from ..core.cache import exact
from ..errors import Problem, Where
from .clone import selector_keys, service_selectors
from .invariants import SelectorIndex, baseline_pods, baseline_selectors
from .load import Document, Loaded
from .model import Entry, Model, ServiceNode, Tables, Workload, assemble, build_model
from .plugin_defs import PluginDef

_PLUGIN_FIELDS = [f.name for f in fields(PluginDef)]


def model_for(loaded: Loaded, documents: list[Document], default_namespace: str | None) -> Model:
    """The model of `documents`: the stored one when loading found it still holds (and `documents` are the
    loaded ones, no template or pre-render step changed them), else built, and stored for the next render."""
    reuse = loaded.reuse if documents is loaded.documents else None
    if reuse is not None and reuse.model is not None:
        model = decode(reuse.model, documents, default_namespace)
        if model is not None:
            return model
    model = build_model(documents, default_namespace)
    if reuse is not None and reuse.files is not None:
        reuse.store(lambda: encode(model))
    return model


def encode(model: Model) -> dict | None:
    """The model as JSON; None when some part of it is not a document of the model or not exact JSON."""
    place = {id(d): i for i, d in enumerate(model.documents)}
    try:
        out = {
            "count": len(model.documents),
            "namespace": model.default_namespace,
            "workloads": [place[id(w.doc)] for w in model.workloads],
            "nodes": [[n.key, n.name, n.namespace, place[id(n.doc)],
                       None if n.workload is None else place[id(n.workload.doc)], n.container, n.http, n.stateful,
                       n.external, n.shared, list(n.plugins), [list(d) for d in n.dependencies],
                       sorted(n.no_rewrite), [place[id(w.doc)] for w in n.ambiguous]]
                      for n in model.services.values()],
            "plugins": [[key, [_plugin_field(getattr(p, name)) for name in _PLUGIN_FIELDS]]
                        for key, p in model.plugin_defs.items()],
            "externals": model.externals,
            "entries": [[place[id(e.doc)], e.backends, e.hosts] for e in model.entries],
            "problems": [p.as_row() for p in model.problems],
        }
    except KeyError:
        return None
    tables = _tables(model, place)
    if tables is not None:
        out["tables"] = tables
    return out if exact(out["plugins"]) else None  # the rest is names, flags and messages: strings and numbers


def _tables(model: Model, place: dict[int, int]) -> dict[str, str] | None:
    """The passes over every document, as `Tables` keeps them (None: some part is not plain JSON)."""
    try:
        selectors = baseline_selectors(model)
        rows = {
            "selector_keys": [[ns, sorted(keys)] for ns, keys in selector_keys(model).items()],
            "selectors": [[place[id(d)], ns, sel, plain] for d, ns, sel, plain in selectors],
            "services": [[place[id(d)], ns, sel] for d, ns, sel in service_selectors(model)],
            "pods": [[ns, labels, place[id(d)]] for ns, labels, d in baseline_pods(model)],
            "selector_index": SelectorIndex(selectors).stored(place),
        }
        return {name: json.dumps(value, separators=(",", ":"), allow_nan=False) for name, value in rows.items()}
    except (KeyError, TypeError, ValueError):
        return None


def _plugin_field(value: object) -> object:
    return vars(value) if isinstance(value, Where) else value


def decode(data: dict, documents: list[Document], default_namespace: str | None) -> Model | None:
    """The stored model over `documents`; None when it does not fit them (another count, a bad index) or is
    damaged."""
    if data.get("count") != len(documents) or data.get("namespace") != default_namespace:
        return None
    try:
        made = {i: Workload(documents[i]) for i in data["workloads"]}

        def workload(i: int) -> Workload:
            return made[i] if i in made else made.setdefault(i, Workload(documents[i]))

        services = {}
        for (key, name, ns, doc, wl, container, http, stateful, external, shared, plugins, deps, no_rewrite,
             ambiguous) in data["nodes"]:
            services[key] = ServiceNode(key, name, ns, documents[doc], None if wl is None else workload(wl),
                                        container, http, stateful, external, shared, tuple(plugins),
                                        tuple((d, p) for d, p in deps), frozenset(no_rewrite),
                                        tuple(workload(i) for i in ambiguous))
        plugin_defs = {}
        for key, values in data["plugins"]:
            args = dict(zip(_PLUGIN_FIELDS, values, strict=True))
            args["where"] = Where(**args["where"])
            plugin_defs[key] = PluginDef(**args)
        entries = [Entry(documents[i], backends, hosts) for i, backends, hosts in data["entries"]]
        problems = [Problem.from_row(row) for row in data["problems"]]
        tables = data.get("tables")
        return assemble(documents, services, plugin_defs, data["externals"], entries,
                        [made[i] for i in data["workloads"]], default_namespace, problems,
                        Tables(tables) if isinstance(tables, dict) else None)
    except (KeyError, IndexError, TypeError, ValueError):
        return None
