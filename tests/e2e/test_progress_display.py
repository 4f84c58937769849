"""The CLI shows progress on a terminal and nowhere else (issue 45, point 4): the real `devlane` in a child
process, its stderr a pseudo-terminal or a pipe. On a terminal the stages and counted loops appear (rich, stderr
only) and are erased at the end; on a pipe, with `$CI` set or `DEVLANE_PROGRESS=never` nothing of it appears;
`DEVLANE_PROGRESS=always` shows it on a pipe too. stdout is byte-identical whichever way."""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import EXAMPLE

pytestmark = pytest.mark.e2e

DEVLANE = [sys.executable, "-m", "renderer.cli"] if shutil.which("devlane") is None else [shutil.which("devlane")]
RENDER = ["render", str(EXAMPLE), "--flow", "pr-1", "--service", "orders=ghcr.io/acme/orders:2", "--stdout"]


def _run(args: list[str], tty: bool, **env: str) -> tuple[int, bytes, str]:
    """(exit status, stdout, stderr) of `devlane ARGS`, stderr a pseudo-terminal when `tty`."""
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "DEVLANE_PROGRESS")}
    environ.update({"TERM": "xterm-256color", "COLUMNS": "120", **env})
    if not tty:
        done = subprocess.run([*DEVLANE, *args], capture_output=True, env=environ, timeout=120)
        return done.returncode, done.stdout, done.stderr.decode()
    master, slave = pty.openpty()
    child = subprocess.Popen([*DEVLANE, *args], stdout=subprocess.PIPE, stderr=slave, env=environ)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        err += chunk
    out = child.stdout.read() if child.stdout else b""
    child.wait(timeout=120)
    os.close(master)
    return child.returncode, out, err.decode(errors="replace")


@pytest.fixture(scope="module")
def plain() -> bytes:
    code, out, err = _run(RENDER, tty=False)
    assert code == 0, err
    assert "\x1b[" not in err and "devlane render: running the plugins" not in err
    return out


def test_a_terminal_shows_the_stages_and_counts_then_erases_them(plain: bytes):
    code, out, err = _run(RENDER, tty=True)
    assert code == 0, err
    assert out == plain
    for stage in ("devlane render: loading the repository", "devlane render: running the plugins",
                  "devlane render: emitting the flow", "reading files", "plugins"):
        assert stage in err, stage
    assert re.search(r"plugins .*\d/2", err)  # the bookshop's two plugin instances, counted
    # the display stopped: the cursor shown again, and its lines erased last (nothing of it stays on the screen)
    assert "\x1b[?25h" in err and err.endswith("\x1b[2K")


@pytest.mark.parametrize("env", [{"CI": "true"}, {"DEVLANE_PROGRESS": "never"}, {"TERM": "dumb"}])
def test_ci_never_or_a_dumb_terminal_show_nothing(plain: bytes, env: dict):
    code, out, err = _run(RENDER, tty=True, **env)
    assert code == 0 and out == plain
    assert "devlane render:" not in err and "\x1b[?25l" not in err


def test_always_shows_it_on_a_pipe_too(plain: bytes):
    code, out, err = _run(RENDER, tty=False, DEVLANE_PROGRESS="always")
    assert code == 0 and out == plain
    assert "devlane render: running the plugins" in err


def test_lint_init_and_diff_show_their_stages(tmp_path: Path):
    repo = tmp_path / "shop"
    shutil.copytree(EXAMPLE, repo)
    fresh = str(tmp_path / "cache")  # lint's stored findings of these bytes would skip its checks
    assert "devlane lint: checking " in _run(["lint", str(repo)], tty=True, DEVLANE_CACHE=fresh)[2]
    assert "devlane init: inferring the dependencies of " in _run(["init", str(repo)], tty=True)[2]
