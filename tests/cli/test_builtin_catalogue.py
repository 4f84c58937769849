"""Every built-in of `plugins/` is complete the same way: a manifest whose argsSchema documents each arg
(description and examples) and refuses unknown ones, a README with the sections a user looks for, at least
three golden cases (typical, variant, bad args) that pass under `devlane plugins test`, and a row in
`devlane plugins list --builtin`. Per-plugin behaviour is tested beside each plugin's own tests."""

from __future__ import annotations

import json

import pytest
from support import BUILTINS, ROOT, yamlc

README_SECTIONS = ("## Args", "## What it emits", "## How the app is wired", "## Teardown", "## What the cluster needs")


def manifest(plugin: str) -> dict:
    return yamlc.safe_load((ROOT / "plugins" / plugin / "plugin.yaml").read_text())["spec"]


@pytest.mark.parametrize("plugin", BUILTINS)
def test_manifest_documents_every_arg(plugin):
    spec = manifest(plugin)
    assert spec["version"] and spec["sideEffects"] in ("None", "External") and "CreateFlow" in spec["capabilities"]
    assert isinstance(spec["emits"], list) and spec["runtime"] == {"type": "kardinal-python"}
    schema = spec["argsSchema"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    for name, prop in schema["properties"].items():
        assert prop.get("description") and prop.get("examples"), f"{plugin}: args.{name}"


@pytest.mark.parametrize("plugin", BUILTINS)
def test_readme_has_the_sections_users_look_for(plugin):
    text = (ROOT / "plugins" / plugin / "README.md").read_text()
    assert text.startswith(f"# {plugin} (built-in)")
    missing = [s for s in README_SECTIONS if f"\n{s}" not in text]
    assert not missing, f"{plugin}/README.md lacks {missing}"


@pytest.mark.parametrize("plugin", BUILTINS)
def test_golden_cases_pass(harness, plugin):
    cases = sorted(p for p in (ROOT / "plugins" / plugin / "testdata").iterdir() if p.is_dir())
    errors = [c.name for c in cases if (c / "error.txt").is_file()]
    outputs = [c.name for c in cases if (c / "expected.yaml").is_file()]
    assert len(cases) >= 3 and errors and len(outputs) >= 2, (errors, outputs)
    for case in errors:  # the exact error, one line, not a fragment
        text = (ROOT / "plugins" / plugin / "testdata" / case / "error.txt").read_text()
        assert text.count("\n") == 1 and len(text) > 30, (case, text)
    result = harness.cli("plugins", "test", ROOT / "plugins" / plugin)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == f"{len(cases)} passed, 0 failed ({plugin}, runtime kardinal-python)"


def test_plugins_list_builtin_shows_every_builtin(harness):
    listed = json.loads(harness.cli("plugins", "list", "--builtin", "-o", "json").stdout)["plugins"]
    data = {e["name"]: e for e in listed}
    assert tuple(sorted(data)) == BUILTINS
    for name, entry in data.items():
        spec = manifest(name)
        assert (entry["version"], entry["sideEffects"], entry["capabilities"]) == \
            (spec["version"], spec["sideEffects"], spec["capabilities"])
        assert entry["path"] == f"plugins/{name}" and entry["emits"] == spec["emits"]
