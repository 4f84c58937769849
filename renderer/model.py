"""Model: turn parsed documents into Kardinal's topology.

Services are the nodes (keyed by name), edges come from `kardinal.dev.service/dependencies`
and from `type: external` plugins. Every problem is collected in `Diagnostics` rather than
raised, so `devlane lint` can report all of them at once; `render` fails on any error.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

import yaml

from .errors import Diagnostics, Where
from .load import Document

K = "kardinal.dev.service/"
D = "devlane.dev/"
WORKLOAD_KINDS = ("Deployment", "StatefulSet")
KNOWN_KARDINAL = {
    "dependencies", "stateful", "external", "shared", "plugin-definition", "plugins",
    "ingress", "gateway", "route", "host",
}  # fmt: skip
KNOWN_DEVLANE = {"container", "workload", "no-rewrite", "flow"}
SERVICE_ONLY = {"dependencies", "stateful", "external", "shared", "plugin-definition", "plugins", "host"}
ENTRY_KINDS = {"ingress": "Ingress", "gateway": "Gateway", "route": "HTTPRoute"}
PLUGIN_DEF_KEYS = {
    "name", "type", "servicename", "serviceName", "args", "behavior", "sideEffects", "extensions", "implementations",
}  # fmt: skip
_SERVICENAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@dataclass
class PluginDef:
    """One entry of a `plugin-definition` list (or a legacy inline `plugins` entry)."""

    servicename: str
    name: str
    type: str
    args: dict[str, str]
    where: Where
    legacy: bool = False
    behavior: str = "enforce"  # kops: enforce (failure fails the render) | bypass (failure is a warning)
    side_effects: str | None = None  # "External" overrides the plugin's own manifest
    extensions: list[dict] = field(default_factory=list)  # object references: {kind, name, namespace?}
    implementations: list[dict] = field(default_factory=list)  # fallbacks: {name, args}, in preference order

    @property
    def candidates(self) -> list[dict]:
        """The plugin itself, then its `implementations`, in preference order."""
        return [{"name": self.name, "args": self.args}, *self.implementations]


@dataclass
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


@dataclass
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
    plugins: list[str] = field(default_factory=list)
    dependencies: list[tuple[str, str]] = field(default_factory=list)
    no_rewrite: frozenset[str] = frozenset()


@dataclass
class Entry:
    """A flow entry point: an annotated Ingress/HTTPRoute/Gateway, or a legacy Service."""

    doc: Document
    backends: list[str]
    hosts: list[str]

    @property
    def kind(self) -> str:
        return self.doc.kind


class LabelIndex:
    """Items (workloads, pods) by (namespace, label, value), so matching a selector is not a scan."""

    def __init__(self) -> None:
        self._by_pair: dict[tuple, list] = defaultdict(list)
        self._by_ns: dict[str | None, list] = defaultdict(list)

    def add(self, namespace: str | None, labels: dict, item: object) -> None:
        for k, v in labels.items():
            self._by_pair[(namespace, k, v)].append(item)
        self._by_ns[namespace].append(item)

    def candidates(self, namespace: str | None, required: dict) -> list:
        """Items that may match: those with the first required pair (all in the namespace if none)."""
        if not required:
            return self._by_ns.get(namespace, [])
        return self._by_pair.get((namespace, *next(iter(required.items()))), [])


@dataclass
class Model:
    documents: list[Document]
    services: dict[str, ServiceNode]
    plugin_defs: dict[str, PluginDef]
    externals: dict[str, list[str]]  # external node id -> parent services (sorted)
    entries: list[Entry]
    workloads: list[Workload]
    default_namespace: str | None
    diagnostics: Diagnostics

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


def _selector_matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def build_model(documents: list[Document], default_namespace: str | None = None) -> Model:
    """Build the topology; problems go to `model.diagnostics`."""
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
            for pdef in _parse_plugin_definition(ann[K + "plugin-definition"], doc, diags):
                _add_plugin_def(pdef, plugin_defs, diags)
            continue
        if ann.get(K + "ingress") is not None:
            diags.warn(
                "a Service-level kardinal.dev.service/ingress (+ host) entry is a legacy form",
                doc.where(),
                hint="annotate an Ingress or HTTPRoute with kardinal.dev.service/ingress|route instead",
                code="deprecated",
            )
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
    return Model(
        documents, services, plugin_defs, dict(externals), entries, workloads, default_namespace, diags
    )


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
                    diags.error(
                        f"unknown annotation {key}",
                        doc.where(),
                        hint=f"known keys: {', '.join(K + k for k in sorted(KNOWN_KARDINAL))}",
                        code="unknown-key",
                    )
                elif short in SERVICE_ONLY and doc.kind != "Service":
                    diags.warn(f"{key} is only read on Services; ignored on {doc.kind}", doc.where())
                elif short in ENTRY_KINDS and doc.kind not in (ENTRY_KINDS[short], "Service"):
                    diags.warn(f"{key} is only read on {ENTRY_KINDS[short]} objects; ignored", doc.where())
            elif key.startswith(D) and key[len(D) :] not in KNOWN_DEVLANE:
                diags.error(
                    f"unknown annotation {key}",
                    doc.where(),
                    hint=f"known keys: {', '.join(D + k for k in sorted(KNOWN_DEVLANE))}",
                    code="unknown-key",
                )
            elif key == "kardinal.dev/plugins":
                diags.warn(
                    "annotation kardinal.dev/plugins is not read (Kardinal never read it either)",
                    doc.where(),
                    hint="use kardinal.dev.service/plugins with a plugin-definition pseudo-Service",
                    code="ignored-key",
                )


def _service_node(
    doc: Document, namespace: str | None, index: LabelIndex, diags: Diagnostics, plugin_defs: dict[str, PluginDef]
) -> ServiceNode:
    ann, spec, where = doc.annotations, doc.obj.get("spec") or {}, doc.where()
    node = ServiceNode(doc.name, namespace, doc)
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    node.http = bool(ports) and str(ports[0].get("appProtocol", "")).upper() == "HTTP"
    selector = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
    if selector:
        found = [w for w in index.candidates(namespace, selector) if _selector_matches(selector, w.pod_labels)]
        wanted = ann.get(D + "workload")
        if wanted:
            found = [w for w in found if w.doc.name == wanted]
            if not found:
                diags.error(
                    f"devlane.dev/workload names {wanted!r}, which this Service's selector does not match",
                    where,
                    code="bad-annotation",
                )
        if len(found) > 1:
            names = ", ".join(sorted(w.doc.ref for w in found))
            diags.error(
                f"selector matches {len(found)} workloads ({names})",
                where,
                hint="narrow the selector, or pick one with the annotation devlane.dev/workload: NAME",
                code="ambiguous-workload",
            )
        elif found:
            node.workload = found[0]
    stateful_default = node.workload is not None and node.workload.doc.kind == "StatefulSet"
    node.stateful = stateful_default
    for key, attr in (("stateful", "stateful"), ("external", "external"), ("shared", "shared")):
        if K + key in ann:
            value = _bool(ann[K + key], K + key, where, diags)
            if value is not None:
                setattr(node, attr, value)
    if K + "dependencies" in ann:
        node.dependencies = _parse_dependencies(str(ann[K + "dependencies"]), where, diags)
    if K + "plugins" in ann:
        node.plugins = _parse_plugins_ref(ann[K + "plugins"], node, where, diags, plugin_defs)
    node.container = _target_container(node, ann.get(D + "container"), where, diags)
    if D + "no-rewrite" in ann:
        node.no_rewrite = frozenset(x.strip() for x in str(ann[D + "no-rewrite"]).split(",") if x.strip())
    return node


def _target_container(node: ServiceNode, wanted: object, where: Where, diags: Diagnostics) -> str | None:
    """`devlane.dev/container` names the target; default: the only container, else the first."""
    if node.workload is None:
        if wanted:
            diags.warn("devlane.dev/container is set but no workload matches this Service", where)
        return None
    names = [str(c.get("name", "")) for c in node.workload.containers]
    if not names:
        diags.error(f"{node.workload.doc.ref} has no containers", node.workload.doc.where(), code="bad-workload")
        return None
    if wanted:
        if str(wanted) not in names:
            diags.error(
                f"devlane.dev/container: {wanted} is not a container of {node.workload.doc.ref}",
                where,
                hint=f"containers: {', '.join(names)}",
                code="bad-annotation",
            )
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
            diags.error(
                f"bad dependency {item.strip()!r} in {K}dependencies",
                where,
                hint='write "service:portName", e.g. "postgres:tcp" (the port name of the target Service)',
                code="bad-dependency",
            )
        elif parsed not in out:
            out.append(parsed)
    return out


def _parse_plugins_ref(
    value: object, node: ServiceNode, where: Where, diags: Diagnostics, plugin_defs: dict[str, PluginDef]
) -> list[str]:
    text = str(value)
    if text.lstrip().startswith(("-", "[")):
        diags.warn(
            "an inline plugin list in kardinal.dev.service/plugins is the legacy (pre-Oct-2024) form",
            where,
            hint="move it to a plugin-definition pseudo-Service and list servicenames here",
            code="deprecated",
        )
        names = []
        defs = _parse_plugin_definition(text, node.doc, diags, legacy_service=node)
        for pdef in defs:
            _add_plugin_def(pdef, plugin_defs, diags)
            names.append(pdef.servicename)
        return names
    return [p.strip() for p in text.split(",") if p.strip()]


def _parse_plugin_definition(
    value: object, doc: Document, diags: Diagnostics, legacy_service: ServiceNode | None = None
) -> list[PluginDef]:
    where = doc.where()
    try:
        # BaseLoader keeps every scalar as its literal text, as Kardinal's map[string]string decode does.
        items = yaml.load(str(value), Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1} of the annotation)" if mark else ""
        diags.error(f"plugin definition is not valid YAML{line}", where, code="bad-plugin-definition")
        return []
    if not isinstance(items, list):
        diags.error(
            "plugin definition must be a YAML list of {name, type, servicename, args}",
            where,
            code="bad-plugin-definition",
        )
        return []
    defs: list[PluginDef] = []
    for i, item in enumerate(items):
        at = f"plugin definition item {i}"
        if not isinstance(item, dict):
            diags.error(f"{at} must be a mapping", where, code="bad-plugin-definition")
            continue
        for key in sorted(set(item) - PLUGIN_DEF_KEYS):
            diags.error(
                f"{at}: unknown key {key!r}",
                where,
                hint="allowed keys: " + ", ".join(sorted(PLUGIN_DEF_KEYS - {"serviceName"})),
                code="unknown-key",
            )
        name = item.get("name")
        if not name:
            diags.error(f"{at} has no name (the plugin source)", where, code="bad-plugin-definition")
            continue
        servicename = item.get("servicename") or item.get("serviceName")
        ptype = item.get("type")
        if legacy_service is not None:
            servicename = servicename or f"{legacy_service.name}-{_last_segment(name)}"
            ptype = ptype or ("stateful" if legacy_service.stateful else "external")
        if not servicename:
            diags.error(f"{at} ({name}) has no servicename", where, code="bad-plugin-definition")
            continue
        if not _SERVICENAME.match(servicename):
            diags.error(
                f"{at}: servicename {servicename!r} must be lower-case letters, digits, '-' or '.'",
                where,
                hint="it names Kubernetes objects (the plugin's state ConfigMap)",
                code="bad-plugin-definition",
            )
            continue
        if ptype not in ("stateful", "external"):
            diags.error(
                f"{at} ({servicename}): type must be stateful or external, got {ptype!r}",
                where,
                code="bad-plugin-definition",
            )
            continue
        args = item.get("args") or {}
        if not isinstance(args, dict) or any(isinstance(v, dict | list) for v in args.values()):
            diags.error(
                f"{at} ({servicename}): args must be a mapping of names to plain values",
                where,
                code="bad-plugin-definition",
            )
            continue
        args = _plain_args(args)
        extras = _plugin_extras(item, f"{at} ({servicename})", where, diags)
        if extras is None:
            continue
        defs.append(PluginDef(servicename, str(name), ptype, args, where, legacy_service is not None, **extras))
    return defs


def _plain_args(args: dict) -> dict[str, str]:
    return {str(k): "" if v is None else str(v) for k, v in args.items()}


def _plugin_extras(item: dict, at: str, where: Where, diags: Diagnostics) -> dict | None:
    """behavior, sideEffects, extensions and implementations of one plugin-definition entry."""
    behavior = item.get("behavior", "enforce")
    side_effects = item.get("sideEffects")
    problems = []
    if behavior not in ("enforce", "bypass"):
        problems.append(f"behavior must be enforce or bypass, got {behavior!r}")
    if side_effects not in (None, "None", "External"):
        problems.append(f"sideEffects must be None or External, got {side_effects!r}")
    extensions = []
    for ref in item.get("extensions") or []:
        if isinstance(ref, str) and "/" in ref:  # Kind/name or Kind/namespace/name
            parts = ref.split("/")
            ref = {"kind": parts[0], "name": parts[-1], **({"namespace": parts[1]} if len(parts) == 3 else {})}
        if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
            problems.append(f"extensions entries must be {{kind, name, namespace?}} or 'Kind/name', got {ref!r}")
            continue
        extensions.append({k: str(ref[k]) for k in ("apiVersion", "kind", "namespace", "name") if ref.get(k)})
    implementations = []
    for alt in item.get("implementations") or []:
        if isinstance(alt, str):
            alt = {"name": alt}
        args = alt.get("args") if isinstance(alt, dict) else None
        if not isinstance(alt, dict) or not alt.get("name") or not isinstance(args or {}, dict):
            problems.append(f"implementations entries must be a plugin name or {{name, args}}, got {alt!r}")
            continue
        implementations.append({"name": str(alt["name"]), "args": _plain_args(args or item.get("args") or {})})
    for problem in problems:
        diags.error(f"{at}: {problem}", where, code="bad-plugin-definition")
    if problems:
        return None
    return {"behavior": behavior, "side_effects": side_effects, "extensions": extensions,
            "implementations": implementations}


def _last_segment(name: str) -> str:
    seg = name.rstrip("/").split("/")[-1].split(":")[0].split("@")[0]
    seg = re.sub(r"\.git$", "", seg).lower()
    return re.sub(r"[^a-z0-9-]+", "-", seg).strip("-") or "plugin"


def _add_plugin_def(pdef: PluginDef, plugin_defs: dict[str, PluginDef], diags: Diagnostics) -> None:
    if pdef.servicename in plugin_defs:
        other = plugin_defs[pdef.servicename]
        diags.error(
            f"duplicate plugin servicename {pdef.servicename!r} (also defined at {other.where})",
            pdef.where,
            hint="the plugin servicename has to be unique across the repository",
            code="duplicate-servicename",
        )
        return
    plugin_defs[pdef.servicename] = pdef


def _resolve_references(
    services: dict[str, ServiceNode], plugin_defs: dict[str, PluginDef], diags: Diagnostics
) -> None:
    for node in services.values():
        where = node.doc.where()
        for dep, port in node.dependencies:
            target = services.get(dep)
            if target is None:
                diags.error(
                    f"dependency {dep}:{port} names no Service {dep!r}",
                    where,
                    hint="fix the name in kardinal.dev.service/dependencies",
                    code="bad-dependency",
                )
                continue
            ports = [p.get("name") for p in (target.doc.obj.get("spec") or {}).get("ports") or []]
            if port not in ports:
                diags.error(
                    f"dependency {dep}:{port}: Service {dep} has no port named {port!r}",
                    where,
                    hint=f"port names of {dep}: {', '.join(str(p) for p in ports if p) or '(none)'}",
                    code="bad-dependency",
                )
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
                    diags.error(
                        f"dependency cycle: {' -> '.join(cycle)}",
                        services[dep].doc.where(),
                        hint="kardinal.dev.service/dependencies must form a graph without cycles",
                        code="cycle",
                    )
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
            and _selector_matches(selector, node.workload.pod_labels)
        )
        host = doc.annotations.get(K + "host")
        entries.append(Entry(doc, backends, [host] if host else []))
    return entries
