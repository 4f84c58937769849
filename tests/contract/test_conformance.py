"""Conformance: ONE plugin logic (tests/fixtures/conformance/logic.py) gives identical results whatever runs it.

The runtimes (`renderer.host.runtimes`, by `.kind`): kardinal-python (main.py through the Kardinal
adapter, `python -m renderer.sdk.kardinal`, in a subprocess), builtin (the same adapter in-process,
`InProcessRuntime`), exec (fn.py: `renderer.sdk.krm.run(kardinal(logic))`) and grpc (server.py:
`renderer.sdk.serve(kardinal(logic), ...)`). Each is compared through `devlane render --stdout` (the CLI
in-process), through the API, and call by call through `make_runtime(...)` (`Outcome`s, validation
problems, defaulted args, lifecycle-hooked objects, delete results). The built-in runtime is reached by
making the resolver (`renderer.host.resolve.resolve_plugin_source`) report the fixture as a built-in.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import FIXTURES, ROOT, kardinal

from renderer.errors import DevlaneError
from renderer.host import plugin_host, resolve
from renderer.host.invoke import Invocation, ReplyReader, outcome_from_reply, request_document
from renderer.host.manifest import load_manifest
from renderer.host.resolve import PluginSource
from renderer.host.runtimes import make_runtime

CONF = FIXTURES / "conformance"
PLUGIN = "conformance"
HAS_GRPC = importlib.util.find_spec("grpc") is not None
RUNTIMES = ["kardinal-python", "builtin", "exec", "grpc"]
DIRS = {"kardinal-python": "kardinal", "builtin": "kardinal", "exec": "exec", "grpc": "grpc"}
FLOW = ["--flow", "pr-1", "--service", "api=api:2", "--service", "worker=worker:2"]
IMAGES = {"api": "api:2", "worker": "worker:2"}
# exec and grpc plugins get a scrubbed environment (PATH, HOME, DEVLANE_*): `python3` on PATH must be
# an interpreter that has grpc, i.e. the one running the tests.
PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])
ORIGINAL_RESOLVE = resolve.resolve_plugin_source


def skip_without(runtime: str) -> None:
    if runtime == "grpc" and not HAS_GRPC:
        pytest.skip("grpc is not importable")


def available() -> list[str]:
    return [r for r in RUNTIMES if r != "grpc" or HAS_GRPC]


def write_repo(harness, args: dict) -> None:
    """Services api and worker, both using instance `db` of the conformance plugin with `args`."""
    harness.app("api", "db", [{"name": "main", "image": "api:1", "env": [{"name": "KEEP", "value": "1"}]}])
    harness.app("worker", "db", port=8080)
    harness.plugin_definition({"name": PLUGIN, "type": "external", "servicename": "db", "args": args}, name="db-def")


@pytest.fixture
def as_runtime(monkeypatch):
    """Configure renders (CLI and API, in-process) for one runtime: PATH for exec/grpc, the built-in origin
    for builtin. Returns the `--plugin-source` mapping and the list of runtime kinds the plugin host started
    (a spy on the real `make_runtime`)."""
    monkeypatch.setenv("PATH", PATH)
    started: list[str] = []

    def spy(*args, **kw):
        rt = make_runtime(*args, **kw)
        started.append(rt.kind)
        return rt

    monkeypatch.setattr(plugin_host, "make_runtime", spy)

    def use(runtime: str) -> tuple[dict[str, str], list[str]]:
        skip_without(runtime)
        started.clear()
        monkeypatch.setattr(resolve, "resolve_plugin_source", ORIGINAL_RESOLVE)
        if runtime == "builtin":
            monkeypatch.setattr(resolve, "resolve_plugin_source", lambda *a, **kw: dataclasses.replace(
                ORIGINAL_RESOLVE(*a, **kw), origin="builtin"))  # fmt: skip
        return {PLUGIN: str(CONF / DIRS[runtime])}, started

    return use


def test_render_is_byte_identical_across_runtimes(harness, as_runtime):
    write_repo(harness, {"database": "orders"})
    outputs = {}
    for runtime in available():
        sources, started = as_runtime(runtime)
        out = harness.cli("render", *FLOW, "--stdout", f"--plugin-source={PLUGIN}={sources[PLUGIN]}")
        assert out.returncode == 0, f"{runtime}: {out.stderr}"
        assert started == [runtime], f"{runtime}: the CLI render started {started}"
        started.clear()
        result = harness.render("pr-1", IMAGES, plugin_sources=sources)
        assert started == [runtime], f"{runtime}: the API render started {started}"
        files = {name: text for f in result.flows for name, text in f.files.items()}
        assert result.stream() == out.stdout, runtime
        ran = [(r.choice.manifest.runtime, r.source.origin) for r in result.plugins.results]
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
    assert [w for w in warnings if w.startswith("plugin db")] == [
        "plugin db: args.database: branch orders-db-pr-1 is a copy of orders"]


def test_validate_args_errors_are_identical_across_runtimes(harness, as_runtime, tmp_path):
    write_repo(harness, {"tier": "huge"})
    errors = {}
    for runtime in available():
        sources, started = as_runtime(runtime)
        out = harness.cli("render", *FLOW, "--out", tmp_path / "out", f"--plugin-source={PLUGIN}={sources[PLUGIN]}")
        assert out.returncode == 1, f"{runtime}: {out.stderr}"
        assert started == [runtime], f"{runtime}: the CLI render started {started}"
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


def invocation(operation: str, **changes) -> Invocation:
    return kardinal.conformance_invocation(operation, PLUGIN, **changes)


def runtime_for(kind: str):
    skip_without(kind)
    path = CONF / DIRS[kind]
    source = PluginSource(PLUGIN, path, "builtin" if kind == "builtin" else "flag")
    rt = make_runtime(source, load_manifest(path, PLUGIN))
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
    objects = [kardinal.flow_service("api", 80), {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "plain", "annotations": {"keep": "me"}}}]  # fmt: skip
    out["hook"] = rt.lifecycle_hook(invocation("LifecycleHook", dependents=[], workloads=[], services=[],
                                               objects=objects), 30)  # fmt: skip
    out["delete"] = rt.delete_flow(invocation("DeleteFlow", dependents=[], workloads=[], services=[],
                                              state=out["create"].config_map), 30)  # fmt: skip
    return out


def test_every_runtime_gives_identical_host_data(monkeypatch):
    monkeypatch.setenv("PATH", PATH)
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
# The exec SDK in a real process


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
    reader = ReplyReader(inv, f"CreateFlow of {PLUGIN}", proc.stderr.decode())
    outcome = outcome_from_reply(inv, json.loads(proc.stdout), reader)  # the reply is clean JSON
    assert outcome.config_map == {"uuid": "db-pr-1"}
