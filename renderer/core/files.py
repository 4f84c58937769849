"""Files in and out: bounded reads of regular files only, and atomic writes (a reader sees the old file or
directory or the new one, never a half-written one).

Reading checks what was opened, not what a path looked like before: the file is opened without
blocking and without following a final symlink, `fstat` must say "regular file", and at most
`limit` bytes are read, whatever the size claims. So a FIFO named `x.yaml` cannot hang a render, a
device (`/dev/zero`) cannot fill memory, and a file growing while it is read cannot run away.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..errors import DevlaneError, Where, fail

MAX_FILE_BYTES = 64 * 1024 * 1024  # one input file (a manifest, .devlane.yaml, a flow file)
_CHUNK = 1024 * 1024
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path | str, shown: str | None = None, limit: int | None = None) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; anything else is a clear error naming
    `shown` (default: the path). A final symlink is not followed: resolve links (and check where they point)
    before calling this."""
    limit = MAX_FILE_BYTES if limit is None else limit
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror}", Where(file=shown or str(path)),
                   hint="check that the file exists and is readable") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise fail(f"{kind_of(st.st_mode)}, not a regular file: devlane reads regular files only",
                       Where(file=shown or str(path)),
                       hint="replace it with a regular file, or exclude it with `exclude:` in .devlane.yaml")
        # one read of the size fstat gives, and a byte more: a shorter answer is the end of the file (a repository's
        # files are read in one system call each); a file that says less than it holds (/proc) reads on below
        want = min(st.st_size, limit) + 1
        try:
            first = os.read(fd, want)
        except OSError as exc:
            raise fail(f"cannot read: {exc.strerror}", Where(file=shown or str(path))) from None
        if len(first) < want:
            return first
        return _read_bounded(fd, shown or str(path), limit, first)
    finally:
        os.close(fd)


def read_user_file(path: Path | str) -> bytes:
    """A file named on the command line (a flow file, a template): its symlinks are the user's to follow,
    the rest is `read_regular`'s."""
    return read_regular(os.path.realpath(path), str(path))


def _read_bounded(fd: int, shown: str, limit: int, first: bytes = b"") -> bytes:
    chunks = [first]
    total = len(first)
    if total > limit:
        raise over_limit(shown, limit)
    while True:
        try:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
        except OSError as exc:
            raise fail(f"cannot read: {exc.strerror}", Where(file=shown)) from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise over_limit(shown, limit)


class InputLimit(DevlaneError):
    """Input over a size limit: it stops the whole read (lint too), since every later file would be over it."""


def over_limit(shown: str, limit: int, what: str = "the file is", kind: type[DevlaneError] = DevlaneError
               ) -> DevlaneError:
    return fail(f"{what} over the {limit:,}-byte limit", Where(file=shown),
                hint="split it, or exclude it with `exclude:` in .devlane.yaml", kind=kind)


def write_atomic(path: Path, text: str, mode: int | None = None) -> Path:
    """Write `text` to `path` through a temporary file in the same directory and a rename: a reader sees
    the old file or the new one, never a half-written one. The file gets `mode`; by default the mode a plain
    `open()` gives a new file (0666 less the umask: 0644 for most) or, when it replaces one, that file's mode:
    a page a reviewer's browser opens and a lock file a teammate's checkout reads are theirs to read (mkstemp's
    0600 is for secrets, which pass `mode=0o600`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    """The process's umask: from /proc (Linux), else by setting it and restoring it at once (a moment in which
    another thread's new file would get the wrong mode, so only where /proc cannot say)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


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
