"""Conformance: ONE plugin logic (tests/fixtures/conformance/logic.py) gives identical results whatever runs it.

The runtimes: kardinal-python (main.py through the shim, in a subprocess), built-in (the same shim
code in-process), exec (fn.py: `renderer.sdk.krm.run(kardinal(logic))`) and gRPC (server.py:
`renderer.sdk.serve(kardinal(logic), ...)`). Each is compared through `devlane render --stdout`,
through the API, and call by call through `make_runtime(...)` (`Outcome`s, validation problems,
defaulted args, lifecycle-hooked objects, delete results).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, app_yaml, run_cli

from renderer import api
from renderer import run_plugins as rp
from renderer.errors import DevlaneError, Where
from renderer.invocation import Invocation, ReplyReader, outcome_from_reply, request_document
from renderer.manifest import Manifest, load_manifest
from renderer.runtimes import DocumentRuntime, KardinalRuntime, make_runtime
from renderer.sdk.krm import kardinal, run
from renderer.sources import PluginSource

CONF = FIXTURES / "conformance"
PLUGIN = "conformance"
HAS_GRPC = importlib.util.find_spec("grpc") is not None
RUNTIMES = ["kardinal-python", "builtin", "exec", "grpc"]
DIRS = {"kardinal-python": "kardinal", "builtin": "kardinal", "exec": "exec", "grpc": "grpc"}
FLOW = ["--flow", "pr-1", "--service", "api=api:2", "--service", "worker=worker:2"]
# exec and grpc plugins get a scrubbed environment (PATH, HOME, DEVLANE_*): `python3` on PATH must be
# an interpreter that has grpc, i.e. the one running the tests.
PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])

APP = (app_yaml("api", "db", [{"name": "main", "image": "api:1", "env": [{"name": "KEEP", "value": "1"}]}])
       + app_yaml("worker", "db", port=8080) + """apiVersion: v1
kind: Service
metadata:
  name: db-def
  annotations:
    kardinal.dev.service/plugin-definition: |
      - name: conformance
        type: external
        servicename: db
        args: ARGS
""")

# The builtin runtime through the CLI: the plugin directory, resolved as if it lived under plugins/.
BUILTIN_CLI = textwrap.dedent("""
    import dataclasses, sys
    import renderer.run_plugins as rp
    _resolve = rp.resolve_plugin_source
    rp.resolve_plugin_source = lambda *a, **kw: dataclasses.replace(_resolve(*a, **kw), origin="builtin")
    from renderer.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def skip_without(runtime: str) -> None:
    if runtime == "grpc" and not HAS_GRPC:
        pytest.skip("grpc is not importable")


def available() -> list[str]:
    return [r for r in RUNTIMES if r != "grpc" or HAS_GRPC]


def make_repo(root: Path, args: dict) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.yaml").write_text(APP.replace("ARGS", json.dumps(args)))
    return root


def cli(runtime: str, *argv: str) -> subprocess.CompletedProcess:
    flags = [f"--plugin-source={PLUGIN}={CONF / DIRS[runtime]}"]
    if runtime != "builtin":
        return run_cli(*argv, *flags, env={"PATH": PATH})
    env = {**os.environ, "PATH": PATH, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", BUILTIN_CLI, *argv, *flags], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


@pytest.fixture
def as_runtime(monkeypatch):
    """Configure in-process API renders for one runtime (PATH for exec/grpc, origin for built-in)."""
    monkeypatch.setenv("PATH", PATH)

    def use(runtime: str) -> api.Options:
        skip_without(runtime)
        monkeypatch.setattr(rp, "resolve_plugin_source", ORIGINAL_RESOLVE)
        if runtime == "builtin":
            monkeypatch.setattr(rp, "resolve_plugin_source", lambda *a, **kw: dataclasses.replace(
                ORIGINAL_RESOLVE(*a, **kw), origin="builtin"))  # fmt: skip
        return api.Options(plugin_sources={PLUGIN: str(CONF / DIRS[runtime])})

    return use


ORIGINAL_RESOLVE = rp.resolve_plugin_source


def test_render_is_byte_identical_across_runtimes(tmp_path, as_runtime):
    repo = make_repo(tmp_path / "repo", {"database": "orders"})
    outputs = {}
    for runtime in available():
        out = cli(runtime, "render", str(repo), *FLOW, "--stdout")
        assert out.returncode == 0, f"{runtime}: {out.stderr}"
        options = dataclasses.replace(as_runtime(runtime), repo=repo)
        flow = api.resolve_flow(api.FlowRequest(flow_id="pr-1", images={"api": "api:2", "worker": "worker:2"}))
        result = api.render(options, flow)
        files = {name: text for f in result.flows for name, text in f.files.items()}
        assert result.stream() == out.stdout, runtime
        ran = [(r.choice.manifest.runtime, r.source.origin) for r in result.stage.results]
        builtin = runtime == "builtin"
        assert ran == [("kardinal-python" if builtin else runtime, "builtin" if builtin else "flag")]
        outputs[runtime] = (out.stdout, out.stderr, files, [p.format() for p in result.warnings])
    reference = outputs["kardinal-python"]
    for runtime, got in outputs.items():
        assert got == reference, f"{runtime} differs from kardinal-python"
    stream, stderr, files, warnings = reference
    # the logic really ran: env from the arg and its default, a resource, the state, the hook, a warning
    assert stream.count("value: orders-db-pr-1") == 2 and stream.count("value: small") == 2
    assert "name: KEEP" in stream and "name: seed-db-pr-1" in stream
    assert stream.count("conformance.devlane.dev/hooked: pr-1") == 2  # lifecycle kinds: [Service]
    state = json.loads(next(t for n, t in files.items() if n.startswith("configmap-devlane-state")).split(
        "config_map.json: '")[1].split("'\n")[0])  # fmt: skip
    assert state == {"branch": "orders-db-pr-1", "database": "orders", "ports": [80, 8080], "tier": "small",
                     "nested": {"z": [1, 2.5, True, None], "a": {"unicode": "grüße", "empty": {}}}}  # fmt: skip
    assert "warning: plugin db: args.database: branch orders-db-pr-1 is a copy of orders" in stderr
    assert warnings == ["plugin db: args.database: branch orders-db-pr-1 is a copy of orders"]


def test_validate_args_errors_are_identical_across_runtimes(tmp_path):
    repo = make_repo(tmp_path / "repo", {"tier": "huge"})
    errors = {}
    for runtime in available():
        out = cli(runtime, "render", str(repo), *FLOW, "--out", str(tmp_path / "out"))
        assert out.returncode == 1, f"{runtime}: {out.stderr}"
        errors[runtime] = out.stderr
    reference = errors["kardinal-python"]
    assert "plugin db: args.database: is required" in reference
    assert "plugin db: args.tier: must be one of small, large, not 'huge'" in reference
    assert "hint: fix the args in the plugin definition of db (conformance)" in reference
    for runtime, stderr in errors.items():
        assert stderr == reference, f"{runtime} differs from kardinal-python"
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------------
# Call by call through make_runtime


def workload(name: str, env: list | None = None) -> dict:
    container = {"name": "main", "image": f"{name}:2", **({"env": env} if env else {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"{name}-pr-1"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}}}  # fmt: skip


def service(name: str, port: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{name}-pr-1"},
            "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": port}]}}  # fmt: skip


def invocation(operation: str, **changes) -> Invocation:
    inv = Invocation(operation, "db", "pr-1", PLUGIN, args={"database": "orders"}, dependents=["api", "worker"],
                     workloads=[workload("api", [{"name": "KEEP", "value": "1"}]), workload("worker")],
                     services=[service("api", 80), service("worker", 8080)])  # fmt: skip
    return dataclasses.replace(inv, **changes)


def runtime_for(kind: str):
    skip_without(kind)
    path = CONF / DIRS[kind]
    source = PluginSource(PLUGIN, path, "flag")
    manifest = load_manifest(path, PLUGIN)
    if kind == "builtin":
        return KardinalRuntime(dataclasses.replace(source, origin="builtin"), manifest, in_process=True)
    rt = make_runtime(source, manifest)
    assert rt.kind == kind
    return rt


def every_call(rt) -> dict:
    """Every operation of the contract, as host data."""
    out: dict = {}
    out["default_args"] = rt.default_args(invocation("DefaultArgs", args={"database": "orders"}), 30)
    args = out["default_args"]
    out["validate_ok"] = rt.validate_args(invocation("ValidateArgs", args=args), 30)
    out["validate_bad"] = rt.validate_args(invocation("ValidateArgs", args={"tier": "huge"}), 30)
    out["create"] = rt.create_flow(invocation("CreateFlow", args=args), 30)
    out["create_legacy_args"] = rt.create_flow(invocation("CreateFlow", args={"database": "x", "tier": "large",
                                                                              "unused": "1"}), 30)  # fmt: skip
    try:
        rt.create_flow(invocation("CreateFlow", args={}), 30)
    except DevlaneError as exc:
        out["create_missing_arg"] = "database" in exc.problems[0].message
    out["change_ok"] = rt.validate_change(invocation("ValidateChange", args=args, old_args=args), 30)
    out["change_bad"] = rt.validate_change(invocation("ValidateChange", args=args,
                                                      old_args={**args, "database": "users"}), 30)  # fmt: skip
    objects = [service("api", 80), {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "plain", "annotations": {"keep": "me"}}}]  # fmt: skip
    out["hook"] = rt.lifecycle_hook(invocation("LifecycleHook", dependents=[], workloads=[], services=[],
                                               objects=objects), 30)  # fmt: skip
    out["delete"] = rt.delete_flow(invocation("DeleteFlow", dependents=[], workloads=[], services=[],
                                              state=out["create"].config_map), 30)  # fmt: skip
    return out


def test_every_runtime_gives_identical_host_data():
    results = {}
    for kind in available():
        rt = runtime_for(kind)
        try:
            results[kind] = every_call(rt)
        finally:
            rt.close()
    reference = results["kardinal-python"]
    create = reference["create"]
    assert create.pod_specs[0]["containers"][0]["env"] == [
        {"name": "KEEP", "value": "1"}, {"name": "CONFORMANCE_DB", "value": "orders-db-pr-1"},
        {"name": "CONFORMANCE_TIER", "value": "small"}]  # fmt: skip
    assert create.config_map["ports"] == [80, 8080] and create.resources[0]["metadata"]["name"] == "seed-db-pr-1"
    assert [m.severity for m in create.messages] == ["warning"]
    assert reference["default_args"] == {"database": "orders", "env_name": "CONFORMANCE_DB", "tier": "small"}
    assert reference["validate_ok"] == [] and reference["change_ok"] == []
    assert [p.message for p in reference["validate_bad"]] == [
        "args.database: is required", "args.tier: must be one of small, large, not 'huge'"]
    assert [p.message for p in reference["change_bad"]] == ["args.database: cannot change the database of a live flow"]
    assert reference["create_missing_arg"] is True
    assert [o["metadata"]["annotations"] for o in reference["hook"]] == [
        {"conformance.devlane.dev/hooked": "pr-1"}, {"keep": "me", "conformance.devlane.dev/hooked": "pr-1"}]
    assert reference["delete"] == []
    for kind, got in results.items():
        for key in reference:
            assert got[key] == reference[key], f"{kind}: {key} differs from kardinal-python"


# --------------------------------------------------------------------------------------------------
# The SDK adapter in-process against the shim, over the Kardinal fixtures (legacy signatures included)


class SdkRuntime(DocumentRuntime):
    """The ResourceList round trip without a process: `kardinal(module)` answers the document."""

    def __init__(self, module, path: Path):
        manifest = Manifest(name=PLUGIN, runtime="exec", path=path, capabilities=(
            "CreateFlow", "DeleteFlow", "ValidateArgs", "DefaultArgs", "ValidateChange", "LifecycleHook"))
        super().__init__(PluginSource(PLUGIN, path, "flag"), manifest)
        self.handler = kardinal(module)

    def transport(self, inv: Invocation, data: bytes, timeout: float) -> bytes:
        return json.dumps(self.handler(json.loads(data))).encode()


def brief(problems: list) -> list[tuple]:
    return [(p.message, p.severity, p.where) for p in problems]


def load_fixture(name: str):
    path = FIXTURES / "plugins" / name
    spec = importlib.util.spec_from_file_location(f"sdk_fixture_{name}", path / "main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


@pytest.mark.parametrize("name, args", [
    ("binding", {"text": "hi", "extra": "ignored"}),
    ("legacy_pod_spec", {}),
    ("legacy_deployment_spec", {}),
    ("resources", {}),
    ("results", {"severities": "info,warning"}),
    ("roundtrip", {"config": json.dumps({"z": {"b": 1, "a": [1, 2.5, None]}, "ü": "grüße"})}),
])  # fmt: skip
def test_sdk_binds_and_replies_like_the_shim(name, args):
    module, path = load_fixture(name)
    source = PluginSource(PLUGIN, path, "builtin")
    shim = KardinalRuntime(source, Manifest(name=PLUGIN, runtime="kardinal-python", path=path), in_process=True)
    sdk = SdkRuntime(module, path)
    inv = invocation("CreateFlow", args=args)
    want, got = shim.create_flow(copy.deepcopy(inv), 30), sdk.create_flow(copy.deepcopy(inv), 30)
    assert (got.pod_specs, got.config_map, got.resources) == (want.pod_specs, want.config_map, want.resources)
    # the SDK reports through KRM results: its own warnings (deprecated signature, no delete_flow)
    # have the same text, only the code and hint differ
    assert brief(got.messages) == brief(want.messages)
    delete = invocation("DeleteFlow", args=args, dependents=[], workloads=[], services=[], state=want.config_map)
    assert brief(sdk.delete_flow(delete, 30)) == brief(shim.delete_flow(delete, 30))


@pytest.mark.parametrize("name, args, text", [
    ("binding", {}, "requires argument 'text'"),
    ("raises", {}, "create_flow raised"),
    ("wrong_count", {}, "returned 1 pod spec for 2 dependents (api, worker)"),
    ("malformed", {"what": "no_config_map"}, "config_map"),
    ("malformed", {"what": "set"}, "not JSON-serializable"),
])  # fmt: skip
def test_sdk_reports_plugin_failures_as_error_results(name, args, text):
    module, path = load_fixture(name)
    with pytest.raises(DevlaneError) as exc:
        SdkRuntime(module, path).create_flow(invocation("CreateFlow", args=args), 30)
    assert text in exc.value.problems[0].message


def test_run_reads_yaml_keeps_stdout_clean_and_fails_with_a_result():
    def handler(resource_list: dict) -> dict:
        print("stray output")
        resource_list["results"] = [{"severity": "info", "message": "seen " + resource_list["items"][0]["kind"]}]
        return resource_list

    out = io.BytesIO()
    doc = b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {apiVersion: v1, kind: Pod}\n"
    assert run(handler, stdin=io.BytesIO(doc), stdout=out, exit=False) == 0
    reply = json.loads(out.getvalue())
    assert reply["results"] == [{"severity": "info", "message": "seen Pod"}]

    def broken(operation: str, resource_list: dict) -> dict:
        raise RuntimeError(f"cannot {operation}")

    out = io.BytesIO()
    request = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [],
               "functionConfig": {"spec": {"operation": "CreateFlow"}}}  # fmt: skip
    assert run(broken, stdin=io.BytesIO(json.dumps(request).encode()), stdout=out, exit=False) == 1
    results = json.loads(out.getvalue())["results"]
    assert results == [{"severity": "error", "message": "RuntimeError: cannot CreateFlow"}]
    out = io.BytesIO()
    assert run(handler, stdin=io.BytesIO(b"{}"), stdout=out, exit=False) == 1
    assert "not a ResourceList" in json.loads(out.getvalue())["results"][0]["message"]


def test_exec_sdk_plugin_protects_its_stdout(tmp_path):
    """A real exec process: prints from the plugin code go to stderr, the reply stays parseable."""
    script = tmp_path / "fn.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from renderer.sdk.krm import kardinal, run

        def create_flow(service_specs, pod_specs, flow_uuid):
            print("noise from print")
            os.write(1, b"noise from fd 1\\n")
            return {{"pod_specs": pod_specs, "config_map": {{"uuid": flow_uuid}}}}

        run(kardinal([create_flow]))
    """))
    data = json.dumps(request_document(invocation("CreateFlow", args={}), 10)).encode()
    proc = subprocess.run([sys.executable, str(script)], input=data, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert b"noise from print" in proc.stderr and b"noise from fd 1" in proc.stderr
    inv = invocation("CreateFlow", args={})
    outcome = outcome_from_reply(inv, json.loads(proc.stdout), ReplyReader(inv, Where(plugin="db"), "exec"))
    assert outcome.config_map == {"uuid": "db-pr-1"}
