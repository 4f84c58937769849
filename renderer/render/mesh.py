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
"""

from __future__ import annotations

import copy
import re

from ..core.names import flow_labels
from .clone import DevSet
from .model import Model

BAGGAGE = "baggage"
DEFAULT_KEY = "devlane-flow"
MESH_MODES = ("gateway-api", "istio")
GATEWAY_GROUP = "gateway.networking.k8s.io"
_GRPC = re.compile(r"^grpc(-|$)")
_HTTP = re.compile(r"^(http|https|http2)(-|$)")
HTTP_APP_PROTOCOLS = ("http", "https", "http2", "kubernetes.io/h2c", "kubernetes.io/ws", "kubernetes.io/wss")


def header_regex(flow_id: str, key: str = DEFAULT_KEY) -> str:
    """The anchored expression that finds member `key=flow_id` anywhere in a `baggage` value: with other members
    before or after it, spaces or tabs around `=` and `,`, and properties (`;p=1`) after the value."""
    name = key.replace(".", r"\.")  # keys are [a-z0-9._-]: only the dot means something in an expression
    return rf"^(.*,)?[ \t]*{name}[ \t]*=[ \t]*{flow_id}[ \t]*(;[^,]*)?(,.*)?$"


def member(flow_id: str, key: str = DEFAULT_KEY) -> str:
    """What the entry adds to `baggage`."""
    return f"{key}={flow_id}"


def port_protocol(port: dict) -> str:
    """`http`, `grpc` or `tcp`: `appProtocol` first, else the port's name (`grpc-*`, `http-*`, `http2`: Istio's
    and Linkerd's conventions). Only HTTP and gRPC can be routed by a header."""
    app = str(port.get("appProtocol") or "").lower()
    name = str(port.get("name") or "").lower()
    if app:
        if app == "grpc" or app.endswith("/grpc") or (app == "kubernetes.io/h2c" and _GRPC.match(name)):
            return "grpc"
        return "http" if app in HTTP_APP_PROTOCOLS else "tcp"
    if _GRPC.match(name):
        return "grpc"
    return "http" if _HTTP.match(name) else "tcp"


def routed_by_header(model: Model, key: str) -> bool:
    """Whether requests reach the dev copy of service `key` by the flow header (an HTTP or gRPC port): if not,
    references to it are rewritten, as the mesh cannot route TCP by header."""
    node = model.services.get(key)
    if node is None or not node.is_service:
        return False
    ports = (node.doc.obj.get("spec") or {}).get("ports") or []
    return any(isinstance(p, dict) and port_protocol(p) != "tcp" for p in ports)


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
