"""Processes seen from outside any sandbox: a plugin's pids live in its own PID namespace, so tests find
what it started by a unique token on the command line, in the host's /proc."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
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
