"""Processes seen from outside any sandbox: a plugin's pids live in its own PID namespace, so tests find
what it started by a unique token on the command line, in the host's /proc."""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def sleep_token() -> str:
    """A `sleep` duration no other process on the machine uses (GNU sleep takes fractions)."""
    return f"{random.randint(500, 900)}.{random.randint(10**8, 10**9)}"


def _live() -> list[tuple[int, list[bytes]]]:
    """(pid, arguments) of every live (not zombie) process but this one."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append((int(entry.name), args))
    return found


def with_token(token: str) -> list[int]:
    """Pids of the live processes whose command line contains `token` as a whole argument."""
    return [pid for pid, args in _live() if token.encode() in args]


def mentioning(text: str) -> list[str]:
    """The command lines of the live processes with `text` inside one of their arguments."""
    return [b" ".join(args).decode(errors="replace")[:200] for _, args in _live() if any(text.encode() in a
                                                                                         for a in args)]


def bwrap_free_path() -> str:
    """$PATH without the directories that hold a bwrap: a machine where only `pip install` brought one."""
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not os.path.exists(os.path.join(d, "bwrap")))  # fmt: skip


def wait_for(cond: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


# --------------------------------------------------------------------------------------------------
# What a run left: processes by start time (clock ticks since boot, as /proc/<pid>/stat says)

CLK_TCK = os.sysconf("SC_CLK_TCK")


def now_ticks() -> int:
    """Now, in the unit of a process's start time (field 22 of /proc/<pid>/stat): clock ticks since boot."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * CLK_TCK)


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    start: int  # clock ticks since boot
    comm: str
    args: str
    cwd: str

    def __str__(self) -> str:
        return f"pid {self.pid} (parent {self.ppid}, {self.comm}, cwd {self.cwd}): {self.args[:240]}"


def processes(since: int = 0) -> list[Proc]:
    """Every live (not zombie) process started at or after `since` (clock ticks since boot), but this one."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_bytes()
            args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            cwd = ""
        comm = stat[stat.index(b"(") + 1: stat.rindex(b")")].decode(errors="replace")
        fields = stat[stat.rindex(b")") + 2:].split()
        if fields[0] != b"Z" and int(fields[19]) >= since:
            found.append(Proc(int(entry.name), int(fields[1]), int(fields[19]), comm, args, cwd))
    return found


def descendants(pid: int, procs: list[Proc]) -> list[Proc]:
    """The processes of `procs` below `pid` (while they still have it as an ancestor)."""
    below, out = {pid}, []
    for _ in range(len(procs)):
        more = [p for p in procs if p.ppid in below and p.pid not in below]
        if not more:
            break
        below.update(p.pid for p in more)
        out += more
    return out


def left_by(pid: int, tmp: Path, since: int) -> list[Proc]:
    """The live processes a devlane run (`pid`, its $TMPDIR `tmp`) started at or after `since`: its descendants while
    it runs, and afterwards whatever names its temporary directories (every sandbox binds one: a plugin's, the
    probe's, a build's, a gRPC server's `devlane-<kind>-<pid>.`) or works in one."""
    procs = processes(since)
    owner = re.compile(rf"devlane-[a-z]+-{pid}\.")
    marked = [p for p in procs if str(tmp) in p.args or p.cwd.startswith(str(tmp)) or owner.search(p.args)]
    return sorted({*marked, *descendants(pid, procs)}, key=lambda p: p.pid)


def orphaned_sandboxes(since: int) -> list[Proc]:
    """bwrap processes started at or after `since` whose parent is gone (reparented to init): what a killed sandbox
    setup leaves sleeping forever, whoever ran it."""
    procs = processes(since)
    alive = {p.pid for p in processes()} | {os.getpid()}
    return [p for p in procs if p.comm == "bwrap" and (p.ppid == 1 or p.ppid not in alive)]
