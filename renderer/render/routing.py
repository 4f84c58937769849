"""Routing: how traffic reaches a flow's dev versions.

Mode `none` (works on any cluster, no mesh): every annotated entry gets a per-flow copy whose
host is `<flowId>.<domain>` and whose backends point at the dev Services where they exist.
Mode `gateway-api`: the entry HTTPRoute's copy also adds the flow's baggage member, and `mesh` adds the
flow's producer routes. `istio` is not implemented yet and is refused.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import get_args

from ..core.k8s import strip_metadata
from ..core.names import KARDINAL, flow_labels
from ..errors import Diagnostics, Where, fail
from . import mesh
from .clone import DevSet
from .config import Routing
from .model import Entry, Model

MODES: tuple[str, ...] = get_args(Routing)
IMPLEMENTED = ("none", "gateway-api")


@dataclass(frozen=True)
class Entries:
    """A flow's entry objects, and what `flow.metadata` says of them (kind, name, hosts)."""

    objects: list[dict]
    summary: list[dict]


def check_mode(mode: str) -> Routing:
    if mode not in MODES:
        raise fail(f"unknown routing mode {mode!r}", hint=f"use one of: {', '.join(MODES)}", code="routing")
    if mode not in IMPLEMENTED:
        raise fail(
            f"routing mode {mode!r} is not implemented in this version of devlane",
            hint="use --routing gateway-api (Istio implements Gateway API for the mesh) or --routing none",
            code="routing",
        )
    return mode  # type: ignore[return-value]


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


def route_entries(model: Model, dev: DevSet, flow_id: str, domain: str | None, diags: Diagnostics,
                  routing: Routing = "none", baggage_key: str = mesh.DEFAULT_KEY) -> Entries:
    """Per-flow entry objects and a summary of them (kind, name, host); on a mesh, the flow's routes too."""
    hosts = HostMap(flow_id, domain)
    objects: list[dict] = []
    summary: list[dict] = []
    routes = [e.doc.ref for e in model.entries if e.kind == "HTTPRoute"]
    for entry in sorted(model.entries, key=lambda e: (e.kind, e.doc.name)):
        where = entry.doc.where()
        if routing != "none" and entry.kind in ("Ingress", "Service"):
            message = (f"routing {routing}: the entry {entry.doc.ref} is an {entry.kind}, which cannot add the flow "
                       "header to the requests it forwards")
            if routes:  # the flow is reached through the route
                diags.warn(message + f"; the flow is reached through {', '.join(routes)} only", where,
                           hint="remove kardinal.dev.service/ingress from it, or use --routing none",
                           code="mesh-entry")
            else:
                diags.error(message, where, hint="mark an HTTPRoute attached to your Gateway as the entry "
                            "(kardinal.dev.service/route: \"true\"), or use --routing none", code="mesh-entry")
            continue
        if entry.kind == "Ingress":
            obj = _ingress(entry, dev, flow_id, hosts, where, model.namespace_of(entry.doc))
        elif entry.kind == "HTTPRoute":
            obj = _httproute(entry, dev, flow_id, hosts, where, model.namespace_of(entry.doc))
            if routing != "none":
                obj = mesh.add_member(obj, flow_id, baggage_key)
        elif entry.kind == "Service":
            obj = _legacy_service_ingress(entry, dev, flow_id, hosts, where, model)
        else:  # Gateway: shared by all flows; check that it will accept the flow hosts
            _check_gateway(entry, flow_id, domain, diags)
            continue
        objects.append(obj)
        host_list = [r.get("host") for r in obj["spec"].get("rules") or []] or obj["spec"].get("hostnames") or []
        summary.append({"kind": obj["kind"], "name": obj["metadata"]["name"], "hosts": sorted(set(host_list))})
    if routing == "gateway-api":
        objects += mesh.gamma_routes(model, dev, flow_id, baggage_key)
    return Entries(objects, summary)


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
