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


def with_token(token: str) -> list[int]:
    """Pids of the live (not zombie) processes whose command line contains `token` as a whole argument."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in args and state != "Z":
            found.append(int(entry.name))
    return found


def wait_for(cond: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()
