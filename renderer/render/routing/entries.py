"""Routing: how traffic reaches a flow's dev versions.

Mode `none` (works on any cluster, no mesh): every annotated entry gets a per-flow copy whose
host is `<flowId>.<domain>` and whose backends point at the dev Services where they exist.
Mesh modes (`gateway-api`, `istio`): the entry adds the flow's baggage member (an HTTPRoute entry's copy
does; an Ingress or LoadBalancer Service entry becomes a route on `mesh.gateway`), and `mesh` adds the
flow's producer routes (gateway-api) or records the hosts the shared VirtualServices route (istio).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ...core.k8s import strip_metadata
from ...core.names import KARDINAL, flow_labels
from ...errors import Diagnostics, Problem, Where, fail
from ..copies.dev_set import DevSet
from ..model.records import Entry, Model
from ..settings.render_settings import RouteSettings
from ..settings.repo_config import Routing
from . import mesh


@dataclass(frozen=True)
class Entries:
    """A flow's entry objects, and what `flow.metadata` says of them (kind, name, hosts)."""

    objects: list[dict]
    summary: list[dict]
    mesh: dict | None = None  # mesh modes: the header, and (istio) the hosts the shared VirtualServices route


def flow_host(host: str | None, flow_id: str, domain: str | None) -> str | None:
    """`<flowId>.<domain>`: the domain from config, else derived from the entry host as Kardinal does.

    `*.app.example.com` and `app.localhost` keep their domain (`<flowId>.app.localhost`); with three
    or more labels the first one is replaced (`baseline.app.localhost` -> `<flowId>.app.localhost`).
    """
    if domain:
        return f"{flow_id}.{domain.strip('.')}"
    if not host:
        return None
    if host.startswith("*."):
        return f"{flow_id}.{host[2:]}"
    labels = host.split(".")
    return f"{flow_id}.{'.'.join(labels[1:] if len(labels) >= 3 else labels)}"


class HostMap:
    """Maps entry hosts to flow hosts, keeping distinct hosts distinct."""

    def __init__(self, flow_id: str, domain: str | None):
        self.flow_id, self.domain = flow_id, domain
        self.assigned: dict[str, str] = {}
        self.used: set[str] = set()

    def get(self, host: str | None, where: Where) -> str:
        key = "" if host is None else str(host)  # an annotation's host may be a YAML number
        if key in self.assigned:
            return self.assigned[key]
        new = flow_host(key or None, self.flow_id, self.domain)
        if new is None:
            raise fail("entry has no host, so the flow host cannot be derived", where,
                       hint="set `domain:` in .devlane.yaml (flows get <flowId>.<domain>)", code="no-domain")
        if new in self.used:  # two entry hosts on one domain: keep them apart
            first = (key or "default").split(".")[0].lstrip("*") or "default"
            new = new.replace(f"{self.flow_id}.", f"{self.flow_id}-{first}.", 1)
        self.assigned[key] = new
        self.used.add(new)
        return new


def route_entries(model: Model, dev: DevSet, flow_id: str, settings: RouteSettings) -> tuple[Entries, list[Problem]]:
    """Per-flow entry objects and a summary of them (kind, name, host); on a mesh, the flow's routes too; and the
    problems found making them."""
    diags = Diagnostics()
    routing, domain, baggage_key, gateway = settings.mode, settings.domain, settings.baggage_key, settings.mesh_gateway
    hosts = HostMap(flow_id, domain)
    objects: list[dict] = []
    summary: list[dict] = []
    producers = mesh.gamma_routes(model, dev, flow_id, baggage_key) if routing == "gateway-api" else []
    taken = {r["metadata"]["name"] for r in producers}  # named after the dev Services
    for entry in sorted(model.entries, key=lambda e: (e.kind, e.doc.name)):
        where = entry.doc.where()
        made: list[dict] = []
        if routing != "none" and entry.kind in ("Ingress", "Service"):
            if gateway:
                made = _gateway_entry(entry, dev, flow_id, hosts, model, routing, baggage_key, gateway)
            else:
                headerless_entry(entry, model.entries, routing, diags)
                continue
        elif entry.kind == "Ingress":
            made = [_ingress(entry, dev, flow_id, hosts, where, model.namespace_of(entry.doc))]
        elif entry.kind == "HTTPRoute":
            obj = _httproute(entry, dev, flow_id, hosts, where, model.namespace_of(entry.doc))
            made = [mesh.add_member(obj, flow_id, baggage_key) if routing != "none" else obj]
        elif entry.kind == "Service":
            made = [_legacy_service_ingress(entry, dev, flow_id, hosts, where, model)]
        else:  # Gateway: shared by all flows; check that it will accept the flow hosts
            _check_gateway(entry, flow_id, domain, diags)
            continue
        for obj in made:
            if routing == "gateway-api" and obj["kind"] == "HTTPRoute" and obj["metadata"]["name"] in taken:
                obj["metadata"]["name"] = dev.lane.name(f"{entry.doc.name}-entry", flow_id)  # a producer route's
            objects.append(obj)
            summary.append({"kind": obj["kind"], "name": obj["metadata"]["name"], "hosts": _hosts_of(obj)})
    record = None
    if routing != "none":
        record = {"mode": routing, "header": mesh.BAGGAGE, "key": baggage_key,
                  "member": mesh.member(flow_id, baggage_key), "match": mesh.header_regex(flow_id, baggage_key)}
    objects += producers
    if routing == "istio" and record is not None:
        record.update(hosts=mesh.istio_hosts(model, dev, flow_id), clusterDomain=dev.lane.cluster_domain)
        for doc, host in mesh.own_virtual_services(model, record["hosts"]):
            diags.error(f"routing istio: {doc.ref} routes {host}, which devlane routes in flows/{mesh.MESH_DIR}/ "
                        "too; Istio sidecars do not merge two VirtualServices of one host (IST0109), so one is ignored",
                        doc.where(), hint="move its rules into a Gateway-bound VirtualService, or use --routing "
                       "gateway-api (routes attached to a Service merge)", code="mesh-conflict")
    return Entries(objects, summary, record), diags.problems


def headerless_entry(entry: Entry, entries: list[Entry], routing: str, diags: Diagnostics) -> None:
    """An Ingress or LoadBalancer Service entry on a mesh without `mesh.gateway` cannot add the flow header: an
    error, or a warning when HTTPRoute entries reach the flow instead. `render` and `lint` both say it."""
    routes = [e.doc.ref for e in entries if e.kind == "HTTPRoute"]
    message = (f"routing {routing}: the entry {entry.doc.ref} is an {entry.kind}, which cannot add the flow header to "
               "the requests it forwards")
    hint = ("set mesh.gateway in .devlane.yaml (the Gateway each flow's route attaches to), mark an HTTPRoute attached "
            "to your Gateway as the entry (kardinal.dev.service/route: \"true\"), or use --routing none")
    if routes:  # the flow is reached through the route
        diags.warn(message + f"; the flow is reached through {', '.join(routes)} only", entry.doc.where(), hint=hint,
                   code="mesh-entry")
    else:
        diags.error(message, entry.doc.where(), hint=hint, code="mesh-entry")


def _hosts_of(obj: dict) -> list[str]:
    spec = obj.get("spec") or {}
    hosts = [r.get("host") for r in spec.get("rules") or []] if obj["kind"] == "Ingress" else \
        spec.get("hostnames") or spec.get("hosts") or []
    return sorted({h for h in hosts if h})


def _gateway_entry(entry: Entry, dev: DevSet, flow_id: str, hosts: HostMap, model: Model, routing: Routing,
                   key: str, gateway: str) -> list[dict]:
    """An Ingress or LoadBalancer Service entry on a mesh: per flow host, a route on `mesh.gateway` that adds the
    flow header and sends each path where the entry sent it (the dev Service where the flow has one). Paths are
    ordered exact first, then longest prefix: Ingress precedence, which VirtualService's first match needs."""
    where = entry.doc.where()
    ns = model.namespace_of(entry.doc)
    if entry.kind == "Service":
        ports = [p for p in (entry.doc.obj.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]
        backend = {"name": entry.doc.name, "port": {"number": ports[0].get("port", 80) if ports else 80}}
        paths = [(entry.hosts[0] if entry.hosts else None, "/", "Prefix", backend)]
    else:
        paths = mesh.entry_paths(entry.doc.obj)
    if not paths:
        raise fail(f"the entry {entry.doc.ref} sends no path to a Service, so no flow route can be made from it",
                   where, hint="give it a rule with a service backend", code="mesh-entry")
    by_host: dict[str, list[tuple[str, str, str, int]]] = {}
    for host, path, kind, backend in paths:
        port = _port_number(model, ns, backend, where)
        by_host.setdefault(hosts.get(host, where), []).append(
            (path, kind, dev.service_name(str(backend["name"]), ns), port))
    gw_ns, gw_name = mesh.gateway_ref(gateway, ns)
    out = []
    for i, (host, rules) in enumerate(sorted(by_host.items()), start=1):
        base = entry.doc.name if len(by_host) == 1 else f"{entry.doc.name}-{i}"
        meta: dict = {"name": dev.lane.name(base, flow_id), "labels": flow_labels(flow_id)}
        if ns:
            meta["namespace"] = ns
        rules = sorted(set(rules), key=lambda r: (r[1] != "Exact", -len(r[0]), r[0]))
        if routing == "gateway-api":
            parent = {"name": gw_name, **({"namespace": gw_ns} if gw_ns and gw_ns != ns else {})}
            route = {"apiVersion": f"{mesh.GATEWAY_GROUP}/v1", "kind": "HTTPRoute", "metadata": meta, "spec": {
                "parentRefs": [parent], "hostnames": [host],
                "rules": [{"matches": [{"path": {"type": "Exact" if kind == "Exact" else "PathPrefix", "value": path}}],
                           "backendRefs": [{"name": svc, "port": port}]} for path, kind, svc, port in rules]}}
            out.append(mesh.add_member(route, flow_id, key))
        else:
            add = {"request": {"add": {mesh.BAGGAGE: mesh.member(flow_id, key)}}}
            out.append({"apiVersion": f"{mesh.ISTIO_GROUP}/v1", "kind": "VirtualService", "metadata": meta, "spec": {
                "hosts": [host], "gateways": [f"{gw_ns}/{gw_name}" if gw_ns else gw_name],
                "http": [{"match": [{"uri": {"exact" if kind == "Exact" else "prefix": path}}], "headers": add,
                          "route": [{"destination": {"host": mesh.fqdn(svc, ns, dev.lane.cluster_domain),
                                                     "port": {"number": port}}}]}
                         for path, kind, svc, port in rules]}})
    return out


def _port_number(model: Model, namespace: str | None, backend: dict, where: Where) -> int:
    """An Ingress backend's port as a number (routes and VirtualServices take numbers): a named port is looked up
    on the Service."""
    port = backend.get("port") or {}
    if isinstance(port, dict) and isinstance(port.get("number"), int):
        return port["number"]
    name = port.get("name") if isinstance(port, dict) else None
    key = model.service_key(str(backend.get("name")), namespace)
    node = model.services.get(key) if key else None
    for p in ((node.doc.obj.get("spec") or {}).get("ports") or []) if node else []:
        if isinstance(p, dict) and p.get("name") == name and isinstance(p.get("port"), int):
            return p["port"]
    raise fail(f"the entry's backend {backend.get('name')} port {name!r} is not a port of that Service", where,
               hint="give the backend a port number, or name a port the Service has", code="mesh-entry")


def _entry_copy(entry: Entry, dev: DevSet, flow_id: str, namespace: str | None) -> dict:
    """The entry's copy: its dev name beside it, or its own name in the flow namespace of its namespace."""
    obj = strip_metadata(copy.deepcopy(entry.doc.obj))
    meta = obj["metadata"]
    meta["name"] = dev.lane.name(entry.doc.name, flow_id)
    namespace = dev.lane.namespace(namespace, flow_id) if dev.lane.by_namespace else entry.doc.namespace or None
    if namespace:
        meta["namespace"] = namespace
    ann = {k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith(KARDINAL)}
    if ann:
        meta["annotations"] = ann
    else:
        meta.pop("annotations", None)
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(flow_id)}
    return obj


def _ingress(entry: Entry, dev: DevSet, flow_id: str, hosts: HostMap, where: Where, namespace: str | None) -> dict:
    obj = _entry_copy(entry, dev, flow_id, namespace)
    spec = obj["spec"] = obj.get("spec") or {}
    rules = spec.get("rules") or []
    if not rules and spec.get("defaultBackend"):  # a catch-all Ingress becomes a host rule per flow
        rules = [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": spec.pop("defaultBackend")}]}}]
        spec["rules"] = rules
    for rule in rules:
        rule["host"] = hosts.get(rule.get("host"), where)
        for path in (rule.get("http") or {}).get("paths") or []:
            svc = (path.get("backend") or {}).get("service") or {}
            if svc.get("name"):
                svc["name"] = dev.service_name(svc["name"], namespace)
    if isinstance(spec.get("defaultBackend"), dict):
        svc = spec["defaultBackend"].get("service") or {}
        if svc.get("name"):
            svc["name"] = dev.service_name(svc["name"], namespace)
    for tls in spec.get("tls") or []:
        tls["hosts"] = [hosts.get(h, where) for h in tls.get("hosts") or []]
    return obj


def _httproute(entry: Entry, dev: DevSet, flow_id: str, hosts: HostMap, where: Where,
               namespace: str | None) -> dict:
    obj = _entry_copy(entry, dev, flow_id, namespace)
    spec = obj["spec"] = obj.get("spec") or {}
    spec["hostnames"] = [hosts.get(h, where) for h in spec.get("hostnames") or [None]]
    for rule in spec.get("rules") or []:
        for ref in rule.get("backendRefs") or []:
            if ref.get("kind", "Service") == "Service" and ref.get("name"):
                ref["name"] = dev.service_name(ref["name"], ref.get("namespace") or namespace)
                if dev.lane.by_namespace and ref.get("namespace") in dev.namespaces:
                    ref["namespace"] = dev.namespaces[ref["namespace"]]  # the dev copy, in its flow namespace
    if dev.lane.by_namespace and namespace:
        for parent in spec.get("parentRefs") or []:  # the Gateway stays where it is
            if isinstance(parent, dict) and parent.get("kind", "Gateway") == "Gateway":
                parent.setdefault("namespace", namespace)
    return obj


def _legacy_service_ingress(entry: Entry, dev: DevSet, flow_id: str, hosts: HostMap, where: Where,
                            model: Model) -> dict:
    """Legacy Service entry (`ingress` + `host` on a LoadBalancer): a per-flow Ingress to it."""
    spec = entry.doc.obj.get("spec") or {}
    port = next((p for p in spec.get("ports") or [] if isinstance(p, dict)), {}).get("port", 80)
    ns = model.namespace_of(entry.doc)
    backend = dev.service_name(entry.doc.name, ns)
    host = entry.hosts[0] if entry.hosts else None
    meta: dict = {"name": dev.lane.name(entry.doc.name, flow_id), "labels": flow_labels(flow_id)}
    if ns:
        meta["namespace"] = dev.lane.namespace(ns, flow_id)
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": meta,
        "spec": {
            "rules": [
                {
                    "host": hosts.get(host, where),
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": backend, "port": {"number": int(port)}}},
                            }
                        ]
                    },
                }
            ]
        },
    }


def _check_gateway(entry: Entry, flow_id: str, domain: str | None, diags: Diagnostics) -> None:
    listeners = (entry.doc.obj.get("spec") or {}).get("listeners") or []
    for listener in listeners:
        hostname = listener.get("hostname")
        if hostname and not hostname.startswith("*."):
            diags.warn(
                f"Gateway listener {listener.get('name')!r} has hostname {hostname!r}, which will not accept "
                "per-flow hosts",
                entry.doc.where(),
                hint="use a wildcard hostname such as *.<domain>",
                code="gateway-hostname",
            )
        elif hostname and domain and not f"{flow_id}.{domain}".endswith(hostname[1:]):
            diags.warn(f"Gateway listener hostname {hostname!r} does not cover the flow domain {domain!r}",
                       entry.doc.where(), code="gateway-hostname")
