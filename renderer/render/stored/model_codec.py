"""The model as JSON, for the early cutoff: written after a render built it, read back by the next render whose
repository has the same heads.

Documents are written as their place in `Model.documents`; the lookup tables are not written, as they follow
from the nodes (`records.assemble`). The costly passes of the model's `RepoIndex` (selector keys, baseline
selectors and their index, Services' selectors, baseline pods) are written with it, as JSON text each, and a
decoded model's index (`StoredIndex`) decodes each when a stage first asks.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from ...core.cache import exact
from ...core.jsonio import dumps_compact
from ...errors import Problem, Where
from ..inputs.document import Document, once
from ..model.plugin_definitions import PluginDef
from ..model.records import Entry, Model, ServiceNode, Workload, assemble
from ..model.repo_index import RepoIndex, SelectorIndex

_PLUGIN_FIELDS = [f.name for f in fields(PluginDef)]


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
    """The costly passes of the model's index, as `StoredIndex` reads them (None: some part is not plain JSON)."""
    index = model.index
    try:
        rows = {
            "selector_keys": [[ns, sorted(keys)] for ns, keys in index.selector_keys.items()],
            "selectors": [[place[id(d)], ns, sel, plain] for d, ns, sel, plain in index.selectors],
            "services": [[place[id(d)], ns, sel] for d, ns, sel in index.service_selectors],
            "pods": [[ns, labels, place[id(d)]] for ns, labels, d in index.pods],
            "selector_index": _buckets(SelectorIndex(index.selectors), place),
        }
        return {name: json.dumps(value, separators=(",", ":"), allow_nan=False) for name, value in rows.items()}
    except (KeyError, TypeError, ValueError):
        return None


def _buckets(index: SelectorIndex, place: dict[int, int]) -> dict[str, str]:
    """The index's buckets as JSON text each, keyed as `_Bucketed` looks them up; ValueError when a required
    label value is not a string (JSON keys would not tell 1 from "1" as Python does)."""
    out = {}
    for prefix, buckets in (("p", index.by_pair), ("o", {(ns,): b for ns, b in index.open.items()})):
        for key, bucket in buckets.items():
            if prefix == "p" and not all(isinstance(part, str) for part in key[1:]):
                raise ValueError("a selector's label value is not a string")
            out[prefix + _bucket_key(key)] = dumps_compact(
                [[i, place[id(doc)], ns, sel, plain] for i, (doc, ns, sel, plain) in bucket])
    return out


def _bucket_key(key: tuple) -> str:
    return dumps_compact(list(key))


class _Bucketed:
    """One side of a stored `SelectorIndex` (`p`: by pair, `o`: open, by namespace), answering `get` as the
    built one's dict does, each bucket decoded when a pod's label first asks for it."""

    def __init__(self, texts: dict[str, str], documents: list[Document], prefix: str):
        self.texts, self.documents, self.prefix = texts, documents, prefix

    def get(self, key: Any, default: Any = None) -> Any:
        text = self.texts.get(self.prefix + _bucket_key(key if self.prefix == "p" else (key,)))
        if text is None:
            return default
        return [(i, (self.documents[p], ns, sel, plain)) for i, p, ns, sel, plain in json.loads(text)]


class StoredIndex(RepoIndex):
    """The index of a decoded model: each costly pass decoded from its stored rows on first use, or run as
    `RepoIndex` runs it when the rows are missing or of another form."""

    def __init__(self, texts: dict[str, str], documents: list[Document], default_namespace: str | None):
        super().__init__(documents, default_namespace)
        self.texts = texts

    def _rows(self, name: str) -> Any:
        text = self.texts.get(name)
        try:
            return json.loads(text) if isinstance(text, str) else None
        except ValueError:
            return None

    def _decoded(self, name: str, convert: Any) -> Any:
        """`convert` of the stored rows of `name`, or None: none stored, or rows of another form."""
        rows = self._rows(name)
        if rows is None:
            return None
        try:
            return convert(rows)
        except (TypeError, ValueError, IndexError, KeyError):
            return None

    @once
    def selector_keys(self) -> dict[str | None, set[str]]:
        found = self._decoded("selector_keys", lambda rows: {ns: set(keys) for ns, keys in rows})
        return super().selector_keys if found is None else found

    @once
    def service_selectors(self) -> list[tuple[Document, str | None, dict]]:
        docs = self.documents
        found = self._decoded("services", lambda rows: [(docs[p], ns, sel) for p, ns, sel in rows])
        return super().service_selectors if found is None else found

    @once
    def selectors(self) -> list[tuple[Document, str | None, dict, bool]]:
        docs = self.documents
        found = self._decoded("selectors", lambda rows: [(docs[p], ns, sel, plain) for p, ns, sel, plain in rows])
        return super().selectors if found is None else found

    @once
    def pods(self) -> list[tuple[str | None, dict, Document]]:
        docs = self.documents
        found = self._decoded("pods", lambda rows: [(ns, labels, docs[p]) for ns, labels, p in rows])
        return super().pods if found is None else found

    @once
    def selector_index(self) -> SelectorIndex:
        texts = self.texts.get("selector_index")
        buckets = self._decoded("selector_index", lambda found: (_Bucketed(found, self.documents, "p"),
                                                                 _Bucketed(found, self.documents, "o"))) \
            if isinstance(texts, str) else None
        if buckets is None:
            return super().selector_index
        index = object.__new__(SelectorIndex)
        index.by_pair, index.open = buckets  # type: ignore[assignment]
        return index


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
                        StoredIndex(tables, documents, default_namespace) if isinstance(tables, dict) else None)
    except (KeyError, IndexError, TypeError, ValueError):
        return None
