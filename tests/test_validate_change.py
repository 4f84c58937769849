"""`validate_change(old_args, new_args)` runs between two real git commits (what `devlane diff` calls)."""

from __future__ import annotations

import shutil
import subprocess

from conftest import FIXTURES
from test_plugin_failures_cli import make_repo

from renderer import api


def _git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


def test_validate_change_refuses_a_changed_arg_and_accepts_an_unchanged_one(tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, "./plugins/guard", {"db_name": "shop"})
    shutil.copytree(FIXTURES / "plugins" / "change_guard", repo / "plugins" / "guard")
    _git(tmp_path, "init", "-q", str(repo))
    base = _commit(repo, "base")
    make_repo(repo, "./plugins/guard", {"db_name": "orders"})
    head = _commit(repo, "head")
    options = api.Options(repo=repo)

    problems = api.check_changes(options, base, head)
    assert [p.message for p in problems] == ["args.db_name: cannot rename the database of a live flow (shop -> orders)"]
    assert problems[0].where.plugin == "fixture"
    assert api.check_changes(options, head, head) == []
