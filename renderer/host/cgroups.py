"""Per-call cgroups for plugin processes: a memory and a process limit, and a kill that nothing escapes.

Used where devlane may create cgroups (root on cgroup v1, or a delegated cgroup v2 subtree); the
sandbox (`confine`) falls back to rlimits elsewhere. Each call gets `devlane-<pid>-<n>` under
devlane's own cgroup; the next run removes those of runs that were killed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.dirlock import alive

MIB = 1024 * 1024


_CG_FILES = {"memory": ("memory.max", "memory.limit_in_bytes"), "pids": ("pids.max",)}
_counter = itertools.count(1)


def _own_cgroups() -> dict[str, str]:
    """controller -> this process's cgroup directory (v1 per controller, v2 unified for both)."""
    out: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        rel = rel.lstrip("/")
        if controllers == "":
            for c in ("memory", "pids"):
                base = Path("/sys/fs/cgroup")
                if (base / "cgroup.controllers").exists():
                    out.setdefault(c, str(base / rel))
        for c in controllers.split(","):
            if c in _CG_FILES:
                out[c] = str(Path("/sys/fs/cgroup") / c / rel)
    return out


def usable_cgroups() -> tuple[tuple[str, str], ...]:
    """Controllers under which devlane may create a child cgroup with a working limit file."""
    out = []
    for controller, parent in sorted(_own_cgroups().items()):
        test = Path(parent) / f"devlane-probe-{os.getpid()}"
        try:
            test.mkdir(exist_ok=True)  # a killed run's probe with this (reused) pid is ours to use
        except OSError:
            continue
        try:
            if any((test / f).exists() for f in _CG_FILES[controller]) and os.access(test / "cgroup.procs", os.W_OK):
                out.append((controller, parent))
        finally:
            with contextlib.suppress(OSError):
                test.rmdir()
    return tuple(out)


@dataclass
class Cgroup:
    """One call's cgroups (one per controller on cgroup v1, one directory on v2)."""

    dirs: dict[str, Path]

    @classmethod
    def create(cls, usable: Iterable[tuple[str, str]], memory_mib: int, processes: int) -> Cgroup | None:
        """New cgroups with these limits under each usable controller; None when none could be made."""
        name = f"devlane-{os.getpid()}-{next(_counter)}"
        made: dict[str, Path] = {}
        values = {"memory": str(memory_mib * MIB), "pids": str(processes)}
        try:
            for controller, parent in usable:
                d = Path(parent) / name
                if d not in made.values():
                    d.mkdir(exist_ok=True)
                made[controller] = d
                for f in _CG_FILES[controller]:
                    if (d / f).exists():
                        (d / f).write_text(values[controller])
                        break
        except OSError:
            cls(made).destroy()
            return None
        return cls(made) if made else None

    def has(self, controller: str) -> bool:
        return controller in self.dirs

    def join_prefix(self) -> list[str]:
        """A shell that moves itself into every cgroup, then execs the rest: before the plugin can fork."""
        procs = sorted({str(d / "cgroup.procs") for d in self.dirs.values()})
        script = "".join(f'echo $$ > "${i + 1}" && ' for i in range(len(procs)))
        return ["/bin/sh", "-c", f'{script}shift {len(procs)} && exec "$@"', "devlane-cgroup", *procs]

    def pids(self) -> set[int]:
        out: set[int] = set()
        for d in set(self.dirs.values()):
            with contextlib.suppress(OSError, ValueError):
                out.update(int(x) for x in (d / "cgroup.procs").read_text().split())
        return out

    def destroy(self) -> None:
        """SIGKILL every process still in the cgroups (repeat: a fork bomb forks while we kill), then rmdir."""
        for d in set(self.dirs.values()):
            kill = d / "cgroup.kill"
            if kill.exists():
                with contextlib.suppress(OSError):
                    kill.write_text("1")
        for _ in range(200):
            left = self.pids()
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            threading.Event().wait(0.005)
        for d in set(self.dirs.values()):
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    threading.Event().wait(0.01)


def reclaim_cgroups() -> None:
    """Remove the empty cgroups of devlane runs that were killed (named devlane-<pid>-<n>, or devlane-probe-<pid>
    for `usable_cgroups`' test)."""
    for _controller, parent in _own_cgroups().items():
        with contextlib.suppress(OSError):
            for d in Path(parent).glob("devlane-*-*"):
                parts = d.name.split("-")
                pid = parts[2] if parts[1] == "probe" else parts[1]
                if pid.isdigit() and not alive(int(pid)):
                    with contextlib.suppress(OSError):
                        d.rmdir()
