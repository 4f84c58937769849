"""The passes over the whole repository that a flow's render reads, as one index on the model.

Making a flow's copies needs every label key a selector of the namespace uses (`selector_keys`) and the
Services that select pods (`service_selectors`); checking them needs every baseline selector, indexed
(`selectors`, `selector_index`), the objects that make pods (`pods`), and the names a plugin's output must
not take (`names`, `services`, `claims`). Each pass reads only outlines (the last three only names), runs at
most once per model, on first use, and the stored model (`render/stored`) hands the costly ones in decoded: a
warm render then never walks the documents its flow does not touch. Stages read the passes here and nowhere
else.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...core.k8s import identity, label_selector_matches, map_matches, pod_spec, pod_template, selector_label_keys
from ...core.names import KARDINAL
from ..inputs.document import Document, once

PodItem = tuple[str | None, dict, Any]  # the pods' namespace, their labels, what makes them
Selector = tuple[Document, str | None, dict, bool]  # baseline object, its namespace, selector, plain map
MAP_SELECTORS = ("Service", "ReplicationController")  # selectors that are plain label maps


class SelectorIndex:
    """Baseline selectors by (namespace, one required label pair), so matching one pod is not a scan.

    A pod a selector matches has every pair the selector requires, so any one of them finds it; each selector
    is filed under its pair that the fewest selectors require (`app: cart`, not the `part-of: shop` they all
    share), so a pod meets only the selectors that may match it.
    """

    def __init__(self, selectors: list[Selector]):
        self.by_pair: dict[tuple, list[tuple[int, Selector]]] = defaultdict(list)
        self.open: dict[str | None, list[tuple[int, Selector]]] = defaultdict(list)  # no required pair
        pairs: list[list[tuple] | None] = []
        uses: dict[tuple, int] = defaultdict(int)
        for _doc, ns, sel, plain in selectors:
            required = sel if plain else sel.get("matchLabels")
            try:
                mine = [(ns, *pair) for pair in required.items()] if isinstance(required, dict) else []
                for pair in mine:
                    uses[pair] += 1
            except TypeError:  # an unhashable value
                mine = []
            pairs.append(mine or None)
        for i, (entry, mine) in enumerate(zip(selectors, pairs, strict=True)):
            if mine is None:
                self.open[entry[1]].append((i, entry))
            else:
                self.by_pair[min(mine, key=lambda p: uses[p])].append((i, entry))

    def hits(self, items: list[PodItem]) -> list[tuple[Document, Any]]:
        """(baseline object, item) for every baseline selector that matches an item's pods, in selector order."""
        found = []
        for n, (ns, labels, item) in enumerate(items):
            candidates = list(self.open.get(ns, []))
            for pair in labels.items():
                candidates += self.by_pair.get((ns, *pair), [])
            for i, (doc, _, sel, plain) in candidates:
                if (map_matches if plain else label_selector_matches)(sel, labels):
                    found.append((i, n, doc, item))
        return [(doc, item) for _, _, doc, item in sorted(found, key=lambda f: f[:2])]


class RepoIndex:
    """The whole-repository passes of one model's documents, each computed on first use."""

    def __init__(self, documents: list[Document], default_namespace: str | None):
        self.documents = documents
        self.default_namespace = default_namespace

    def _namespace(self, doc: Document) -> str | None:
        return doc.namespace or self.default_namespace

    @once
    def selector_keys(self) -> dict[str | None, set[str]]:
        """Label keys used by any Service or workload selector, per namespace."""
        keys: dict[str | None, set[str]] = {}
        for doc in self.documents:
            spec = doc.outline.get("spec") if isinstance(doc.outline.get("spec"), dict) else {}
            sel = spec.get("selector")
            if isinstance(sel, dict):
                keys.setdefault(self._namespace(doc), set()).update(
                    sel if doc.kind in MAP_SELECTORS else selector_label_keys(sel))
        return keys

    @once
    def service_selectors(self) -> list[tuple[Document, str | None, dict]]:
        """Every Service that selects pods (plugin definitions aside), with its namespace and selector."""
        out = []
        for doc in self.documents:
            if doc.kind != "Service" or KARDINAL + "plugin-definition" in doc.annotations:
                continue
            selector = (doc.outline.get("spec") or {}).get("selector")
            if isinstance(selector, dict) and selector:
                out.append((doc, self._namespace(doc), selector))
        return out

    @once
    def selectors(self) -> list[Selector]:
        """Every baseline selector (Services, workload matchLabels/matchExpressions) with its namespace."""
        out = []
        for doc in self.documents:
            spec = doc.outline.get("spec") if isinstance(doc.outline.get("spec"), dict) else {}
            sel = spec.get("selector")
            if not isinstance(sel, dict) or not sel:
                continue
            plain = doc.kind in MAP_SELECTORS
            if plain or "matchLabels" in sel or "matchExpressions" in sel:
                out.append((doc, self._namespace(doc), sel, plain))
        return out

    @once
    def selector_index(self) -> SelectorIndex:
        return SelectorIndex(self.selectors)

    @once
    def pods(self) -> list[tuple[str | None, dict, Document]]:
        """(namespace, pod labels, object) of every baseline object that makes pods."""
        return [(self._namespace(d), labels, d) for d in self.documents for _, labels, _ in pod_items([d.outline])]

    @once
    def names(self) -> dict[str, frozenset[str]]:
        """The names of the repository's objects, by kind: a dev copy of each is `<name>-<flowId>` in every flow."""
        names: dict[str, set[str]] = {}
        for doc in self.documents:
            names.setdefault(doc.kind, set()).add(doc.name)
        return {kind: frozenset(found) for kind, found in names.items()}

    @once
    def services(self) -> frozenset[tuple[str | None, str]]:
        """(namespace, name) of every Service of the repository."""
        return frozenset((self._namespace(d), d.name) for d in self.documents
                         if d.kind == "Service" and d.api_version == "v1")

    @once
    def claims(self) -> set[tuple[str | None, str]]:
        """(namespace, name) of every baseline PersistentVolumeClaim (read from the documents' names alone)."""
        return {(self._namespace(d), d.name) for d in self.documents if d.kind == "PersistentVolumeClaim"}


def selector_hits(selectors: list[Selector] | SelectorIndex, items: list[PodItem]) -> list[tuple[Document, Any]]:
    index = selectors if isinstance(selectors, SelectorIndex) else SelectorIndex(selectors)
    return index.hits(items)


def _labels(value: Any) -> dict:
    return {str(k): v for k, v in value.items() if isinstance(v, (str, int, float, bool))} \
        if isinstance(value, dict) else {}


def pod_items(objects: list[dict], namespace: str | None = None) -> list[PodItem]:
    """The objects that make pods (workloads, CronJobs, Pods), with their namespace (`namespace` when they
    name none) and their pods' labels."""
    out = []
    for obj in objects:
        template = obj if obj.get("kind") == "Pod" else pod_template(obj)
        if not template:
            continue
        meta = template.get("metadata")
        out.append((identity(obj, namespace)[1], _labels(meta.get("labels") if isinstance(meta, dict) else None), obj))
    return out


def claim_mounts(obj: dict, namespace: str | None, claims: set[tuple[str | None, str]]) -> list[str]:
    """The baseline claims among those the object's pods mount."""
    ns = identity(obj, namespace)[1]
    volumes = pod_spec(obj).get("volumes") if isinstance(pod_spec(obj), dict) else None
    out = []
    for vol in volumes if isinstance(volumes, list) else []:
        source = vol.get("persistentVolumeClaim") if isinstance(vol, dict) else None
        claim = source.get("claimName") if isinstance(source, dict) else None
        if isinstance(claim, str) and (ns, claim) in claims:
            out.append(claim)
    return out
