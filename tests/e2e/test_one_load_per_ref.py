"""One load per ref with git: `devlane diff` (text, JSON and Markdown) loads the base once and the head
once, and `render --services auto` finds its targets in the one load of the rendered ref."""

from __future__ import annotations

import pytest
from support import app_yaml


@pytest.fixture
def pr(harness):
    harness.write("app.yaml", app_yaml("api") + app_yaml("db"))
    base = harness.commit("base")
    harness.write("app.yaml", app_yaml("api", containers=[{"name": "main", "image": "api:1", "env": [
        {"name": "DB_HOST", "value": "db"}]}]) + app_yaml("db"))
    harness.commit("head")
    return harness, base


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
def test_diff_loads_each_ref_once(pr, loads, output):
    harness, base = pr
    out = harness.cli("diff", "--base", base, "--head", "HEAD", "--flow", "pr-1", "--service", "api=api:2",
                      "-o", output)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "DB_HOST" in out.stdout
    assert sorted(loads) == sorted([("GitRefSource", "HEAD"), ("GitRefSource", base)])


def test_services_auto_finds_targets_in_the_one_load(pr, loads):
    harness, base = pr
    out = harness.cli("render", "--flow", "pr-9", "--services", "auto", "--base", base, "--ref", "HEAD",
                      "--image-template", "{service}:{short_sha}", "--stdout")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "target api:" in out.stderr and "built by CI" in out.stderr
    assert "image: api:" in out.stdout
    assert loads == [("GitRefSource", "HEAD")]
