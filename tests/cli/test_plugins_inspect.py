"""`devlane plugins list` (and `describe` of an unknown name), in-process: the plugins a repository uses,
where they come from, their runtime, capabilities and side effects, on the bookshop example and on a
repository with a scaffolded exec plugin, a Kardinal plugin and a missing one. Nothing runs a plugin
or probes the sandbox here; `describe` of real plugins is in tests/e2e/test_plugin_cli_tools.py."""

from __future__ import annotations

import json

import pytest
from support import EXAMPLE
from support.repos import inspection_repo


def _ok(result) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_list_bookshop_text_is_an_aligned_table(harness):
    out = _ok(harness.cli("plugins", "list", EXAMPLE))
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["PLUGIN", "USED", "BY", "SOURCE"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {"postgres-seed", "./plugins/stripe-test-mode"}
    for row in rows.values():
        assert "kardinal-python" in row and "CreateFlow" in row and " ok " in row
    assert "repo:plugins/stripe-test-mode" in rows["./plugins/stripe-test-mode"]
    assert "builtin:plugins/postgres-seed" in rows["postgres-seed"] and " 0.1.0 " in rows["postgres-seed"]
    starts = {line.index("RUNTIME") if i == 0 else line.index("kardinal-python") for i, line in enumerate(lines)}
    assert len(starts) == 1  # the RUNTIME column lines up


def test_list_bookshop_json_is_stable_and_complete(harness):
    out = _ok(harness.cli("plugins", "list", EXAMPLE, "-o", "json"))
    assert _ok(harness.cli("plugins", "list", EXAMPLE, "-o", "json")) == out
    data = json.loads(out)["plugins"]
    assert [p["name"] for p in data] == ["./plugins/stripe-test-mode", "postgres-seed"]
    for p in data:
        assert p["runtime"] == "kardinal-python"
        assert "CreateFlow" in p["capabilities"] and p["capabilities"] == sorted(p["capabilities"])
        assert p["sideEffects"] == "None" and p["source"]["commit"] is None
        assert p["available"] is True and p["error"] is None
    local, builtin = data
    assert (local["source"], local["manifest"], local["timeoutSeconds"], local["timeoutFrom"]) == \
        ({"origin": "repo", "path": "plugins/stripe-test-mode", "commit": None}, "synthesized", 60, "default")
    assert (builtin["source"], builtin["manifest"], builtin["timeoutSeconds"], builtin["timeoutFrom"]) == \
        ({"origin": "builtin", "path": "plugins/postgres-seed", "commit": None}, "plugin.yaml", 30, "plugin.yaml")
    assert (local["instances"], builtin["instances"]) == (["stripe-test-mode"], ["seed-orders-db"])


def test_describe_unknown_lists_known_names(harness):
    result = harness.cli("plugins", "describe", "no-such-plugin", EXAMPLE)
    assert result.returncode == 1
    assert "no-such-plugin" in result.stderr
    assert "postgres-seed" in result.stderr and "./plugins/stripe-test-mode" in result.stderr
    assert "Traceback" not in result.stderr


def test_describe_a_builtin_no_repository_uses(harness, tmp_path):
    """Before adopting one: any built-in by its short name, from a repository that does not use it and from a
    directory that holds no repository at all, with its args schema; the repository's own plugins still win."""
    empty = tmp_path / "nowhere"
    empty.mkdir()
    for where in (EXAMPLE, empty):
        data = json.loads(_ok(harness.cli("plugins", "describe", "mysql-seed", where, "-o", "json")))
        assert (data["name"], data["source"]["origin"], data["instances"]) == ("mysql-seed", "builtin", [])
        assert "seed_script" in data["argsSchema"]["properties"]
    text = _ok(harness.cli("plugins", "describe", "redis-sidecar", empty))
    assert "source:           builtin plugins/redis-sidecar" in text and "mode:" in text
    text = _ok(harness.cli("plugins", "describe", "rabbitmq-vhost", empty))
    assert "isolates:         rabbitmq" in text
    assert "receives:         rabbitmq.com/Queue, rabbitmq.com/Exchange" in text
    unknown = harness.cli("plugins", "describe", "no-such-plugin", empty)
    assert unknown.returncode == 1 and "devlane plugins list --builtin" in unknown.stderr


@pytest.fixture
def exec_repo(harness):
    return inspection_repo(harness)


def test_list_repo_with_exec_plugin(harness, exec_repo):
    harness.append(".devlane.yaml", "pipeline:\n  - {name: stamp, plugin: ./plugins/flags, stage: per-flow, "
                                    "args: {mode: ci}}\n")  # fmt: skip
    data = {p["name"]: p for p in json.loads(_ok(harness.cli("plugins", "list", exec_repo, "-o", "json")))["plugins"]}
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

    text = _ok(harness.cli("plugins", "list", exec_repo))
    assert "External (set by plugin definition)" in text
    assert "unavailable" in text and "./plugins/missing: plugin './plugins/missing' not found" in text
