"""The database-seed built-ins (plugins/postgres-seed, plugins/mysql-seed), in-process (their golden cases: in
test_builtin_catalogue.py): their argsSchema lists exactly the args the code binds (each described, with an
example), a repository names them by their short name and the render is secret-free, a definition written for
Kardinal's postgres-seed-plugin works with only `name` changed, and `plugins list --builtin` shows them. Strict
schema validation and `kubectl kustomize` of the rendered flows are in tests/e2e/test_builtin_seeds.py."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
import yaml
from support import ROOT, demo_file, yamlc
from support.kardinal import import_builtin
from support.repos import SEED_DATABASES, SEED_SECRET, seed_file, seeded_shop

from plugins import _dbseed

SEEDS = sorted(SEED_DATABASES)
FLOW = ["--flow", "pr-7", "--service", "shop=example.com/shop:2"]


def rendered(out) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): p.read_text() for p in sorted(out.rglob("*")) if p.is_file()}


def objects(files: dict[str, str]) -> list[dict]:
    return [yamlc.safe_load(t) for n, t in files.items() if n.endswith(".yaml") and "kustomization" not in n]


@pytest.mark.parametrize("plugin", SEEDS)
def test_args_schema_lists_exactly_the_args_create_flow_binds(plugin):
    manifest = yamlc.safe_load((ROOT / "plugins" / plugin / "plugin.yaml").read_text())
    schema = manifest["spec"]["argsSchema"]
    assert schema["additionalProperties"] is False and manifest["spec"]["emits"] == ["ConfigMap"]
    assert list(schema["properties"]) == list(_dbseed.arg_names(import_builtin(plugin).ENGINE))
    for name, prop in schema["properties"].items():
        assert prop.get("description") and prop.get("examples"), name
        assert prop.get("writeOnly") is (True if name in ("db_password", "root_password") else None), name


@pytest.mark.parametrize("plugin", SEEDS)
def test_render_by_short_name_is_secret_free(harness, plugin):
    seeded_shop(harness, plugin)
    out = harness.tmp / "out"
    result = harness.cli("render", *FLOW, "--out", out, "--debug")
    assert result.returncode == 0, result.stderr
    files = rendered(out)
    leaks = [SEED_SECRET, base64.b64encode(SEED_SECRET.encode()).decode()]
    for text in [*files.values(), result.stdout, result.stderr]:
        assert not any(leak in text for leak in leaks)
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objects(files)}
    seed = by_name["ConfigMap", "seed-shop-seed-pr-7"]
    assert sorted(seed["data"]) == sorted([seed_file(plugin, "schema")[0], seed_file(plugin, "seed")[0]])
    db = by_name["Deployment", "shop-db-pr-7"]["spec"]["template"]["spec"]
    env = db["containers"][0]["env"]
    assert len({e["name"] for e in env}) == len(env)  # replaced by name, never duplicated
    assert all("value" not in e for e in env if "PASSWORD" in e["name"])
    assert {e["name"]: e["valueFrom"]["secretKeyRef"]["name"] for e in env if "valueFrom" in e} == \
        dict.fromkeys(SEED_DATABASES[plugin]["env"], "shop-db")
    mounts = {m["mountPath"]: m["name"] for m in db["containers"][0]["volumeMounts"]}
    assert mounts == {SEED_DATABASES[plugin]["data"]: "devlane-seed-data",
                      "/docker-entrypoint-initdb.d": "devlane-seed"}
    assert {v["name"]: ("emptyDir" in v or v["configMap"]["name"]) for v in db["volumes"]} == {
        "devlane-seed-data": True, "devlane-seed": "seed-shop-seed-pr-7"}
    metadata = json.loads(files["flows/pr-7/flow.metadata"])
    assert [(p["name"], p["source"]) for p in metadata["plugins"]] == [(plugin, "builtin")]
    described = harness.cli("plugins", "describe", plugin, harness.root).stdout
    assert "db_password_secret: shop-db" in described  # a Secret's name is no secret (x-devlane-secret: false)


def test_a_literal_password_is_never_written_nor_logged(harness):
    """Kardinal's literal db_password, where the dev copy reads its password from a Secret: kept as it is,
    with a warning that names no value; the literal appears nowhere (files, logs, describe)."""
    seeded_shop(harness, "postgres-seed")
    defs = harness.root / "app.yaml"
    defs.write_text(defs.read_text().replace("db_password_secret: shop-db", f"db_password: {SEED_SECRET}"))
    out = harness.tmp / "out"
    result = harness.cli("render", *FLOW, "--out", out, "--debug")
    assert result.returncode == 0, result.stderr
    assert "args.db_password is not written into the manifests" in result.stderr
    described = harness.cli("plugins", "describe", "postgres-seed", harness.root)
    assert described.returncode == 0 and "db_password: ***" in described.stdout
    for text in [*rendered(out).values(), result.stdout, result.stderr, described.stdout, described.stderr]:
        assert SEED_SECRET not in text


def test_seed_from_repository_files_read_at_the_rendered_ref(harness):
    """`extensions: [{file: PATH}]` hands a repository file to the plugin as a one-key ConfigMap (binaryData when
    it is not text), read from the rendered git ref like every other input."""
    data = gzip.compress(b"INSERT INTO items VALUES (3);\n", mtime=0)
    seeded_shop(harness, "postgres-seed", [{"file": "db/01-schema.sql"}, {"file": "./db/02-data.sql.gz"}])
    harness.write("db/01-schema.sql", "CREATE TABLE items (id int PRIMARY KEY);\n")
    (harness.root / "db" / "02-data.sql.gz").write_bytes(data)
    harness.commit()
    harness.write("db/01-schema.sql", "-- not committed\n")
    result = harness.cli("render", *FLOW, "--ref", "HEAD", "--stdout")
    assert result.returncode == 0, result.stderr
    seed = next(o for o in yamlc.safe_load_all(result.stdout) if o and o["metadata"]["name"] == "seed-shop-seed-pr-7")
    assert seed["data"] == {"01-schema.sql": "CREATE TABLE items (id int PRIMARY KEY);\n",
                            "seed.sql": "INSERT INTO items VALUES (1), (2);\n"}
    assert seed["binaryData"] == {"02-data.sql.gz": base64.b64encode(data).decode()}


@pytest.mark.parametrize(("entry", "message"), [
    ({"file": "db/missing.sql"}, "extension file db/missing.sql is not in the repository"),
    ({"file": "../outside.sql"}, "extensions file entries must be {file: PATH} with PATH relative to the repository"),
])
def test_bad_file_extensions_are_refused(harness, entry, message):
    seeded_shop(harness, "postgres-seed", [entry])
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 1 and message in result.stderr


def test_kardinal_definition_works_with_only_the_name_changed(harness):
    """Kardinal's OBD demo database and its postgres-seed-plugin definition, verbatim but for `name`."""
    docs = [d for d in yamlc.safe_load_all(demo_file("kardinal-kontrol__ci__obd-demo.yaml").read_text()) if d]
    keep = {"postgres-v1", "postgres", "cartservice-v1", "cartservice", "postgres-seed-plugin"}
    kept = [d for d in docs if d["metadata"]["name"] in keep]
    text = yaml.safe_dump_all(kept, sort_keys=False)
    assert text.count("name: github.com/leoporoli/postgres-seed-plugin") == 1
    harness.write("demo.yaml", text.replace("name: github.com/leoporoli/postgres-seed-plugin", "name: postgres-seed"))
    result = harness.cli("render", "--flow", "pr-1", "--service", "cartservice=kurtosistech/cartservice:dev",
                         "--stdout")
    assert result.returncode == 0, result.stderr
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(result.stdout) if o}
    pg = by_name["Deployment", "postgres-v1-pr-1"]["spec"]["template"]["spec"]["containers"][0]
    assert "lifecycle" not in pg  # no postStart: the image's initdb runs the seed once per fresh database
    env = {e["name"]: e.get("value") for e in pg["env"]}
    assert len(env) == len(pg["env"])
    assert env["POSTGRES_DB"] == "cart" and env["POSTGRES_USER"] == "postgresuser"
    assert env["POSTGRES_PASSWORD"] == "postgrespass"  # the demo's own manifest sets it; the plugin wrote nothing
    seed = by_name["ConfigMap", "seed-postgres-seed-plugin-pr-1"]["data"]["seed.sql"]
    assert "CREATE TABLE IF NOT EXISTS public.items" in seed and "setval('public.items_id_seq'" in seed


def test_plugins_list_builtin_shows_the_catalogue(harness):
    text = harness.cli("plugins", "list", "--builtin")
    assert text.returncode == 0, text.stderr
    rows = {line.split()[0]: line.split() for line in text.stdout.splitlines()[1:-1]}
    assert {"dummy", "postgres-seed", "mysql-seed"} <= set(rows)
    assert rows["postgres-seed"][1:4] == ["0.1.0", "None", "ConfigMap"]
    listed = json.loads(harness.cli("plugins", "list", "--builtin", "-o", "json").stdout)["plugins"]
    data = {e["name"]: e for e in listed}
    assert data["mysql-seed"]["capabilities"] == ["CreateFlow", "DeleteFlow", "ValidateArgs"]
    assert data["mysql-seed"]["path"] == "plugins/mysql-seed" and data["mysql-seed"]["manifest"] == "plugin.yaml"
