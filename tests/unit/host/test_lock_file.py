"""`devlane.lock`, the file: its deterministic, sorted dump and the parser's errors, which name the file
and the command that regenerates it (`renderer.host.supply.lock`)."""

from __future__ import annotations

import textwrap

import pytest

from renderer.errors import DevlaneError
from renderer.host.supply.lock import LOCK_FILE, Lock, LockEntry, parse_lock


def test_lock_file_is_deterministic_and_sorted():
    commit = "a" * 40
    lock = Lock({n: LockEntry(n, f"https://h.example/{n}", "HEAD", commit, None) for n in ("z/b", "a/c")})
    text = lock.dump()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert body == textwrap.dedent(f"""\
        apiVersion: devlane.dev/v1alpha1
        kind: Lock
        plugins:
        - name: a/c
          url: https://h.example/a/c
          ref: HEAD
          commit: {commit}
          requirementsHash: null
        - name: z/b
          url: https://h.example/z/b
          ref: HEAD
          commit: {commit}
          requirementsHash: null""")
    assert parse_lock(text.encode()).entries == lock.entries


@pytest.mark.parametrize("text, expected", [
    ("plugins: {}", "`plugins` must be a list"),
    ("plugins: [{name: a, url: u, ref: HEAD, commit: abc}]", "not a full commit id"),
    ("kind: Config", "expected apiVersion"),
    ("plugins: [{name: a, url: u, ref: HEAD}]", "plugins[0].commit is missing"),
    (": [", "not valid YAML"),
])  # fmt: skip
def test_broken_lock_files_name_the_file_and_the_fix(text, expected):
    with pytest.raises(DevlaneError) as info:
        parse_lock(text.encode())
    problem = info.value.problems[0]
    assert expected in problem.message and problem.where.file == LOCK_FILE
    assert "`devlane plugins lock`" in problem.hint
