"""Which Service ports a mesh can route by a header: HTTP and gRPC, told by `appProtocol` or by the port's name.

Everything else is TCP to the mesh, so a dev version behind it is reached by rewriting its callers' references,
which the planner must then copy (`plan.planner`), not by the flow header.
"""

from __future__ import annotations

import re

from .records import Model

_GRPC = re.compile(r"^grpc(-|$)")
_HTTP = re.compile(r"^(http|https|http2)(-|$)")
# gRPC-Web rides on HTTP/1.1 or 2 requests: an HTTPRoute routes it, a GRPCRoute would not match it
HTTP_APP_PROTOCOLS = ("http", "https", "http2", "grpc-web", "kubernetes.io/h2c", "kubernetes.io/ws",
                      "kubernetes.io/wss")


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
