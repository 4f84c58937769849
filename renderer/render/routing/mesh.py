"""Mesh routing: a flow's dev copies are reached by a flow header, not by copies along the path.

The header is the W3C `baggage` member `devlane-flow=<flowId>` (the key is `mesh.baggageKey`). The entry
*adds* the member (never sets the header, so a client's baggage survives), apps propagate it (OpenTelemetry
does by default), and the mesh matches it with an anchored regular expression: an `Exact` match fails as
soon as another baggage member is present, and Envoy joins repeated headers with `,` before matching while
Linkerd matches each value whole, so the expression is right under both full-match and search semantics.

`gateway-api` (GAMMA): per dev Service and HTTP (or gRPC) port, a producer `HTTPRoute` (`GRPCRoute`) in the
Service's namespace with the Service as `parentRef`: one rule sending the flow's header to the dev Service,
and the mandatory catch-all back to the baseline (once a route is attached to a Service, an unmatched
request gets a 404). Routes of one Service merge; a flow rule (one header match) outranks every catch-all
(none), so each flow owns its routes and no object is shared between flows. Ports that are neither HTTP nor
gRPC cannot be routed by header: references to their dev copies are rewritten instead (`clone`).

`istio`: sidecars do not merge VirtualServices of one host, so each baseline host with dev versions in any
flow gets exactly one VirtualService listing every flow (one rule per flow, sorted by flow id, the catch-all
to the baseline last), routing to the per-flow Services by FQDN (DestinationRule subsets would need dev pods
behind the baseline selector). A flow records the hosts it routes in `flow.metadata` (`mesh.hosts`); the
output directory's `flows/_mesh/` is rebuilt from every flow present (`virtual_services`).

An entry that cannot add the header (an Ingress, a LoadBalancer Service) becomes, with `mesh.gateway`, a
per-flow route on that Gateway: an HTTPRoute (gateway-api) or a Gateway-bound VirtualService (istio; those
merge, so it can be per flow).
"""

from __future__ import annotations

import copy

from ...core.names import flow_labels
from ..copies.dev_set import DevSet
from ..inputs.document import Document
from ..model.port_protocols import port_protocol, routed_by_header
from ..model.records import Model

__all__ = ["port_protocol", "routed_by_header"]  # re-exported: the mesh modules ask them

BAGGAGE = "baggage"
DEFAULT_KEY = "devlane-flow"
MESH_MODES = ("gateway-api", "istio")
MESH_DIR = "_mesh"  # flows/_mesh/: istio's per-host VirtualServices, shared by every flow in the output
ISTIO_GROUP = "networking.istio.io"
GATEWAY_GROUP = "gateway.networking.k8s.io"


def header_regex(flow_id: str, key: str = DEFAULT_KEY) -> str:
    """The anchored expression that finds member `key=flow_id` anywhere in a `baggage` value: with other members
    before or after it, spaces or tabs around `=` and `,`, and properties (`;p=1`) after the value."""
    name = key.replace(".", r"\.")  # keys are [a-z0-9._-]: only the dot means something in an expression
    return rf"^(.*,)?[ \t]*{name}[ \t]*=[ \t]*{flow_id}[ \t]*(;[^,]*)?(,.*)?$"


def member(flow_id: str, key: str = DEFAULT_KEY) -> str:
    """What the entry adds to `baggage`."""
    return f"{key}={flow_id}"


def gamma_routes(model: Model, dev: DevSet, flow_id: str, key: str = DEFAULT_KEY) -> list[dict]:
    """The producer routes of a flow: per dev Service and HTTP/gRPC port, the flow's header to the dev copy and
    everything else to the baseline."""
    out = []
    for svc in sorted(dev.services, key=lambda s: (s.baseline.namespace or "", s.baseline.name)):
        if svc.version != flow_id:
            continue
        base = svc.baseline
        ns = model.namespace_of(base)
        ports = [p for p in (base.obj.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]
        routed = [(p, port_protocol(p)) for p in ports if port_protocol(p) != "tcp"]
        for port, protocol in routed:
            kind = "GRPCRoute" if protocol == "grpc" else "HTTPRoute"
            name = svc.obj["metadata"]["name"]
            if len(routed) > 1:
                name = f"{name}-{port.get('name') or port.get('port')}"
            meta: dict = {"name": name, "labels": flow_labels(flow_id)}
            if ns:
                meta["namespace"] = ns
            number = int(port.get("port"))
            match = {"headers": [{"type": "RegularExpression", "name": BAGGAGE, "value": header_regex(flow_id, key)}]}
            out.append({
                "apiVersion": f"{GATEWAY_GROUP}/v1", "kind": kind, "metadata": meta,
                "spec": {
                    "parentRefs": [{"group": "", "kind": "Service", "name": base.name, "port": number}],
                    "rules": [
                        {"matches": [match], "backendRefs": [{"name": svc.obj["metadata"]["name"], "port": number}]},
                        {"backendRefs": [{"name": base.name, "port": number}]},  # the mandatory catch-all
                    ],
                },
            })
    return out


def add_member(route: dict, flow_id: str, key: str = DEFAULT_KEY) -> dict:
    """An entry HTTPRoute whose every rule adds the flow's member to `baggage` (add, so client baggage stays)."""
    route = copy.deepcopy(route)
    header = {"name": BAGGAGE, "value": member(flow_id, key)}
    for rule in (route.get("spec") or {}).get("rules") or []:
        filters = rule.setdefault("filters", [])
        for f in filters:
            if f.get("type") == "RequestHeaderModifier":
                f.setdefault("requestHeaderModifier", {}).setdefault("add", []).append(dict(header))
                break
        else:
            filters.append({"type": "RequestHeaderModifier", "requestHeaderModifier": {"add": [dict(header)]}})
    return route


def fqdn(name: str, namespace: str | None, cluster_domain: str) -> str:
    """A Service's name as Istio needs it: short names resolve in the VirtualService's namespace, so a fully
    qualified one wherever the namespace is known (a namespace-less app keeps short names, and so do its
    VirtualServices, which land in the same namespace)."""
    return f"{name}.{namespace}.svc.{cluster_domain}" if namespace else name


def istio_hosts(model: Model, dev: DevSet, flow_id: str) -> list[dict]:
    """What a flow records for the shared VirtualServices: per dev Service with an HTTP or gRPC port, the
    baseline host, the dev Service and the routed ports."""
    out = []
    for svc in sorted(dev.services, key=lambda s: (s.baseline.namespace or "", s.baseline.name)):
        ports = [int(p["port"]) for p in (svc.baseline.obj.get("spec") or {}).get("ports") or []
                 if isinstance(p, dict) and port_protocol(p) != "tcp"]
        if svc.version != flow_id or not ports:
            continue
        out.append({"namespace": model.namespace_of(svc.baseline), "service": svc.baseline.name,
                    "dev": svc.obj["metadata"]["name"], "ports": sorted(set(ports))})
    return out


def own_virtual_services(model: Model, hosts: list[dict]) -> list[tuple[Document, str]]:
    """The repository's own sidecar VirtualServices for a host devlane routes, with that host: sidecars do not merge
    two VirtualServices of one host (Istio's analyzer reports IST0109), so one of them would be ignored."""
    routed = {(h.get("namespace"), h["service"]) for h in hosts}
    out = []
    for doc in model.documents:
        spec = doc.obj.get("spec") or {}
        if doc.kind != "VirtualService" or (spec.get("gateways") and "mesh" not in spec["gateways"]):
            continue
        for host in spec.get("hosts") or []:
            name, _, rest = str(host).partition(".")
            if (rest.split(".")[0] if rest else model.namespace_of(doc), name) in routed:
                out.append((doc, str(host)))
    return out


def virtual_services(records: dict[str, dict]) -> list[dict]:
    """The one VirtualService per baseline host that sidecars need, from every flow's `mesh` record: a rule per
    flow (and port, where several are routed), sorted by flow id, then the catch-all to the baseline."""
    hosts: dict[tuple[str, str], dict[str, tuple[str, list[int], str, str]]] = {}
    for flow_id, record in records.items():
        domain = record.get("clusterDomain") or "cluster.local"
        for h in record.get("hosts") or []:
            hosts.setdefault((h.get("namespace") or "", h["service"]), {})[flow_id] = (
                h["dev"], [int(p) for p in h["ports"]], record.get("key") or DEFAULT_KEY, domain)
    out = []
    for (ns, service), flows in sorted(hosts.items()):
        namespace = ns or None
        ports = sorted({p for _, routed, _, _ in flows.values() for p in routed})
        by_port = len(ports) > 1
        domain = flows[min(flows)][3]

        http = [_vs_rule(f"flow-{flow_id}", fqdn(dev_name, namespace, dev_domain), port, by_port,
                         header_regex(flow_id, key))
                for flow_id, (dev_name, routed, key, dev_domain) in sorted(flows.items()) for port in routed]
        http += [_vs_rule("baseline", fqdn(service, namespace, domain), port, by_port) for port in ports]
        meta: dict = {"name": f"devlane-{service}", "labels": {"app.kubernetes.io/managed-by": "devlane",
                                                                 "devlane.dev/mesh": "istio"}}
        if namespace:
            meta["namespace"] = namespace
        out.append({"apiVersion": f"{ISTIO_GROUP}/v1", "kind": "VirtualService", "metadata": meta,
                    "spec": {"hosts": [fqdn(service, namespace, domain)], "http": http}})
    return out


def _vs_rule(name: str, host: str, port: int, by_port: bool, regex: str | None = None) -> dict:
    """One HTTP rule: the flow header (if any) on one port (where several are routed) to `host`."""
    match = {**({"headers": {BAGGAGE: {"regex": regex}}} if regex else {}), **({"port": port} if by_port else {})}
    return {"name": f"{name}-{port}" if by_port else name, **({"match": [match]} if match else {}),
            "route": [{"destination": {"host": host, "port": {"number": port}}}]}


def gateway_ref(value: str, namespace: str | None) -> tuple[str | None, str]:
    """`mesh.gateway` (`ns/name` or `name`) as (namespace, name); a bare name is in the entry's namespace."""
    ns, _, name = value.rpartition("/")
    return (ns or namespace), name


def entry_paths(obj: dict) -> list[tuple[str | None, str, str, dict]]:
    """An Ingress's (host, path, pathType, service backend) list, a default backend as `/` on every host."""
    spec = obj.get("spec") or {}
    out = []
    for rule in spec.get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            backend = (path.get("backend") or {}).get("service")
            if isinstance(backend, dict) and backend.get("name"):
                out.append((rule.get("host"), path.get("path") or "/", path.get("pathType") or "Prefix", backend))
    default = (spec.get("defaultBackend") or {}).get("service")
    if isinstance(default, dict) and default.get("name"):
        out.append((None, "/", "Prefix", default))
    return out
