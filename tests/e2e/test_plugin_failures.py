"""Each plugin failure mode, seen through `devlane render` (in-process CLI) with real plugin subprocesses from
tests/fixtures/plugins: exit 1, one message naming the plugin instance and the cause, no traceback, and
nothing written; a hanging plugin is killed with its children; stdout noise of a plugin never reaches
devlane's stdout; a built-in plugin by its plain name renders a flow kubectl accepts."""

from __future__ import annotations

import json
import time

import pytest
from support import FIXTURES, kubectl_kustomize
from support.platform import fixture_apps
from support.processes import sleep_token, wait_for, with_token

PLUGINS = FIXTURES / "plugins"
TWO = ["--service", "api=api:2", "--service", "worker=worker:2"]
API = ["--service", "api=api:2"]

CASES = {
    "raises": ({}, ["plugin fixture", "raised", "seed"]),
    "exits": ({}, ["plugin fixture", "exit"]),
    "wrong_count": ({}, ["plugin fixture", "returned 1 pod spec for 2 dependents (api, worker)"]),
    "malformed-not-dict": ({"what": "not_dict"}, ["plugin fixture", "list"]),
    "malformed-set": ({"what": "set"}, ["plugin fixture", "JSON"]),
    "malformed-no-config-map": ({"what": "no_config_map"}, ["plugin fixture", "config_map"]),
    "malformed-no-containers": ({"what": "no_containers"}, ["plugin fixture", "containers"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plugin_failure_fails_the_render_cleanly(harness, tmp_path, case):
    fixture = case.split("-")[0]
    args, expected = CASES[case]
    fixture_apps(harness, "./p", args)
    out = harness.cli("render", "--flow", "pr-1", *TWO, f"--plugin-source=./p={PLUGINS / fixture}",
                      "--out", str(tmp_path / "out"))  # fmt: skip
    assert out.returncode == 1, out.stderr
    for text in expected:
        assert text in out.stderr, out.stderr
    assert "Traceback (most recent call last)" not in out.stderr.split("hint:")[0] or fixture == "raises"
    assert not (tmp_path / "out" / "flows" / "pr-1").exists()


def test_hanging_plugin_is_killed_with_its_children(harness, tmp_path):
    token = sleep_token()
    fixture_apps(harness, "./p", {"token": token})
    start = time.monotonic()
    out = harness.cli("render", "--flow", "pr-1", *API, f"--plugin-source=./p={PLUGINS / 'hang'}",
                      "--plugin-timeout", "1.5")  # fmt: skip
    assert out.returncode == 1
    assert time.monotonic() - start < 30
    assert "plugin fixture" in out.stderr and "timed out after 1.5" in out.stderr
    assert "--plugin-timeout" in out.stderr
    assert wait_for(lambda: not with_token(token), 5), f"the plugin's child sleep {token} survived the timeout"


def test_stdout_noise_is_not_a_failure(harness):
    fixture_apps(harness, "./p", {"label": "noisy"})
    out = harness.cli("render", "--flow", "pr-1", *API, f"--plugin-source=./p={PLUGINS / 'noisy'}", "--stdout")
    assert out.returncode == 0, out.stderr
    assert "noise" not in out.stdout  # the protocol stream carries only objects
    assert out.stdout.startswith("---\napiVersion:")


def test_builtin_plugin_by_plain_name(harness, tmp_path):
    fixture_apps(harness, "dummy", {})
    out = harness.cli("render", "--flow", "pr-1", *API, "--out", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    flow = tmp_path / "out" / "flows" / "pr-1"
    meta = json.loads((flow / "flow.metadata").read_text())
    assert [(p["name"], p["source"]) for p in meta["plugins"]] == [("dummy", "builtin")]
    kubectl_kustomize(flow)
