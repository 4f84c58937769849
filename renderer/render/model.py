"""Model: documents -> `Model`, Kardinal's topology.

Services are the nodes, keyed by their name, or by `namespace/name` where two namespaces use the
same name (identity is namespace/name). A workload that no Service selects (a queue consumer, a
Job, a CronJob) is a node too, so a flow can target it and annotate dependencies on it. Edges come
from `kardinal.dev.service/dependencies` (`svc:port`, or `svc.namespace:port` across namespaces)
and from `type: external` plugins. Every problem is collected rather than raised, so `devlane
lint` can report all of them at once; `render` fails on any error.
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..core.k8s import LabelIndex, map_matches, pod_template
from ..core.names import DEVLANE as D
from ..core.names import KARDINAL as K
from ..errors import Diagnostics, Problem, Where
from .load import Document, once
from .plugin_defs import PluginDef, add_plugin_def, parse_plugin_definition

WORKLOAD_KINDS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1",
                  "ReplicationController": "v1"}  # what a Service's selector may pick as its workload
POD_KINDS = {**WORKLOAD_KINDS, "DaemonSet": "apps/v1", "Job": "batch/v1",
             "CronJob": "batch/v1"}  # workloads that may be nodes of their own when no Service selects them
KNOWN_KARDINAL = {
    "dependencies", "stateful", "external", "shared", "plugin-definition", "plugins",
    "ingress", "gateway", "route", "host",
}
KNOWN_DEVLANE = {"container", "workload", "no-rewrite", "flow", "volume"}
SERVICE_ONLY = {"dependencies", "stateful", "external", "shared", "plugin-definition", "plugins", "host"}
NODE_KEYS = {"dependencies", "stateful", "plugins"}  # also read on a workload that is a node of its own
ENTRY_KINDS = {"ingress": "Ingress", "gateway": "Gateway", "route": "HTTPRoute"}
T = TypeVar("T")


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


class Tables:
    """What the passes over every document (selector keys, baseline selectors and their index, Services'
    selectors, baseline pods) found, stored with the model as JSON text each and decoded when a stage first
    asks: a render that reuses the model then never reads the objects its flow does not touch."""

    def __init__(self, texts: dict[str, str]):
        self.texts = texts
        self.decoded: dict[str, Any] = {}

    def rows(self, name: str) -> Any:
        if name not in self.decoded:
            text = self.texts.get(name)
            try:
                self.decoded[name] = json.loads(text) if isinstance(text, str) else None
            except ValueError:
                self.decoded[name] = None
        return self.decoded[name]


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
    tables: Tables | None = None  # the passes over every document, stored with the model (`model_store`)

    def table(self, name: str, convert: Callable[[Any], T]) -> T | None:
        """`convert` of the stored rows of the pass `name` (places in `documents`), or None: none stored, or
        rows of another form (the caller then runs the pass)."""
        rows = self.tables.rows(name) if self.tables is not None else None
        if rows is None:
            return None
        try:
            return convert(rows)
        except (TypeError, ValueError, IndexError, KeyError):
            return None

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

    def lookup(self, text: str) -> list[str]:
        """The nodes a user's `NAME`, `NAMESPACE/NAME` or `KEY` names (several: ambiguous)."""
        if text in self.services:
            return [text]
        ns, _, name = text.rpartition("/")
        return sorted(k for k, n in self.services.items() if n.name == name and (not ns or n.namespace == ns))


def _bool(value: object, key: str, doc: Document, diags: Diagnostics) -> bool | None:
    text = str(value).strip()
    if text in ("true", "false"):
        return text == "true"
    diags.error(f'annotation {key} must be "true" or "false", got {value!r}', doc.where(), code="bad-annotation")
    return None


def build_model(documents: list[Document], default_namespace: str | None = None) -> Model:
    """Build the topology; problems go to `model.problems`.

    `default_namespace` is the one `.devlane.yaml` names; nothing infers it from other objects (Argo CD
    and Flux put objects without a namespace in their destination namespace, whatever else the repo holds).
    """
    diags = Diagnostics()

    def ns(doc: Document) -> str | None:
        return doc.namespace or default_namespace

    _check_annotation_keys(documents, diags)
    if default_namespace is None:
        _check_mixed_namespaces(documents, diags)
    workloads = [Workload(d) for d in documents if WORKLOAD_KINDS.get(d.kind) == d.api_version]
    index = LabelIndex()
    for w in workloads:
        index.add(ns(w.doc), w.pod_labels, w)

    plugin_defs: dict[str, PluginDef] = {}
    nodes: list[ServiceNode] = []
    legacy_entries: list[Document] = []
    seen: dict[tuple[str | None, str], Document] = {}
    for doc in documents:
        if doc.kind != "Service" or doc.api_version != "v1":
            continue
        ann = doc.annotations
        if K + "plugin-definition" in ann:
            for pdef in parse_plugin_definition(ann[K + "plugin-definition"], doc, diags):
                add_plugin_def(pdef, plugin_defs, diags)
            continue
        if ann.get(K + "ingress") is not None:
            diags.warn("a Service-level kardinal.dev.service/ingress (+ host) entry is a legacy form", doc.where(),
                       hint="annotate an Ingress or HTTPRoute with kardinal.dev.service/ingress|route instead",
                       code="deprecated")
            legacy_entries.append(doc)
            continue
        identity = (ns(doc), doc.name)
        if identity in seen:
            other = seen[identity]
            where = f" in namespace {identity[0]}" if identity[0] else ""
            diags.error(
                f"duplicate Service {doc.name!r}{where}: also defined in {other.file} (document {other.index + 1})",
                doc.where(),
                hint="service names must be unique per namespace; exclude template or copy files with `exclude:`",
                code="duplicate-service",
            )
            continue
        seen[identity] = doc
        nodes.append(_service_node(doc, ns(doc), index, diags, plugin_defs))
    nodes += _workload_nodes(documents, nodes, ns, diags, plugin_defs)
    keyed = _keyed(nodes)
    keys = {(n.namespace, n.name): n.key for n in keyed.values() if n.is_service}
    services = _resolve_references(keyed, keys, plugin_defs, diags)
    externals: dict[str, list[str]] = defaultdict(list)
    for name in sorted(services):
        node = services[name]
        if node.external:
            externals.setdefault(name, [])
        for p in node.plugins:
            pdef = plugin_defs.get(p)
            if pdef and pdef.type == "external":
                externals[p].append(name)
    _check_cycles(services, diags)
    model = assemble(documents, services, plugin_defs, dict(externals), [], workloads, default_namespace,
                     diags.problems)
    model.entries.extend(_entries(documents, legacy_entries, model, diags))
    return model


def assemble(documents: list[Document], services: dict[str, ServiceNode], plugin_defs: dict[str, PluginDef],
             externals: dict[str, list[str]], entries: list[Entry], workloads: list[Workload],
             default_namespace: str | None, problems: list[Problem], tables: Tables | None = None) -> Model:
    """A Model with its lookup tables, which follow from its nodes and documents (built, or read back from the
    cache by `model_store`, with the stored passes)."""
    keys = {(n.namespace, n.name): n.key for n in services.values() if n.is_service}
    objects: dict[tuple[str, str | None, str], Document] = {}
    for doc in documents:
        objects.setdefault((doc.kind, doc.namespace or default_namespace, doc.name), doc)
    selecting: dict[int, list[ServiceNode]] = defaultdict(list)
    for node in services.values():
        if node.workload is not None:
            selecting[id(node.workload.doc)].append(node)
    return Model(documents, services, plugin_defs, externals, entries, workloads, default_namespace, problems,
                 keys, objects, dict(selecting), tables)


def _with(node: ServiceNode, **changes: Any) -> ServiceNode:
    """`dataclasses.replace` for the model's own nodes, without its per-call field introspection (twice per
    Service, a tenth of a warm render at 5,000 services): a shallow copy with the changed fields set."""
    new = copy.copy(node)
    for name, value in changes.items():
        object.__setattr__(new, name, value)
    return new


def _keyed(nodes: list[ServiceNode]) -> dict[str, ServiceNode]:
    """Nodes by key: the name where it is unique, else `namespace/name` (identity is namespace/name)."""
    count: dict[str, int] = defaultdict(int)
    for n in nodes:
        count[n.name] += 1
    out: dict[str, ServiceNode] = {}
    for n in nodes:
        key = n.name if count[n.name] == 1 else n.ref
        if key in out:  # a Service and a lone workload of one namespace/name
            key = f"{n.doc.kind.lower()}/{n.ref}"
        out[key] = n if key == n.key else _with(n, key=key)  # nodes are made with their name as key
    return out


def _workload_nodes(documents: list[Document], nodes: list[ServiceNode], ns, diags: Diagnostics,
                    plugin_defs: dict[str, PluginDef]) -> list[ServiceNode]:
    """Workloads that no Service selects (queue consumers, Jobs, CronJobs) are nodes of their own."""
    selected = {id(w.doc) for n in nodes for w in ((n.workload,) if n.workload else n.ambiguous)}
    out = []
    for doc in documents:
        if (POD_KINDS.get(doc.kind) != doc.api_version or id(doc) in selected or not doc.name
                or not pod_template(doc.outline)):
            continue
        workload = Workload(doc)
        stateful, deps, plugins, no_rewrite = _node_annotations(doc, doc.kind == "StatefulSet", diags, plugin_defs)
        out.append(ServiceNode(doc.name, doc.name, ns(doc), doc, workload,
                               _target_container(workload, doc.annotations.get(D + "container"), doc, diags),
                               stateful=stateful, plugins=tuple(plugins), dependencies=tuple(deps),
                               no_rewrite=no_rewrite))
    return out


def _node_annotations(doc: Document, stateful: bool, diags: Diagnostics, plugin_defs: dict[str, PluginDef]):
    """stateful, dependencies, plugins and no-rewrite, as annotated on a Service or a lone workload."""
    ann = doc.annotations
    if K + "stateful" in ann:
        value = _bool(ann[K + "stateful"], K + "stateful", doc, diags)
        stateful = stateful if value is None else value
    dependencies = _parse_dependencies(str(ann[K + "dependencies"]), doc, diags) if K + "dependencies" in ann else []
    plugins = []
    if K + "plugins" in ann:
        plugins = _parse_plugins_ref(ann[K + "plugins"], doc, stateful, doc.where(), diags, plugin_defs)
    no_rewrite = (frozenset(x.strip() for x in str(ann[D + "no-rewrite"]).split(",") if x.strip())
                  if D + "no-rewrite" in ann else frozenset())
    return stateful, dependencies, plugins, no_rewrite


def _check_mixed_namespaces(documents: list[Document], diags: Diagnostics) -> None:
    """Objects with and without a namespace side by side: the latter land in a destination devlane cannot know."""
    named = sorted({d.namespace for d in documents if d.namespace})
    bare = [d for d in documents if not d.namespace and d.kind in ("Service", *POD_KINDS, "ConfigMap")]
    if named and bare:
        diags.warn(f"{len(bare)} object(s) name no namespace (first: {bare[0].ref}) while others name "
                   f"{', '.join(named)}: devlane keeps them apart, so a Service without a namespace selects only "
                   "workloads without one", bare[0].where(),
                   hint="set `namespace:` in .devlane.yaml to the Argo CD / Flux destination namespace",
                   code="mixed-namespaces")


def _check_annotation_keys(documents: list[Document], diags: Diagnostics) -> None:
    for doc in documents:
        for key in doc.annotations:
            if key.startswith(K):
                short = key[len(K) :]
                if short not in KNOWN_KARDINAL:
                    diags.error(f"unknown annotation {key}", doc.where(),
                                hint=f"known keys: {', '.join(K + k for k in sorted(KNOWN_KARDINAL))}",
                                code="unknown-key")
                elif short in SERVICE_ONLY and doc.kind != "Service" and not (short in NODE_KEYS
                                                                              and doc.kind in POD_KINDS):
                    diags.warn(f"{key} is only read on Services; ignored on {doc.kind}", doc.where())
                elif short in ENTRY_KINDS and doc.kind not in (ENTRY_KINDS[short], "Service"):
                    diags.warn(f"{key} is only read on {ENTRY_KINDS[short]} objects; ignored", doc.where())
            elif key.startswith(D) and key[len(D) :] not in KNOWN_DEVLANE:
                diags.error(f"unknown annotation {key}", doc.where(),
                            hint=f"known keys: {', '.join(D + k for k in sorted(KNOWN_DEVLANE))}", code="unknown-key")
            elif key == "kardinal.dev/plugins":
                diags.warn("annotation kardinal.dev/plugins is not read (Kardinal never read it either)", doc.where(),
                           hint="use kardinal.dev.service/plugins with a plugin-definition pseudo-Service",
                           code="ignored-key")


def _service_node(
    doc: Document, namespace: str | None, index: LabelIndex, diags: Diagnostics, plugin_defs: dict[str, PluginDef]
) -> ServiceNode:
    ann, spec = doc.annotations, doc.outline.get("spec") or {}
    ports = spec.get("ports")
    first = next((p for p in ports if isinstance(p, dict)), None) if isinstance(ports, list) else None
    workload, ambiguous = _workload(doc, namespace, index, diags)
    flags = {"external": False, "shared": False}
    for key in flags:
        if K + key in ann:
            value = _bool(ann[K + key], K + key, doc, diags)
            if value is not None:
                flags[key] = value
    stateful, dependencies, plugins, no_rewrite = _node_annotations(
        doc, workload is not None and workload.doc.kind == "StatefulSet", diags, plugin_defs)
    return ServiceNode(doc.name, doc.name, namespace, doc, workload,
                       _target_container(workload, ann.get(D + "container"), doc, diags),
                       first is not None and str(first.get("appProtocol", "")).upper() == "HTTP", stateful,
                       flags["external"], flags["shared"], tuple(plugins), tuple(dependencies), no_rewrite, ambiguous)


def _workload(doc: Document, namespace: str | None, index: LabelIndex,
              diags: Diagnostics) -> tuple[Workload | None, tuple[Workload, ...]]:
    """The one workload the Service's selector matches (`devlane.dev/workload` picks one of several), and
    all of them when it matches several: that blocks only flows that need this Service's dev version."""
    spec = doc.outline.get("spec") or {}
    selector = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
    if not selector:
        return None, ()
    found = [w for w in index.candidates(namespace, selector) if map_matches(selector, w.pod_labels)]
    wanted = doc.annotations.get(D + "workload")
    if wanted:
        found = [w for w in found if w.doc.name == wanted]
        if not found:
            diags.error(f"devlane.dev/workload names {wanted!r}, which this Service's selector does not match",
                        doc.where(), code="bad-annotation")
    if len(found) > 1:
        return None, tuple(found)
    for w in found:
        if not w.doc.annotations:
            continue
        for key in sorted(k for k in w.doc.annotations if k.startswith(K) and k[len(K):] in NODE_KEYS):
            diags.warn(f"{key} on {w.doc.ref} is not read: Service {doc.name} selects it", w.doc.where(),
                       hint=f"move the annotation to Service {doc.name}", code="ignored-key")
    return (found[0] if found else None), ()


def _target_container(workload: Workload | None, wanted: object, doc: Document, diags: Diagnostics) -> str | None:
    """`devlane.dev/container` names the target; default: the only container, else the first."""
    if workload is None:
        if wanted:
            diags.warn("devlane.dev/container is set but no workload matches this Service", doc.where())
        return None
    names = workload.container_names
    if not names:
        diags.error(f"{workload.doc.ref} has no containers", workload.doc.where(), code="bad-workload")
        return None
    if wanted:
        if str(wanted) not in names:
            diags.error(f"devlane.dev/container: {wanted} is not a container of {workload.doc.ref}", doc.where(),
                        hint=f"containers: {', '.join(names)}", code="bad-annotation")
            return names[0]
        return str(wanted)
    return names[0]


def parse_dependency_item(item: str) -> tuple[str, str] | None:
    """Parse one `svc:portName` item; None when malformed."""
    item = item.strip()
    svc, sep, port = item.partition(":")
    if not sep or not svc.strip() or not port.strip() or ":" in port:
        return None
    return svc.strip(), port.strip()


def _parse_dependencies(value: str, doc: Document, diags: Diagnostics) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in value.split(","):
        if not item.strip():
            continue
        parsed = parse_dependency_item(item)
        if parsed is None:
            diags.error(f"bad dependency {item.strip()!r} in {K}dependencies", doc.where(),
                        hint='write "service:portName", e.g. "postgres:tcp" (the port name of the target Service)',
                        code="bad-dependency")
        elif parsed not in out:
            out.append(parsed)
    return out


def _parse_plugins_ref(value: object, doc: Document, stateful: bool, where: Where, diags: Diagnostics,
                       plugin_defs: dict[str, PluginDef]) -> list[str]:
    text = str(value)
    if text.lstrip().startswith(("-", "[")):
        diags.warn("an inline plugin list in kardinal.dev.service/plugins is the legacy (pre-Oct-2024) form", where,
                   hint="move it to a plugin-definition pseudo-Service and list servicenames here", code="deprecated")
        names = []
        for pdef in parse_plugin_definition(text, doc, diags, legacy_service=(doc.name, stateful)):
            add_plugin_def(pdef, plugin_defs, diags)
            names.append(pdef.servicename)
        return names
    return [p.strip() for p in text.split(",") if p.strip()]


def _resolve_references(services: dict[str, ServiceNode], keys: dict[tuple[str | None, str], str],
                        plugin_defs: dict[str, PluginDef], diags: Diagnostics) -> dict[str, ServiceNode]:
    """Dependencies as node keys: `svc` in the dependent's namespace, `svc.namespace` in another one."""
    out = {}
    by_name: dict[str, list[str]] = defaultdict(list)  # Service name -> keys in any namespace
    for (_ns, n), k in keys.items():
        by_name[n].append(k)
    for key, node in services.items():
        resolved: list[tuple[str, str]] = []
        for dep, port in node.dependencies:
            name, _, namespace = dep.partition(".")
            target_key = keys.get((namespace or node.namespace, name)) or keys.get((None, name))
            if target_key is None and not namespace:
                anywhere = by_name.get(name, [])
                target_key = anywhere[0] if len(anywhere) == 1 else None
            target = services.get(target_key) if target_key else None
            if target is None:
                diags.error(f"dependency {dep}:{port} names no Service {dep!r}", node.doc.where(),
                            hint="fix the name in kardinal.dev.service/dependencies (another namespace: "
                            "svc.namespace:port)", code="bad-dependency")
                continue
            if port not in target.port_names and not _unnamed_port(target, port):
                ports = [p.get("name") for p in _ports(target)]
                diags.error(f"dependency {dep}:{port}: Service {target.ref} has no port named {port!r}",
                            node.doc.where(),
                            hint=f"port names of {target.ref}: {', '.join(str(p) for p in ports if p) or '(none)'} "
                            "(an unnamed port: its number)", code="bad-dependency")
            if target.external and target.key not in node.plugins:
                diags.error(
                    f"{dep} is external, but this Service does not list a plugin for it",
                    node.doc.where(),
                    hint=f"add {dep} to kardinal.dev.service/plugins and define a plugin with servicename {dep} "
                    "(an external plugin makes the dev copy safe to call it)",
                    code="external-without-plugin",
                )
            if (target.key, port) not in resolved:
                resolved.append((target.key, port))
        for p in node.plugins:
            if p not in plugin_defs:
                diags.error(
                    f"plugin {p!r} is not defined",
                    node.doc.where(),
                    hint="add a pseudo-Service with kardinal.dev.service/plugin-definition whose "
                    f"servicename is {p}",
                    code="undefined-plugin",
                )
        deps = tuple(resolved)
        out[key] = node if deps == node.dependencies else _with(node, dependencies=deps)
    return out


def _ports(node: ServiceNode) -> list[dict]:
    return [p for p in (node.doc.outline.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]


def _unnamed_port(node: ServiceNode, port: str) -> bool:
    """Whether `port` is the number of one of the Service's ports (how a dependency names an unnamed port)."""
    return port.isdigit() and any(str(p.get("port")) == port for p in _ports(node))


def _check_cycles(services: dict[str, ServiceNode], diags: Diagnostics) -> None:
    """Report each dependency cycle once; a depth-first walk with an explicit stack, so a chain of any
    length is fine."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    reported: set[frozenset[str]] = set()
    for start in sorted(services):
        if start in state:
            continue
        state[start] = 1
        path, at = [start], {start: 0}
        pending = [iter(services[start].dependencies)]
        while pending:
            for dep, _ in pending[-1]:
                if dep not in services:
                    continue
                if state.get(dep) == 1:
                    cycle = [*path[at[dep]:], dep]
                    if frozenset(cycle) not in reported:
                        reported.add(frozenset(cycle))
                        diags.error(f"dependency cycle: {_chain(cycle)}", services[dep].doc.where(),
                                    hint="kardinal.dev.service/dependencies must form a graph without cycles",
                                    code="cycle")
                elif dep not in state:
                    state[dep], at[dep] = 1, len(path)
                    path.append(dep)
                    pending.append(iter(services[dep].dependencies))
                    break
            else:
                done = path.pop()
                del at[done]
                state[done] = 2
                pending.pop()


def _chain(names: list[str], shown: int = 12) -> str:
    """`a -> b -> a`; a long cycle shows its ends and how many services it has."""
    if len(names) <= shown:
        return " -> ".join(names)
    half = shown // 2
    return f"{' -> '.join(names[:half])} -> ... -> {' -> '.join(names[-half:])} ({len(names) - 1:,} services)"


def _entries(documents: list[Document], legacy: list[Document], model: Model, diags: Diagnostics) -> list[Entry]:
    """Annotated entry points, with their backends as node keys (resolved in the entry's namespace)."""
    entries: list[Entry] = []
    for doc in documents:
        ann = doc.annotations
        flag = next((k for k, kind in ENTRY_KINDS.items() if kind == doc.kind and K + k in ann), None)
        if flag is None or not _bool(ann[K + flag], K + flag, doc, diags):
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
