"""`devlane plan` lists the repository's pipeline steps and the implementation each one uses."""

from __future__ import annotations

import json

from test_plugin_behaviours import API, devlane, make_repo
from test_plugin_pipeline import step


def test_plan_lists_pipeline_steps_in_order(tmp_path):
    steps = [step("lane-env", "./worker", "per-flow"), step("stamp", "./krm", "post-render", behavior="bypass")]
    make_repo(tmp_path, config={"pipeline": steps})
    text = devlane(tmp_path, "plan", *API)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    at = lines.index("pipeline steps (.devlane.yaml), in order:")
    assert lines[at + 1].split() == ["per-flow", "lane-env:", "./worker", "(kardinal-python,", "enforce)"]
    assert lines[at + 2].split() == ["post-render", "stamp:", "./krm", "(exec,", "bypass)"]
    as_json = json.loads(devlane(tmp_path, "plan", *API, "-o", "json").stdout)
    assert [(s["name"], s["stage"], s["choice"]["runtime"]) for s in as_json["pipeline"]] == [
        ("lane-env", "per-flow", "kardinal-python"), ("stamp", "post-render", "exec")]
