"""Standard output that went away: a closed pipe (`devlane render --stdout | head -0`) or a closed file
descriptor (`devlane ... >&-`) is one clear line and exit 1, as Unix tools do, never a traceback or
Python's "Exception ignored" message at exit."""

from __future__ import annotations

import errno
import os
import select
import sys
import traceback


class ClosedStdout:
    """Stands in for a closed file descriptor 1 (Python then sets `sys.stdout` to None): writing to it fails
    as writing to a closed pipe does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass


def guard() -> None:
    """Make a closed stdout fail on the first write instead of being silently None."""
    if sys.stdout is None:
        sys.stdout = ClosedStdout()  # type: ignore[assignment]


def broken(exc: BaseException) -> bool:
    """Whether `exc` is stdout breaking: closed, or a pipe nobody reads any more (poll reports an error),
    rather than another pipe (a plugin's)."""
    if not isinstance(exc, BrokenPipeError):
        return False
    if isinstance(sys.stdout, ClosedStdout):
        return True
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def gone(debug: bool = False) -> int:
    """Say so once on stderr and return exit status 1; stdout is pointed at /dev/null so the interpreter's
    last flush cannot complain."""
    if debug:
        traceback.print_exc()
    print("devlane: error: cannot write to standard output: the pipe or file is closed", file=sys.stderr)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # no real file behind stdout (tests, an embedding program)
        pass
    return 1
