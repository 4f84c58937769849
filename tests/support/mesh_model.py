"""An independent model of mesh routing, for tests: where a request to a Service goes, from rendered objects only.

Written from the specifications, not from devlane's code (`renderer/render/checks/route_proof.py` is what is checked):
- GAMMA (Gateway API mesh-overview, HTTPRoute/GRPCRoute CRDs): a Route attaches to a Service through a `parentRef`
  of kind Service (group "" or "core"). All Routes attached to one Service merge; of the rules that match, the one
  with the most header matches wins, then the Route `{namespace}/{name}` first in alphabetical order, then rule
  order; when no rule matches, the request is rejected (404).
- Istio: a VirtualService without `gateways` (or with `mesh`) applies to sidecars for each of its `hosts` (a short
  name in the VirtualService's namespace, `name.ns`, or `name.ns.svc.<domain>`); its `http` rules are tried in
  order, the first that matches wins; none matching is a 404.
- Header values: Envoy joins repeated headers with "," and matches a regular expression against the whole value
  (RE2 full match); Linkerd matches each value whole. Python's `re.fullmatch` agrees on the expressions used here.

`check_mesh_flow` then asks, for every baseline Service with an HTTP or gRPC port: does a request carrying the
flow's baggage member (among other members, with spaces and properties) reach the dev copy when the flow has one,
and the baseline otherwise; does a request without it, or with another flow's look-alike member, reach the baseline?
"""

from __future__ import annotations

import re

from .isolation import Key, key_of, name_of, namespace_of

HTTP_PROTOCOLS = {"http", "https", "http2", "grpc", "grpc-web", "h2c", "kubernetes.io/h2c", "kubernetes.io/ws",
                  "kubernetes.io/wss"}


def routable(port: dict) -> bool:
    """Whether the mesh can route a Service port by header: L7 by appProtocol, or by Istio's name-prefix rule."""
    app = str(port.get("appProtocol") or "").lower()
    if app:
        return app in HTTP_PROTOCOLS or app.endswith("/grpc")
    prefix = str(port.get("name") or "").lower().split("-")[0]
    return prefix in {"http", "https", "http2", "grpc", "grpc-web"}


def _service_key(host: str, vs_namespace: str | None) -> Key:
    parts = host.split(".")
    return (parts[1] if len(parts) > 1 else vs_namespace), parts[0]


class Routes:
    """What every Service's attached routes do, GAMMA and Istio."""

    def __init__(self, objects: list[dict]):
        self.gamma: dict[Key, list[tuple[str, int, dict, dict | None]]] = {}
        self.istio: dict[Key, list[dict]] = {}
        for obj in objects:
            spec = obj.get("spec") or {}
            ns = namespace_of(obj)
            if obj["kind"] in ("HTTPRoute", "GRPCRoute"):
                for parent in spec.get("parentRefs") or []:
                    if parent.get("kind") == "Service" and parent.get("group", "") in ("", "core"):
                        key = (parent.get("namespace") or ns, parent["name"])
                        for order, rule in enumerate(spec.get("rules") or []):
                            backend = (rule.get("backendRefs") or [None])[0]
                            for match in rule.get("matches") or [{}]:
                                self.gamma.setdefault(key, []).append((f"{ns}/{name_of(obj)}", order, match, backend))
            elif obj["kind"] == "VirtualService" and (not spec.get("gateways") or "mesh" in spec["gateways"]):
                for host in spec.get("hosts") or []:
                    self.istio.setdefault(_service_key(host, ns), []).extend(spec.get("http") or [])

    def reach(self, service: Key, headers: dict[str, str]) -> Key | None:
        """The Service a request for `service` lands on; None when the mesh rejects it."""
        if service in self.istio:
            for rule in self.istio[service]:
                if any(self._istio_match(m, headers) for m in rule.get("match") or [{}]):
                    host = rule["route"][0]["destination"]["host"]
                    return _service_key(host, service[0])
            return None
        rules = self.gamma.get(service)
        if not rules:
            return service
        matching = [r for r in rules if self._gamma_match(r[2], headers)]
        if not matching:
            return None
        best = min(matching, key=lambda r: (-len(r[2].get("headers") or []), r[0], r[1]))
        backend = best[3]
        return None if backend is None else (backend.get("namespace") or service[0], backend["name"])

    @staticmethod
    def _gamma_match(match: dict, headers: dict[str, str]) -> bool:
        for h in match.get("headers") or []:
            value = headers.get(h["name"].lower())
            if value is None:
                return False
            if h.get("type", "Exact") == "Exact" and value != h["value"]:
                return False
            if h.get("type") == "RegularExpression" and not re.fullmatch(h["value"], value):
                return False
        return True

    @staticmethod
    def _istio_match(match: dict, headers: dict[str, str]) -> bool:
        for name, cond in (match.get("headers") or {}).items():
            value = headers.get(name.lower())
            if value is None:
                return False
            if "exact" in cond and value != cond["exact"]:
                return False
            if "prefix" in cond and not value.startswith(cond["prefix"]):
                return False
            if "regex" in cond and not re.fullmatch(cond["regex"], value):
                return False
        return True


def baggage_cases(flow: str, key: str = "devlane-flow") -> tuple[list[str], list[str | None]]:
    """Baggage values that carry the flow (among other members), and values that must not (None: no header)."""
    carry = [f"{key}={flow}", f"othervendor=1,{key}={flow}", f"a=b, {key} = {flow} ;p=1 , c=d"]
    not_carry = [None, "othervendor=1", f"{key}={flow}0", f"x{key}={flow}", f"a={key}={flow}"]
    return carry, not_carry


def check_mesh_flow(baseline: list[dict], rendered: list[dict], flow: str, key: str = "devlane-flow") -> list[str]:
    """Violations of mesh routing for one flow: `rendered` holds the flow's objects and the routes shared with
    other flows (`flows/_mesh/`)."""
    routes = Routes(rendered)
    dev = {key_of(o) for o in rendered if o["kind"] == "Service"}
    carry, not_carry = baggage_cases(flow, key)
    out = []
    for svc in baseline:
        if svc["kind"] != "Service" or not (svc.get("spec") or {}).get("selector"):
            continue
        if not any(routable(p) for p in svc["spec"].get("ports") or []):
            continue
        base = key_of(svc)
        copy = (base[0], f"{base[1]}-{flow}")
        want = copy if copy in dev else base
        for value in carry:
            got = routes.reach(base, {"baggage": value})
            if got != want:
                out.append(f"{base[1]} with baggage {value!r} reaches {got}, not {want}")
        for value in not_carry:
            got = routes.reach(base, {} if value is None else {"baggage": value})
            if got != base:
                out.append(f"{base[1]} with baggage {value!r} reaches {got}, not the baseline {base}")
    return out


def entry_adds_member(rendered: list[dict], flow: str, key: str = "devlane-flow") -> bool:
    """Whether a gateway-facing entry of the flow adds (never sets) the flow's baggage member on every rule."""
    member = f"{key}={flow}"
    found = False
    for obj in rendered:
        spec = obj.get("spec") or {}
        parents = spec.get("parentRefs") or []
        if obj["kind"] == "HTTPRoute" and any(p.get("kind", "Gateway") == "Gateway" for p in parents):
            for rule in spec.get("rules") or []:
                mods = [f["requestHeaderModifier"] for f in rule.get("filters") or []
                        if f.get("type") == "RequestHeaderModifier"]
                if any(h["name"].lower() == "baggage" for m in mods for h in m.get("set") or []):
                    return False
                if not any(h == {"name": "baggage", "value": member} for m in mods for h in m.get("add") or []):
                    return False
            found = True
        elif obj["kind"] == "VirtualService" and spec.get("gateways") and "mesh" not in spec["gateways"]:
            for rule in spec.get("http") or []:
                request = (rule.get("headers") or {}).get("request") or {}
                if "baggage" in (request.get("set") or {}) or (request.get("add") or {}).get("baggage") != member:
                    return False
            found = True
    return found
