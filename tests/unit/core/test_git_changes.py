"""`GitRefSource.changed` and `blob_id`, as `--services auto` reads a pull request: git's own comparison of two
commits (content, mode, added, deleted, renamed), limited to the app's directory and relative to it; and the blob id
of what a path reads (through a symlink) without reading it, the key its cached parse is stored under."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from renderer.core.cache import blob_id
from renderer.core.source import GitRefSource

pytestmark = pytest.mark.e2e  # real git repositories and commits


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("app", ["", "apps/shop", "apps/[x]*"])
def test_changed_lists_what_git_compares_inside_the_app_relative_to_it(tmp_path: Path, app: str) -> None:
    repo = tmp_path / "repo"
    root = repo / app if app else repo
    (root / "svc").mkdir(parents=True)
    (repo / "outside").mkdir()
    files = {"svc/a.yaml": "a: 1\n", "svc/b.yaml": "b: 1\n", "svc/run.sh": "echo\n", "svc/old.yaml": "o: 1\n",
             "svc/same.yaml": "s: 1\n", "svc/gone.yaml": "g: 1\n"}
    for rel, text in files.items():
        (root / rel).write_text(text)
    (repo / "outside" / "x.yaml").write_text("x: 1\n")
    (root / "svc" / "link").symlink_to("a.yaml")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (root / "svc" / "a.yaml").write_text("a: 2\n")  # content
    os.chmod(root / "svc" / "run.sh", 0o755)  # mode only
    (root / "svc" / "old.yaml").rename(root / "svc" / "new.yaml")  # a rename: both paths
    (root / "svc" / "gone.yaml").unlink()
    (root / "svc" / "added.yaml").write_text("n: 1\n")
    (root / "svc" / "link").unlink()
    (root / "svc" / "link").symlink_to("b.yaml")  # the link's target
    (repo / "outside" / "x.yaml").write_text("x: 2\n")  # outside the app (but in the repository's root app)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "head")
    base, head = GitRefSource(root, "HEAD~1"), GitRefSource(root, "HEAD")
    assert base.changed(head) == [*(["outside/x.yaml"] if not app else []), "svc/a.yaml", "svc/added.yaml",
                                  "svc/gone.yaml", "svc/link", "svc/new.yaml", "svc/old.yaml", "svc/run.sh"]
    assert head.changed(head) == []


def test_blob_id_is_the_key_of_what_read_gives_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("kind: A\n")
    (tmp_path / "l.yaml").symlink_to("a.yaml")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one")
    source = GitRefSource(tmp_path, "HEAD")
    assert source.blob_id("l.yaml") == source.blob_id("a.yaml") == blob_id(source.read("a.yaml"))
    assert source.blob_id("a.yaml") == _git(tmp_path, "rev-parse", "HEAD:a.yaml").strip()
