"""`devlane lint` on a mesh (`routing: gateway-api` or `istio`): what a mesh flow needs that no render can see.

- **The entry Gateway** (`mesh-gateway`, a warning). A flow host `<flowId>.<domain>` reaches the cluster through a
  Gateway that devlane never renders: the Gateways an annotated HTTPRoute entry's `parentRefs` name (kind
  `Gateway`, group `gateway.networking.k8s.io`, namespace defaulting to the route's), and `mesh.gateway` for an
  Ingress or LoadBalancer Service entry (a Gateway API Gateway for `gateway-api`, an Istio Gateway for `istio`).
  One that is not among the repository's manifests may not exist, or may have no listener for the flow hosts, and
  devlane cannot tell. A Gateway without a namespace in the repository counts as found (it lands where Argo CD or
  Flux puts it). An Ingress or Service entry without `mesh.gateway` is the render's own error (`mesh-entry`).
- **Port protocols** (`mesh-protocol`, a warning). Only the ports that dependency edges name are checked: a
  request reaches a dev copy through the mesh only as a dependency's callee (an entry's copy names the dev
  Service itself), so other Services and ports do not change what a flow routes. A port is routed by the flow
  header only when `mesh.port_protocol` reads it as HTTP or gRPC; anything else is treated as TCP. Istio's own rule
  is the same order, `appProtocol` first, then the name `<protocol>[-<suffix>]`, and then, unlike devlane, it sniffs
  the traffic, so a port that declares nothing may well carry HTTP the mesh could route while devlane cannot know.
  Hence the warning fires for a port without `appProtocol` that either has no name, or has a name beginning with
  `http` or `grpc` that misses the convention (`httpapi`, `grpcweb`). Any other name (`tcp`, `redis`, `postgres`)
  and any `appProtocol` are taken as deliberate.
"""

from __future__ import annotations

from ...errors import DevlaneError, Diagnostics, Problem
from ..model.records import Entry, Model, ServiceNode
from ..routing import mesh
from ..routing.entries import flow_host, headerless_entry
from ..settings.render_settings import check_mode
from ..settings.repo_config import RepoConfig

Wanted = tuple[str, str, str | None, str]  # how entries name a Gateway (parentRefs, mesh.gateway), its group, ns, name
GROUP_TITLE = {mesh.GATEWAY_GROUP: "Gateway", mesh.ISTIO_GROUP: "Istio Gateway"}


def mesh_problems(model: Model, config: RepoConfig, routing: str | None = None,
                  isolation: str | None = None) -> list[Problem]:
    """The mesh problems of the repository under the session's routing (`--routing` over `.devlane.yaml`); none
    for routing `none`. A mode that cannot be used at all (a mesh with namespace isolation) is the one problem."""
    try:
        mode = check_mode(routing or config.routing, isolation or config.isolation)
    except DevlaneError as exc:
        return list(exc.problems)
    if mode == "none":
        return []
    diags = Diagnostics()
    _gateways(model, config, mode, diags)
    _protocols(model, mode, diags)
    return diags.problems


def _gateways(model: Model, config: RepoConfig, mode: str, diags: Diagnostics) -> None:
    """Every Gateway an entry attaches the flow hosts to is in the repository, or a warning naming it."""
    wanted: dict[Wanted, list[Entry]] = {}
    for entry in model.entries:
        ns = model.namespace_of(entry.doc)
        if entry.kind == "HTTPRoute":
            for parent in (entry.doc.obj.get("spec") or {}).get("parentRefs") or []:
                if (isinstance(parent, dict) and parent.get("name") and parent.get("kind", "Gateway") == "Gateway"
                        and parent.get("group", mesh.GATEWAY_GROUP) == mesh.GATEWAY_GROUP):
                    ref = ("parentRefs", mesh.GATEWAY_GROUP, parent.get("namespace") or ns, str(parent["name"]))
                    wanted.setdefault(ref, []).append(entry)
        elif entry.kind in ("Ingress", "Service"):
            if config.mesh_gateway:
                group = mesh.GATEWAY_GROUP if mode == "gateway-api" else mesh.ISTIO_GROUP
                wanted.setdefault(("mesh.gateway", group, *mesh.gateway_ref(config.mesh_gateway, ns)), []).append(entry)
            else:
                headerless_entry(entry, model.entries, mode, diags)
    present = {(d.api_version.partition("/")[0], model.namespace_of(d), d.name)
               for d in model.documents if d.kind == "Gateway"}
    for (via, group, ns, name), entries in sorted(wanted.items(), key=lambda w: str(w[0])):
        if (group, ns, name) in present or (group, None, name) in present:
            continue
        title = f"{GROUP_TITLE[group]} {f'{ns}/' if ns else ''}{name} ({group})"
        refs = ", ".join(e.doc.ref for e in entries)
        origin = f"named in parentRefs by {refs}" if via == "parentRefs" else \
            f"mesh.gateway in .devlane.yaml for {refs}"
        hosts = sorted({_flow_host(e, config.domain) for e in entries})
        diags.warn(f"routing {mode}: {title}, {origin}, is not among the repository's manifests: devlane cannot check "
                   f"that its listeners admit the per-flow hosts ({', '.join(hosts)})", entries[0].doc.where(),
                   hint=f"add {title} to the manifests, or make sure it exists in the cluster with a wildcard "
                   f"listener (hostname {', '.join('*.' + h.partition('.')[2] for h in hosts)})", code="mesh-gateway")


def _flow_host(entry: Entry, domain: str | None) -> str:
    """The entry's per-flow host, with `<flowId>` for the flow (`<flowId>.<domain>` when nothing derives it)."""
    host = next(iter(entry.hosts), None)
    return flow_host(str(host) if host is not None else None, "<flowId>", domain) or "<flowId>.<domain>"


def _protocols(model: Model, mode: str, diags: Diagnostics) -> None:
    """Every port a dependency edge names declares its protocol, or a warning naming the Service and port."""
    callers: dict[tuple[str, str], list[str]] = {}
    for key in sorted(model.services):
        for dep, port in model.services[key].dependencies:
            callers.setdefault((dep, port), []).append(model.services[key].ref)
    for (dep, port_ref), refs in sorted(callers.items()):
        callee = model.services.get(dep)
        port = _port(callee, port_ref) if callee is not None and callee.is_service else None
        if port is None or port.get("appProtocol"):
            continue
        name = str(port.get("name") or "")
        if name and (not name.lower().startswith(("http", "grpc")) or mesh.port_protocol(port) != "tcp"):
            continue
        said = (f"port {port.get('port')} has neither appProtocol nor a name" if not name else
                f"port {name} has no appProtocol and its name is not <protocol>[-<suffix>] (http-..., grpc-...)")
        diags.warn(f"routing {mode}: Service {callee.ref} (called by {', '.join(refs)}) {said}, so devlane cannot "
                   "tell it carries HTTP or gRPC and treats it as TCP, which the mesh cannot route by the flow header: "
                   "a flow reaches its dev copy only through callers that have dev copies themselves, with their "
                   "references rewritten to it",
                   callee.doc.where(),
                   hint="set appProtocol: http (or grpc) on the port, or name it http or grpc-<suffix>; if it is TCP, "
                   "name it so (tcp, redis, postgres, ...)", code="mesh-protocol")


def _port(node: ServiceNode, ref: str) -> dict | None:
    """The port of a Service an edge names: by name, or by number (an unnamed port)."""
    ports = [p for p in (node.doc.obj.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]
    return next((p for p in ports if p.get("name") == ref), None) or \
        next((p for p in ports if str(p.get("port")) == ref), None)
