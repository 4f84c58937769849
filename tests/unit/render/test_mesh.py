"""Routing `gateway-api` (GAMMA): the flow header, producer routes with their catch-all, the entry adding the
baggage member, rewriting only towards TCP dev copies, fewer dev copies than routing `none`, the routes valid
against the upstream Gateway API CRDs, and the static routing proof catching broken routes by mutation."""

from __future__ import annotations

import copy
import json
import re

import pytest
from support import CRDS, yaml_doc, yamlc

from renderer import api
from renderer.render.checks import route_proof
from renderer.render.plan.flow_spec import FlowRequest, resolve
from renderer.render.routing import mesh
from renderer.session import Options

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
    ({"name": "redis", "appProtocol": "redis"}, "tcp"), ({"name": "web", "appProtocol": "grpc-web"}, "http"),
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


@pytest.mark.parametrize("routing", ["gateway-api", "istio"])
def test_plan_shows_the_routing_proof(harness, routing, monkeypatch):
    shop(harness)
    harness.config({"routing": routing})
    out = harness.cli("plan", "--flow", FLOW, "--service", "api=api:2")
    assert out.returncode == 0, out.stderr
    assert "routing proof holds: 6 hops checked on the dependency paths from the entry, with and without baggage " \
           "devlane-flow=pr-42" in out.stdout
    shown = json.loads(harness.cli("plan", "--flow", FLOW, "--service", "api=api:2", "-o", "json").stdout)["proof"]
    assert shown["violations"] == [] and shown["member"] == "devlane-flow=pr-42"
    assert shown["routes"] == (["HTTPRoute/api-pr-42", "HTTPRoute/shop-pr-42"] if routing == "gateway-api" else
                               ["HTTPRoute/shop-pr-42", "VirtualService/devlane-api"])
    real = mesh.header_regex
    monkeypatch.setattr(mesh, "header_regex", lambda flow, key="devlane-flow": real(flow + "0", key))
    broken = api.plan(Options(repo=harness.root), resolve(FlowRequest(flow_id=FLOW, images={"api": "api:2"})))
    assert "with the flow header, HTTPRoute/shop -> web -> api reaches api, not api-pr-42" in broken.proof["violations"]


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

    shop(harness)
    got = objects(harness.render(FLOW, {"api": "api:2", "catalog": "catalog:2"}))
    for kind, file in (("HTTPRoute", "httproutes"), ("GRPCRoute", "grpcroutes")):
        crd = yamlc.safe_load((CRDS / "gateway-api" / f"gateway.networking.k8s.io_{file}.yaml").read_text())
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


# --- istio: one VirtualService per host, shared by every flow ---------------------------------------------------


def crd_schema(file: str, kind: str, version: str = "v1") -> dict:
    for crd in yamlc.safe_load_all(file.read_text() if hasattr(file, "read_text") else file):
        if crd and crd.get("kind") == "CustomResourceDefinition" and crd["spec"]["names"]["kind"] == kind:
            return next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]
    raise AssertionError(f"no CRD for {kind}")


ISTIO_CRDS = CRDS / "istio" / "customresourcedefinitions.gen.yaml"


def test_istio_routes_each_dev_host_in_one_virtual_service_per_host(harness):
    shop(harness)
    harness.config({"routing": "istio"})
    result = harness.render(FLOW, {"api": "api:2", "catalog": "catalog:2"})
    got = objects(result)
    assert not [k for k in got if k[0] in ("HTTPRoute", "GRPCRoute") and k[1] != "shop-pr-42"]  # no GAMMA routes
    shared = {o["metadata"]["name"]: o for o in result.mesh.objects}
    assert sorted(shared) == ["devlane-api", "devlane-catalog"]  # db is TCP: rewritten, not routed
    api = shared["devlane-api"]
    assert api["metadata"]["namespace"] == "shop" and "gateways" not in api["spec"]  # the mesh, not a gateway
    assert api["spec"]["hosts"] == ["api.shop.svc.cluster.local"]
    flow_rule, catch_all = api["spec"]["http"]
    assert flow_rule == {
        "name": "flow-pr-42", "match": [{"headers": {"baggage": {"regex": mesh.header_regex(FLOW)}}}],
        "route": [{"destination": {"host": "api-pr-42.shop.svc.cluster.local", "port": {"number": 80}}}]}
    assert catch_all == {"name": "baseline", "route": [{"destination": {"host": "api.shop.svc.cluster.local",
                                                                         "port": {"number": 80}}}]}
    assert not [o for o in got.values() if o["kind"] == "DestinationRule"]  # per-flow Services, no subsets
    meta = result.main.metadata["mesh"]
    assert meta["mode"] == "istio" and meta["member"] == "devlane-flow=pr-42"
    assert [h["service"] for h in meta["hosts"]] == ["api", "catalog"]
    entry = got["HTTPRoute", "shop-pr-42"]  # an HTTPRoute entry stays one, adding the member
    assert entry["spec"]["rules"][0]["filters"][0]["requestHeaderModifier"]["add"] == [
        {"name": "baggage", "value": "devlane-flow=pr-42"}]


def test_virtual_services_list_every_flow_sorted_with_the_catch_all_last():
    record = {"key": "devlane-flow", "clusterDomain": "cluster.local",
              "hosts": [{"namespace": "shop", "service": "api", "dev": "api-X", "ports": [80, 8080]}]}
    records = {f: {**record, "hosts": [{**record["hosts"][0], "dev": f"api-{f}"}]} for f in ("pr-9", "pr-10", "pr-1")}
    (vs,) = mesh.virtual_services(records)
    names = [r["name"] for r in vs["spec"]["http"]]
    assert names == ["flow-pr-1-80", "flow-pr-1-8080", "flow-pr-10-80", "flow-pr-10-8080", "flow-pr-9-80",
                     "flow-pr-9-8080", "baseline-80", "baseline-8080"]
    assert vs["spec"]["http"][1]["match"][0]["port"] == 8080  # several ports: each rule names its port
    assert vs["spec"]["http"][-1] == {"name": "baseline-8080", "match": [{"port": 8080}], "route": [
        {"destination": {"host": "api.shop.svc.cluster.local", "port": {"number": 8080}}}]}
    assert mesh.virtual_services({}) == []


@pytest.mark.skipif(not ISTIO_CRDS.is_file(), reason="upstream Istio CRDs not available")
def test_every_virtual_service_passes_the_istio_crd(harness):
    import jsonschema

    ingress_entry(harness, "istio")
    result = harness.render(FLOW, {"api": "api:2", "catalog": "catalog:2"})
    schema = crd_schema(ISTIO_CRDS, "VirtualService")
    services = [*result.mesh.objects, *(o for o in result.main.objects if o["kind"] == "VirtualService")]
    assert len(services) == 3  # api, catalog, and the Gateway-bound entry
    for vs in services:
        jsonschema.Draft7Validator(schema).validate(vs)


def ingress_entry(harness, routing: str, gateway: str | None = "gateways/public") -> None:
    """The shop with an Ingress entry (web's port by name), and `mesh.gateway`."""
    ingress = yaml_doc({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                        "metadata": {"name": "shop", "namespace": "shop", "annotations": {K + "ingress": "true"}},
                        "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [
                            {"path": "/", "pathType": "Prefix",
                             "backend": {"service": {"name": "web", "port": {"name": "http"}}}},
                            {"path": "/api/v1", "pathType": "Exact",
                             "backend": {"service": {"name": "api", "port": {"number": 80}}}}]}}]}})
    shop(harness)
    text = (harness.root / "app.yaml").read_text()
    harness.write("app.yaml", text.replace(GATEWAY + ENTRY, ingress))
    harness.config({"routing": routing, "domain": "dev.example.com",
                    **({"mesh": {"gateway": gateway}} if gateway else {})})


def test_an_ingress_entry_becomes_a_route_on_the_configured_gateway(harness):
    ingress_entry(harness, "gateway-api")
    got = objects(harness.render(FLOW, {"api": "api:2"}))
    route = got["HTTPRoute", "shop-pr-42"]
    assert route["spec"]["parentRefs"] == [{"name": "public", "namespace": "gateways"}]
    assert route["spec"]["hostnames"] == ["pr-42.dev.example.com"]
    exact, prefix = route["spec"]["rules"]  # exact first, as the Ingress ranks them
    assert exact["matches"] == [{"path": {"type": "Exact", "value": "/api/v1"}}]
    assert exact["backendRefs"] == [{"name": "api-pr-42", "port": 80}]  # the entry goes straight to a dev version
    assert prefix["backendRefs"] == [{"name": "web", "port": 80}]  # the named port, as a number
    assert prefix["filters"] == [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
        "add": [{"name": "baggage", "value": "devlane-flow=pr-42"}]}}]
    assert ("Ingress", "shop-pr-42") not in got


def test_an_ingress_entry_becomes_a_gateway_bound_virtual_service_on_istio(harness):
    ingress_entry(harness, "istio")
    got = objects(harness.render(FLOW, {"web": "web:2"}))
    vs = got["VirtualService", "shop-pr-42"]
    assert vs["spec"]["gateways"] == ["gateways/public"] and vs["spec"]["hosts"] == ["pr-42.dev.example.com"]
    exact, prefix = vs["spec"]["http"]
    assert exact["match"] == [{"uri": {"exact": "/api/v1"}}]
    assert prefix["headers"] == {"request": {"add": {"baggage": "devlane-flow=pr-42"}}}  # add keeps client baggage
    assert prefix["route"] == [{"destination": {"host": "web-pr-42.shop.svc.cluster.local", "port": {"number": 80}}}]


def test_an_ingress_entry_without_a_gateway_says_how_to_set_one(harness):
    ingress_entry(harness, "istio", gateway=None)
    out = harness.cli("render", "--flow", FLOW, "--service", "web=web:2", "--stdout")
    assert out.returncode == 1 and "set mesh.gateway in .devlane.yaml" in out.stderr


def test_a_mesh_is_refused_with_namespace_isolation(harness):
    shop(harness)
    out = harness.cli("render", "--flow", FLOW, "--service", "api=api:2", "--isolation", "namespace", "--stdout")
    assert out.returncode == 1
    assert "routing gateway-api cannot be combined with isolation namespace" in out.stderr
    assert "Traceback" not in out.stderr


def istio_proof(result, mutate=None) -> list[str]:
    objs = [copy.deepcopy(o) for f in [*result.flows, result.mesh] for o in f.objects]
    if mutate:
        mutate({(o["kind"], o["metadata"]["name"]): o for o in objs})
    return route_proof.prove(result.model, result.dev, objs, FLOW).violations


def test_the_istio_proof_holds_and_catches_a_flow_rule_after_the_catch_all(harness):
    shop(harness)
    harness.config({"routing": "istio"})
    result = harness.render(FLOW, {"api": "api:2"})
    assert istio_proof(result) == []

    def reorder(objs):
        objs["VirtualService", "devlane-api"]["spec"]["http"].reverse()  # first match: the catch-all wins

    violations = istio_proof(result, reorder)
    assert "with the flow header, HTTPRoute/shop -> web -> api reaches api, not api-pr-42" in violations


def test_the_istio_proof_catches_a_missing_catch_all_and_an_exact_match(harness):
    shop(harness)
    harness.config({"routing": "istio"})
    result = harness.render(FLOW, {"api": "api:2"})
    assert "without the flow header, HTTPRoute/shop -> web -> api is rejected (no rule matches: 404), not api" in \
        istio_proof(result, lambda o: o["VirtualService", "devlane-api"]["spec"]["http"].pop())

    def exact(objs):
        objs["VirtualService", "devlane-api"]["spec"]["http"][0]["match"][0]["headers"]["baggage"] = {
            "exact": "devlane-flow=pr-42"}

    assert "with the flow header, HTTPRoute/shop -> web -> api reaches api, not api-pr-42" in istio_proof(result, exact)


def test_istio_on_stdout_warns_that_the_shared_virtual_services_are_not_in_the_stream(harness):
    shop(harness)
    harness.config({"routing": "istio"})
    out = harness.cli("render", "--flow", FLOW, "--service", "api=api:2", "--stdout")
    assert out.returncode == 0, out.stderr
    assert "virtualservice-devlane-api.yaml are shared by every flow" in out.stderr
    assert "kind: VirtualService" not in out.stdout


def test_flows_mesh_lists_the_flows_present_and_a_delete_leaves_a_fresh_render(harness, tmp_path):
    shop(harness)
    harness.config({"routing": "istio"})
    out, alone = tmp_path / "out", tmp_path / "alone"
    for flow, svc in (("pr-1", "api=api:2"), ("pr-2", "catalog=catalog:2")):
        r = harness.cli("render", "--flow", flow, "--service", svc, "--out", out)
        assert r.returncode == 0, r.stderr
    meshdir = out / "flows" / "_mesh"
    assert "rebuilt" in r.stderr and sorted(p.name for p in meshdir.iterdir()) == [
        "README.md", "flow.metadata", "kustomization.yaml", "virtualservice-devlane-api.yaml",
        "virtualservice-devlane-catalog.yaml"]
    again = harness.cli("render", "--flow", "pr-1", "--service", "api=api:3", "--out", out)  # a re-render keeps pr-2
    assert again.returncode == 0 and "flow-pr-2" in (meshdir / "virtualservice-devlane-catalog.yaml").read_text()

    d = harness.cli("delete", "--flow", "pr-1", "--out", out)
    assert d.returncode == 0, d.stderr
    fresh = harness.cli("render", "--flow", "pr-2", "--service", "catalog=catalog:2", "--out", alone)
    assert fresh.returncode == 0, fresh.stderr
    left = {p.name: p.read_bytes() for p in meshdir.iterdir()}
    assert left == {p.name: p.read_bytes() for p in (alone / "flows" / "_mesh").iterdir()}
    assert b"pr-1" not in b"".join(left.values())
    assert harness.cli("delete", "--flow", "pr-2", "--out", out).returncode == 0
    # no flow routes a host any more: an empty kustomization, so that Argo CD or Flux prune the VirtualServices
    assert sorted(p.name for p in meshdir.iterdir()) == ["README.md", "flow.metadata", "kustomization.yaml"]
    assert yamlc.safe_load((meshdir / "kustomization.yaml").read_text())["resources"] == []
    assert "allowEmpty: true" in (meshdir / "README.md").read_text()


@pytest.mark.parametrize("routing", ["gateway-api", "istio"])
def test_a_load_balancer_service_entry_becomes_a_route_on_the_gateway(harness, routing):
    entry = service("web", HTTP, ingress="true", host="shop.example.com")
    harness.write("app.yaml", entry + deployment("web"))
    harness.config({"routing": routing, "mesh": {"gateway": "public"}})
    got = objects(harness.render(FLOW, {"web": "web:2"}))
    if routing == "gateway-api":
        route = got["HTTPRoute", "web-entry-pr-42"]  # web-pr-42 is the producer route of web's dev copy
        assert got["HTTPRoute", "web-pr-42"]["spec"]["parentRefs"][0]["kind"] == "Service"
        assert route["spec"]["parentRefs"] == [{"name": "public"}]  # a bare name: the entry's namespace
        assert route["spec"]["hostnames"] == ["pr-42.example.com"]
        assert route["spec"]["rules"][0]["backendRefs"] == [{"name": "web-pr-42", "port": 80}]
    else:
        vs = got["VirtualService", "web-pr-42"]
        assert vs["spec"]["gateways"] == ["shop/public"] and vs["spec"]["hosts"] == ["pr-42.example.com"]
    assert ("Ingress", "web-pr-42") not in got


def test_a_changed_tcp_service_brings_its_callers_as_the_mesh_cannot_route_it(harness):
    """web -> api -> cache (TCP, not stateful): changing cache copies api, whose reference is rewritten, and web
    reaches api's copy by the header; without it, web's baseline api would reach the baseline cache."""
    harness.write("app.yaml", GATEWAY + ENTRY
                  + service("web", HTTP, deps="api:http") + deployment("web", [{"name": "API", "value": "http://api"}])
                  + service("api", HTTP, deps="cache:tcp")
                  + deployment("api", [{"name": "CACHE", "value": "cache:6379"}])
                  + service("cache", {"name": "tcp", "port": 6379}) + deployment("cache"))
    harness.config({"routing": "gateway-api"})
    result = harness.render(FLOW, {"cache": "cache:2"})
    reasons = {d.name: list(d.reasons) for d in result.plan.decisions.values() if d.version == "dev"}
    assert reasons == {"cache": ["target"],
                       "api": ["parent of TCP cache: the mesh routes only HTTP and gRPC by the header"]}
    got = objects(result)
    env = got["Deployment", "api-pr-42"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "CACHE", "value": "cache-pr-42:6379"}]
    assert ("HTTPRoute", "api-pr-42") in got and ("HTTPRoute", "cache-pr-42") not in got
    assert proof_of(result) == []


def test_the_repositorys_own_virtual_service_for_a_routed_host_is_an_error(harness):
    shop(harness)
    own = yaml_doc({"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
                    "metadata": {"name": "api-retries", "namespace": "shop"},
                    "spec": {"hosts": ["api"], "http": [{"retries": {"attempts": 3},
                                                         "route": [{"destination": {"host": "api"}}]}]}})
    harness.write("vs.yaml", own)
    harness.config({"routing": "istio"})
    out = harness.cli("render", "--flow", FLOW, "--service", "api=api:2", "--stdout")
    assert out.returncode == 1
    assert "vs.yaml (document 1), VirtualService/api-retries: routing istio: VirtualService/api-retries routes api, " \
           "which devlane routes in flows/_mesh/ too" in out.stderr
    assert "IST0109" in out.stderr and "routing proof" not in out.stderr
    assert harness.cli("render", "--flow", FLOW, "--service", "catalog=catalog:2", "--stdout").returncode == 0


def test_lint_on_a_mesh_warns_only_about_tcp_edges_compiled_into_the_image(harness):
    """web reads no address of api (HTTP) nor api of db (TCP): on a mesh the header reaches api's copy whatever
    address web uses, but db's copy is reached only by rewriting, which needs an address to rewrite."""
    harness.write("app.yaml", GATEWAY + ENTRY + service("web", HTTP, deps="api:http") + deployment("web")
                  + service("api", HTTP, deps="db:tcp") + deployment("api")
                  + service("db", {"name": "tcp", "port": 5432}, stateful="true") + deployment("db"))
    none = harness.cli("lint", "--routing", "none")
    assert "edge shop/web -> shop/api" in none.stdout + none.stderr
    out = harness.cli("lint", "--routing", "gateway-api")
    said = out.stdout + out.stderr
    assert "edge shop/web -> shop/api" not in said
    assert "edge shop/api -> shop/db: shop/api reads no address of db" in said
    assert "hint: pass the address through env or a ConfigMap" in said and "isolation: namespace" not in said
