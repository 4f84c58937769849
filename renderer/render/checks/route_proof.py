"""The static routing proof of a mesh flow: where each request goes, from the rendered routes alone.

A small model of the mesh (GAMMA semantics): every Route attached to a Service (`parentRef` kind Service,
the repository's and the flow's) is merged; of the rules that match a request, the one with the most header
matches wins, ties going to the route's `namespace/name` and then to rule order; a request no rule matches
is rejected (404). A header match is `Exact` (the whole value) or `RegularExpression` (a full match of the
value, as Envoy does: repeated `baggage` headers are joined with `,`). A request from a gateway goes straight
to the entry route's backend.

Istio (`VirtualService` without `gateways`, or with `mesh` among them, for a Service's host): the rules are
tried in order and the first whose match holds wins (a rule without `match` matches everything); no rule
matching is a 404. A VirtualService for a host takes precedence over routes attached to the Service.

The walk follows every dependency path from each entry twice: with the flow header (a `baggage` value
carrying another member too, as OpenTelemetry's would) every hop must reach the dev version where the flow
has one and the baseline otherwise; without it, every hop must reach the baseline. A hop to a service the
mesh cannot route by header (TCP) follows the reference rewriting instead: a dev caller reaches the dev copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import Problem, Where
from ..copies.dev_set import DevSet
from ..model.records import Model
from ..routing import mesh

OTHER_MEMBER = "othervendor=1"  # another baggage member: an `Exact` match on the flow's would fail


@dataclass(frozen=True)
class Rule:
    route: str  # namespace/name of the route, for precedence and messages
    headers: tuple[tuple[str, str, str], ...]  # (type, name, value)
    backend: str | None  # the first backend's Service name (None: no backend)


@dataclass(frozen=True)
class Proof:
    paths: int  # dependency paths walked (each with and without the header)
    violations: list[str]


class Mesh:
    """The routes attached to each Service, merged as the mesh merges them."""

    def __init__(self, objects: list[dict], default_namespace: str | None):
        self.rules: dict[tuple[str | None, str], list[Rule]] = {}
        self.ordered: dict[tuple[str | None, str], list[Rule]] = {}  # Istio: first match wins
        for obj in objects:
            if obj.get("kind") == "VirtualService":
                self._virtual_service(obj, default_namespace)
            if obj.get("kind") not in ("HTTPRoute", "GRPCRoute"):
                continue
            meta = obj.get("metadata") or {}
            ns = meta.get("namespace") or default_namespace
            spec = obj.get("spec") or {}
            for parent in spec.get("parentRefs") or []:
                if not isinstance(parent, dict) or parent.get("kind") != "Service":
                    continue
                key = (parent.get("namespace") or ns, str(parent.get("name")))
                for rule in spec.get("rules") or []:
                    backends = [b for b in rule.get("backendRefs") or [] if isinstance(b, dict)]
                    matches = rule.get("matches") or [{}]
                    for match in matches:
                        headers = tuple((str(h.get("type", "Exact")), str(h.get("name", "")).lower(),
                                         str(h.get("value", ""))) for h in match.get("headers") or [])
                        self.rules.setdefault(key, []).append(
                            Rule(f"{ns}/{meta.get('name')}", headers, str(backends[0]["name"]) if backends else None))

    def _virtual_service(self, obj: dict, default_namespace: str | None) -> None:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or default_namespace
        spec = obj.get("spec") or {}
        if spec.get("gateways") and "mesh" not in spec["gateways"]:
            return  # bound to a gateway only: not what sidecars use
        rules = []
        for rule in spec.get("http") or []:
            route = [r for r in rule.get("route") or [] if isinstance(r, dict)]
            backend = _service_of(str(((route[0].get("destination") or {}).get("host")) or "")) if route else None
            for match in rule.get("match") or [{}]:
                headers = tuple(_istio_header(name, m) for name, m in (match.get("headers") or {}).items())
                rules.append(Rule(f"{ns}/{meta.get('name')}", headers, backend))
        for host in spec.get("hosts") or []:
            name, _, rest = str(host).partition(".")
            key = (rest.split(".")[0] if rest else ns, name)
            self.ordered.setdefault(key, []).extend(rules)

    def destination(self, namespace: str | None, service: str, headers: dict[str, str]) -> str | None:
        """The Service a request to `service` reaches: itself without routes; None when rejected (404)."""
        ordered = self.ordered.get((namespace, service))
        if ordered is not None:
            for rule in ordered:
                if all(_header_matches(kind, headers.get(name), value) for kind, name, value in rule.headers):
                    return rule.backend
            return None
        rules = self.rules.get((namespace, service))
        if not rules:
            return service
        best: Rule | None = None
        for rule in sorted(rules, key=lambda r: r.route):  # stable: rule order within a route is kept
            matched = all(_header_matches(kind, headers.get(name), value) for kind, name, value in rule.headers)
            if matched and (best is None or len(rule.headers) > len(best.headers)):
                best = rule
        return None if best is None else best.backend


def _service_of(host: str) -> str:
    """A destination host (`name`, `name.ns`, `name.ns.svc.<domain>`) as the Service name."""
    return host.split(".")[0]


def _istio_header(name: str, match: object) -> tuple[str, str, str]:
    """An Istio `StringMatch` (`exact`, `prefix` or `regex`) as (type, name, value)."""
    match = match if isinstance(match, dict) else {}
    for key, kind in (("regex", "RegularExpression"), ("prefix", "Prefix"), ("exact", "Exact")):
        if key in match:
            return kind, name.lower(), str(match[key])
    return "Present", name.lower(), ""


def _header_matches(kind: str, actual: str | None, value: str) -> bool:
    if actual is None:
        return False
    if kind == "Present":
        return True
    if kind == "Prefix":
        return actual.startswith(value)
    if kind == "RegularExpression":
        try:
            return re.fullmatch(value, actual) is not None
        except re.error:
            return False
    return actual == value


_Trail = tuple  # (the trail before it, a name): each hop shares its caller's trail, so a deep chain costs one


def _names(trail: _Trail | None) -> list[str]:
    """The names of a trail, from the entry on (spelled out only for a violation)."""
    out = []
    while trail is not None:
        trail, name = trail
        out.append(name)
    return out[::-1]


def prove(model: Model, dev: DevSet, objects: list[dict], flow_id: str, key: str = mesh.DEFAULT_KEY) -> Proof:
    """Walk every dependency path from every entry, with and without the flow header."""
    routes = Mesh([*(d.obj for d in model.documents), *objects], model.default_namespace)
    dev_name = {k: dev.dev_names[k] for k in dev.dev_names if dev.versions.get(k) in (flow_id, "shared")}
    by_name = {dev.dev_names[k]: k for k in dev_name}
    with_header = {mesh.BAGGAGE: f"{OTHER_MEMBER}, {mesh.member(flow_id, key)}"}
    without = {mesh.BAGGAGE: OTHER_MEMBER}
    violations: list[str] = []
    paths = 0
    entries = [(e.doc.ref, [b for b in e.backends if b in model.services]) for e in model.entries
               if e.kind != "Gateway"]
    for ref, backends in entries:
        for start in backends:
            for header, label in ((with_header, "with"), (without, "without")):
                first = dev_name.get(start, model.services[start].name) if label == "with" else \
                    model.services[start].name
                stack: list[tuple[_Trail, str, str]] = [(((None, ref), first), start, first)]
                seen: set[tuple[str, str]] = set()
                while stack:
                    trail, node_key, reached = stack.pop()
                    node = model.services.get(node_key)
                    if node is None or (node_key, reached) in seen:
                        continue
                    seen.add((node_key, reached))
                    for dep, _port in node.dependencies:
                        callee = model.services.get(dep)
                        if callee is None or not callee.is_service:
                            continue
                        paths += 1
                        want = dev_name.get(dep, callee.name) if label == "with" else callee.name
                        if dep in dev.by_header:
                            got = routes.destination(model.namespace_of(callee.doc), callee.name, header)
                        else:  # TCP: the dev caller's rewritten reference, or the baseline address
                            got = dev_name.get(dep, callee.name) if reached in by_name and dep in dev_name \
                                else callee.name
                        if got != want:
                            where = "is rejected (no rule matches: 404)" if got is None else f"reaches {got}"
                            path = " -> ".join([*_names(trail), callee.name])
                            violations.append(f"{label} the flow header, {path} {where}, not {want}")
                            continue
                        stack.append(((trail, got), dep, got))
    return Proof(paths, sorted(set(violations)))


def check(model: Model, dev: DevSet, objects: list[dict], flow_id: str, key: str) -> list[Problem]:
    """The proof on the final objects of a mesh flow: each violation is an error."""
    return [Problem(f"routing proof: {v}", Where(object=f"flow {flow_id}"),
                    hint="report this as a devlane bug, or check the routes a plugin or post-render step changed",
                    code="routing-proof") for v in prove(model, dev, objects, flow_id, key).violations]
