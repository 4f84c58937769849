"""Flow entry points: annotated Ingresses, HTTPRoutes and Gateways (and legacy Services), with their backends."""

from __future__ import annotations

from ...core.k8s import map_matches
from ...core.names import KARDINAL as K
from ...errors import Diagnostics
from ..inputs.document import Document
from .annotations import (
    ENTRY_KINDS,
    boolean,
)
from .records import Entry, Model


def entry_points(documents: list[Document], legacy: list[Document], model: Model, diags: Diagnostics) -> list[Entry]:
    """Annotated entry points, with their backends as node keys (resolved in the entry's namespace)."""
    entries: list[Entry] = []
    for doc in documents:
        ann = doc.annotations
        flag = next((k for k, kind in ENTRY_KINDS.items() if kind == doc.kind and K + k in ann), None)
        if flag is None or not boolean(ann[K + flag], K + flag, doc, diags):
            continue
        spec = doc.outline.get("spec") or {}
        backends: list[tuple[str, str | None]] = []
        hosts: list[str] = []
        if doc.kind == "Ingress":
            default = ((spec.get("defaultBackend") or {}).get("service") or {}).get("name")
            if default:
                backends.append((default, None))
            for rule in spec.get("rules") or []:
                if rule.get("host"):
                    hosts.append(rule["host"])
                for path in (rule.get("http") or {}).get("paths") or []:
                    name = ((path.get("backend") or {}).get("service") or {}).get("name")
                    if name:
                        backends.append((name, None))
        elif doc.kind == "HTTPRoute":
            hosts = list(spec.get("hostnames") or [])
            for rule in spec.get("rules") or []:
                for ref in rule.get("backendRefs") or []:
                    if ref.get("kind", "Service") == "Service" and ref.get("group", "") in ("", "core"):
                        backends.append((ref["name"], ref.get("namespace")))
        keys = set()
        for name, namespace in backends:
            key = model.service_key(name, namespace or model.namespace_of(doc))
            if key is None:
                diags.warn(f"entry routes to {name!r}, which is not a Service in the repository", doc.where())
            else:
                keys.add(key)
        entries.append(Entry(doc, sorted(keys), hosts))
    for doc in legacy:
        selector = (doc.outline.get("spec") or {}).get("selector") or {}
        backends = sorted(
            key
            for key, node in model.services.items()
            if node.workload is not None
            and model.namespace_of(doc) == node.namespace
            and selector
            and map_matches(selector, node.workload.pod_labels)
        )
        host = doc.annotations.get(K + "host")
        entries.append(Entry(doc, backends, [host] if host else []))
    return entries
