"""Fetched snapshots of public repositories (git directories without a work tree), read in place: a test exports
the part it needs into a temporary directory and skips when the snapshot is absent. Where snapshots are kept:
`$<ENV>` for one, else `.mirror/<owner>+<name>/repo` beside ../shared."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .paths import SHARED


def snapshot(repo: str, env: str) -> Path:
    """The git directory of the snapshot of `repo` ("owner+name"); skips the test when there is none."""
    found = Path(os.environ.get(env) or SHARED.parent / ".mirror" / repo / "repo")
    if not (found / "HEAD").is_file():
        pytest.skip(f"no snapshot of {repo.replace('+', '/')} at {found} (set {env} to one)")
    return found


def export(git_dir: Path, part: str, out: Path) -> Path:
    """The files under `part` at the snapshot's HEAD, written under `out` (one `git cat-file --batch` for all:
    `git archive` reads every blob of the tree, and a snapshot may lack the large ones)."""
    names = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "--name-only", "HEAD", part],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    batch = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], capture_output=True, check=True,
                           input="".join(f"HEAD:{n}\n" for n in names).encode())
    data, at = batch.stdout, 0
    for name in names:
        header_end = data.index(b"\n", at)
        size = int(data[at:header_end].split()[2])
        body = data[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(body)
    return out / part
