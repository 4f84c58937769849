"""`validate_change(old_args, new_args)` between two real git commits: what `devlane diff` calls (the refusals
end up in the report's problems and fail the command), and `api.check_changes` on the two loaded refs.
The plugin (tests/fixtures/plugins/change_guard) runs as a Kardinal subprocess."""

from __future__ import annotations

import json

import pytest
from support import FIXTURES, Harness, app_yaml, plugin_definition

from renderer import api

REFUSAL = "args.db_name: cannot rename the database of a live flow (shop -> orders)"
FLOW = ["--flow", "pr-1", "--service", "api=api:2"]


def write_app(harness: Harness, db_name: str) -> None:
    definition = {"name": "./plugins/guard", "type": "external", "servicename": "fixture", "args": {"db_name": db_name}}
    harness.write("app.yaml", app_yaml("worker", "fixture") + app_yaml("api", "fixture")
                  + plugin_definition([definition], "fixture-def"))  # fmt: skip


@pytest.fixture
def commits(harness) -> tuple[str, str]:
    """The base commit (db_name shop) and the head commit (db_name orders) of the repository."""
    write_app(harness, "shop")
    harness.copy(FIXTURES / "plugins" / "change_guard", "plugins/guard")
    base = harness.commit("base")
    write_app(harness, "orders")
    return base, harness.commit("head")


def check(harness: Harness, base_ref: str, head_ref: str) -> list:
    with api.open_session(harness.options(ref=head_ref)) as head, \
            api.open_session(harness.options(ref=base_ref), collect=True) as base:  # fmt: skip
        return api.check_changes(base.loaded, head.loaded, head)


def test_validate_change_refuses_a_changed_arg_and_accepts_an_unchanged_one(harness, commits):
    base, head = commits
    problems = check(harness, base, head)
    assert [p.message for p in problems] == [REFUSAL]
    assert problems[0].where.plugin == "fixture"
    assert check(harness, head, head) == []


def test_devlane_diff_reports_the_refusal_and_fails(harness, commits):
    base, head = commits
    out = harness.cli("diff", "--base", base, "--head", head, *FLOW, "-o", "json")
    assert out.returncode == 1, out.stderr
    problems = json.loads(out.stdout)["problems"]
    assert [p["message"] for p in problems] == [REFUSAL]
    assert problems[0]["where"]["plugin"] == "fixture"
    assert "devlane: error:" in out.stderr and REFUSAL in out.stderr

    same = harness.cli("diff", "--base", head, "--head", head, *FLOW, "-o", "json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["problems"] == []
