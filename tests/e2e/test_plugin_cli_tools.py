"""`devlane plugins describe | new | test` with real processes: describe's sandbox facts (the network
isolation probe starts processes), scaffolded plugins of every runtime passing their golden cases
(plugin subprocesses, a gRPC server), a mutated expected.yaml failing with a diff and `--update`
fixing it, and a scaffolded Kardinal plugin rendering in a repository. The CLI runs in-process."""

from __future__ import annotations

import importlib.util
import json

import pytest
from support import EXAMPLE, yamlc
from support.repos import inspection_repo

from renderer.authoring.scaffold import scaffold
from renderer.host.confine import LAYERS
from renderer.views.inspect import network_status, network_text


def _ok(result) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


# --------------------------------------------------------------------------------------------------
# describe


def test_describe_bookshop_by_instance_masks_secret_args_and_shows_the_sandbox(harness):
    out = _ok(harness.cli("plugins", "describe", "stripe-test-mode", EXAMPLE))
    assert out.startswith("plugin ./plugins/stripe-test-mode\n")
    assert "runtime:          kardinal-python" in out
    assert "capabilities:     CreateFlow, DeleteFlow, ValidateArgs" in out
    assert "side effects:     None" in out
    assert "digest:           sha256:" in out
    assert "secret_name: ***" in out and "secret_key: ***" in out and ": stripe-test\n" not in out
    sandbox = out.split("  sandbox:\n")[1]
    for label in ("network isolation:", "environment:", "working directory:", "output cap:", "timeout:"):
        assert label in sandbox
    assert "PATH" in sandbox and "temporary directory" in sandbox
    assert f"network isolation:  {network_text(network_status())}\n" in sandbox  # what the probe found here
    for la in network_status()["layers"]:  # every layer, as the probe found it on this machine
        assert f"{'enforced' if la['enforced'] else 'MISSING':>8}  {la['name']}: {la['how']}\n" in sandbox
    assert "limits:             2048 MiB memory, 256 processes" in sandbox


def test_describe_bookshop_json_by_plugin_name(harness):
    d = json.loads(_ok(harness.cli("plugins", "describe", "./plugins/stripe-test-mode", EXAMPLE, "-o", "json")))
    assert d["name"] == "./plugins/stripe-test-mode" and d["runtime"] == "kardinal-python"
    assert d["digest"].startswith("sha256:") and d["argsSchema"] is None and d["lifecycleKinds"] == []
    [use] = d["uses"]
    assert use["instance"] == "stripe-test-mode" and use["role"] == "plugin" and use["type"] == "external"
    assert use["args"] == {"secret_name": "***", "secret_key": "***"}  # no argsSchema: masked by name
    assert d["sandbox"]["applies"] is True and set(d["sandbox"]["network"]) == {"enforced", "method", "reason",
                                                                                 "binary", "layers"}
    assert d["sandbox"]["pinned"] is False  # a directory of the repository: a pull request can change it
    assert d["sandbox"]["runsHere"] is (d["sandbox"]["refusal"] is None)
    binary = d["sandbox"]["network"]["binary"]
    assert binary is None or (binary["path"].endswith("bwrap") or d["sandbox"]["network"]["method"] != "bwrap")
    layers = d["sandbox"]["network"]["layers"]
    assert [la["name"] for la in layers] == list(LAYERS) and all(la["how"] for la in layers)
    assert d["sandbox"]["limits"] == {"memoryMiB": 2048, "processes": 256, "fileSizeMiB": 256, "cpuSeconds": 120}
    assert d["sandbox"]["requireSandbox"] is False
    assert "DEVLANE_*" in d["sandbox"]["env"]


@pytest.fixture
def exec_repo(harness):
    return inspection_repo(harness)


def test_describe_exec_plugin(harness, exec_repo):
    out = _ok(harness.cli("plugins", "describe", "flags-app", exec_repo))
    assert out.startswith("plugin ./plugins/flags\n")
    assert "runtime:          exec (command: ./fn.py)" in out
    assert "manifest:         plugin.yaml" in out and "version:          0.1.0" in out
    assert "args schema:\n    type: object" in out and "maxLength: 63" in out
    assert "flags-app: plugin definition in defs.yaml; behavior enforce, type stateful" in out
    assert "mode: preview" in out

    d = json.loads(_ok(harness.cli("plugins", "describe", "notify-app", exec_repo, "-o", "json")))
    assert d["sideEffects"] == "External" and d["uses"][0]["args"] == {"api_token": "***", "channel": "dev"}
    gone = _ok(harness.cli("plugins", "describe", "gone", exec_repo))
    assert "status:           unavailable" in gone and "the plugin is not available" in gone


# --------------------------------------------------------------------------------------------------
# new + test


def _grpc_ready() -> str | None:
    if importlib.util.find_spec("grpc") is None:
        return "grpcio is not installed"
    return None


@pytest.mark.parametrize("runtime", ["kardinal-python", "exec", "grpc"])
def test_new_then_test_passes(harness, tmp_path, runtime):
    if runtime == "grpc" and _grpc_ready():
        pytest.skip(_grpc_ready())
    name = "demo-grpc" if runtime == "grpc" else "demo"
    out = _ok(harness.cli("plugins", "new", name, "--runtime", runtime, "--dir", tmp_path))
    assert f"created {runtime} plugin {name}" in out
    dest = tmp_path / name
    out = _ok(harness.cli("plugins", "test", dest))
    assert out.splitlines() == ["ok basic", "ok invalid-args", f"2 passed, 0 failed ({name}, runtime {runtime})"]


def test_mutated_expected_fails_with_a_diff_and_update_fixes_it(harness, tmp_path):
    _ok(harness.cli("plugins", "new", "demo", "--runtime", "exec", "--dir", tmp_path))
    dest = tmp_path / "demo"
    expected = dest / "testdata" / "basic" / "expected.yaml"
    original = expected.read_text()
    expected.write_text(original.replace("value: preview", "value: staging"))

    result = harness.cli("plugins", "test", dest)
    assert result.returncode == 1
    assert "FAIL basic" in result.stdout and "ok invalid-args" in result.stdout
    assert "--- basic/expected.yaml" in result.stdout and "+++ basic/actual" in result.stdout
    assert "-          value: staging" in result.stdout and "+          value: preview" in result.stdout
    assert "1 passed, 1 failed" in result.stdout

    out = _ok(harness.cli("plugins", "test", dest, "--update"))
    assert "updated basic" in out and "1 updated" in out
    assert yamlc.safe_load_all(expected.read_text()) is not None
    assert list(yamlc.safe_load_all(expected.read_text())) == list(yamlc.safe_load_all(original))
    assert _ok(harness.cli("plugins", "test", dest)).splitlines()[-1].startswith("2 passed, 0 failed")


def test_wrong_expected_error_fails(harness, tmp_path):
    dest = scaffold("demo", "kardinal-python", tmp_path)
    (dest / "testdata" / "invalid-args" / "error.txt").write_text("some other error\n")
    result = harness.cli("plugins", "test", dest, "--case", "invalid-args")
    assert result.returncode == 1
    assert "FAIL invalid-args" in result.stdout and "expected an error containing 'some other error'" in result.stdout
    assert "args.mode: must not contain whitespace" in result.stdout


def test_scaffolded_kardinal_plugin_renders_in_a_repo(harness, tmp_path):
    plugin = scaffold("demo", "kardinal-python", tmp_path / "src")
    harness.app("app", "demo-app", containers=[{"name": "app", "image": "example.com/app:1"}])
    harness.plugin_definition({"name": "demo", "type": "stateful", "servicename": "demo-app",
                               "args": {"mode": "preview"}}, file="defs.yaml")  # fmt: skip
    harness.config({"exclude": ["plugins/**"]})
    out = _ok(harness.cli("render", "--flow", "f1", "--service", "app=example.com/app:2",
                          "--plugin-source", f"demo={plugin}", "--stdout"))  # fmt: skip
    docs = [d for d in yamlc.safe_load_all(out) if d]
    [dev] = [d for d in docs if d["kind"] == "Deployment"]
    container = dev["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "example.com/app:2"
    assert {"name": "DEMO_MODE", "value": "preview"} in container["env"]
    assert any(d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("devlane-state-demo-app") for d in docs)

    listed = _ok(harness.cli("plugins", "list", harness.root, "--plugin-source", f"demo={plugin}", "-o", "json"))
    [entry] = json.loads(listed)["plugins"]
    assert entry["source"] == {"origin": "flag", "path": str(plugin.resolve()), "commit": None}
    assert entry["instances"] == ["demo-app"] and entry["runtime"] == "kardinal-python"
