"""The `devlane` program ends with `os._exit` once its command is done (`renderer.cli.run`), so the interpreter
does not free a repository's objects one by one: what the command printed must still all arrive, the exit
status must be the command's, and the exit handlers must still run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import ROOT
from support.repos import seeded_shop

pytestmark = pytest.mark.e2e  # starts the CLI as a process

SCRIPT = """
import atexit, sys
atexit.register(lambda: print("exit handlers ran", file=sys.stderr))
sys.argv = ["devlane", *sys.argv[1:]]
from renderer.cli import run
run()
print("not reached", file=sys.stderr)
"""


def _devlane(harness, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "DEVLANE_CACHE": str(harness.tmp / "cache")}
    return subprocess.run([sys.executable, "-c", SCRIPT, *argv], env=env, capture_output=True, text=True,
                          timeout=120, cwd=harness.tmp)


def test_a_render_prints_everything_and_exits_with_its_status(harness):
    seeded_shop(harness, "postgres-seed")
    done = _devlane(harness, "render", str(harness.root), "--flow", "pr-7", "--service", "shop=example.com/shop:2",
                    "--stdout")
    assert done.returncode == 0, done.stderr
    assert "name: seed-shop-seed-pr-7" in done.stdout and done.stdout.endswith("\n")
    assert done.stderr.splitlines()[-1] == "exit handlers ran"
    assert "not reached" not in done.stderr


def test_a_failing_command_keeps_its_exit_status(harness):
    seeded_shop(harness, "postgres-seed")
    done = _devlane(harness, "render", str(harness.root), "--flow", "pr-7", "--service", "nosuch=example.com/x:2",
                    "--stdout")
    assert done.returncode == 1, done.stderr
    assert "devlane: error:" in done.stderr and "nosuch" in done.stderr
    assert done.stderr.splitlines()[-1] == "exit handlers ran"
