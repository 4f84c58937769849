"""All eleven built-ins in one flow (tests/support/catalogue_app.py): the CLI renders it, every object passes strict
Kubernetes validation or its upstream CRD (ACK, Config Connector, External Secrets, the ASO schema), `kubectl
kustomize` builds the directory, the render is byte-identical twice and secret-free, and the dev app's wiring,
computed from the rendered objects alone, reaches the flow's own copy of every dependency."""

from __future__ import annotations

import json

import pytest
from support import BUILTINS, QUEUE_BUILTINS, kubectl_kustomize, tree, validate_strict, yamlc
from support.catalogue_app import API_ENV, DEFINITIONS, LITERALS, NAMESPACE, catalogue_app

FLOW = ["--flow", "pr-7", "--service", "api=example.com/api:2"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from _pytest.monkeypatch import MonkeyPatch
    from support import Harness

    patch = MonkeyPatch()
    harness = Harness(tmp_path_factory.mktemp("all"), patch)
    catalogue_app(harness)
    out = harness.tmp / "out"
    result = harness.cli("render", *FLOW, "--out", out, "--debug")
    again = harness.cli("render", *FLOW, "--out", harness.tmp / "again")
    patch.undo()
    assert result.returncode == 0 and again.returncode == 0, result.stderr + again.stderr
    flow = out / "flows" / "pr-7"
    objects = [yamlc.safe_load(p.read_text()) for p in sorted(flow.glob("*.yaml")) if p.name != "kustomization.yaml"]
    return {"flow": flow, "objects": objects, "result": result, "same": tree(out) == tree(harness.tmp / "again")}


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[dict], kind: str) -> dict:
    (found,) = by_kind(objects, kind)
    return found


def test_every_builtin_runs_and_every_object_is_valid(rendered):
    meta = json.loads((rendered["flow"] / "flow.metadata").read_text())
    used = {p["name"]: p["source"] for p in meta["plugins"]}
    eleven = tuple(b for b in BUILTINS if b not in QUEUE_BUILTINS)  # Kardinal's table (the queues have their own)
    assert tuple(sorted(used)) == eleven and len(eleven) == 11 and set(used.values()) == {"builtin"}
    for obj in rendered["objects"]:
        validate_strict(obj)
    built = kubectl_kustomize(rendered["flow"])
    assert sorted((o["kind"], o["metadata"]["name"]) for o in built) == \
        sorted((o["kind"], o["metadata"]["name"]) for o in rendered["objects"])
    assert {o["metadata"].get("namespace") for o in rendered["objects"]} == {NAMESPACE}
    kinds = {o["kind"] for o in rendered["objects"]}
    assert {"DBInstance", "FieldExport", "ExternalSecret", "Password", "Queue", "Bucket", "SQLInstance", "SQLDatabase",
            "SQLUser", "ServersDatabase", "Job", "Role", "RoleBinding", "ServiceAccount"} <= kinds
    assert rendered["same"]  # byte-identical on a second render


def test_nothing_secret_reaches_output_or_logs(rendered):
    texts = [p.read_text() for p in sorted(rendered["flow"].iterdir())]
    texts += [rendered["result"].stdout, rendered["result"].stderr]
    for _, literal in LITERALS.values():
        assert not any(literal in t for t in texts), literal
    assert "args.NEON_API_KEY is not written" in rendered["result"].stderr  # said loudly, without the value


def _api(objects: list[dict]) -> tuple[dict, dict[str, dict]]:
    (api,) = [o for o in by_kind(objects, "Deployment") if o["metadata"]["name"] == "api-pr-7"]
    spec = api["spec"]["template"]["spec"]
    return spec, {e["name"]: e for e in spec["containers"][0]["env"]}


def test_the_dev_app_reaches_the_flows_own_copy_of_every_dependency(rendered):
    objects = rendered["objects"]
    spec, env = _api(objects)
    assert len(env) == len(spec["containers"][0]["env"])  # set by name, never twice
    changed = {e["name"] for e in API_ENV if env[e["name"]] != e}
    assert changed == {e["name"] for e in API_ENV} - {"FLAGS_URL"}  # only the dummy's dependency is left as it was

    def ref(name: str, kind: str = "secretKeyRef") -> str:
        return env[name]["valueFrom"][kind]["name"]

    queue = one(objects, "Queue")
    assert env["QUEUE_URL"]["value"] == f"https://sqs.eu-west-1.amazonaws.com/123456789012/{queue['spec']['queueName']}"
    assert env["BUCKET_NAME"]["value"] == one(objects, "Bucket")["spec"]["name"]
    export = one(objects, "FieldExport")
    assert ref("RDS_HOST", "configMapKeyRef") == export["spec"]["to"]["name"]
    assert export["spec"]["from"]["resource"]["name"] == one(objects, "DBInstance")["metadata"]["name"]
    assert ref("RDS_PASSWORD") in {e["spec"]["target"]["name"] for e in by_kind(objects, "ExternalSecret")}
    stripe = [e for e in by_kind(objects, "ExternalSecret") if e["metadata"]["name"].startswith("stripe-")]
    assert ref("STRIPE_SECRET_KEY") == stripe[0]["spec"]["target"]["name"]
    hooks = {j["metadata"]["annotations"]["argocd.argoproj.io/hook"]: j for j in by_kind(objects, "Job")}
    create = [hooks["PreSync"]]
    job_env = {e["name"]: e.get("value") for e in create[0]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert ref("DATABASE_URL") in job_env.values()  # the Secret the PreSync Job writes
    instance = one(objects, "SQLInstance")
    (proxy,) = spec["initContainers"]
    assert proxy["args"][-1] == f"acme-dev:europe-west1:{instance['spec']['resourceID']}"
    assert env["CATALOG_DB_HOST"]["value"] == "127.0.0.1" and "--port=15432" in proxy["args"]
    assert env["BILLING_DB_NAME"]["value"] == one(objects, "ServersDatabase")["spec"]["azureName"]


def test_the_stateful_copies_are_seeded_and_the_cache_overlays_the_baseline(rendered):
    objects = rendered["objects"]
    _, env = _api(objects)
    services = {s["metadata"]["name"]: s for s in by_kind(objects, "Service")}
    workloads = {w["metadata"]["name"]: w for w in objects if w["kind"] in ("Deployment", "StatefulSet")}
    for var, store in (("ORDERS_DB_HOST", "orders-db"), ("LEDGER_DB_HOST", "ledger-db"), ("REDIS_ADDR", "cache")):
        target = env[var]["value"].split(":")[0]
        assert target == f"{store}-pr-7"
        selector = services[target]["spec"]["selector"]
        labels = workloads[target]["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()  # the dev Service selects the dev copy
    for store in ("orders-db", "ledger-db"):
        pod = workloads[f"{store}-pr-7"]["spec"]["template"]["spec"]
        seed = next(v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v)
        assert seed in {c["metadata"]["name"] for c in by_kind(objects, "ConfigMap")}
        assert "volumeClaimTemplates" not in workloads[f"{store}-pr-7"]["spec"]
    cache = workloads["cache-pr-7"]["spec"]["template"]["spec"]["containers"][0]
    assert cache["image"] == DEFINITIONS["cache-overlay"][2]["image"]
    assert {e["name"]: e["value"] for e in cache["env"]}["REDIS_ADDR"] == f"cache.{NAMESPACE}.svc.cluster.local:6379"
