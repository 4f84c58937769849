"""Real `devlane` processes for the tests of issue 40 (deadlines, nothing left running): each with a $TMPDIR of its
own, so what it left is exactly what names that directory (or its pid, `devlane-<kind>-<pid>.`), found in the
host's /proc by start time (`support.processes.left_by`).

`stalled` runs the CLI with one in-process stage stuck (a test-only hook: the stage's function replaced, in that
process only, by a busy loop, a sleep or a backtracking regular expression), so a deadline must stop a step that
reaches no cooperative check."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .paths import ROOT
from .processes import Proc, left_by, now_ticks, wait_for

# A Kardinal plugin that starts a child (`sleep TOKEN`, found in /proc by its token), then hangs ignoring SIGTERM.
HANG = '''
import signal, subprocess, time

def create_flow(service_specs, pod_specs, flow_uuid, token=""):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen(["sleep", token])
    print("started", flush=True)
    time.sleep(600)
'''

# The sandboxes a plugin may get here: as installed (bwrap), bwrap hidden (util-linux unshare: PID namespace too),
# and only the Python helper (a network namespace: no PID namespace, so the process group and cgroup end a call).
SANDBOXES = ("installed", "no-bwrap", "python-helper")

STALL = """
import re, sys, time
from renderer.render.checks import invariants, reach
where, how = sys.argv[1:3]
del sys.argv[1:3]
module, name = {"reach": (reach, "lane_reach"), "invariants": (invariants, "before_plugins")}[where]
real = getattr(module, name)

def stalled(*args, **kwargs):
    if how == "busy":
        while True:
            pass
    elif how == "sleep":
        time.sleep(3600)
    elif how == "regex":
        re.match(r"(a+)+b", "a" * 64)
    return real(*args, **kwargs)

setattr(module, name, stalled)
from renderer.cli import run
sys.argv[0] = "devlane"
run()
"""


def sandbox_env(sandbox: str, tmp_path: Path) -> dict[str, str]:
    """The environment that gives devlane's plugins `sandbox` on this machine."""
    if sandbox == "installed":
        return {}
    if sandbox == "no-bwrap":
        return {"DEVLANE_BWRAP": "/nonexistent/bwrap"}
    bare = tmp_path / "bare-bin"  # no bwrap, no unshare: the Python helper
    bare.mkdir(exist_ok=True)
    for tool in ("prlimit", "sh", "env", "sleep"):
        found = shutil.which(tool)
        if found and not (bare / tool).exists():
            (bare / tool).symlink_to(found)
    return {"DEVLANE_BWRAP": "/nonexistent/bwrap", "PATH": str(bare)}


@dataclass
class Run:
    proc: subprocess.Popen
    tmp: Path
    since: int  # clock ticks since boot when it started
    started: float = field(default_factory=time.monotonic)
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""

    def finish(self, timeout: float = 120) -> Run:
        self.stdout, self.stderr = self.proc.communicate(timeout=timeout)
        self.seconds = time.monotonic() - self.started
        return self

    @property
    def code(self) -> int | None:
        return self.proc.returncode

    def left(self, seconds: float = 10) -> list[Proc]:
        """What still runs of it once it ended (given `seconds` to go), and the directories left in its $TMPDIR."""
        wait_for(lambda: not left_by(self.proc.pid, self.tmp, self.since), seconds)
        return left_by(self.proc.pid, self.tmp, self.since)

    def files_left(self) -> list[str]:
        return sorted(p.name for p in self.tmp.iterdir()) if self.tmp.is_dir() else []


def start(cwd: Path, tmp: Path, *args: str, env: dict[str, str] | None = None,
          stall: tuple[str, str] | None = None) -> Run:
    """`devlane ARGS` in `cwd` with $TMPDIR `tmp`; `stall` = (stage, how) for `STALL`."""
    tmp.mkdir(parents=True, exist_ok=True)
    full = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), **(env or {})}
    argv = [sys.executable, "-c", STALL, *stall] if stall else [sys.executable, "-m", "renderer.cli"]
    since = now_ticks()
    proc = subprocess.Popen([*argv, *args], cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    return Run(proc, tmp, since)
