"""Progress of long work: the library says what it is doing, a front door decides how (or whether) to show it.

Why a hook and not prints: the library is called in-process by tests, the Argo CD plugin and the CLI, and only the
CLI on a terminal should draw anything (stderr, never stdout, never a pipe or a CI log unless asked). The library
opens a `task` around a long loop and advances it; with no reporter installed (the default) that costs a function
call per step. One reporter per process, shared by the threads of one command (plugin runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol


class Reporter(Protocol):
    """What a front door implements to show progress (the CLI: a rich progress display on stderr)."""

    def stage(self, label: str) -> None: ...

    def start(self, label: str, total: int | None) -> object: ...

    def advance(self, handle: object, steps: int) -> None: ...

    def finish(self, handle: object) -> None: ...


_reporter: Reporter | None = None


def install(reporter: Reporter | None) -> Reporter | None:
    """Make `reporter` the process's (None: none); returns the one it replaces."""
    global _reporter
    previous, _reporter = _reporter, reporter
    return previous


def stage(label: str) -> None:
    """The command's current stage (`loading the repository`, `running the plugins`...)."""
    if _reporter is not None:
        _reporter.stage(label)


def _nothing(steps: int = 1) -> None:
    return None


@contextmanager
def task(label: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A long step: yields `advance(steps=1)`; shown while it runs when a reporter is installed."""
    reporter = _reporter
    if reporter is None:
        yield _nothing
        return
    handle = reporter.start(label, total)

    def advance(steps: int = 1) -> None:
        reporter.advance(handle, steps)

    try:
        yield advance
    finally:
        reporter.finish(handle)
