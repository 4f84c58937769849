"""The redis-sidecar built-in (plugins/redis-sidecar), in-process: its golden cases pass under `devlane plugins test`,
its argsSchema lists exactly the args create_flow binds (each described, with an example), a repository names it by
its short name and the rendered wiring is right in both isolation modes (the dev app reaches the dev proxy, the
proxy reads through to the baseline Redis), mode fresh renders no secret value, and Kardinal's voting-app Redis
works with a Kardinal definition whose `name` changed (plus the pinned image devlane cannot default). Strict schema
validation and `kubectl kustomize` are in tests/e2e/test_builtin_redis.py."""

from __future__ import annotations

import base64
import inspect
import json

import pytest
import yaml
from support import ROOT, demo_file, yamlc
from support.kardinal import import_builtin
from support.redis_sidecar import FLOW, PROXY_IMAGE, env_of, parse, redis_shop

PLUGIN = ROOT / "plugins" / "redis-sidecar"
REDIS = import_builtin("redis-sidecar")
SECRET = "r3d1s-pa55-never-rendered-91c"


def test_golden_cases_pass(harness):
    cases = sorted((PLUGIN / "testdata").iterdir())
    assert len(cases) >= 3
    assert sum((c / "error.txt").is_file() for c in cases) >= 1 and sum((c / "expected.yaml").is_file()
                                                                         for c in cases) >= 3
    result = harness.cli("plugins", "test", PLUGIN)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == f"{len(cases)} passed, 0 failed (redis-sidecar, runtime kardinal-python)"


def test_args_schema_lists_exactly_the_args_create_flow_binds():
    manifest = yamlc.safe_load((PLUGIN / "plugin.yaml").read_text())
    schema = manifest["spec"]["argsSchema"]
    assert schema["additionalProperties"] is False and manifest["spec"]["emits"] == []
    bound = [p for p in inspect.signature(REDIS.create_flow).parameters
             if p not in ("service_specs", "pod_specs", "flow_uuid", "services")]
    assert list(schema["properties"]) == bound == list(REDIS.ARGS)
    for name, prop in schema["properties"].items():
        assert prop.get("description") and prop.get("examples"), name
    assert schema["properties"]["mode"]["enum"] == list(REDIS.MODES)


@pytest.mark.parametrize(("isolation", "namespaced"), [("suffix", True), ("namespace", True), ("namespace", False)])
def test_wiring_dev_app_to_dev_proxy_to_baseline_redis(harness, isolation, namespaced):
    """Computed from the rendered and baseline objects: the dev app's REDIS_ADDR resolves to a Service that selects
    the dev proxy; the proxy's REDIS_ADDR resolves to the baseline Service, which selects the baseline Redis only.
    Without a namespace on the objects (`.devlane.yaml` names it), a short name would send the proxy to itself."""
    redis_shop(harness, namespace="shop" if namespaced else None)
    if not namespaced:
        harness.config({"namespace": "shop"})
    result = harness.cli("render", *FLOW, "--stdout", "--isolation", isolation)
    assert result.returncode == 0, result.stderr
    baseline = [o for o in yamlc.safe_load_all((harness.root / "app.yaml").read_text()) if o]
    for obj in baseline:
        obj["metadata"].setdefault("namespace", "shop")
    rendered = [o for o in yamlc.safe_load_all(result.stdout) if o]
    objects = {(o["kind"], f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}"): o
               for o in [*baseline, *rendered]}

    def resolve(host_port: str, namespace: str) -> tuple[dict, list[str]]:
        host = host_port.rsplit(":", 1)[0]
        parts = host.split(".")
        ns = parts[1] if len(parts) > 1 else namespace
        svc = objects["Service", f"{ns}/{parts[0]}"]
        return svc, [n.split("/", 1)[1] for (kind, n), o in objects.items() if kind == "Deployment"
                     and o["metadata"].get("namespace") == ns
                     and svc["spec"]["selector"].items() <= o["spec"]["template"]["metadata"]["labels"].items()]

    flow_ns = "shop-pr-7" if isolation == "namespace" else "shop"
    app_name = "web" if isolation == "namespace" else "web-pr-7"
    proxy_name = "redis" if isolation == "namespace" else "redis-pr-7"
    app = objects["Deployment", f"{flow_ns}/{app_name}"]
    assert app["spec"]["template"]["spec"]["containers"][0]["image"] == "example.com/web:2"
    _, pods = resolve(env_of(app, "web")["REDIS_ADDR"], flow_ns)
    assert pods == [proxy_name]
    proxy = objects["Deployment", f"{flow_ns}/{proxy_name}"]
    assert proxy["spec"]["template"]["spec"]["containers"][0]["image"] == PROXY_IMAGE
    upstream = env_of(proxy, "redis")["REDIS_ADDR"]
    assert upstream == "redis.shop.svc.cluster.local:6379"
    svc, pods = resolve(upstream, flow_ns)
    assert svc["metadata"]["namespace"] == "shop" and "devlane.dev/flow" not in svc["metadata"].get("labels", {})
    assert pods == ["redis"]


def test_plugin_output_is_final_reference_rewriting_does_not_touch_redis_addr(harness):
    """The baseline Redis container sets REDIS_ADDR to its own Service, a reference devlane rewrites in dev copies
    before plugins run; the plugin's value (the baseline) is what is rendered, set in place."""
    container = {"name": "redis", "image": "bitnami/redis:7.2", "ports": [{"name": "redis", "containerPort": 6379}],
                 "env": [{"name": "ALLOW_EMPTY_PASSWORD", "value": "yes"},
                         {"name": "REDIS_ADDR", "value": "redis:6379"}]}
    redis_shop(harness, redis_container=container)
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 0, result.stderr
    env = env_of(parse(result.stdout)["Deployment", "redis-pr-7"], "redis")
    assert env == {"ALLOW_EMPTY_PASSWORD": "yes", "REDIS_ADDR": "redis.shop.svc.cluster.local:6379", "PORT": "6379"}


def test_fresh_mode_renders_no_secret_value(harness):
    container = {"name": "redis", "image": "redis:7.4", "args": ["--requirepass", "$(REDIS_PASSWORD)"],
                 "env": [{"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "redis", "key": "pw"}}}],
                 "ports": [{"name": "redis", "containerPort": 6379}],
                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]}
    redis_shop(harness, args={"mode": "fresh"}, redis_container=container)
    harness.append("app.yaml", yaml.safe_dump({"apiVersion": "v1", "kind": "Secret",
                                               "metadata": {"name": "redis", "namespace": "shop"},
                                               "stringData": {"pw": SECRET}}))
    out = harness.tmp / "out"
    result = harness.cli("render", *FLOW, "--out", out, "--debug")
    assert result.returncode == 0, result.stderr
    files = {p.relative_to(out).as_posix(): p.read_text() for p in sorted(out.rglob("*")) if p.is_file()}
    for text in [*files.values(), result.stdout, result.stderr]:
        assert SECRET not in text and base64.b64encode(SECRET.encode()).decode() not in text
    objects = {(o["kind"], o["metadata"]["name"]): o for n, t in files.items() if n.endswith(".yaml")
               for o in yamlc.safe_load_all(t) if o and "metadata" in o}
    dev = objects["Deployment", "redis-pr-7"]
    spec = dev["spec"]["template"]["spec"]
    assert spec["containers"][0]["image"] == "redis:7.4"
    assert spec["containers"][0]["env"] == container["env"]  # the password by reference, as the baseline had it
    assert spec["volumes"] == [{"name": "devlane-redis-data", "emptyDir": {}}]
    metadata = json.loads(files["flows/pr-7/flow.metadata"])
    assert [(p["name"], p["source"]) for p in metadata["plugins"]] == [("redis-sidecar", "builtin")]


def test_overlay_refuses_a_baseline_with_auth(harness):
    container = {"name": "redis", "image": "bitnami/redis:7.2", "ports": [{"name": "redis", "containerPort": 6379}],
                 "env": [{"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "redis", "key": "pw"}}}]}
    redis_shop(harness, redis_container=container)
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 1
    assert ("container 'redis' of the baseline requires AUTH (REDIS_PASSWORD); the overlay proxy connects to the "
            "baseline with no password and accepts no AUTH") in result.stderr
    assert "set mode: fresh" in result.stderr


def _voting_app(name: str, args: dict | None = None) -> str:
    """Kardinal's voting-app manifest, its Redis given Kardinal's redis-sidecar-plugin the way Kardinal reads it
    (the example's `kardinal.dev/plugins` list was never read by Kardinal): plugin `name`, no args."""
    docs = [d for d in yamlc.safe_load_all(demo_file("kardinal__examples__voting-app__k8s-manifest.yaml").read_text())
            if d]
    for d in docs:
        ann = d["metadata"].get("annotations") or {}
        if ann.pop("kardinal.dev/plugins", None):
            ann["kardinal.dev.service/plugins"] = "redis-sidecar-plugin"
    entry = {"name": name, "type": "stateful", "servicename": "redis-sidecar-plugin",
             **({"args": args} if args else {})}
    docs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "plugin-defs", "namespace": "voting-app",
                 "annotations": {"kardinal.dev.service/plugin-definition": yaml.safe_dump([entry])}}})
    return yaml.safe_dump_all(docs, sort_keys=False)


def test_kardinal_voting_app_with_the_name_changed(harness):
    kardinal = _voting_app("github.com/kurtosis-tech/redis-sidecar-plugin")
    render = ["render", "--flow", "pr-1", "--service", "voting-app-ui=kurtosistech/demo-voting-app-ui:dev", "--stdout"]
    harness.write("demo.yaml", kardinal.replace("name: github.com/kurtosis-tech/redis-sidecar-plugin",
                                                "name: redis-sidecar"))
    result = harness.cli(*render)
    assert result.returncode == 0, result.stderr  # Kardinal's proxy by its tag, said not to be pinned
    tagged = parse(result.stdout)["Deployment", "redis-prod-v1-pr-1"]["spec"]["template"]["spec"]["containers"][0]
    assert tagged["image"] == "kurtosistech/redis-proxy-overlay:latest"
    proxy = "kurtosistech/redis-proxy-overlay"
    assert f"set image {proxy}:latest on container redis-prod of Deployment/redis-prod-v1-pr-1, which is not pinned " \
        "by digest" in result.stderr
    assert f"hint: pin it: set the plugin's image arg to {proxy}@sha256:<digest>" in result.stderr
    strict = harness.cli(*render, "--strict")
    assert strict.returncode == 1 and "devlane: error: " in strict.stderr and "not pinned by digest" in strict.stderr
    harness.write("demo.yaml", _voting_app("redis-sidecar", {"image": PROXY_IMAGE}))
    result = harness.cli(*render)
    assert result.returncode == 0, result.stderr
    objects = parse(result.stdout)
    proxy = objects["Deployment", "redis-prod-v1-pr-1"]["spec"]["template"]["spec"]["containers"][0]
    assert proxy["image"] == PROXY_IMAGE
    assert env_of(objects["Deployment", "redis-prod-v1-pr-1"], "redis-prod") == {
        "ALLOW_EMPTY_PASSWORD": "yes", "REDIS_PORT_NUMBER": "6379", "PORT": "6379",
        "REDIS_ADDR": "redis-prod.voting-app.svc.cluster.local:6379"}
    assert env_of(objects["Deployment", "voting-app-ui-v1-pr-1"], "voting-app-ui") == {"REDIS": "redis-prod-pr-1"}


def test_plugins_list_builtin_shows_it(harness):
    text = harness.cli("plugins", "list", "--builtin")
    assert text.returncode == 0, text.stderr
    rows = {line.split()[0]: line.split() for line in text.stdout.splitlines()[1:-1]}
    assert rows["redis-sidecar"][1:4] == ["0.1.0", "None", "nothing"]
