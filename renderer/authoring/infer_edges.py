"""Dependency edges for `devlane init`: every reference a workload makes to a Service, with the port it uses.

References are found where the isolation code looks for them (`render.model.address_reads`: env values,
`command`/`args`, init containers, the ConfigMaps and Secrets a pod reads) by the one reference finder
(`core.references`); the port is the one the address names after the host (`svc:8080`, `svc.ns.svc:http`), else the
scheme's (`http://svc` is 80), else the Service's `http*` port or its first, said in a note. An edge sits on the
Service that selects the workload (of several, the one named like it) or on the workload no Service selects."""

from __future__ import annotations

import json
import re
from collections import defaultdict

from ..core.k8s import all_containers
from ..core.references import Reference, Targets
from ..core.stores import SCHEME_CHARS
from ..render.inputs.document import Document
from ..render.model.address_reads import config_reads, data_of, data_refs, pod_slots
from ..render.model.records import Model, ServiceNode
from ..render.model.store_signs import store_sign
from ..render.plan.planner import service_targets
from .infer_facts import Edge, Evidence, SharedConfig, evidence, object_name

SKIPPED_KINDS = ("Job", "CronJob")  # a Job reading a dev service's address gets a dev version by itself (plan)
MANY = 3  # readers and stores from which a file read whole is the app's shared configuration
DIRECTORY = 2 * MANY  # Services (stores aside) from which such a file is the app's directory of addresses


# -- dependency edges --------------------------------------------------------------------------------------------

_PORT_AFTER = re.compile(r"(?:\.svc(?:\.cluster\.local)?)?\.?:([A-Za-z0-9][A-Za-z0-9-]*)")
_SCHEME_REACH = 2048  # how far before a host its URL's `scheme://` may be (a longer userinfo is no address)
_SCHEME_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}


def edge_owner(model: Model, node: ServiceNode) -> ServiceNode:
    """The one node that carries a workload's edges: of several Services selecting it, the one named like the
    workload, else a ClusterIP one, else the first by name."""
    if node.workload is None:
        return node
    nodes = model.nodes_on(node.workload.doc) or [node]
    if len(nodes) == 1:
        return nodes[0]
    wname = node.workload.doc.name

    def rank(n: ServiceNode) -> tuple:
        spec = n.doc.obj.get("spec") or {}
        return (n.name != wname, spec.get("type", "ClusterIP") != "ClusterIP", n.key)

    return sorted(nodes, key=rank)[0]


def _port_item(model: Model, text: str, ref: Reference, target: ServiceNode) -> tuple[str, str]:
    """The target's port the address uses: (name or number, note)."""
    ports = [p for p in (target.doc.obj.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]
    end = ref.namespace[1] if ref.namespace else ref.end
    m = _PORT_AFTER.match(text, end)
    wanted: object = None
    if m:
        wanted = m.group(1)
    else:
        scheme = _scheme_before(text, ref.start)
        if scheme in _SCHEME_PORTS:
            wanted = str(_SCHEME_PORTS[scheme])
    chosen = None
    if wanted is not None:
        chosen = next((p for p in ports if str(p.get("name")) == wanted or str(p.get("port")) == wanted), None)
    note = ""
    if chosen is None:
        if not ports:
            return "", f"Service {target.ref} has no ports"
        chosen = next((p for p in ports if str(p.get("name", "")).startswith(("http", "grpc"))), ports[0])
        note = (f"the address names port {wanted}, which {target.ref} does not expose: assumed " if wanted is not None
                else "the address names no port: assumed ") + f"{chosen.get('name') or chosen.get('port')}"
    if chosen.get("name"):
        return str(chosen["name"]), note
    unnamed = f"port {chosen.get('port')} of {target.ref} has no name: the dependency uses its number"
    return str(chosen.get("port")), f"{note}; {unnamed}" if note else unnamed


def _scheme_before(text: str, start: int) -> str:
    """The scheme (lower-case) of the first `scheme://` in the word that ends at `start` (`http` for the host of
    `http://svc`), read in the `_SCHEME_REACH` characters before it: linear, where a search of the whole text
    before every host is quadratic."""
    window = text[max(0, start - _SCHEME_REACH) : start]
    if not window or window[-1].isspace():
        return ""
    word = window.rsplit(None, 1)[-1]
    at = word.find("://")
    while at >= 0:
        k = at
        while k > 0 and word[k - 1] in SCHEME_CHARS:
            k -= 1
        letter = next((i for i in range(k, at) if word[i].isascii() and word[i].isalpha()), -1)
        if letter >= 0:
            return word[letter:at].lower()
        at = word.find("://", at + 1)
    return ""


def _item(node: ServiceNode, target: ServiceNode, port: str) -> str:
    same = target.namespace == node.namespace or target.namespace is None
    return f"{target.name}:{port}" if same else f"{target.name}.{target.namespace}:{port}"


class _Copies:
    """The readers of one configuration's content and the objects that hold it."""

    def __init__(self, key: str | None) -> None:
        self.key = key
        self.readers: set[str] = set()
        self.docs: dict[int, Document] = {}


def _own_names(model: Model, node: ServiceNode) -> set[str]:
    """The reader's own names: its workload's and its Services'."""
    wdoc = node.workload.doc if node.workload is not None else node.doc
    return {wdoc.name, *(n.name for n in model.nodes_on(wdoc))} - {""}


_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?")


def _content(doc: Document, key: str | None, readers: set[str]) -> str:
    """The content of a whole object (`key` None) or of one entry with the names of every service that reads it
    blanked: copies of one configuration then compare equal, whether each names its reader (`serviceName: orders`
    in orders' copy) or all hold the same directory of every service. Linear: one pass over the words."""
    data = data_of(doc.obj)
    text = json.dumps(data, sort_keys=True) if key is None else data.get(key, "")
    return _NAME.sub(lambda m: "\0" if m.group(0) in readers else m.group(0), text)


def shared_configs(model: Model) -> list[SharedConfig]:
    """Configurations at least MANY services read whole (a ConfigMap or Secret, or one of its entries, counting
    every copy that differs at most by its reader's own name) that name at least MANY stores or DIRECTORY
    Services: the app's one file of addresses, read by each service for the few it uses."""
    services = sorted(k for k, n in model.services.items() if n.is_service)
    everything = Targets(service_targets(model, services))
    reads: list[tuple[str, Document]] = []  # (reader, object read whole)
    names: dict[str | None, set[str]] = defaultdict(set)  # part (None: the whole object) -> its readers' names
    for key in sorted(model.services):
        node = model.services[key]
        if node.workload is None or edge_owner(model, node).key != key:
            continue
        home = model.namespace_of(node.workload.doc)
        own = _own_names(model, node)
        for read in config_reads(node.workload.pod_template.get("spec") or {}):
            doc = model.find(read.kind, home, read.name) if read.keys is None else None
            if doc is not None:
                reads.append((key, doc))
                for part in (None, *data_of(doc.obj)):
                    names[part] |= own
    groups: dict[tuple[str | None, str], _Copies] = {}
    for key, doc in reads:
        for part in (None, *sorted(data_of(doc.obj))):
            copies = groups.setdefault((part, _content(doc, part, names[part])), _Copies(part))
            copies.readers.add(key)
            copies.docs.setdefault(id(doc), doc)
    out: list[SharedConfig] = []
    covered: set[tuple[int, str | None]] = set()  # (doc, key) already listed
    # entries first (a file of addresses beside the reader's own settings is the entry, not the object), then whole
    # objects for what their entries do not say one by one (`DB_URL`, `CACHE`, `BROKERS` keys of one ConfigMap)
    for copies in sorted(groups.values(), key=lambda c: (c.key is None, -len(c.readers))):
        docs = list(copies.docs.values())
        if len(copies.readers) < MANY or all((id(d), copies.key) in covered for d in docs):
            continue
        first = min(docs, key=object_name)
        keys = (copies.key,) if copies.key is not None else \
            tuple(k for k in sorted(data_of(first.obj)) if (id(first), k) not in covered)
        if not keys:
            continue
        refs = data_refs(first, everything.at(model.namespace_of(first)), keys, frozenset())
        named = {r.target.key for found in refs.values() for r in found}
        stores = sorted(k for k in named if store_sign(model.services[k]) is not None)
        if len(stores) < MANY and len(named) - len(stores) < DIRECTORY:
            continue
        covered |= {(id(d), copies.key) for d in docs}
        suffix = "" if copies.key is None else f"[{copies.key}]"
        out.append(SharedConfig(object_name(first) + suffix, tuple(sorted(copies.readers)), tuple(stores),
                                evidence(first, "data" + suffix, ", ".join(sorted(refs))),
                                tuple(sorted(named - set(stores))),
                                tuple(sorted(object_name(d) + suffix for d in docs)) if len(docs) > 1 else ()))
    return sorted(out, key=lambda c: c.object)


def _shared_parts(shared: list[SharedConfig]) -> frozenset[str]:
    """Every object (`ConfigMap/name`) and entry (`ConfigMap/name[key]`) a shared configuration stands for."""
    return frozenset(name for c in shared for name in (c.copies or (c.object,)))


def infer_edges(model: Model, shared: list[SharedConfig] = ()) -> list[Edge]:
    """Every reference a workload makes to a Service, as a dependency edge with its evidence; a shared
    configuration read whole gives no edge at all (`shared_configs`)."""
    services = sorted(k for k, n in model.services.items() if n.is_service)
    everything = Targets(service_targets(model, services))
    shared_parts = _shared_parts(shared)
    edges: list[Edge] = []
    seen: set[tuple[str, str]] = set()
    for key in sorted(model.services):
        node = model.services[key]
        if node.workload is None or node.workload.doc.kind in SKIPPED_KINDS:
            continue
        owner = edge_owner(model, node)
        if owner.key != key:
            continue
        wdoc = node.workload.doc
        own = {n.key for n in model.nodes_on(wdoc)} | {key}
        home = model.namespace_of(wdoc)
        targets = everything.at(home)
        spec = node.workload.pod_template.get("spec") or {}
        base = "spec.jobTemplate.spec.template.spec" if wdoc.kind == "CronJob" else "spec.template.spec"
        found: list[tuple[Reference, str, str, str]] = []  # ref, text, field path, value
        for slot in pod_slots(spec, targets, node.no_rewrite):
            path = (f"{base}.containers[{slot.container}].env[{slot.label}].value" if slot.field == "env"
                    else f"{base}.containers[{slot.container}].{slot.field}[{slot.label}]")
            found += [(r, slot.value, path, slot.value) for r in slot.refs]
        extra: list[tuple[Document, Reference, str, str]] = []
        for read in config_reads(spec):
            doc = model.find(read.kind, home, read.name)
            if doc is None:
                continue
            name = object_name(doc)
            named = _keys_named(spec, read.kind, read.name) if read.keys is None else frozenset()
            for dkey, refs in data_refs(doc, targets, read.keys, node.no_rewrite).items():
                if read.keys is None and dkey not in named and (name in shared_parts
                                                                or f"{name}[{dkey}]" in shared_parts):
                    continue  # the app's shared configuration: says nothing of what this reader uses
                text = _data_value(doc, dkey)
                extra += [(doc, r, f"data[{dkey}]", text) for r in refs]
        for ref, text, path, value in found:
            _add_edge(model, node, own, ref, text, evidence(wdoc, path, value, ref.start), edges, seen)
        for doc, ref, path, text in extra:
            ev = evidence(doc, path, text, ref.start)
            ev = Evidence(ev.file, ev.index, ev.object + f" (read by {object_name(wdoc)})", ev.field, ev.value)
            _add_edge(model, node, own, ref, text, ev, edges, seen)
    return edges


def _keys_named(spec: dict, kind: str, name: str) -> frozenset[str]:
    """The keys of ConfigMap (or Secret) `name` that the pod reads one by one (`configMapKeyRef`): what it
    really uses of a shared configuration it also reads whole."""
    field = "configMapKeyRef" if kind == "ConfigMap" else "secretKeyRef"
    return frozenset(str(ref.get("key")) for c in all_containers(spec) for e in c.get("env") or []
                     if isinstance(e, dict) and isinstance(ref := (e.get("valueFrom") or {}).get(field), dict)
                     and ref.get("name") == name)


def _data_value(doc: Document, key: str) -> str:
    return data_of(doc.obj).get(key, "")


def _add_edge(model: Model, node: ServiceNode, own: set[str], ref: Reference, text: str, ev: Evidence,
              edges: list[Edge], seen: set[tuple[str, str]]) -> None:
    target = model.services.get(ref.target.key)
    if target is None or target.key in own or (node.key, target.key) in seen:
        return
    port, note = _port_item(model, text, ref, target)
    if not port:
        return
    seen.add((node.key, target.key))
    edges.append(Edge(node.key, target.key, _item(node, target, port), ev, note))


