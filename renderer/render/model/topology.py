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
from collections import defaultdict
from typing import Any

from ...core import deadline
from ...core.k8s import LabelIndex, map_matches, pod_template
from ...core.names import DEVLANE as D
from ...core.names import KARDINAL as K
from ...errors import Diagnostics
from ..inputs.document import Document
from .annotations import (
    NODE_KEYS,
    boolean,
    check_annotation_keys,
    node_annotations,
)
from .entry_points import entry_points
from .plugin_definitions import PluginDef, add_plugin_def, parse_plugin_definition
from .records import POD_KINDS, WORKLOAD_KINDS, Model, ServiceNode, Workload, assemble


def build_model(documents: list[Document], default_namespace: str | None = None) -> Model:
    """Build the topology; problems go to `model.problems`.

    `default_namespace` is the one `.devlane.yaml` names; nothing infers it from other objects (Argo CD
    and Flux put objects without a namespace in their destination namespace, whatever else the repo holds).
    """
    diags = Diagnostics()

    def ns(doc: Document) -> str | None:
        return doc.namespace or default_namespace

    check_annotation_keys(documents, diags)
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
        deadline.check()
        if doc.kind != "Service" or doc.api_version != "v1":
            continue
        ann = doc.annotations
        if K + "plugin-definition" in ann:
            for pdef in parse_plugin_definition(ann[K + "plugin-definition"], doc, diags):
                add_plugin_def(pdef, plugin_defs, diags)
            _definition_holder(doc, diags)
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
    model = assemble(documents, services, plugin_defs, dict(externals), [], workloads, default_namespace,
                     diags.problems)
    model.entries.extend(entry_points(documents, legacy_entries, model, diags))
    return model


def _definition_holder(doc: Document, diags: Diagnostics) -> None:
    """A Service with a plugin-definition is Kardinal's pseudo-Service, read for its definitions only: said when it
    also looks like an app's Service (a selector, node annotations), whose `plugins` or `dependencies` would
    otherwise be dropped without a word."""
    spec = doc.outline.get("spec") if isinstance(doc.outline.get("spec"), dict) else {}  # the selector: outline
    ignored = sorted(K + k for k in ("plugins", "dependencies", "stateful", "external") if K + k in doc.annotations)
    if spec.get("selector") or ignored:
        what = ", ".join([*(["its selector"] if spec.get("selector") else []), *ignored])
        diags.warn(f"Service {doc.name} holds a kardinal.dev.service/plugin-definition, so devlane reads it as a "
                   f"plugin-definition pseudo-Service, not as a service of the app: {what} ignored", doc.where(),
                   hint="move the plugin-definition annotation to a Service of its own (no selector, no ports "
                        "needed), and keep the app's Service for its plugins and dependencies",
                   code="definition-holder")


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
        stateful, deps, plugins, no_rewrite = node_annotations(doc, doc.kind == "StatefulSet", diags, plugin_defs)
        out.append(ServiceNode(doc.name, doc.name, ns(doc), doc, workload,
                               _target_container(workload, doc.annotations.get(D + "container"), doc, diags),
                               stateful=stateful, plugins=tuple(plugins), dependencies=tuple(deps),
                               no_rewrite=no_rewrite))
    return out


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
            value = boolean(ann[K + key], K + key, doc, diags)
            if value is not None:
                flags[key] = value
    stateful, dependencies, plugins, no_rewrite = node_annotations(
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
                        doc.where(D + "workload"), code="bad-annotation")
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
            diags.warn("devlane.dev/container is set but no workload matches this Service", doc.where(D + "container"))
        return None
    names = workload.container_names
    if not names:
        diags.error(f"{workload.doc.ref} has no containers", workload.doc.where(), code="bad-workload")
        return None
    if wanted:
        if str(wanted) not in names:
            diags.error(f"devlane.dev/container: {wanted} is not a container of {workload.doc.ref}",
                        doc.where(D + "container"),
                        hint=f"containers: {', '.join(names)}", code="bad-annotation")
            return names[0]
        return str(wanted)
    return names[0]


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
                diags.error(f"dependency {dep}:{port} names no Service {dep!r}", node.doc.where(K + "dependencies"),
                            hint="fix the name in kardinal.dev.service/dependencies (another namespace: "
                            "svc.namespace:port)", code="bad-dependency")
                continue
            if port not in target.port_names and not _unnamed_port(target, port):
                ports = [p.get("name") for p in _ports(target)]
                diags.error(f"dependency {dep}:{port}: Service {target.ref} has no port named {port!r}",
                            node.doc.where(K + "dependencies"),
                            hint=f"port names of {target.ref}: {', '.join(str(p) for p in ports if p) or '(none)'} "
                            "(an unnamed port: its number)", code="bad-dependency")
            if target.external and target.key not in node.plugins:
                diags.error(
                    f"{dep} is external, but this Service does not list a plugin for it",
                    node.doc.where(K + "plugins"),
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
                    node.doc.where(K + "plugins"),
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


