"""An exclusive lock on a directory, shared by every devlane process: `flock` on a lock file inside it.

The kernel drops an `flock` when its holder dies, even by `kill -9`, so a crashed run never leaves the
directory locked. The lock file exists only while the lock is held (its holder's pid is written in it for
the error a waiter gets); it is removed on release, so nothing is left in a directory that is committed
to git. Removing a lock file is safe because a waiter checks, once it holds the lock, that the file it
locked is still the one at the path, and starts again when it is not.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from ..errors import DevlaneError, fail

LOCK_NAME = ".devlane.lock"


class DirLock:
    """Hold `directory/.devlane.lock` exclusively (a context manager); wait at most `wait` seconds for it."""

    def __init__(self, directory: Path, wait: float, create: bool = True, dir_fd: int | None = None):
        self.path = directory / LOCK_NAME
        self.wait = wait
        self.create = create and dir_fd is None  # make the directory (and its parents) when it is missing
        self.dir_fd = dir_fd  # `directory`, opened: the lock file is opened in it, never through a symlink
        self.fd: int | None = None

    def _at(self) -> tuple[str | Path, dict]:
        """The lock file's path and the `dir_fd` to open, stat and unlink it with."""
        return (LOCK_NAME, {"dir_fd": self.dir_fd}) if self.dir_fd is not None else (self.path, {})

    def __enter__(self) -> DirLock:
        deadline = time.monotonic() + self.wait
        delay = 0.001
        name, at = self._at()
        while True:
            try:  # plugins never inherit it; a symlink in its place (ELOOP) is never followed
                fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644, **at)
            except FileNotFoundError:
                if not self.create:
                    raise
                self.path.parent.mkdir(parents=True, exist_ok=True)  # (again: a failed run removed it, empty)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._timeout(holder) from None
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.005)
                continue
            except BaseException:
                os.close(fd)
                raise
            if _is_at(fd, name, at):
                break
            os.close(fd)  # its last holder removed the file we locked: lock the one at the path now
        self.fd = fd
        with contextlib.suppress(OSError):  # for the error a waiter gets; a full disk must not stop a delete
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is None:
            return
        name, at = self._at()
        with contextlib.suppress(OSError):
            os.unlink(name, **at)  # the last step under the lock: a waiter on this file sees it is gone
        os.close(self.fd)
        self.fd = None

    def _timeout(self, holder: int | None) -> DevlaneError:
        who = f"pid {holder}" if holder else "a process whose pid is unknown"
        return fail(f"{self.path.parent} is locked by another devlane render or delete ({who}); gave up after "
                    f"waiting {self.wait:.3g} s for {self.path}",
                    hint=f"wait for {who} to finish and run again (stop it if it hangs); a killed run releases "
                         "the lock at once", code="output-locked")


def _holder(fd: int) -> int | None:
    """The pid written in the lock file, when that process is alive."""
    try:
        pid = int(os.pread(fd, 32, 0).decode().strip() or 0)
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and alive(pid) else None


def _is_at(fd: int, path: str | Path, at: dict) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path, follow_symlinks=False, **at)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def alive(pid: int) -> bool:
    """Whether process `pid` exists (it may belong to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
