"""Kardinal's own demo manifests (../shared/seeds-data/kardinal-demo, used in place) render with
our stand-in plugins (kardinal-python plugin subprocesses), build with kubectl kustomize and pass strict schema
validation."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from support import demo_file, kubectl_kustomize, standin_flags, validate_strict, yamlc
from support.demos import DEMOS, OBD, demo_options

from renderer import api
from renderer.render.plan.flow_spec import build_flow


def render(repo, flow_id, images):
    return api.render(demo_options(repo), build_flow(flow_id, images, []))


def versions(result) -> dict[str, str]:
    return {name: d.version for name, d in result.plan.decisions.items() if d.kind == "service"}


def by_name(result, kind: str, name: str) -> dict:
    found = [o for f in result.flows for o in f.objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name} not rendered exactly once"
    return found[0]


def env_of(obj: dict, container: int = 0) -> dict:
    env = obj["spec"]["template"]["spec"]["containers"][container]["env"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in env}


def test_obd_flow_on_frontend_matches_kardinal(demo_repo):
    """The acceptance case: frontend, cartservice and postgres get dev versions; productcatalogservice stays."""
    result = render(demo_repo(OBD), "pr-1", {"frontend": "kurtosistech/frontend:demo-frontend"})
    assert versions(result) == {
        "frontend": "dev",
        "cartservice": "dev",
        "postgres": "dev",
        "productcatalogservice": "baseline",
    }
    reasons = result.plan.decisions
    assert reasons["frontend"].reasons[0] == "target"
    assert "stateful downstream of frontend" in reasons["postgres"].reasons
    assert "parent of TCP stateful postgres" in reasons["cartservice"].reasons
    assert [(i.servicename, i.dependents) for i in result.plan.instances] == [
        ("jsdelivr-api", ("frontend",)),
        ("postgres-seed-plugin", ("postgres",)),
    ]
    frontend = by_name(result, "Deployment", "frontend-v1-pr-1")
    env = env_of(frontend)
    assert frontend["spec"]["template"]["spec"]["containers"][0]["image"] == "kurtosistech/frontend:demo-frontend"
    assert env["JSDELIVRAPIKEY"] == "dev"  # the external plugin ran
    assert env["CARTSERVICEHOST"] == "cartservice-pr-1"  # rewritten to the dev copy
    assert env["PRODUCTCATALOGSERVICEHOST"] == "productcatalogservice"  # baseline stays shared
    cart = env_of(by_name(result, "Deployment", "cartservice-v1-pr-1"))
    assert cart["DB_HOST"] == "postgres-pr-1"
    assert cart["DB_NAME"] == "cart" and cart["DB_USERNAME"] == "postgresuser"
    pg = by_name(result, "Deployment", "postgres-v1-pr-1")["spec"]["template"]["spec"]["containers"][0]
    assert pg["lifecycle"]["postStart"]["exec"]["command"][:2] == ["/bin/bash", "-c"]
    assert "CREATE TABLE IF NOT EXISTS public.items" in pg["lifecycle"]["postStart"]["exec"]["command"][2]
    ingress = by_name(result, "Ingress", "ingress-pr-1")
    assert ingress["spec"]["rules"][0]["host"] == "pr-1.app.localhost"
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] == "frontend-pr-1"
    state = by_name(result, "ConfigMap", "devlane-state-postgres-seed-plugin-pr-1")
    assert json.loads(state["data"]["config_map.json"]) == {}
    names = {o["metadata"]["name"] for o in result.main.objects}
    assert not any(n.startswith("productcatalogservice") for n in names)
    assert all(o["metadata"]["labels"]["devlane.dev/flow"] == "pr-1" for o in result.main.objects)


def test_obd_flow_on_cartservice_routes_through_a_dev_frontend(demo_repo):
    result = render(demo_repo(OBD), "pr-2", {"cartservice": "kurtosistech/cartservice:pr-2"})
    assert versions(result) == {
        "frontend": "dev",
        "cartservice": "dev",
        "postgres": "dev",
        "productcatalogservice": "baseline",
    }
    routing = "routing: on path from entry Ingress/ingress to a dev service"
    assert result.plan.decisions["frontend"].reasons == (routing,)
    # the dev frontend is a copy of the baseline one, so the external plugin must still run on it
    assert env_of(by_name(result, "Deployment", "frontend-v1-pr-2"))["JSDELIVRAPIKEY"] == "dev"


@pytest.mark.parametrize("demo", sorted(DEMOS))
def test_demo_renders_and_is_valid(demo, demo_repo, tmp_path, snapshot):
    name, images = DEMOS[demo]
    repo = demo_repo(name)
    result = render(repo, "pr-9", images)
    paths = api.write(result, tmp_path / "out")
    for flow in result.flows:
        for obj in flow.objects:
            validate_strict(obj)
    built = kubectl_kustomize(paths[0])
    assert sorted((o["kind"], o["metadata"]["name"]) for o in built) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in result.main.objects
    )
    assert {f: flow.files[f] for flow in result.flows for f in flow.files} == snapshot


def test_new_obd_httproute_is_per_flow_and_matches_the_gateway_api_crd(demo_repo):
    result = render(demo_repo("new-obd__release__obd-kardinal.yaml"), "pr-3", {"frontend": "x/frontend:3"})
    route = by_name(result, "HTTPRoute", "http-pr-3")
    assert route["spec"]["hostnames"] == ["pr-3.app.localhost"]
    assert route["spec"]["rules"][0]["backendRefs"][0]["name"] == "frontend-pr-3"
    assert route["spec"]["parentRefs"] == [{"name": "gateway"}]
    ingress = by_name(result, "Ingress", "ingress-pr-3")
    assert ingress["spec"]["rules"][0]["host"] == "pr-3.other.localhost"
    assert result.plan.decisions["metrics"].version == "baseline"
    validate_strict(route)


def test_neon_external_plugin_runs_once_for_both_dependents(demo_repo):
    result = render(demo_repo("kardinal-playground__neon-postgres-demo__obd-demo.yaml"), "pr-4",
                    {"frontend": "x/frontend:4"})  # fmt: skip
    neon = [i for i in result.plan.instances if i.servicename == "neon-postgres-db"]
    assert len(neon) == 1 and neon[0].dependents == ("cartservice", "frontend")
    assert versions(result)["cartservice"] == "dev"
    state = by_name(result, "ConfigMap", "devlane-state-neon-postgres-db-pr-4")
    assert json.loads(state["data"]["config_map.json"])["NEON_BRANCH_ID"] == "neon-postgres-db-pr-4"


def test_voting_app_legacy_forms(demo_repo):
    result = render(demo_repo("kardinal__examples__voting-app__k8s-manifest.yaml"), "pr-5",
                    {"voting-app-ui": "kurtosistech/demo-voting-app-ui:pr-5"})  # fmt: skip
    assert versions(result) == {"voting-app-ui": "dev", "redis-prod": "dev"}
    codes = {w.code for w in result.warnings}
    assert {"deprecated", "ignored-key"} <= codes
    ingress = by_name(result, "Ingress", "voting-app-lb-pr-5")
    rule = ingress["spec"]["rules"][0]
    assert rule["host"] == "pr-5.app.localhost"
    assert rule["http"]["paths"][0]["backend"]["service"] == {"name": "voting-app-lb-pr-5", "port": {"number": 80}}
    lb = by_name(result, "Service", "voting-app-lb-pr-5")
    assert lb["spec"]["type"] == "ClusterIP"  # a dev lane never buys a load balancer
    ui = by_name(result, "Deployment", "voting-app-ui-v1-pr-5")
    assert env_of(ui)["REDIS"] == "redis-prod-pr-5"
    assert ui["metadata"]["namespace"] == "voting-app"


def test_operator_demo_with_plugin_definitions_and_its_flow_cr(harness):
    """The operator's demo references plugins it never defines; a repo adds the definitions."""
    repo, tmp_path = harness.root, harness.tmp
    shutil.copy(demo_file("kardinal-operator__ci__obd-demo.yaml"), repo / "app.yaml")
    pseudo = [d for d in yamlc.safe_load_all(demo_file(OBD).read_text())
              if d and "kardinal.dev.service/plugin-definition" in d["metadata"].get("annotations", {})]  # fmt: skip
    (repo / "plugins.yaml").write_text(yaml.safe_dump_all(pseudo))
    flow_cr = demo_file("kardinal-operator__ci__flow-test.yaml")
    out = harness.cli("render", repo, "--flow-file", flow_cr, "--out", tmp_path / "out", *standin_flags())
    assert out.returncode == 0, out.stderr
    flow_dir = tmp_path / "out" / "flows" / "flow-test"
    meta = json.loads((flow_dir / "flow.metadata").read_text())
    assert meta["targets"] == [{"name": "frontend", "image": "kurtosistech/frontend:demo-frontend"}]
    dev = {s["name"] for s in meta["services"] if s["version"] == "dev" and s["kind"] == "service"}
    assert dev == {"frontend", "cartservice", "postgres"}
    kubectl_kustomize(flow_dir)


@pytest.mark.parametrize(
    "template,args",
    [
        ("kardinal__ci__template.yaml", "kardinal__ci__template_args.yaml"),
        ("new-obd__release__template.yaml", "new-obd__release__template_args.yaml"),
    ],
)
def test_templates_make_postgres_shared_and_substitute_args(template, args, demo_repo, harness, tmp_path):
    base = "kardinal__ci__obd-demo.yaml" if "kardinal__" in template else "new-obd__release__obd-kardinal.yaml"
    repo = demo_repo(base)
    out = harness.cli("render", repo, "--flow", "pr-6", "--service", "frontend=x/frontend:6",
                      "--template", demo_file(template), "--template-args", demo_file(args),
                      "--out", tmp_path / "out", *standin_flags())  # fmt: skip
    assert out.returncode == 0, out.stderr
    shared = tmp_path / "out" / "flows" / "shared"
    flow = tmp_path / "out" / "flows" / "pr-6"
    shared_files = sorted(p.name for p in shared.glob("*.yaml"))
    assert any(n.startswith(("statefulset-postgres", "deployment-postgres")) and n.endswith("-shared.yaml")
               for n in shared_files), shared_files  # fmt: skip
    seed = "".join(p.read_text() for p in shared.glob("*postgres*.yaml"))
    assert "'2ZYFJ3GM2N', 3);" in seed  # ${last_insert_quantity:-1} became 3
    cart = yamlc.safe_load((shared / "deployment-cartservice-v1-shared.yaml").read_text())
    assert cart["metadata"]["labels"]["devlane.dev/flow"] == "shared"
    frontend = yamlc.safe_load((flow / "deployment-frontend-v1-pr-6.yaml").read_text())
    assert env_of(frontend)["CARTSERVICEHOST"] == "cartservice-shared"
    assert "deprecated" in out.stderr or "template" in template
    for directory in (flow, shared):
        for f in directory.glob("*.yaml"):
            if f.name != "kustomization.yaml":
                validate_strict(yamlc.safe_load(f.read_text()))
        kubectl_kustomize(directory)
