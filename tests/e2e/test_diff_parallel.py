"""`devlane diff` renders the base beside the head, in a forked process, where it has a second core and no other
thread (`views/diff_base`): the report is byte for byte the one of the base rendered in turn (one core), for a
change, a plugin refusing one, a directory the base does not have and a base that does not render; and a child that
fails, or sends what cannot be read, is as if it never ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import EXAMPLE, FIXTURES, ROOT, app_yaml

from renderer.views import diff_base

from .test_diff import FLOW, _edit
from .test_validate_change import FLOW as GUARDED
from .test_validate_change import REFUSAL, write_app

ONE_CORE = "import os, runpy, sys; os.sched_setaffinity(0, {0}); sys.argv[0] = 'devlane'; " \
           "runpy.run_module('renderer.cli', run_name='__main__')"
REVIEWS = ["--flow", "pr-7", "--service", "reviews=reviews:2"]


def _diff(harness, cores: str, flow: list[str], *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    head = [sys.executable, "-m", "renderer.cli"] if cores == "all" else [sys.executable, "-c", ONE_CORE]
    return subprocess.run([*head, "diff", str(harness.root), "--base", "HEAD~1", "--head", "HEAD", *flow, "--debug",
                           *extra], env=env, capture_output=True, text=True, timeout=300)


def _case(harness, case: str) -> list[str]:
    """The two commits of `case`, and the flow to compare."""
    if case == "refused":
        write_app(harness, "shop")
        harness.copy(FIXTURES / "plugins" / "change_guard", "plugins/guard")
        harness.commit("base")
        write_app(harness, "orders")
        harness.commit("head")
        return GUARDED
    if case == "new directory":
        harness.write("README.md", "nothing yet\n")
        harness.commit("base")
        harness.copy(EXAMPLE, "app")
        harness.commit("head")
        harness.root = harness.root / "app"
        return FLOW
    harness.copy(EXAMPLE)
    harness.commit("base")
    if case == "change":
        _edit(harness.root / "k8s" / "web.yaml", "bookshop-web:1.4.2", "bookshop-web:1.5.0")
        _edit(harness.root / "k8s" / "plugins.yaml", "'The Hobbit', 1,", "'The Hobbit', 3,")
        harness.commit("head")
        return FLOW
    reviews = app_yaml("reviews").replace("name: reviews\n", "name: reviews\n  namespace: bookshop\n")
    harness.write("k8s/reviews.yaml", reviews)  # a service the base does not have: the flow renders at head only
    harness.commit("head")
    return REVIEWS


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: the base always renders in turn")
@pytest.mark.parametrize("case", ["change", "refused", "new directory", "base does not render"])
def test_the_base_beside_the_head_reports_what_the_base_in_turn_reports(harness, case: str) -> None:
    flow = _case(harness, case)
    beside, in_turn = _diff(harness, "all", flow, "-o", "json"), _diff(harness, "one", flow, "-o", "json")
    assert (beside.returncode, beside.stdout) == (in_turn.returncode, in_turn.stdout), beside.stderr
    assert ("the base rendered in a forked process beside the head's render" in beside.stderr) == \
        (case != "new directory")  # no directory at base: nothing to render there
    assert "forked process" not in in_turn.stderr
    report = json.loads(beside.stdout)
    if case == "change":
        assert report["counts"] == {"added": 0, "changed": 3, "removed": 0} and beside.returncode == 0
    elif case == "refused":
        assert beside.returncode == 1 and [p["message"] for p in report["problems"]] == [REFUSAL]
    else:
        assert {o["status"] for o in report["objects"]} == {"added"} and len(report["notes"]) == 1
    markdown = [_diff(harness, cores, flow, "-o", "markdown", "--fail-on", "never").stdout for cores in ("all", "one")]
    assert markdown[0] == markdown[1] and "devlane:flow=pr-" in markdown[0]


@pytest.mark.parametrize("sent", [None, b"not json", b'{"flows": 1}'])
def test_a_child_that_fails_is_as_if_it_never_ran(harness, monkeypatch, sent) -> None:
    """The child's result lost (a crash: None) or unreadable: the base renders here, the report is the same."""
    _case(harness, "change")
    expected = harness.cli("diff", "--base", "HEAD~1", "--head", "HEAD", *FLOW, "-o", "json")
    calls = []

    def fork_map(items, shares, work, local, then=None):
        calls.append(items)
        local(shares[0])
        return [None, sent]

    monkeypatch.setattr(diff_base.parallel, "fork_map", fork_map)
    monkeypatch.setattr(diff_base.parallel, "available_cpus", lambda: 2)
    monkeypatch.setattr(diff_base.threading, "active_count", lambda: 1)
    got = harness.cli("diff", "--base", "HEAD~1", "--head", "HEAD", *FLOW, "-o", "json", "--debug")
    assert calls == [["head", "base"]]
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout)
    assert "forked process" not in got.stderr
