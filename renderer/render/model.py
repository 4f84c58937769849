"""Model: documents -> `Model`, Kardinal's topology.

Services are the nodes (keyed by name), edges come from `kardinal.dev.service/dependencies`
and from `type: external` plugins. Every problem is collected rather than raised, so `devlane
lint` can report all of them at once; `render` fails on any error.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ..core.k8s import LabelIndex, map_matches
from ..core.names import DEVLANE as D
from ..core.names import KARDINAL as K
from ..errors import Diagnostics, Problem, Where
from .load import Document
from .plugin_defs import PluginDef, add_plugin_def, parse_plugin_definition

WORKLOAD_KINDS = ("Deployment", "StatefulSet")
KNOWN_KARDINAL = {
    "dependencies", "stateful", "external", "shared", "plugin-definition", "plugins",
    "ingress", "gateway", "route", "host",
}
KNOWN_DEVLANE = {"container", "workload", "no-rewrite", "flow"}
SERVICE_ONLY = {"dependencies", "stateful", "external", "shared", "plugin-definition", "plugins", "host"}
ENTRY_KINDS = {"ingress": "Ingress", "gateway": "Gateway", "route": "HTTPRoute"}


@dataclass(frozen=True)
class Workload:
    doc: Document

    @property
    def pod_template(self) -> dict:
        tpl = (self.doc.obj.get("spec") or {}).get("template")
        return tpl if isinstance(tpl, dict) else {}

    @property
    def pod_labels(self) -> dict:
        labels = (self.pod_template.get("metadata") or {}).get("labels")
        return labels if isinstance(labels, dict) else {}

    @property
    def containers(self) -> list[dict]:
        spec = self.pod_template.get("spec") or {}
        return [c for c in spec.get("containers") or [] if isinstance(c, dict)]


@dataclass(frozen=True)
class ServiceNode:
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

    @property
    def port_names(self) -> frozenset[str]:
        return frozenset(str(p.get("name")) for p in (self.doc.obj.get("spec") or {}).get("ports") or []
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
    services: dict[str, ServiceNode]
    plugin_defs: dict[str, PluginDef]
    externals: dict[str, list[str]]  # external node id -> parent services (sorted)
    entries: list[Entry]
    workloads: list[Workload]
    default_namespace: str | None
    problems: list[Problem]

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


def _bool(value: object, key: str, where: Where, diags: Diagnostics) -> bool | None:
    text = str(value).strip()
    if text in ("true", "false"):
        return text == "true"
    diags.error(f'annotation {key} must be "true" or "false", got {value!r}', where, code="bad-annotation")
    return None


def build_model(documents: list[Document], default_namespace: str | None = None) -> Model:
    """Build the topology; problems go to `model.problems`."""
    diags = Diagnostics()
    if default_namespace is None:
        default_namespace = infer_namespace(documents)

    def ns(doc: Document) -> str | None:
        return doc.namespace or default_namespace

    _check_annotation_keys(documents, diags)
    workloads = [Workload(d) for d in documents if d.kind in WORKLOAD_KINDS and d.api_version == "apps/v1"]
    index = LabelIndex()
    for w in workloads:
        index.add(ns(w.doc), w.pod_labels, w)

    plugin_defs: dict[str, PluginDef] = {}
    services: dict[str, ServiceNode] = {}
    legacy_entries: list[Document] = []
    seen_names: dict[str, Document] = {}
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
        if doc.name in seen_names:
            other = seen_names[doc.name]
            diags.error(
                f"duplicate Service {doc.name!r}: also defined in {other.file} (document {other.index + 1})",
                doc.where(),
                hint="service names must be unique; exclude template or copy files with `exclude:`",
                code="duplicate-service",
            )
            continue
        seen_names[doc.name] = doc
        services[doc.name] = _service_node(doc, ns(doc), index, diags, plugin_defs)

    _resolve_references(services, plugin_defs, diags)
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
    entries = _entries(documents, legacy_entries, services, ns, diags)
    return Model(documents, services, plugin_defs, dict(externals), entries, workloads, default_namespace,
                 diags.problems)


def infer_namespace(documents: list[Document]) -> str | None:
    """The repo's one namespace: a single Namespace object, else the single namespace objects use.

    Kardinal renders a manifest into one namespace; objects that name none land in it too.
    """
    declared = {d.name for d in documents if d.kind == "Namespace" and d.api_version == "v1"}
    if len(declared) == 1:
        return declared.pop()
    used = {d.namespace for d in documents if d.namespace}
    return used.pop() if len(used) == 1 and not declared else None


def _check_annotation_keys(documents: list[Document], diags: Diagnostics) -> None:
    for doc in documents:
        for key in doc.annotations:
            if key.startswith(K):
                short = key[len(K) :]
                if short not in KNOWN_KARDINAL:
                    diags.error(f"unknown annotation {key}", doc.where(),
                                hint=f"known keys: {', '.join(K + k for k in sorted(KNOWN_KARDINAL))}",
                                code="unknown-key")
                elif short in SERVICE_ONLY and doc.kind != "Service":
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
    ann, spec, where = doc.annotations, doc.obj.get("spec") or {}, doc.where()
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    workload = _workload(doc, namespace, index, diags)
    flags = {"stateful": workload is not None and workload.doc.kind == "StatefulSet", "external": False,
             "shared": False}
    for key in flags:
        if K + key in ann:
            value = _bool(ann[K + key], K + key, where, diags)
            if value is not None:
                flags[key] = value
    dependencies = _parse_dependencies(str(ann[K + "dependencies"]), where, diags) if K + "dependencies" in ann else []
    plugins = []
    if K + "plugins" in ann:
        plugins = _parse_plugins_ref(ann[K + "plugins"], doc, flags["stateful"], where, diags, plugin_defs)
    no_rewrite = frozenset(x.strip() for x in str(ann.get(D + "no-rewrite", "")).split(",") if x.strip())
    return ServiceNode(doc.name, namespace, doc, workload, _target_container(workload, ann.get(D + "container"), where,
                                                                              diags),
                       bool(ports) and str(ports[0].get("appProtocol", "")).upper() == "HTTP", flags["stateful"],
                       flags["external"], flags["shared"], tuple(plugins), tuple(dependencies), no_rewrite)


def _workload(doc: Document, namespace: str | None, index: LabelIndex, diags: Diagnostics) -> Workload | None:
    """The one workload the Service's selector matches (`devlane.dev/workload` picks one of several)."""
    spec, where = doc.obj.get("spec") or {}, doc.where()
    selector = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
    if not selector:
        return None
    found = [w for w in index.candidates(namespace, selector) if map_matches(selector, w.pod_labels)]
    wanted = doc.annotations.get(D + "workload")
    if wanted:
        found = [w for w in found if w.doc.name == wanted]
        if not found:
            diags.error(f"devlane.dev/workload names {wanted!r}, which this Service's selector does not match", where,
                        code="bad-annotation")
    if len(found) > 1:
        names = ", ".join(sorted(w.doc.ref for w in found))
        diags.error(f"selector matches {len(found)} workloads ({names})", where,
                    hint="narrow the selector, or pick one with the annotation devlane.dev/workload: NAME",
                    code="ambiguous-workload")
        return None
    return found[0] if found else None


def _target_container(workload: Workload | None, wanted: object, where: Where, diags: Diagnostics) -> str | None:
    """`devlane.dev/container` names the target; default: the only container, else the first."""
    if workload is None:
        if wanted:
            diags.warn("devlane.dev/container is set but no workload matches this Service", where)
        return None
    names = [str(c.get("name", "")) for c in workload.containers]
    if not names:
        diags.error(f"{workload.doc.ref} has no containers", workload.doc.where(), code="bad-workload")
        return None
    if wanted:
        if str(wanted) not in names:
            diags.error(f"devlane.dev/container: {wanted} is not a container of {workload.doc.ref}", where,
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


def _parse_dependencies(value: str, where: Where, diags: Diagnostics) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in value.split(","):
        if not item.strip():
            continue
        parsed = parse_dependency_item(item)
        if parsed is None:
            diags.error(f"bad dependency {item.strip()!r} in {K}dependencies", where,
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


def _resolve_references(
    services: dict[str, ServiceNode], plugin_defs: dict[str, PluginDef], diags: Diagnostics
) -> None:
    for node in services.values():
        where = node.doc.where()
        for dep, port in node.dependencies:
            target = services.get(dep)
            if target is None:
                diags.error(f"dependency {dep}:{port} names no Service {dep!r}", where,
                            hint="fix the name in kardinal.dev.service/dependencies", code="bad-dependency")
                continue
            ports = [p.get("name") for p in (target.doc.obj.get("spec") or {}).get("ports") or []]
            if port not in ports:
                diags.error(f"dependency {dep}:{port}: Service {dep} has no port named {port!r}", where,
                            hint=f"port names of {dep}: {', '.join(str(p) for p in ports if p) or '(none)'}",
                            code="bad-dependency")
        for dep, _port in node.dependencies:
            target = services.get(dep)
            if target is not None and target.external and dep not in node.plugins:
                diags.error(
                    f"{dep} is external, but this Service does not list a plugin for it",
                    where,
                    hint=f"add {dep} to kardinal.dev.service/plugins and define a plugin with servicename {dep} "
                    "(an external plugin makes the dev copy safe to call it)",
                    code="external-without-plugin",
                )
        for p in node.plugins:
            if p not in plugin_defs:
                diags.error(
                    f"plugin {p!r} is not defined",
                    where,
                    hint="add a pseudo-Service with kardinal.dev.service/plugin-definition whose "
                    f"servicename is {p}",
                    code="undefined-plugin",
                )


def _check_cycles(services: dict[str, ServiceNode], diags: Diagnostics) -> None:
    state: dict[str, int] = {}
    stack: list[str] = []
    reported: set[frozenset[str]] = set()

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for dep, _ in services[name].dependencies:
            if dep not in services:
                continue
            if state.get(dep) == 1:
                cycle = [*stack[stack.index(dep) :], dep]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    diags.error(f"dependency cycle: {' -> '.join(cycle)}", services[dep].doc.where(),
                                hint="kardinal.dev.service/dependencies must form a graph without cycles", code="cycle")
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[name] = 2

    for name in sorted(services):
        if name not in state:
            visit(name)


def _entries(
    documents: list[Document], legacy: list[Document], services: dict[str, ServiceNode], ns, diags: Diagnostics
) -> list[Entry]:
    entries: list[Entry] = []
    for doc in documents:
        ann = doc.annotations
        flag = next((k for k, kind in ENTRY_KINDS.items() if kind == doc.kind and K + k in ann), None)
        if flag is None or not _bool(ann[K + flag], K + flag, doc.where(), diags):
            continue
        spec = doc.obj.get("spec") or {}
        backends: list[str] = []
        hosts: list[str] = []
        if doc.kind == "Ingress":
            default = ((spec.get("defaultBackend") or {}).get("service") or {}).get("name")
            if default:
                backends.append(default)
            for rule in spec.get("rules") or []:
                if rule.get("host"):
                    hosts.append(rule["host"])
                for path in (rule.get("http") or {}).get("paths") or []:
                    name = ((path.get("backend") or {}).get("service") or {}).get("name")
                    if name:
                        backends.append(name)
        elif doc.kind == "HTTPRoute":
            hosts = list(spec.get("hostnames") or [])
            for rule in spec.get("rules") or []:
                for ref in rule.get("backendRefs") or []:
                    if ref.get("kind", "Service") == "Service" and ref.get("group", "") in ("", "core"):
                        backends.append(ref["name"])
        for b in backends:
            if b not in services:
                diags.warn(f"entry routes to {b!r}, which is not a Service in the repository", doc.where())
        entries.append(Entry(doc, sorted(set(backends) & set(services)), hosts))
    for doc in legacy:
        selector = (doc.obj.get("spec") or {}).get("selector") or {}
        backends = sorted(
            name
            for name, node in services.items()
            if node.workload is not None
            and ns(doc) == node.namespace
            and selector
            and map_matches(selector, node.workload.pod_labels)
        )
        host = doc.annotations.get(K + "host")
        entries.append(Entry(doc, backends, [host] if host else []))
    return entries
