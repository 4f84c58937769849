"""The managed-database built-ins (plugins/cloud-sql, plugins/azure-sql), in-process: their golden cases pass under
`devlane plugins test`, their argsSchema lists exactly the args the code binds (each described, with an example),
`emits` lists exactly the kinds they add, a repository names them by their short name as external plugins and the
render is secret-free and wires the dependent to the flow's copy, and `plugins list --builtin` shows them. Strict
schema validation and `kubectl kustomize` of the rendered flows are in tests/e2e/test_builtin_cloud_sql.py."""

from __future__ import annotations

import inspect
import json

import pytest
from support import ROOT, yamlc
from support.cloud_sql import CLOUD_DATABASES, cloud_shop, flow_objects, render_secret_free
from support.kardinal import import_builtin

PLUGINS = sorted(CLOUD_DATABASES)
FLOW = ["--flow", "pr-7", "--service", "shop=example.com/shop:2"]


@pytest.mark.parametrize("plugin", PLUGINS)
def test_golden_cases_pass(harness, plugin):
    """Typical uses and variants (expected.yaml) and refused args (error.txt), all passing."""
    testdata = ROOT / "plugins" / plugin / "testdata"
    kinds = sorted(next(f.name for f in case.iterdir() if f.name in ("expected.yaml", "error.txt"))
                   for case in testdata.iterdir())
    assert kinds.count("error.txt") >= 2 and kinds.count("expected.yaml") >= 2
    run = harness.cli("plugins", "test", testdata.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{len(kinds)} passed, 0 failed ({plugin}," in run.stdout


@pytest.mark.parametrize("plugin", PLUGINS)
def test_manifest_matches_the_code(plugin):
    """argsSchema lists exactly the args create_flow binds (required ones as the code requires), each described
    with an example; names of Secrets are not masked; `emits` lists exactly the kinds the golden cases add."""
    manifest = yamlc.safe_load((ROOT / "plugins" / plugin / "plugin.yaml").read_text())["spec"]
    module = import_builtin(plugin)
    schema = manifest["argsSchema"]
    assert schema["additionalProperties"] is False and manifest["sideEffects"] == "None"
    assert list(schema["properties"]) == list(module.ARGS)
    assert set(schema["required"]) == set(module.REQUIRED)
    bound = [n for n in inspect.signature(module.create_flow).parameters][3:]
    assert bound == list(module.ARGS)
    for name, prop in schema["properties"].items():
        assert prop.get("description") and prop.get("examples"), name
        assert "writeOnly" not in prop and (prop.get("x-devlane-secret") is False) == (
            name.startswith("password_")), name
    added = set()
    for path in (ROOT / "plugins" / plugin / "testdata").glob("*/expected.yaml"):
        added |= {f"{o['apiVersion'].rpartition('/')[0]}/{o['kind']}" for o in yamlc.safe_load_all(path.read_text())
                  if o and o["kind"] not in ("Deployment", "StatefulSet", "ConfigMap")}
    assert sorted(manifest["emits"]) == sorted(added)


@pytest.mark.parametrize("plugin", PLUGINS)
def test_render_by_short_name_is_secret_free_and_wires_the_app(harness, plugin):
    cloud_shop(harness, plugin)
    files = render_secret_free(harness, *FLOW)
    objs = flow_objects(files)
    by_kind = {o["kind"]: o for o in objs}
    db = CLOUD_DATABASES[plugin]
    assert sorted(k for k in by_kind if k in db["kinds"]) == db["kinds"]
    added = [o for o in objs if o["kind"] in db["kinds"]]
    assert all(o["metadata"]["name"].endswith("-pr-7") for o in added)
    assert all(o["metadata"]["labels"]["devlane.dev/flow"] == "pr-7" for o in added)
    shop = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "shop-pr-7")
    spec = shop["spec"]["template"]["spec"]
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    assert len(env) == len(spec["containers"][0]["env"])
    assert env["DB_HOST"]["value"] == db["host"] and env["DB_USER"]["value"] == "shop_app"
    assert env[db["password_env"]] == {"name": db["password_env"],
                                       "valueFrom": {"secretKeyRef": {"name": "shop-db", "key": "password"}}}
    state = json.loads(next(o for o in objs if o["metadata"]["name"] == "devlane-state-shop-db-pr-7")["data"][
        "config_map.json"])
    if plugin == "cloud-sql":  # the proxy connects to the clone the SQLInstance declares, by its computed name
        instance = by_kind["SQLInstance"]["spec"]["resourceID"]
        [proxy] = spec["initContainers"]
        assert proxy["args"][-1] == f"acme-dev:us-central1:{instance}" == state["connectionName"]
        assert "shop-staging" not in json.dumps(shop)
    else:  # the app's database is the copy the ServersDatabase declares
        assert env["DB_NAME"]["value"] == by_kind["ServersDatabase"]["spec"]["azureName"] == state["database"]
    metadata = json.loads(files["flows/pr-7/flow.metadata"])
    assert [(p["name"], p["source"]) for p in metadata["plugins"]] == [(plugin, "builtin")]
    described = harness.cli("plugins", "describe", plugin, harness.root).stdout
    assert "password_secret: shop-db" in described  # a Secret's name is no secret (x-devlane-secret: false)


def test_each_flow_gets_its_own_copy(harness):
    """Two flows of the same repository: different clone names, each flow's pods on its own."""
    cloud_shop(harness, "cloud-sql")
    names = {}
    for flow in ("pr-7", "pr-8"):
        result = harness.cli("render", "--flow", flow, "--service", "shop=example.com/shop:2", "--stdout")
        assert result.returncode == 0, result.stderr
        objs = [o for o in yamlc.safe_load_all(result.stdout) if o]
        instance = next(o for o in objs if o["kind"] == "SQLInstance")["spec"]["resourceID"]
        proxy = next(o for o in objs if o["kind"] == "Deployment")["spec"]["template"]["spec"]["initContainers"][0]
        assert proxy["args"][-1].endswith(f":{instance}")
        names[flow] = instance
    assert names["pr-7"] != names["pr-8"]


def test_bad_args_fail_the_render_with_the_field(harness):
    cloud_shop(harness, "azure-sql", {"server_ref": "dev-sql"})
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 1
    assert "args.server_id: set exactly one of server_id" in result.stderr


def test_plugins_list_builtin_shows_them(harness):
    listed = json.loads(harness.cli("plugins", "list", "--builtin", "-o", "json").stdout)["plugins"]
    data = {e["name"]: e for e in listed}
    assert data["cloud-sql"]["capabilities"] == data["azure-sql"]["capabilities"] == [
        "CreateFlow", "DeleteFlow", "ValidateArgs"]
    assert data["azure-sql"]["path"] == "plugins/azure-sql" and data["cloud-sql"]["manifest"] == "plugin.yaml"
