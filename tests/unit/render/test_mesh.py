"""Routing `gateway-api` (GAMMA): the flow header, producer routes with their catch-all, the entry adding the
baggage member, rewriting only towards TCP dev copies, fewer dev copies than routing `none`, the routes valid
against the upstream Gateway API CRDs, and the static routing proof catching broken routes by mutation."""

from __future__ import annotations

import copy
import re

import pytest
from support import CRDS, yaml_doc

from renderer.render import mesh, route_proof

K = "kardinal.dev.service/"
FLOW = "pr-42"


# --- the flow header (research §4.1) ----------------------------------------------------------------

ACCEPT = ["devlane-flow=pr-42", "a=b, devlane-flow = pr-42 , c=d", "devlane-flow=pr-42;p=1,x=y",
          "x=1,\tdevlane-flow\t=\tpr-42"]
REJECT = ["devlane-flow=pr-420", "xdevlane-flow=pr-42", "a=devlane-flow=pr-42", "k=v,devlane-flow=pr-42x",
          "devlane-flow=pr-4", "", "devlane-flow"]


@pytest.mark.parametrize("value", ACCEPT)
def test_the_header_expression_accepts_the_member_among_others(value):
    expr = mesh.header_regex(FLOW)
    assert re.fullmatch(expr, value) and re.search(expr, value)  # Envoy's full match and a search agree


@pytest.mark.parametrize("value", REJECT)
def test_the_header_expression_rejects_look_alikes(value):
    expr = mesh.header_regex(FLOW)
    assert not re.fullmatch(expr, value) and not re.search(expr, value)


def test_the_expression_is_the_one_checked_in_the_research_and_needs_no_backslash_but_tabs():
    assert mesh.header_regex(FLOW) == r"^(.*,)?[ \t]*devlane-flow[ \t]*=[ \t]*pr-42[ \t]*(;[^,]*)?(,.*)?$"
    assert re.fullmatch(mesh.header_regex(FLOW, "team.flow"), "team.flow=pr-42")
    assert not re.fullmatch(mesh.header_regex(FLOW, "team.flow"), "teamxflow=pr-42")


@pytest.mark.parametrize("port,protocol", [
    ({"name": "http", "port": 80}, "http"), ({"name": "http-api", "port": 80}, "http"),
    ({"name": "grpc", "port": 9}, "grpc"), ({"name": "x", "port": 9, "appProtocol": "grpc"}, "grpc"),
    ({"name": "tcp", "port": 5432}, "tcp"), ({"port": 6379}, "tcp"), ({"name": "x", "appProtocol": "HTTP"}, "http"),
    ({"name": "redis", "appProtocol": "redis"}, "tcp"),
    ({"name": "grpc-x", "appProtocol": "kubernetes.io/h2c"}, "grpc"),
])  # fmt: skip
def test_port_protocols_follow_app_protocol_then_the_name(port, protocol):
    assert mesh.port_protocol(port) == protocol


# --- an app on a mesh ---------------------------------------------------------------------------------


def service(name: str, port: dict, deps: str | None = None, **ann) -> str:
    meta: dict = {"name": name, "namespace": "shop"}
    annotations = {**({K + "dependencies": deps} if deps else {}), **{K + k: v for k, v in ann.items()}}
    if annotations:
        meta["annotations"] = annotations
    return yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                     "spec": {"selector": {"app": name}, "ports": [port]}})


def deployment(name: str, env: list | None = None) -> str:
    container = {"name": "main", "image": f"{name}:1", **({"env": env} if env else {})}
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
    return yaml_doc({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"},
                     "spec": {"selector": {"matchLabels": {"app": name}}, "template": template}})


GATEWAY = yaml_doc({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                    "metadata": {"name": "public", "namespace": "shop", "annotations": {K + "gateway": "true"}},
                    "spec": {"gatewayClassName": "istio", "listeners": [
                        {"name": "http", "port": 80, "protocol": "HTTP", "hostname": "*.example.com"}]}})
ENTRY = yaml_doc({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                  "metadata": {"name": "shop", "namespace": "shop", "annotations": {K + "route": "true"}},
                  "spec": {"parentRefs": [{"name": "public"}], "hostnames": ["shop.example.com"],
                           "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}})
HTTP = {"name": "http", "port": 80, "appProtocol": "http"}


def shop(harness) -> None:
    """entry -> web -> api -> db (TCP, stateful); api -> catalog (gRPC)."""
    harness.write("app.yaml", GATEWAY + ENTRY
                  + service("web", HTTP, deps="api:http") + deployment("web", [{"name": "API", "value": "http://api"}])
                  + service("api", HTTP, deps="db:tcp,catalog:grpc")
                  + deployment("api", [{"name": "DB_URL", "value": "postgres://db:5432/x"},
                                       {"name": "CATALOG", "value": "catalog:9090"}])
                  + service("db", {"name": "tcp", "port": 5432}, stateful="true") + deployment("db")
                  + service("catalog", {"name": "grpc", "port": 9090}) + deployment("catalog"))
    harness.config({"routing": "gateway-api"})


def objects(result) -> dict[tuple[str, str], dict]:
    return {(o["kind"], o["metadata"]["name"]): o for f in result.flows for o in f.objects}


def test_a_flow_on_a_mesh_copies_what_changed_and_routes_by_the_header(harness):
    shop(harness)
    result = harness.render(FLOW, {"api": "api:2", "catalog": "catalog:2"})
    got = objects(result)
    dev = {name for kind, name in got if kind == "Deployment"}
    assert dev == {"api-pr-42", "db-pr-42", "catalog-pr-42"}  # web, on the entry path, stays baseline
    route = got["HTTPRoute", "api-pr-42"]
    assert route["metadata"]["namespace"] == "shop"  # a producer route, beside its Service
    assert route["spec"]["parentRefs"] == [{"group": "", "kind": "Service", "name": "api", "port": 80}]
    flow_rule, catch_all = route["spec"]["rules"]
    assert flow_rule["matches"] == [{"headers": [{"type": "RegularExpression", "name": "baggage",
                                                  "value": mesh.header_regex(FLOW)}]}]
    assert flow_rule["backendRefs"] == [{"name": "api-pr-42", "port": 80}]
    assert catch_all == {"backendRefs": [{"name": "api", "port": 80}]}
    grpc = got["GRPCRoute", "catalog-pr-42"]
    assert grpc["spec"]["rules"][1] == {"backendRefs": [{"name": "catalog", "port": 9090}]}
    assert ("HTTPRoute", "db-pr-42") not in got  # TCP: no route, the reference is rewritten instead
    env = {e["name"]: e["value"] for e in got["Deployment", "api-pr-42"]["spec"]["template"]["spec"]["containers"][0]
           ["env"]}
    assert env == {"DB_URL": "postgres://db-pr-42:5432/x", "CATALOG": "catalog:9090"}  # gRPC goes through the mesh
    entry = got["HTTPRoute", "shop-pr-42"]
    assert entry["spec"]["hostnames"] == ["pr-42.example.com"]
    assert entry["spec"]["rules"][0]["filters"] == [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
        "add": [{"name": "baggage", "value": "devlane-flow=pr-42"}]}}]  # add, never set
    assert entry["spec"]["rules"][0]["backendRefs"] == [{"name": "web", "port": 80}]
    assert not [p for p in result.warnings if p.code == "unwired"]


def test_plan_says_how_many_copies_each_mode_needs(harness):
    shop(harness)
    out = harness.cli("plan", "--flow", FLOW, "--service", "api=api:2")
    assert out.returncode == 0, out.stderr
    assert "2 dev copies; routing none would need 3" in out.stdout  # api, db; none adds web


def test_an_ingress_entry_cannot_add_the_header(harness):
    ingress = yaml_doc({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                        "metadata": {"name": "shop", "namespace": "shop", "annotations": {K + "ingress": "true"}},
                        "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [{
                            "path": "/", "pathType": "Prefix",
                            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
    harness.write("app.yaml", ingress + service("web", HTTP) + deployment("web"))
    harness.config({"routing": "gateway-api"})
    out = harness.cli("render", "--flow", FLOW, "--service", "web=web:2", "--stdout")
    assert out.returncode == 1 and "Ingress/shop is an Ingress, which cannot add the flow header" in out.stderr
    assert "kardinal.dev.service/route" in out.stderr


@pytest.mark.skipif(not (CRDS / "gateway-api").is_dir(), reason="upstream Gateway API CRDs not available")
def test_every_route_passes_the_gateway_api_crd(harness):
    import jsonschema
    import yaml

    shop(harness)
    got = objects(harness.render(FLOW, {"api": "api:2", "catalog": "catalog:2"}))
    for kind, file in (("HTTPRoute", "httproutes"), ("GRPCRoute", "grpcroutes")):
        crd = yaml.safe_load((CRDS / "gateway-api" / f"gateway.networking.k8s.io_{file}.yaml").read_text())
        schema = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")["schema"]["openAPIV3Schema"]
        routes = [o for (k, _), o in got.items() if k == kind]
        assert routes
        for route in routes:
            jsonschema.Draft7Validator(schema).validate(route)


# --- the routing proof, by mutation -----------------------------------------------------------------------


def proof_of(result, mutate=None) -> list[str]:
    objs = [copy.deepcopy(o) for f in result.flows for o in f.objects]
    if mutate:
        mutate({(o["kind"], o["metadata"]["name"]): o for o in objs})
    return route_proof.prove(result.model, result.dev, objs, FLOW).violations


def test_the_proof_holds_on_the_rendered_routes(harness):
    shop(harness)
    result = harness.render(FLOW, {"api": "api:2", "catalog": "catalog:2"})
    assert route_proof.prove(result.model, result.dev, [o for f in result.flows for o in f.objects], FLOW).paths >= 6
    assert proof_of(result) == []


def test_the_proof_catches_a_missing_catch_all(harness):
    shop(harness)
    result = harness.render(FLOW, {"api": "api:2"})
    violations = proof_of(result, lambda o: o["HTTPRoute", "api-pr-42"]["spec"]["rules"].pop())
    assert "without the flow header, HTTPRoute/shop -> web -> api is rejected (no rule matches: 404), not api" in \
        violations


def test_the_proof_catches_an_exact_header_match(harness):
    shop(harness)
    result = harness.render(FLOW, {"api": "api:2"})

    def exact(objs):
        match = objs["HTTPRoute", "api-pr-42"]["spec"]["rules"][0]["matches"][0]["headers"][0]
        match.update(type="Exact", value="devlane-flow=pr-42")

    assert "with the flow header, HTTPRoute/shop -> web -> api reaches api, not api-pr-42" in proof_of(result, exact)


def test_the_proof_catches_a_baseline_backend_for_a_dev_service(harness):
    shop(harness)
    result = harness.render(FLOW, {"api": "api:2"})

    def baseline(objs):
        objs["HTTPRoute", "api-pr-42"]["spec"]["rules"][0]["backendRefs"][0]["name"] = "api"

    assert "with the flow header, HTTPRoute/shop -> web -> api reaches api, not api-pr-42" in proof_of(result, baseline)


def test_a_broken_route_fails_the_render(harness, monkeypatch):
    shop(harness)
    real = mesh.gamma_routes

    def without_catch_all(*args, **kw):
        routes = real(*args, **kw)
        for r in routes:
            r["spec"]["rules"].pop()
        return routes

    monkeypatch.setattr(mesh, "gamma_routes", without_catch_all)
    out = harness.cli("render", "--flow", FLOW, "--service", "api=api:2", "--stdout")
    assert out.returncode == 1 and "routing proof: without the flow header" in out.stderr
