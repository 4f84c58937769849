"""Command line: argv in, exit code out, over the library API (`renderer.api`) and the front doors.

Exit codes: 0 success, 1 render or validation error, 2 usage error. This is the only place that
maps errors to exit codes and prints them: one clear message each, and no traceback unless
`--debug`.

Start-up: the command modules only declare arguments when imported; each handler imports the front
door it runs, and the API is imported once argv has parsed, so `devlane --help` loads no library code
and a command loads only its own (tests/e2e/test_startup.py holds this).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from types import ModuleType

from ..core.version import VERSION
from ..errors import DevlaneError, NothingToDo, UsageError
from . import cache, cmp, completion, diff, init, lint, live, plan, plugins, preview, provision, render, stdio
from .usage import DevlaneParser, add_examples


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The whole command line, built once per process (parsing never changes it; a process that runs many
    commands, as the tests do, would otherwise build its hundreds of arguments each time)."""
    parser = DevlaneParser(
        prog="devlane",
        description="Render per-pull-request dev lanes from Kardinal-annotated Kubernetes manifests, offline.",
    )
    parser.add_argument("--version", action="version", version=f"devlane {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (render, plan, lint, provision, live, cmp, diff, preview, init, plugins, cache, completion):
        group.add_parsers(sub)
    add_examples(parser)
    return parser


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: unwind (temp and staging dirs are removed on the way) and exit 128+N."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum: int) -> None:
    raise Interrupted(signum)


# The signals the command received. The handler's exception can be lost (Python ignores one raised in an at-fork hook
# or a finalizer, where a signal may land), and the command then ends another way; its exit status is still 128+N.
_received: list[int] = []


def _stopped(signum: int) -> int:
    print(f"devlane: stopped by {signal.Signals(signum).name}; running plugins were killed", file=sys.stderr)
    return 128 + signum


@contextlib.contextmanager
def _signals(process: ModuleType, deadline: ModuleType) -> Iterator[None]:
    """SIGINT and SIGTERM kill every plugin process group at once, then unwind (after the output's swap into place,
    when one is under way); SIGALRM stops the command at its `--timeout` deadline wherever it is (`core.deadline`),
    after killing them too; restored afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, _frame: object) -> None:
        _received.append(signum)
        process.stop_all()  # at once: the threads waiting on plugins return, and no new plugin starts
        if not deadline.defer(functools.partial(_interrupt, signum)):
            _interrupt(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with deadline.alarms(process.stop_all):
            yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        process.resume()


_process_ends = False  # set by `run`: the command is the process's last work


def run() -> None:
    """The `devlane` program: `main`, then exit at once. The interpreter's own exit would free every object the
    command made (and the sessions it kept for this), one by one, for nothing: `os._exit` after flushing and
    running the exit handlers, as the process's only owner may."""
    global _process_ends
    _process_ends = True
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):  # a closed stdout was reported already
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    stdio.guard()
    if argv is None and "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (`devlane completion`)
        import argcomplete

        argcomplete.autocomplete(build_parser())  # answers and exits
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    # only now: `--help`, `--version` and usage errors end above without loading the library; the signal handlers
    # must not import anything. The handler imports its own front door (lint's stored findings need no more).
    from .. import session
    from ..core import deadline, tempdirs
    from ..host import process
    from . import progress_display

    tempdirs.reclaim_once()  # what a run killed with SIGKILL left in $TMPDIR, whichever command comes next
    if _process_ends:
        session.retain_until_exit()
        process.adopt_orphans()  # nothing it starts outlives the command, not even what escapes a sandbox

    _received.clear()
    try:
        with _signals(process, deadline), progress_display.shown(getattr(args, "command", None) or "run"):
            code = args.handler(args)
            sys.stdout.flush()  # a closed pipe fails here, not at interpreter exit
            return _stopped(_received[0]) if _received else code
    except Interrupted as exc:
        return _stopped(exc.signum)
    except NothingToDo as exc:
        for p in exc.problems:
            print(f"devlane: {p.message}", file=sys.stderr)
        return 0
    except (DevlaneError, deadline.TimedOut) as exc:
        if _received:  # what failed failed because of the signal (plugins stopped): the signal is the story
            return _stopped(_received[0])
        if isinstance(exc, deadline.TimedOut):  # a deadline no session turned into its error
            exc = exc.error()
        if debug:
            traceback.print_exc()
        for p in exc.problems:  # an error may come with a warning that explains it
            print(f"devlane: {'warning' if p.severity == 'warning' else 'error'}: {p.format()}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug in devlane, not a user error
        if stdio.broken(exc):
            return stdio.gone(exc, debug)
        if debug:
            raise
        print(f"devlane: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
              file=sys.stderr)
        return 1
