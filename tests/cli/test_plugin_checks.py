"""What devlane decides about plugins before any plugin runs, through the in-process CLI: `devlane plan` lists
the `.devlane.yaml` pipeline steps with the implementation each uses, and `devlane render` stops, naming the
plugin instance, on args that fail the plugin's argsSchema, an unknown extension, no available
implementation, a Kardinal plugin as a pre-render step, or a plugin that cannot be found.

The plugins (tests/fixtures/platform) are only read (plugin.yaml, runtime): none is started. A plugin that
did run would log its calls to $DEVLANE_TEST_LOG.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import Harness
from support.platform import API, FLOW, Platform, pdef


@pytest.fixture
def platform(harness) -> Platform:
    return Platform(harness)


def test_plan_lists_pipeline_steps_in_order(platform):
    steps = [{"name": "lane-env", "plugin": "./worker", "stage": "per-flow"},
             {"name": "stamp", "plugin": "./krm", "stage": "post-render", "behavior": "bypass"}]  # fmt: skip
    platform.repo(config={"pipeline": steps}, entry=False)
    text = platform.devlane("plan", *API, log=platform.log)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    at = lines.index("pipeline steps (.devlane.yaml), in order:")
    assert lines[at + 1].split() == ["per-flow", "lane-env:", "./worker", "(kardinal-python,", "enforce)"]
    assert lines[at + 2].split() == ["post-render", "stamp:", "./krm", "(exec,", "bypass)"]
    as_json = platform.devlane("plan", *API, "-o", "json", log=platform.log)
    assert as_json.returncode == 0, as_json.stderr
    assert [(s["name"], s["stage"], s["choice"]["runtime"]) for s in json.loads(as_json.stdout)["pipeline"]] == [
        ("lane-env", "per-flow", "kardinal-python"), ("stamp", "post-render", "exec")]  # fmt: skip
    assert not platform.log.exists()


@pytest.mark.parametrize(("args", "expected"), [
    ({}, "args.db: is required"),
    ({"db": "Not OK"}, "args.db: 'Not OK' does not match"),
    ({"db": "orders", "mode": "turbo"}, "args.mode: 'turbo' is not one of"),
])  # fmt: skip
def test_args_schema_is_checked_before_any_call(platform, args, expected):
    platform.repo(pdef("db", "./argcheck", args=args), api="db", entry=False)
    out = platform.refused()  # not even default_args ran
    assert expected in out.stderr and "plugin db" in out.stderr


def test_unknown_extension_fails_naming_it(platform):
    missing = [{"kind": "ConfigMap", "name": "no-such-data"}]
    platform.repo(pdef("seed", "./ext", extensions=missing), api="seed", entry=False)
    out = platform.refused()
    assert "ConfigMap/no-such-data" in out.stderr and "plugin seed" in out.stderr


def test_no_available_implementation_lists_every_reason(platform):
    fallbacks = ["github.com/acme/missing-plugin"]
    platform.repo(pdef("db", "./plugins/not-here", implementations=fallbacks), api="db", entry=False)
    out = platform.refused()
    assert "no implementation of db is available" in out.stderr
    assert "./plugins/not-here: not available:" in out.stderr
    assert "github.com/acme/missing-plugin: not available:" in out.stderr and "devlane.lock" in out.stderr


def test_kardinal_python_plugin_cannot_be_a_pre_render_step(platform):
    platform.repo(config={"pipeline": [{"name": "early", "plugin": "./worker", "stage": "pre-render"}]}, entry=False)
    out = platform.refused()
    assert "early" in out.stderr and "pre-render steps transform whole object lists" in out.stderr
    assert "use an exec or grpc plugin" in out.stderr and "lifecycle_hook" in out.stderr


def test_missing_plugin_names_where_it_looked(harness: Harness, tmp_path: Path):
    harness.app("worker", "fixture")
    harness.app("api", "fixture")
    harness.plugin_definition({"name": "github.com/acme/nowhere-plugin", "type": "external", "servicename": "fixture",
                               "args": {}}, name="fixture-def")  # fmt: skip
    out = harness.cli("render", "--flow", FLOW, *API, "--out", str(tmp_path / "out"))
    assert out.returncode == 1
    assert "app.yaml (document 5)" in out.stderr and "plugin fixture" in out.stderr
    assert "--plugin-source github.com/acme/nowhere-plugin=PATH" in out.stderr
    assert not (tmp_path / "out").exists()
