"""devlane's temporary directories: each names its owner, and none outlives it on any exit path.

A plugin call, the plugin host, a gRPC server, the sandbox probe, a kustomize/Helm build and a lanes branch's
checkout each get a directory in `$TMPDIR` named ``devlane-<kind>-<pid>.<start>-<random>``: the owner's pid and its
start time (clock ticks since boot, from /proc), so a later run can tell a dead owner from a live process that
reused the pid. Three paths remove them:

- the owner's own `finally` (`removed`), on success and on every error;
- the exit handler (`remove_all`), for what an unwinding thread did not reach: a daemon thread still
  running the probe when the command ends, a SIGINT / SIGTERM that ended the command early;
- `reclaim`, run once by the first directory a process makes, for the directories of owners that died
  without any of that (``kill -9``, an OOM kill, a power cut).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

PREFIX = "devlane-"
KINDS = ("plugin", "plugins", "grpc", "probe", "build", "lanes", "lanes-index")

_lock = threading.Lock()
_mine: dict[str, Callable[[], None] | None] = {}  # path -> what to stop before removing it (the probe's process)
_reclaimed = False
_closed = False  # the exit handler ran: a daemon thread still going makes no new directory


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); None without /proc or the process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # the command name may hold spaces and parentheses
    return fields[19].decode() if len(fields) > 19 else None


def owner_tag() -> str:
    """This process as a directory name shows it: ``<pid>.<start time>`` (just the pid without /proc)."""
    start = _start_time(os.getpid())
    return f"{os.getpid()}.{start}" if start else str(os.getpid())


def make(kind: str, base: str | None = None, stop: Callable[[], None] | None = None) -> str:
    """A new private directory of `kind` (0700), removed at exit unless `removed` first; `stop` runs before the
    exit handler removes it (to end a process still writing there)."""
    if kind not in KINDS:
        raise ValueError(f"unknown temporary directory kind {kind!r}")
    reclaim_once(base)
    with _lock:  # made and registered at once: the exit handler sees either nothing or a directory to remove
        if _closed:
            raise OSError("devlane is exiting: no new temporary directory")
        path = tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{owner_tag()}-", dir=base)
        _mine[path] = stop
    return path


def removed(path: str | Path) -> None:
    """Remove a directory `make` gave (ignoring what is already gone), then forget it: a daemon thread stopped by
    the interpreter's exit halfway through leaves the rest to the exit handler."""
    _discard(str(path))
    with _lock:
        _mine.pop(str(path), None)


def _discard(path: str) -> None:
    """Move the directory aside, then remove it: whatever still writes by its path (a thread that outlived its
    command) fails instead of adding files while it is emptied. The new name keeps the owner, for `reclaim`."""
    aside = f"{path}.removing"
    with contextlib.suppress(OSError):
        os.rename(path, aside)
    for name in (aside, path):
        shutil.rmtree(name, ignore_errors=True)


@contextlib.contextmanager
def scratch(kind: str, base: str | None = None) -> Iterator[str]:
    """`make` for the length of a `with` block."""
    path = make(kind, base)
    try:
        yield path
    finally:
        removed(path)


def remove_all() -> None:
    """Stop what writes into this process's directories and remove them (the exit handler; idempotent)."""
    global _closed
    with _lock:
        _closed = True
        left = list(_mine.items())
        _mine.clear()
    for path, stop in left:
        if stop is not None:
            with contextlib.suppress(Exception):
                stop()
        _discard(path)


atexit.register(remove_all)


def reclaim_once(base: str | None = None) -> None:
    global _reclaimed
    if not _reclaimed:
        _reclaimed = True
        reclaim(base)


def reclaim(base: str | None = None) -> list[str]:
    """Remove the devlane temporary directories in `base` (default `$TMPDIR`) whose owner is dead."""
    base = base or tempfile.gettempdir()
    gone: list[str] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            owner = _owner(entry.name)
            if owner is None or not entry.is_dir(follow_symlinks=False):
                continue
            pid, start = owner
            if pid != os.getpid() and not _alive(pid, start):
                shutil.rmtree(entry.path, ignore_errors=True)
                gone.append(entry.path)
    return gone


def _owner(name: str) -> tuple[int, str | None] | None:
    """(pid, start time or None) of a devlane directory name, None for any other name."""
    if not name.startswith(PREFIX):
        return None
    kind, sep, rest = name[len(PREFIX):].partition("-")
    if kind not in KINDS or not sep:
        return None
    tag = rest.split("-", 1)[0]
    pid, _, start = tag.partition(".")
    return (int(pid), start or None) if pid.isdigit() else None


def _alive(pid: int, start: str | None) -> bool:
    """Whether the owner still runs: the pid exists and, when the name recorded it, with the same start time."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if start is None:
        return True
    now = _start_time(pid)
    return now is None or now == start
