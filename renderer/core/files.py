"""Atomic file operations: a reader sees the old file (or directory) or the new one, never a half-written one."""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` to `path` through a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# --------------------------------------------------------------------------------------------------
# Directory swaps: `renameat2(RENAME_EXCHANGE)` swaps two paths in one step, so a reader of the final
# path sees the old tree or the new one and never nothing (a pair of renames leaves a gap between them).

AT_FDCWD = -100
RENAME_EXCHANGE = 2
_SYSCALL_NUMBERS = {"x86_64": 316, "amd64": 316, "aarch64": 276, "arm64": 276}  # libcs without the wrapper
_UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP}  # no syscall, or not on this filesystem


@functools.cache
def _renameat2() -> Callable[[bytes, bytes, int], int] | None:
    """libc's `renameat2`, else the raw system call on the architectures we know; None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    wrapper = getattr(libc, "renameat2", None)
    if wrapper is not None:
        wrapper.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        wrapper.restype = ctypes.c_int
        return lambda old, new, flags: wrapper(AT_FDCWD, old, AT_FDCWD, new, flags)
    number = _SYSCALL_NUMBERS.get(platform.machine().lower())
    if number is None:
        return None
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    return lambda old, new, flags: syscall(ctypes.c_long(number), ctypes.c_int(AT_FDCWD), ctypes.c_char_p(old),
                                           ctypes.c_int(AT_FDCWD), ctypes.c_char_p(new), ctypes.c_uint(flags))


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically; False where the OS or the filesystem cannot (then nothing moved)."""
    call = _renameat2()
    if call is None:
        return False
    if call(os.fsencode(a), os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))
