"""`devlane lint` (text and `-o json`) in-process: every problem of a repository at once, each naming its file,
document and object; and `devlane render` refusing a repository with lint errors, naming each of them."""

from __future__ import annotations

import json

from support import entry_ingress, yaml_doc

BROKEN = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: main, image: x}]}
---
apiVersion: v1
kind: Service
metadata:
  name: api
  annotations: {kardinal.dev.service/dependencies: "db:tcp,cache:http,nohost", kardinal.dev.service/plugins: ghost,
                kardinal.dev.service/statefull: "true"}
spec:
  selector: {app: api}
  ports: [{name: http, port: 80, appProtocol: HTTP}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: main, image: x}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, annotations: {kardinal.dev.service/dependencies: "api:http"}}
spec:
  selector: {app: db}
  ports: [{name: tcp, port: 80}]
---
apiVersion: v1
kind: Service
metadata:
  name: defs
  annotations:
    kardinal.dev.service/plugin-definition: |
      - name: ./plugins/a
        type: stateful
        servicename: seed
      - name: ./plugins/b
        type: stateful
        servicename: seed
        behaviour: enforce
"""


def test_lint_reports_every_problem_at_once(harness):
    harness.write("app.yaml", BROKEN)
    out = harness.cli("lint", "-o", "json")
    assert out.returncode == 1
    problems = json.loads(out.stdout)["problems"]
    codes = sorted(p["code"] for p in problems if p["severity"] == "error")
    assert codes == sorted(
        ["unknown-key", "bad-dependency", "bad-dependency", "undefined-plugin", "duplicate-servicename",
         "unknown-key", "plugin-source"]
    )  # fmt: skip  (plugin-source: ./plugins/a does not exist, and render would fail on it too)
    [cycle] = [p for p in problems if p["code"] == "cycle"]  # a note: a flow plans a cycle as one component
    assert cycle["severity"] == "info" and cycle["where"]["object"] == "Service/api"
    messages = "\n".join(p["message"] for p in problems)
    assert "unknown annotation kardinal.dev.service/statefull" in messages
    assert "dependency cache:http names no Service 'cache'" in messages
    assert "bad dependency 'nohost'" in messages
    assert "plugin 'ghost' is not defined" in messages
    assert "duplicate plugin servicename 'seed'" in messages
    assert "unknown key 'behaviour'" in messages
    assert "dependency cycle: api -> db -> api; a flow plans it as one component" in messages
    assert all(p["where"]["file"] == "app.yaml" for p in problems)
    text = harness.cli("lint")
    assert text.returncode == 1
    assert "7 error(s), 2 warning(s), 1 note(s)" in text.stdout and "app.yaml (document 2), Service/api" in text.stdout


def test_render_fails_on_lint_errors_naming_them(harness):
    harness.write("app.yaml", BROKEN)
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=x:1")
    assert out.returncode == 1
    assert out.stderr.count("devlane: error:") == 6  # the cycle api <-> db plans: it is no error
    assert "unknown annotation kardinal.dev.service/statefull" in out.stderr and "Traceback" not in out.stderr
    assert not (harness.root / "rendered").exists()


def test_clean_repo_lints_clean(harness):
    harness.app("api")
    out = harness.cli("lint")
    assert out.returncode == 0 and "0 error(s), 0 warning(s)" in out.stdout
    assert json.loads(harness.cli("lint", "-o", "json").stdout)["problems"] == []


def test_lint_reports_broken_config_and_every_broken_file(harness):
    harness.config("routing: mesh\ndomian: x.example.com\n")
    harness.write("a.yaml", "kind: [\n")
    harness.write("b.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: b\n")
    harness.app("c", file="c.yaml")
    c = harness.root / "c.yaml"
    c.write_text(c.read_text().replace("annotations: {}", "annotations: {kardinal.dev.service/x: '1'}"))
    out = harness.cli("lint", "-o", "json")
    assert out.returncode == 1
    found = sorted((p["where"].get("file"), p["code"]) for p in json.loads(out.stdout)["problems"])
    assert found == [(".devlane.yaml", "schema"), (".devlane.yaml", "schema"), ("a.yaml", "yaml"),
                     ("b.yaml", "yaml"), ("c.yaml", "unknown-key")]  # fmt: skip
    render = harness.cli("render", "--flow", "pr-1", "--service", "c=x:1")
    assert render.returncode == 1 and render.stderr.count("devlane: error:") == 2  # config first, then stop
    assert render.stderr.count("devlane: error: .devlane.yaml") == 2


# --- routing gateway-api / istio: what a mesh flow needs that no render can see (render/checks/mesh_lint.py) ---

K = "kardinal.dev.service/"


def mesh_problems(harness, *args: str) -> dict[str, list[dict]]:
    """`devlane lint -o json` on the harness repository: the mesh problems by code."""
    out = harness.cli("lint", "-o", "json", *args)
    found: dict[str, list[dict]] = {}
    for p in json.loads(out.stdout)["problems"]:
        if p["code"].startswith("mesh-") or p["code"] == "routing":
            found.setdefault(p["code"], []).append(p)
    return found


def gateway(name: str, namespace: str, group: str = "gateway.networking.k8s.io") -> str:
    """A Gateway of the Gateway API, or of Istio (`networking.istio.io`)."""
    http = {"name": "http", "port": 80, "protocol": "HTTP"}
    spec = ({"gatewayClassName": "istio", "listeners": [http]} if group == "gateway.networking.k8s.io" else
            {"servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}]})
    return yaml_doc({"apiVersion": f"{group}/v1", "kind": "Gateway", "metadata": {"name": name, "namespace": namespace},
                     "spec": spec})


def test_lint_on_a_mesh_warns_of_an_entry_gateway_not_in_the_repository(harness):
    harness.app("web")
    harness.append("app.yaml", yaml_doc({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "shop", "annotations": {K + "route": "true"}},
        "spec": {"parentRefs": [{"name": "public", "namespace": "gateways"}], "hostnames": ["shop.example.com"],
                 "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}}))
    harness.config({"routing": "gateway-api"})
    (warning,) = mesh_problems(harness)["mesh-gateway"]
    assert warning["severity"] == "warning" and warning["where"]["object"] == "HTTPRoute/shop"
    assert "Gateway gateways/public (gateway.networking.k8s.io), named in parentRefs by HTTPRoute/shop, is not among " \
        "the repository's manifests: devlane cannot check that its listeners admit the per-flow hosts " \
        "(<flowId>.example.com)" in warning["message"]
    assert "wildcard listener (hostname *.example.com)" in warning["hint"]
    assert mesh_problems(harness, "--routing", "none") == {}  # --routing over .devlane.yaml; no mesh, no check
    harness.append("gateways.yaml", gateway("public", "gateways"))
    assert mesh_problems(harness) == {}


def test_lint_on_a_mesh_checks_an_ingress_entry_and_its_mesh_gateway(harness):
    harness.app("web")
    harness.append("app.yaml", entry_ingress("web"))
    harness.config({"routing": "istio"})
    (error,) = mesh_problems(harness)["mesh-entry"]
    render = harness.cli("render", "--flow", "pr-1", "--service", "web=web:2", "--stdout")
    assert error["severity"] == "error" and error["message"] in render.stderr  # the render's own words
    assert harness.cli("lint").returncode == 1

    harness.config({"routing": "istio", "domain": "dev.example.com", "mesh": {"gateway": "edge/public"}})
    (warning,) = mesh_problems(harness)["mesh-gateway"]
    assert "Istio Gateway edge/public (networking.istio.io), mesh.gateway in .devlane.yaml for Ingress/web-entry" in \
        warning["message"]
    assert "(<flowId>.dev.example.com)" in warning["message"] and warning["where"]["object"] == "Ingress/web-entry"
    harness.append("gateways.yaml", gateway("public", "edge"))  # a Gateway API Gateway: not what istio binds to
    assert "mesh-gateway" in mesh_problems(harness)
    assert mesh_problems(harness, "--routing", "gateway-api") == {}
    harness.append("gateways.yaml", gateway("public", "edge", "networking.istio.io"))
    assert mesh_problems(harness) == {}


def test_lint_on_a_mesh_warns_of_called_ports_that_declare_no_protocol(harness):
    ports = {"bare": {"port": 80}, "httpish": {"name": "httpapi", "port": 80}, "db": {"name": "tcp", "port": 5432},
             "cache": {"name": "redis", "port": 6379}, "named": {"name": "web", "port": 80},
             "app": {"port": 80, "appProtocol": "http"}, "grpc": {"name": "grpc-api", "port": 9090},
             "alone": {"port": 80}}  # fmt: skip
    calls = "bare:80,httpish:httpapi,db:tcp,cache:redis,named:web,app:80,grpc:grpc-api"
    for name, port in ports.items():
        ann = {K + "dependencies": calls} if name == "alone" else {}
        harness.append("app.yaml", yaml_doc({"apiVersion": "v1", "kind": "Service",
                                             "metadata": {"name": name, **({"annotations": ann} if ann else {})},
                                             "spec": {"selector": {"app": name}, "ports": [port]}}))
    harness.append("app.yaml", yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "unused"},
                                         "spec": {"selector": {"app": "unused"}, "ports": [{"port": 80}]}}))
    harness.config({"routing": "gateway-api"})
    found = mesh_problems(harness)["mesh-protocol"]
    assert [p["where"]["object"] for p in found] == ["Service/bare", "Service/httpish"]  # no edge calls `unused`
    bare, httpish = (p["message"] for p in found)
    assert "Service bare (called by alone) port 80 has neither appProtocol nor a name" in bare
    assert "treats it as TCP, which the mesh cannot route by the flow header" in bare
    assert "port httpapi has no appProtocol and its name is not <protocol>[-<suffix>]" in httpish
    assert "appProtocol: http (or grpc)" in found[0]["hint"] and "name it http or grpc-<suffix>" in found[0]["hint"]
    assert mesh_problems(harness, "--routing", "none") == {}


def test_lint_reports_a_mesh_that_namespace_isolation_refuses(harness):
    harness.app("web")
    harness.config({"routing": "gateway-api"})
    (error,) = mesh_problems(harness, "--isolation", "namespace")["routing"]
    assert "routing gateway-api cannot be combined with isolation namespace" in error["message"]
