"""Standard output that went away, never a traceback or Python's "Exception ignored" message at exit:

- a reader that stopped reading (`devlane plan ... | head -3`) ends the command quietly with exit status 141
  (128 + SIGPIPE), as git and kubectl end when the pipe breaks: the reader has what it wanted;
- a closed file descriptor (`devlane ... >&-`) is a mistake of the caller: one clear line and exit 1."""

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


SIGPIPE_STATUS = 141  # 128 + SIGPIPE: what a shell reports for git or kubectl whose reader went away


def gone(exc: BaseException | None = None, debug: bool = False) -> int:
    """End the command: quietly (141) when the reader went away, with one line on stderr (1) when stdout was
    closed; stdout is pointed at /dev/null so the interpreter's last flush cannot complain."""
    if debug:
        traceback.print_exc()
    closed = isinstance(sys.stdout, ClosedStdout) or getattr(exc, "errno", None) == errno.EBADF
    if closed:
        print("devlane: error: cannot write to standard output: the pipe or file is closed", file=sys.stderr)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # no real file behind stdout (tests, an embedding program)
        pass
    return 1 if closed else SIGPIPE_STATUS
