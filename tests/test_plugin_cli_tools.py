"""`devlane plugins list | describe | new | test`: inspection of the plugins a repository uses,
scaffolding of new plugins for every runtime, and golden-case tests with diffs."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import jsonschema
import pytest
import yaml
from conftest import EXAMPLE, ROOT, run_cli

from renderer import cli_author, cli_inspect
from renderer.manifest import load_manifest

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, labels: {app: app}}
spec:
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers: [{name: app, image: example.com/app:1}]
---
apiVersion: v1
kind: Service
metadata:
  name: app
  annotations:
    kardinal.dev.service/plugins: "__PLUGINS__"
spec:
  selector: {app: app}
  ports: [{name: http, port: 80}]
"""

DEFINITIONS = """\
apiVersion: v1
kind: Service
metadata:
  name: plugin-defs
  annotations:
    kardinal.dev.service/plugin-definition: |
__ITEMS__
"""

CONFIG = 'apiVersion: devlane.dev/v1alpha1\nkind: Config\nexclude:\n  - "plugins/**"\n'


def _write_repo(root: Path, plugins: str, items: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.yaml").write_text(APP.replace("__PLUGINS__", plugins))
    indented = "".join(f"      {line}\n" for line in items.strip("\n").splitlines())
    (root / "defs.yaml").write_text(DEFINITIONS.replace("__ITEMS__\n", indented))
    (root / ".devlane.yaml").write_text(CONFIG)
    return root


def _ok(result) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


# --------------------------------------------------------------------------------------------------
# list / describe on the bookshop example


def test_list_bookshop_text_is_an_aligned_table():
    out = _ok(run_cli("plugins", "list", str(EXAMPLE)))
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["PLUGIN", "USED", "BY", "SOURCE"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {"./plugins/seed-postgres", "./plugins/stripe-test-mode"}
    for row in rows.values():
        assert "kardinal-python" in row and "CreateFlow" in row and " ok " in row
    assert "repo:plugins/stripe-test-mode" in rows["./plugins/stripe-test-mode"]
    starts = {line.index("RUNTIME") if i == 0 else line.index("kardinal-python") for i, line in enumerate(lines)}
    assert len(starts) == 1  # the RUNTIME column lines up


def test_list_bookshop_json_is_stable_and_complete():
    out = _ok(run_cli("plugins", "list", str(EXAMPLE), "-o", "json"))
    assert _ok(run_cli("plugins", "list", str(EXAMPLE), "-o", "json")) == out
    data = json.loads(out)
    assert [p["name"] for p in data] == ["./plugins/seed-postgres", "./plugins/stripe-test-mode"]
    by_name = {p["name"]: p for p in data}
    for p in data:
        assert p["runtime"] == "kardinal-python"
        assert "CreateFlow" in p["capabilities"] and p["capabilities"] == sorted(p["capabilities"])
        assert p["sideEffects"] == "None"
        assert p["source"]["origin"] == "repo" and p["source"]["commit"] is None
        assert p["available"] is True and p["error"] is None
        assert p["manifest"] == "synthesized"
        assert p["timeoutSeconds"] == 60 and p["timeoutFrom"] == "default"
    assert by_name["./plugins/seed-postgres"]["instances"] == ["seed-orders-db"]
    assert by_name["./plugins/stripe-test-mode"]["source"]["path"] == "plugins/stripe-test-mode"


def test_describe_bookshop_by_instance_masks_secret_args_and_shows_the_sandbox():
    out = _ok(run_cli("plugins", "describe", "stripe-test-mode", str(EXAMPLE)))
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
    if importlib.util.find_spec("renderer.sandbox") is None:
        assert "network isolation:  unknown" in sandbox


def test_describe_bookshop_json_by_plugin_name():
    d = json.loads(_ok(run_cli("plugins", "describe", "./plugins/seed-postgres", str(EXAMPLE), "-o", "json")))
    assert d["name"] == "./plugins/seed-postgres" and d["runtime"] == "kardinal-python"
    assert d["digest"].startswith("sha256:") and d["argsSchema"] is None and d["lifecycleKinds"] == []
    [use] = d["uses"]
    assert use["instance"] == "seed-orders-db" and use["role"] == "plugin" and use["type"] == "stateful"
    assert use["args"]["database"] == "orders" and "CREATE TABLE" in use["args"]["seed_sql"]
    assert d["sandbox"]["applies"] is True and set(d["sandbox"]["network"]) == {"enforced", "method", "reason"}
    assert "DEVLANE_*" in d["sandbox"]["env"]


def test_describe_unknown_lists_known_names():
    result = run_cli("plugins", "describe", "no-such-plugin", str(EXAMPLE))
    assert result.returncode == 1
    assert "no-such-plugin" in result.stderr
    assert "./plugins/seed-postgres" in result.stderr and "stripe-test-mode" in result.stderr
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------------------------------
# list / describe on a repository with plugin.yaml plugins (exec), an override and a missing plugin


@pytest.fixture
def exec_repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    cli_author.scaffold("flags", "exec", root / "plugins")
    cli_author.scaffold("notify", "kardinal-python", root / "plugins")
    return _write_repo(root, "flags-app,notify-app,gone", """
- name: ./plugins/flags
  type: stateful
  servicename: flags-app
  args: {mode: preview}
- name: ./plugins/notify
  type: external
  servicename: notify-app
  sideEffects: External
  args: {api_token: s3cr3t, channel: dev}
- name: ./plugins/missing
  type: external
  servicename: gone
""")


def test_list_repo_with_exec_plugin(exec_repo):
    with (exec_repo / ".devlane.yaml").open("a") as f:
        f.write("pipeline:\n  - {name: stamp, plugin: ./plugins/flags, stage: per-flow, args: {mode: ci}}\n")
    data = {p["name"]: p for p in json.loads(_ok(run_cli("plugins", "list", str(exec_repo), "-o", "json")))}
    assert list(data) == sorted(data) == ["./plugins/flags", "./plugins/missing", "./plugins/notify"]
    flags = data["./plugins/flags"]
    assert flags["usedBy"] == ["flags-app", "stamp (pipeline per-flow)"]
    assert flags["runtime"] == "exec" and flags["version"] == "0.1.0" and flags["manifest"] == "plugin.yaml"
    assert flags["capabilities"] == ["CreateFlow", "DeleteFlow", "ValidateArgs"]
    assert flags["timeoutSeconds"] == 30 and flags["timeoutFrom"] == "plugin.yaml"
    assert flags["sideEffects"] == "None" and flags["source"] == {"origin": "repo", "path": "plugins/flags",
                                                                   "commit": None}  # fmt: skip
    notify = data["./plugins/notify"]
    assert notify["sideEffects"] == "External" and notify["sideEffectsSetBy"] == "plugin definition"
    missing = data["./plugins/missing"]
    assert missing["available"] is False and "not found" in missing["error"] and missing["runtime"] is None

    text = _ok(run_cli("plugins", "list", str(exec_repo)))
    assert "External (set by plugin definition)" in text
    assert "unavailable" in text and "./plugins/missing: plugin './plugins/missing' not found" in text


def test_describe_exec_plugin(exec_repo):
    out = _ok(run_cli("plugins", "describe", "flags-app", str(exec_repo)))
    assert out.startswith("plugin ./plugins/flags\n")
    assert "runtime:          exec (command: ./fn.py)" in out
    assert "manifest:         plugin.yaml" in out and "version:          0.1.0" in out
    assert "args schema:\n    type: object" in out and "maxLength: 63" in out
    assert "flags-app: plugin definition in defs.yaml; behavior enforce, type stateful" in out
    assert "mode: preview" in out

    d = json.loads(_ok(run_cli("plugins", "describe", "notify-app", str(exec_repo), "-o", "json")))
    assert d["sideEffects"] == "External" and d["uses"][0]["args"] == {"api_token": "***", "channel": "dev"}
    gone = _ok(run_cli("plugins", "describe", "gone", str(exec_repo)))
    assert "status:           unavailable" in gone and "the plugin is not available" in gone


# --------------------------------------------------------------------------------------------------
# new + test


def _grpc_ready() -> str | None:
    if importlib.util.find_spec("grpc") is None:
        return "grpcio is not installed"
    if importlib.util.find_spec("renderer.sdk.grpc_server") is None:
        return "renderer.sdk.grpc_server does not exist yet"
    return None


@pytest.mark.parametrize("runtime", ["kardinal-python", "exec"])
def test_new_then_test_passes(tmp_path, runtime):
    out = _ok(run_cli("plugins", "new", "demo", "--runtime", runtime, "--dir", str(tmp_path)))
    assert f"created {runtime} plugin demo" in out
    dest = tmp_path / "demo"
    out = _ok(run_cli("plugins", "test", str(dest)))
    assert out.splitlines() == ["ok basic", "ok invalid-args", f"2 passed, 0 failed (demo, runtime {runtime})"]


def test_new_grpc_then_test_passes(tmp_path, monkeypatch, capsys):
    reason = _grpc_ready()
    if reason:
        pytest.skip(reason)
    dest = cli_author.scaffold("demo-grpc", "grpc", tmp_path)
    # Plugin processes get a scrubbed environment; the server imports renderer.sdk, which an installed
    # devlane provides. This checkout is only on PYTHONPATH, so hand that to the plugin process.
    from renderer import plugins

    scrubbed = plugins._plugin_env
    monkeypatch.setattr(plugins, "_plugin_env", lambda home: {**scrubbed(home), "PYTHONPATH": str(ROOT)})
    assert cli_author.run_cases(dest) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == ["ok basic", "ok invalid-args", "2 passed, 0 failed (demo-grpc, runtime grpc)"]


@pytest.mark.parametrize("runtime", ["kardinal-python", "exec", "grpc"])
def test_scaffold_is_valid(tmp_path, runtime):
    dest = cli_author.scaffold("my-plugin.acme.dev", runtime, tmp_path)
    raw = yaml.safe_load((dest / "plugin.yaml").read_text())
    schema = json.loads((ROOT / "schemas" / "plugin.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(raw)
    manifest = load_manifest(dest, "my-plugin.acme.dev")
    assert manifest.runtime == runtime and manifest.args_schema["properties"]["mode"]["default"] == "dev"
    assert set(manifest.capabilities) == {"CreateFlow", "DeleteFlow", "ValidateArgs"}
    assert (dest / "README.md").is_file()
    assert sorted(p.name for p in (dest / "testdata").iterdir()) == ["basic", "invalid-args"]
    impl = {"kardinal-python": "main.py", "exec": "fn.py", "grpc": "server.py"}[runtime]
    compile((dest / impl).read_text(), impl, "exec")
    if runtime != "kardinal-python":
        assert (dest / impl).read_text().startswith("#!/usr/bin/env python3\n")
        assert os.stat(dest / impl).st_mode & stat.S_IXUSR
    if runtime == "grpc":
        assert "from renderer.sdk.grpc_server import serve" in (dest / impl).read_text()
    if runtime == "exec":
        assert "import yaml" not in (dest / impl).read_text()  # stdlib only


def test_mutated_expected_fails_with_a_diff_and_update_fixes_it(tmp_path):
    _ok(run_cli("plugins", "new", "demo", "--runtime", "exec", "--dir", str(tmp_path)))
    dest = tmp_path / "demo"
    expected = dest / "testdata" / "basic" / "expected.yaml"
    original = expected.read_text()
    expected.write_text(original.replace("value: preview", "value: staging"))

    result = run_cli("plugins", "test", str(dest))
    assert result.returncode == 1
    assert "FAIL basic" in result.stdout and "ok invalid-args" in result.stdout
    assert "--- basic/expected.yaml" in result.stdout and "+++ basic/actual" in result.stdout
    assert "-          value: staging" in result.stdout and "+          value: preview" in result.stdout
    assert "1 passed, 1 failed" in result.stdout

    out = _ok(run_cli("plugins", "test", str(dest), "--update"))
    assert "updated basic" in out and "1 updated" in out
    assert yaml.safe_load_all(expected.read_text()) is not None
    assert list(yaml.safe_load_all(expected.read_text())) == list(yaml.safe_load_all(original))
    assert _ok(run_cli("plugins", "test", str(dest))).splitlines()[-1].startswith("2 passed, 0 failed")


def test_wrong_expected_error_fails(tmp_path):
    dest = cli_author.scaffold("demo", "kardinal-python", tmp_path)
    (dest / "testdata" / "invalid-args" / "error.txt").write_text("some other error\n")
    result = run_cli("plugins", "test", str(dest), "--case", "invalid-args")
    assert result.returncode == 1
    assert "FAIL invalid-args" in result.stdout and "expected an error containing 'some other error'" in result.stdout
    assert "args.mode: must not contain whitespace" in result.stdout


def test_new_refuses_an_existing_directory(tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "keep.txt").write_text("mine")
    result = run_cli("plugins", "new", "demo", "--dir", str(tmp_path))
    assert result.returncode == 1 and "already exists" in result.stderr
    assert [p.name for p in (tmp_path / "demo").iterdir()] == ["keep.txt"]


def test_new_refuses_a_bad_name(tmp_path):
    result = run_cli("plugins", "new", "Not_A_Name", "--dir", str(tmp_path))
    assert result.returncode == 2 and "DNS-style" in result.stderr
    assert not any(tmp_path.iterdir())


def test_test_needs_a_plugin_directory_with_cases(tmp_path):
    result = run_cli("plugins", "test", str(tmp_path))
    assert result.returncode == 1 and "not a plugin directory" in result.stderr
    (tmp_path / "main.py").write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n    return {}\n")
    result = run_cli("plugins", "test", str(tmp_path))
    assert result.returncode == 1 and "no golden cases" in result.stderr


def test_scaffolded_kardinal_plugin_renders_in_a_repo(tmp_path):
    plugin = cli_author.scaffold("demo", "kardinal-python", tmp_path / "src")
    repo = _write_repo(tmp_path / "repo", "demo-app", """
- name: demo
  type: stateful
  servicename: demo-app
  args: {mode: preview}
""")
    result = run_cli("render", str(repo), "--flow", "f1", "--service", "app=example.com/app:2",
                     "--plugin-source", f"demo={plugin}", "--stdout")  # fmt: skip
    out = _ok(result)
    docs = [d for d in yaml.safe_load_all(out) if d]
    [dev] = [d for d in docs if d["kind"] == "Deployment"]
    container = dev["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "example.com/app:2"
    assert {"name": "DEMO_MODE", "value": "preview"} in container["env"]
    assert any(d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("devlane-state-demo-app") for d in docs)

    [listed] = json.loads(_ok(run_cli("plugins", "list", str(repo), "--plugin-source", f"demo={plugin}", "-o", "json")))
    assert listed["source"] == {"origin": "flag", "path": str(plugin.resolve()), "commit": None}
    assert listed["instances"] == ["demo-app"] and listed["runtime"] == "kardinal-python"


@pytest.mark.parametrize(("probe", "shown"), [
    (SimpleNamespace(enforced=True, method="unshare-net", reason="a private network namespace"),
     "enforced (unshare-net): a private network namespace"),
    (SimpleNamespace(enforced=False, method="", reason="unprivileged user namespaces are disabled"),
     "not enforced: unprivileged user namespaces are disabled"),
])  # fmt: skip
def test_describe_reports_the_sandbox_probe(monkeypatch, probe, shown):
    fake = ModuleType("renderer.sandbox")
    fake.network_isolation = lambda: probe  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "renderer.sandbox", fake)
    assert cli_inspect._network_text(cli_inspect.network_status()) == shown
