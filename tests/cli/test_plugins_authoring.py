"""`devlane plugins new | test` without running a plugin: the scaffold of each runtime is a valid plugin
(schema-valid plugin.yaml, compilable implementation, golden cases), `new` refuses existing directories
and bad names, `test` refuses a directory without a plugin or without cases. Scaffolds that run their
golden cases are in tests/e2e/test_plugin_cli_tools.py."""

from __future__ import annotations

import json
import os
import stat

import jsonschema
import pytest
from support import ROOT, yamlc

from renderer.authoring.scaffold import scaffold
from renderer.host.manifest import load_manifest


@pytest.mark.parametrize("runtime", ["kardinal-python", "exec", "grpc"])
def test_scaffold_is_valid(tmp_path, runtime):
    dest = scaffold("my-plugin.acme.dev", runtime, tmp_path)
    raw = yamlc.safe_load((dest / "plugin.yaml").read_text())
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


def test_new_refuses_an_existing_directory(harness, tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "keep.txt").write_text("mine")
    result = harness.cli("plugins", "new", "demo", "--dir", tmp_path)
    assert result.returncode == 1 and "already exists" in result.stderr
    assert [p.name for p in (tmp_path / "demo").iterdir()] == ["keep.txt"]


def test_new_refuses_a_bad_name(harness, tmp_path):
    where = tmp_path / "plugins"
    where.mkdir()
    result = harness.cli("plugins", "new", "Not_A_Name", "--dir", where)
    assert result.returncode == 2 and "DNS-style" in result.stderr
    assert not any(where.iterdir())


def test_test_needs_a_plugin_directory_with_cases(harness, tmp_path):
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    result = harness.cli("plugins", "test", plugin)
    assert result.returncode == 1 and "not a plugin directory" in result.stderr
    (plugin / "main.py").write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n    return {}\n")
    result = harness.cli("plugins", "test", plugin)
    assert result.returncode == 1 and "no golden cases" in result.stderr
