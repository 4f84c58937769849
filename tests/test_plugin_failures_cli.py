"""Each plugin failure mode, seen through `devlane render` as a user would: exit 1, one message
naming the plugin instance and the cause, no traceback, and nothing written."""

from __future__ import annotations

import json
import os
import textwrap
import time

import pytest
from conftest import FIXTURES, app_yaml, kubectl_kustomize, run_cli

PLUGINS = FIXTURES / "plugins"


def make_repo(root, plugin_name: str, args: dict) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.yaml").write_text(WORKER + app_yaml("api", "fixture") + textwrap.dedent(f"""
        apiVersion: v1
        kind: Service
        metadata:
          name: fixture-def
          annotations:
            kardinal.dev.service/plugin-definition: |
              - name: {plugin_name}
                type: external
                servicename: fixture
                args: {json.dumps(args)}
    """))


WORKER = app_yaml("worker", "fixture")
TWO = ["--service", "api=api:2", "--service", "worker=worker:2"]

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
def test_plugin_failure_fails_the_render_cleanly(case, tmp_path):
    fixture = case.split("-")[0]
    args, expected = CASES[case]
    make_repo(tmp_path / "repo", "./p", args)
    out = run_cli("render", str(tmp_path / "repo"), "--flow", "pr-1", *TWO,
                  f"--plugin-source=./p={PLUGINS / fixture}", "--out", str(tmp_path / "out"))  # fmt: skip
    assert out.returncode == 1, out.stderr
    for text in expected:
        assert text in out.stderr, out.stderr
    assert "Traceback (most recent call last)" not in out.stderr.split("hint:")[0] or fixture == "raises"
    assert not (tmp_path / "out" / "flows" / "pr-1").exists()


def test_hanging_plugin_is_killed_with_its_children(tmp_path):
    pid_file = tmp_path / "child.pid"
    make_repo(tmp_path / "repo", "./p", {"pid_file": str(pid_file)})
    start = time.monotonic()
    out = run_cli("render", str(tmp_path / "repo"), "--flow", "pr-1", "--service", "api=api:2",
                  f"--plugin-source=./p={PLUGINS / 'hang'}", "--plugin-timeout", "1.5")  # fmt: skip
    assert out.returncode == 1
    assert time.monotonic() - start < 30
    assert "plugin fixture" in out.stderr and "timed out after 1.5" in out.stderr
    assert "--plugin-timeout" in out.stderr
    child = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the plugin's child process {child} survived the timeout")


def test_stdout_noise_is_not_a_failure(tmp_path):
    make_repo(tmp_path / "repo", "./p", {"label": "noisy"})
    out = run_cli("render", str(tmp_path / "repo"), "--flow", "pr-1", "--service", "api=api:2",
                  f"--plugin-source=./p={PLUGINS / 'noisy'}", "--stdout")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "noise" not in out.stdout  # the protocol stream carries only objects
    assert out.stdout.startswith("---\napiVersion:")


def test_builtin_plugin_by_plain_name(tmp_path):
    make_repo(tmp_path / "repo", "dummy", {})
    out = run_cli("render", str(tmp_path / "repo"), "--flow", "pr-1", "--service", "api=api:2",
                  "--out", str(tmp_path / "out"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    flow = tmp_path / "out" / "flows" / "pr-1"
    meta = json.loads((flow / "flow.metadata").read_text())
    assert [(p["name"], p["source"]) for p in meta["plugins"]] == [("dummy", "builtin")]
    kubectl_kustomize(flow)


def test_missing_plugin_names_where_it_looked(tmp_path):
    make_repo(tmp_path / "repo", "github.com/acme/nowhere-plugin", {})
    out = run_cli("render", str(tmp_path / "repo"), "--flow", "pr-1", "--service", "api=api:2")
    assert out.returncode == 1
    assert "app.yaml (document 5)" in out.stderr and "plugin fixture" in out.stderr
    assert "--plugin-source github.com/acme/nowhere-plugin=PATH" in out.stderr
