"""The model's records: `Model` (Kardinal's topology of one repository), its nodes, workloads and entry points."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ...core.k8s import pod_template
from ...errors import Problem
from ..inputs.document import Document, once
from .plugin_definitions import PluginDef
from .repo_index import RepoIndex

WORKLOAD_KINDS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1",
                  "ReplicationController": "v1"}  # what a Service's selector may pick as its workload


POD_KINDS = {**WORKLOAD_KINDS, "DaemonSet": "apps/v1", "Job": "batch/v1",
             "CronJob": "batch/v1"}  # workloads that may be nodes of their own when no Service selects them


@dataclass(frozen=True)
class Workload:
    doc: Document

    @once
    def pod_template(self) -> dict:
        return pod_template(self.doc.obj)

    @once
    def pod_labels(self) -> dict:
        labels = (pod_template(self.doc.outline).get("metadata") or {}).get("labels")
        return labels if isinstance(labels, dict) else {}

    @once
    def container_names(self) -> list[str]:
        """The pod's containers, by name (read from the outline: the model never needs the pod spec)."""
        spec = pod_template(self.doc.outline).get("spec") or {}
        return [str(c.get("name", "")) for c in spec.get("containers") or [] if isinstance(c, dict)]


@dataclass(frozen=True)
class ServiceNode:
    """A node of the topology: a Service (with the workload its selector picks), or a workload no Service selects."""

    key: str  # identity in plan, flags and flow.metadata: the name, or namespace/name when names repeat
    name: str
    namespace: str | None
    doc: Document
    workload: Workload | None = None
    container: str | None = None
    http: bool = False
    stateful: bool = False
    external: bool = False
    shared: bool = False
    plugins: tuple[str, ...] = ()
    dependencies: tuple[tuple[str, str], ...] = ()
    no_rewrite: frozenset[str] = frozenset()
    ambiguous: tuple[Workload, ...] = ()  # the workloads a selector matches when it matches several

    @property
    def is_service(self) -> bool:
        """Whether the node is a Service (has a DNS name), not a workload standing alone."""
        return self.doc.kind == "Service"

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @once
    def port_names(self) -> frozenset[str]:
        return frozenset(str(p.get("name")) for p in (self.doc.outline.get("spec") or {}).get("ports") or []
                         if isinstance(p, dict) and p.get("name"))


@dataclass(frozen=True)
class Entry:
    """A flow entry point: an annotated Ingress/HTTPRoute/Gateway, or a legacy Service."""

    doc: Document
    backends: list[str]
    hosts: list[str]

    @property
    def kind(self) -> str:
        return self.doc.kind


@dataclass(frozen=True)
class Model:
    documents: list[Document]
    services: dict[str, ServiceNode]  # by key
    plugin_defs: dict[str, PluginDef]
    externals: dict[str, list[str]]  # external node id -> parent services (sorted)
    entries: list[Entry]
    workloads: list[Workload]
    default_namespace: str | None
    problems: list[Problem]
    service_keys: dict[tuple[str | None, str], str]  # (namespace, name) of each Service node -> key
    objects: dict[tuple[str, str | None, str], Document]  # (kind, namespace, name) -> document
    selecting: dict[int, list[ServiceNode]] = field(default_factory=dict)  # id(workload doc) -> its nodes
    index: RepoIndex = field(default=None)  # type: ignore[assignment]  # the whole-repository passes (`assemble`)

    def nodes_on(self, doc: Document) -> list[ServiceNode]:
        """The nodes whose workload is `doc` (Services selecting it, or the lone workload itself)."""
        return self.selecting.get(id(doc), [])

    def find(self, kind: str, namespace: str | None, name: str) -> Document | None:
        """The repository's object of that kind and name in `namespace` (or without a namespace)."""
        return self.objects.get((kind, namespace, name)) or self.objects.get((kind, None, name))

    def namespace_of(self, doc: Document) -> str | None:
        return doc.namespace or self.default_namespace

    def edges(self, name: str) -> list[str]:
        """Outgoing edges of a node: dependencies, then external plugin nodes."""
        node = self.services.get(name)
        if node is None:
            return []
        out = [dep for dep, _ in node.dependencies]
        out += [p for p in node.plugins if p in self.plugin_defs and self.plugin_defs[p].type == "external"]
        return out

    def service_key(self, name: str, namespace: str | None) -> str | None:
        """The key of the Service `name` as seen from `namespace` (None: not a Service of the repository)."""
        return self.service_keys.get((namespace, name)) or self.service_keys.get((None, name))

    @once
    def keys_named(self) -> dict[str, list[str]]:
        """The keys of the nodes of each name (in key order): checks that read names out of values (a pod's env,
        a Component's metadata) look them up here, once per name, never by scanning every node."""
        out: dict[str, list[str]] = defaultdict(list)
        for key in sorted(self.services):
            out[self.services[key].name].append(key)
        return dict(out)

    @once
    def keys_by_ref(self) -> dict[str, str]:
        """The first node (in the model's order) of each `namespace/name` reference."""
        out: dict[str, str] = {}
        for key, node in self.services.items():
            out.setdefault(node.ref, key)
        return out

    @once
    def external_hosts(self) -> frozenset[str]:
        """The ExternalName hosts of the services annotated `kardinal.dev.service/external`."""
        return frozenset(str((n.doc.obj.get("spec") or {}).get("externalName") or "").lower().rstrip(".")
                         for n in self.services.values() if n.external) - {""}

    @once
    def dapr_components(self) -> list[Document]:
        """The repository's Dapr Components, found by kind without decoding any other object's body (a warm render
        decodes only what its flow reads)."""
        return [d for d in self.documents if d.kind == "Component" and d.api_version.startswith("dapr.io/")]

    @once
    def keys_by_workload(self) -> dict[tuple[str, str], list[str]]:
        """The keys of the nodes whose workload is the object (kind, name), sorted: what a changed object changes."""
        out: dict[tuple[str, str], list[str]] = defaultdict(list)
        for key in sorted(self.services):
            workload = self.services[key].workload
            if workload is not None:
                out[(workload.doc.kind, workload.doc.name)].append(key)
        return dict(out)

    def named(self, words: set[str]) -> list[str]:
        """The keys of the nodes named by any of `words`, sorted."""
        keys = self.keys_named
        return sorted(k for w in words for k in keys.get(w, ()))

    def lookup(self, text: str) -> list[str]:
        """The nodes a user's `NAME`, `NAMESPACE/NAME` or `KEY` names (several: ambiguous)."""
        if text in self.services:
            return [text]
        ns, _, name = text.rpartition("/")
        return sorted(k for k, n in self.services.items() if n.name == name and (not ns or n.namespace == ns))


def assemble(documents: list[Document], services: dict[str, ServiceNode], plugin_defs: dict[str, PluginDef],
             externals: dict[str, list[str]], entries: list[Entry], workloads: list[Workload],
             default_namespace: str | None, problems: list[Problem], index: RepoIndex | None = None) -> Model:
    """A Model with its lookup tables, which follow from its nodes and documents (built, or read back from the
    cache by `stored.model_entry`, with the stored passes)."""
    keys = {(n.namespace, n.name): n.key for n in services.values() if n.is_service}
    objects: dict[tuple[str, str | None, str], Document] = {}
    for doc in documents:
        objects.setdefault((doc.kind, doc.namespace or default_namespace, doc.name), doc)
    selecting: dict[int, list[ServiceNode]] = defaultdict(list)
    for node in services.values():
        if node.workload is not None:
            selecting[id(node.workload.doc)].append(node)
    return Model(documents, services, plugin_defs, externals, entries, workloads, default_namespace, problems,
                 keys, objects, dict(selecting), index or RepoIndex(documents, default_namespace))
