"""The neon-branch and stripe built-ins, in-process: their golden cases pass under `devlane plugins test`, their
argsSchema lists exactly the args create_flow binds (each described, with an example), a repository names them
by short name and the render wires the dev pod by reference only and is secret-free (files, logs, flow.metadata,
`plugins describe`), refusals name the field without echoing a key, and Kardinal's neondb-plugin definition
works with `name` changed (plus the digest-pinned `image`). Strict validation and `kubectl kustomize` are in
tests/e2e/test_builtin_neon_stripe.py."""

from __future__ import annotations

import inspect
import json

import pytest
from support import ROOT, demo_file, yamlc
from support.kardinal import import_builtin
from support.neon_stripe import FLOW, JOB_IMAGE, LIVE_STRIPE_KEY, NEON_LITERAL_KEY, neon_args, neon_stripe_shop

PLUGINS = ("neon-branch", "stripe")


def rendered(out) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): p.read_text() for p in sorted(out.rglob("*")) if p.is_file()}


def objects(files: dict[str, str]) -> dict[tuple[str, str], dict]:
    docs = [yamlc.safe_load(t) for n, t in files.items() if n.endswith(".yaml") and "kustomization" not in n]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def render_out(harness):
    """`devlane render` of the flow into a directory, with --debug (every log line): (result, files)."""
    out = harness.tmp / "out"
    result = harness.cli("render", *FLOW, "--out", out, "--debug")
    assert result.returncode == 0, result.stderr
    return result, rendered(out)


def shop_env(by_name: dict) -> list[dict]:
    return by_name["Deployment", "shop-pr-7"]["spec"]["template"]["spec"]["containers"][0]["env"]


@pytest.mark.parametrize("plugin", PLUGINS)
def test_golden_cases_pass(harness, plugin):
    """At least a typical case, a variant and a refusal; all pass through the real plugin host."""
    kinds = [("error" if (c / "error.txt").is_file() else "expected")
             for c in sorted((ROOT / "plugins" / plugin / "testdata").iterdir())]
    assert kinds.count("expected") >= 2 and kinds.count("error") >= 1
    run = harness.cli("plugins", "test", ROOT / "plugins" / plugin)
    summary = run.stdout.splitlines()[-1] if run.stdout else run.stderr
    assert (run.returncode, summary) == (0, f"{len(kinds)} passed, 0 failed ({plugin}, runtime kardinal-python)")


@pytest.mark.parametrize("plugin", PLUGINS)
def test_args_schema_lists_exactly_the_args_create_flow_binds(plugin):
    spec = yamlc.safe_load((ROOT / "plugins" / plugin / "plugin.yaml").read_text())["spec"]
    schema = spec["argsSchema"]
    params = list(inspect.signature(import_builtin(plugin).create_flow).parameters)
    assert schema["additionalProperties"] is False and spec["sideEffects"] == "None"
    assert list(schema["properties"]) == params[3:]
    for name, prop in schema["properties"].items():
        assert prop.get("description") and prop.get("examples"), name


def test_render_by_short_name_wires_by_reference_and_is_secret_free(harness):
    neon_stripe_shop(harness, neon=neon_args(NEON_API_KEY=""))
    _, files = render_out(harness)
    by_name = objects(files)
    env = shop_env(by_name)
    assert len({e["name"] for e in env}) == len(env)  # replaced by name, never duplicated
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in env if "valueFrom" in e}
    assert refs == {"DATABASE_URL": {"name": "neon-shop-db-pr-7", "key": "DATABASE_URL"},
                    "STRIPE_SECRET_KEY": {"name": "stripe-payments-pr-7", "key": "STRIPE_SECRET_KEY"}}
    # the Secret the app reads is the one the create Job writes and the ExternalSecret targets
    job = by_name["Job", "neon-create-shop-db-pr-7"]
    job_env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert job_env["TARGET_SECRET"] == refs["DATABASE_URL"]["name"]
    assert job_env["TARGET_KEY"] == refs["DATABASE_URL"]["key"]
    role = by_name["Role", "neon-branch-shop-db-pr-7"]
    assert [r.get("resourceNames") for r in role["rules"]] == [[job_env["TARGET_SECRET"]], None]
    assert role["rules"][1]["verbs"] == ["create"]
    es = by_name["ExternalSecret", "stripe-payments-pr-7"]
    assert es["spec"]["target"]["name"] == refs["STRIPE_SECRET_KEY"]["name"]
    assert list(es["spec"]["target"]["template"]["data"]) == [refs["STRIPE_SECRET_KEY"]["key"]]
    assert not [k for k in by_name if k[0] == "Secret"]
    metadata = json.loads(files["flows/pr-7/flow.metadata"])
    assert sorted((p["name"], p["source"]) for p in metadata["plugins"]) == [("neon-branch", "builtin"),
                                                                           ("stripe", "builtin")]


def test_kardinal_literal_api_key_is_never_written_nor_logged(harness):
    neon_stripe_shop(harness, neon={"NEON_API_KEY": NEON_LITERAL_KEY, "NEON_PROJECT_ID": "proud-lake-123456",
                                    "NEON_FORK_FROM_BRANCH_ID": "br-wispy-dew-591433", "image": JOB_IMAGE})
    result, files = render_out(harness)
    described = harness.cli("plugins", "describe", "neon-branch", harness.root)
    assert "args.NEON_API_KEY is not written into the manifests" in result.stderr
    assert "flows/pr-7/flow.metadata" in files and "NEON_API_KEY: ***" in described.stdout
    for text in [*files.values(), result.stdout, result.stderr, described.stdout, described.stderr]:
        assert NEON_LITERAL_KEY not in text
    env = {e["name"]: e for e in shop_env(objects(files))}
    assert env["POSTGRES"]["valueFrom"]["secretKeyRef"]["name"] == "neon-shop-db-pr-7"  # Kardinal's env name
    job = objects(files)["Job", "neon-create-shop-db-pr-7"]["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "NEON_API_KEY", "valueFrom": {"secretKeyRef": {"name": "neon-api", "key": "api-key"}}} \
        in job["env"]


@pytest.mark.parametrize("field", ["remote_key", "secret_store", "env_var", "secret_name"])
def test_a_live_stripe_key_is_refused_without_echoing_it(harness, field):
    args = {"secret_store": "dev-secrets", "remote_key": "devlane/stripe", field: LIVE_STRIPE_KEY}
    if field == "secret_name":
        args = {"secret_name": LIVE_STRIPE_KEY}
    neon_stripe_shop(harness, stripe=args)
    result = harness.cli("render", *FLOW, "--stdout", "--debug")
    assert result.returncode == 1
    assert f"args.{field}: looks like a live Stripe key" in result.stderr
    assert LIVE_STRIPE_KEY not in result.stdout + result.stderr


def test_a_literal_test_key_is_refused(harness):
    neon_stripe_shop(harness, stripe={"secret_store": "dev-secrets", "remote_key": "sk_test_4eC39HqLyjWDarjtT1zdp7dc"})
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 1 and "args.remote_key: is a literal Stripe test key" in result.stderr
    assert "sk_test_4eC39HqLyjWDarjtT1zdp7dc" not in result.stdout + result.stderr


def test_stripe_mock_mode_points_the_dev_pod_at_the_flow_mock(harness):
    neon_stripe_shop(harness, stripe={"mode": "mock"})
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 0, result.stderr
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(result.stdout) if o}
    env = {e["name"]: e.get("value") for e in shop_env(by_name)}
    service = by_name["Service", "stripe-mock-payments-pr-7"]
    assert env["STRIPE_API_BASE"] == f"http://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}"
    assert env["STRIPE_SECRET_KEY"] == "sk_test_123"
    pods = by_name["Deployment", "stripe-mock-payments-pr-7"]["spec"]["template"]["metadata"]["labels"]
    assert all(pods.get(k) == v for k, v in service["spec"]["selector"].items())  # the Service selects the mock
    baseline = {"app": "shop"}
    assert not all(pods.get(k) == v for k, v in baseline.items())


def test_kardinal_neon_demo_with_only_the_name_changed_and_an_image(harness):
    """Kardinal's neon demo leaves NEON_PROJECT_ID blank: the render refuses it with the exact field; with the
    project set (and the digest-pinned image devlane cannot default) it renders, POSTGRES by reference."""
    text = demo_file("kardinal-playground__neon-postgres-demo__obd-demo.yaml").read_text()
    assert text.count("name: github.com/kurtosis-tech/neondb-plugin") == 1
    text = text.replace("name: github.com/kurtosis-tech/neondb-plugin", "name: neon-branch")
    text = text.replace('NEON_FORK_FROM_BRANCH_ID: ""', f'NEON_FORK_FROM_BRANCH_ID: ""\n          image: "{JOB_IMAGE}"')
    harness.write("demo.yaml", text)
    flow = ("--flow", "pr-1", "--service", "cartservice=kurtosistech/cartservice:dev")
    result = harness.cli("render", *flow, "--stdout")
    assert result.returncode == 1 and "args.project_id: is required" in result.stderr
    harness.write("demo.yaml", text.replace('NEON_PROJECT_ID: ""', "NEON_PROJECT_ID: proud-lake-123456"))
    result = harness.cli("render", *flow, "--stdout")
    assert result.returncode == 0, result.stderr
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(result.stdout) if o}
    cart = by_name["Deployment", "cartservice-v1-pr-1"]["spec"]["template"]["spec"]["containers"][0]["env"]
    postgres = [e for e in cart if e["name"] == "POSTGRES"]
    assert postgres == [{"name": "POSTGRES", "valueFrom": {"secretKeyRef": {"name": "neon-neon-postgres-db-pr-1",
                                                                            "key": "DATABASE_URL"}}}]
    assert ("Job", "neon-create-neon-postgres-db-pr-1") in by_name


def test_plugins_list_builtin_shows_them(harness):
    listed = json.loads(harness.cli("plugins", "list", "--builtin", "-o", "json").stdout)["plugins"]
    data = {e["name"]: e for e in listed}
    assert data["neon-branch"]["capabilities"] == ["CreateFlow", "DeleteFlow", "ValidateArgs"]
    assert data["stripe"]["path"] == "plugins/stripe" and data["stripe"]["manifest"] == "plugin.yaml"
