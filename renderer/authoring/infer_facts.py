"""Facts for `devlane init`: typed records, each carrying its `Evidence` (file, document index, object, field
path, value). `infer` builds them; `init` turns them into edits; the report prints them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ..core.secrets_mask import excerpt
from ..render.inputs.document import Document
from ..render.model.records import Model


@dataclass(frozen=True)
class Evidence:
    """Where a fact comes from."""

    file: str
    index: int
    object: str  # Kind/namespace/name (Kind/name without a namespace)
    field: str  # path inside the object, e.g. spec.template.spec.containers[app].env[DB_HOST].value
    value: str

    def as_dict(self) -> dict:
        return {"file": self.file, "document": self.index, "object": self.object, "field": self.field,
                "value": self.value}

    def text(self) -> str:
        value = self.value if len(self.value) <= 60 else self.value[:57] + "..."
        return f"{self.file}#{self.index + 1} {self.object} {self.field} = {value!r}"


def evidence(doc: Document, path: str, value: object, at: int = 0) -> Evidence:
    """Evidence whose value is the part of `value` around position `at` (where the fact was read), its secrets
    masked and at most 120 characters long, as every report shows a value (`core.secrets_mask.excerpt`)."""
    return Evidence(doc.file, doc.index, object_name(doc), path, excerpt(str(value), at))


def object_name(doc: Document) -> str:
    return "/".join(p for p in (doc.kind, doc.namespace, doc.name) if p)


@dataclass(frozen=True)
class Edge:
    """`source` depends on Service `target` through `port` (a port name, or a number where it has no name)."""

    source: str  # node key of the dependent (the Service selecting the workload, or the lone workload)
    target: str  # node key of the Service
    item: str  # the dependencies item: svc:port, or svc.namespace:port in another namespace
    evidence: Evidence
    note: str = ""  # e.g. the port is unnamed, or the address names no port

    def as_dict(self) -> dict:
        return {"from": self.source, "to": self.target, "item": self.item, "evidence": self.evidence.as_dict(),
                **({"note": self.note} if self.note else {})}


@dataclass(frozen=True)
class Role:
    """A service's role other than plain caller: stateful or external, why, and the plugin that fits."""

    service: str  # node key, or an external node's name (a host in env, no Service)
    role: str  # "stateful" | "external"
    reason: str
    evidence: Evidence
    plugin: str | None = None  # the built-in plugin that fits, None: the catalogue has none yet
    store: str = ""  # the data store or external system (postgres, redis, stripe, ...)
    dependents: tuple[str, ...] = ()  # external hosts in env: the services that read them
    args: tuple[tuple[str, str], ...] = ()  # args of the plugin the inference already knows (mode: fresh)

    def as_dict(self) -> dict:
        return {"service": self.service, "role": self.role, "reason": self.reason, "store": self.store,
                "plugin": self.plugin, "evidence": self.evidence.as_dict(),
                **({"dependents": list(self.dependents)} if self.dependents else {}),
                **({"args": dict(self.args)} if self.args else {})}


@dataclass(frozen=True)
class EntryPoint:
    """An entry to mark (`doc` an Ingress/HTTPRoute) or to create (an Ingress in front of `service`)."""

    kind: str  # Ingress | HTTPRoute | suggested
    annotation: str  # ingress | route
    evidence: Evidence
    doc: Document | None = None  # the object to annotate; None: an Ingress to add
    service: str | None = None  # suggested: the Service behind the new Ingress
    port: int | None = None
    host: str | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "annotation": self.annotation, "service": self.service, "port": self.port,
                "host": self.host, "note": self.note, "evidence": self.evidence.as_dict()}


@dataclass(frozen=True)
class Unwired:
    """A dependency the manifests cannot show: a Service nothing names (side "callee": its callers have the address
    compiled in), or a service that names no other (side "caller": its own calls are compiled in or fetched at
    run time)."""

    service: str
    reason: str
    suggestion: str
    evidence: Evidence
    side: str = "callee"

    def as_dict(self) -> dict:
        return {"service": self.service, "side": self.side, "reason": self.reason, "suggestion": self.suggestion,
                "evidence": self.evidence.as_dict()}


@dataclass(frozen=True)
class Telemetry:
    """A tracing, metrics or log sink (by its image or its port): every lane reports to the baseline's, so the
    services that name it get no dependency on it."""

    service: str  # node key
    reason: str
    evidence: Evidence
    readers: tuple[str, ...]  # node keys of the services that name it

    def as_dict(self) -> dict:
        return {"service": self.service, "reason": self.reason, "readers": list(self.readers),
                "evidence": self.evidence.as_dict()}


@dataclass(frozen=True)
class SharedConfig:
    """One configuration many services read whole, naming many stores (or a directory of Services): a ConfigMap or
    Secret, or one of its entries, with every copy of it that differs at most by its reader's own name. One file
    for the whole app, not a statement of what each reader uses: it makes no edge from any reader."""

    object: str  # ConfigMap/namespace/name, with [key] for one entry
    readers: tuple[str, ...]  # node keys of the services that read it (any copy) whole
    stores: tuple[str, ...]  # node keys of the stores it names
    evidence: Evidence
    services: tuple[str, ...] = ()  # node keys of the other Services it names
    copies: tuple[str, ...] = ()  # every object holding it (object names), when more than one

    def as_dict(self) -> dict:
        return {"object": self.object, "readers": list(self.readers), "stores": list(self.stores),
                "services": list(self.services), "copies": list(self.copies), "evidence": self.evidence.as_dict()}


@dataclass(frozen=True)
class Inference:
    model: Model
    edges: tuple[Edge, ...]
    roles: tuple[Role, ...]
    entries: tuple[EntryPoint, ...]
    unwired: tuple[Unwired, ...]
    editable: frozenset[str] = frozenset()  # files init may edit in place
    shared_config: tuple[SharedConfig, ...] = ()
    telemetry: tuple[Telemetry, ...] = ()

    def dependencies(self) -> dict[str, list[str]]:
        """node key -> dependencies items, in first-seen order."""
        out: dict[str, list[str]] = defaultdict(list)
        for e in self.edges:
            if e.item not in out[e.source]:
                out[e.source].append(e.item)
        return dict(out)

    def as_dict(self) -> dict:
        return {"edges": [e.as_dict() for e in self.edges], "roles": [r.as_dict() for r in self.roles],
                "entries": [e.as_dict() for e in self.entries], "unwired": [u.as_dict() for u in self.unwired],
                "sharedConfig": [c.as_dict() for c in self.shared_config],
                "telemetry": [t.as_dict() for t in self.telemetry]}


