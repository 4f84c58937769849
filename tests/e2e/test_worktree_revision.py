"""The work tree's revision (recorded in `flow.metadata`) is read from `.git` without starting git, and
agrees with `git rev-parse HEAD` in every layout: loose and packed refs, detached HEAD, linked worktrees,
a subdirectory of the repository, an empty repository and no repository at all."""

from __future__ import annotations

import subprocess

import pytest
from support import git

from renderer.core.source import WorktreeSource


def rev_parse(path) -> str | None:
    out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


@pytest.fixture
def repo(tmp_path, monkeypatch):
    calls = []
    real = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root, calls


def test_no_repository_and_no_commit_have_no_revision(tmp_path, repo):
    root, _ = repo
    assert WorktreeSource(tmp_path / "..").revision() is None or rev_parse(tmp_path / "..") is not None
    assert WorktreeSource(root).revision() is None
    assert rev_parse(root) is None


def test_every_layout_agrees_with_git_and_starts_no_process(repo, tmp_path):
    root, calls = repo
    (root / "sub").mkdir()
    (root / "sub" / "a.yaml").write_text("x: 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    seen = []
    for step in ("loose", "packed", "detached", "worktree"):
        if step == "packed":
            git(root, "pack-refs", "--all")
            assert not (root / ".git" / "refs" / "heads" / "main").exists()
        if step == "detached":
            git(root, "checkout", "-q", "--detach")
        target = root / "sub"
        if step == "worktree":
            target = tmp_path / "linked"
            git(root, "worktree", "add", "-q", "-b", "other", str(target))
            git(target, "commit", "-q", "--allow-empty", "-m", "two")
        expected = rev_parse(target)
        calls.clear()
        assert WorktreeSource(target).revision() == expected, step
        assert calls == [], step
        seen.append(expected)
    assert seen[3] != seen[0] and len(set(seen[:3])) == 1
