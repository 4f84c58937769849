"""The CLI's progress display: a rich live view on stderr while a long command works, shown only on a terminal.

When: `$DEVLANE_PROGRESS` = `always` or `never`; else (`auto`) only when stderr is a terminal, `$TERM` is not
`dumb` and `$CI` is unset, so pipes and CI logs never get it. It is transient: what it drew is erased when the
command ends, and stdout is never touched, so the command's output is byte-identical with or without it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TextIO

from ..core import progress

MODES = ("auto", "always", "never")


def wanted(stream: TextIO | None = None) -> bool:
    """Whether to show progress on `stream` (stderr), by `$DEVLANE_PROGRESS` and the terminal."""
    mode = os.environ.get("DEVLANE_PROGRESS", "auto").strip().lower() or "auto"
    if mode == "always":
        return True
    if mode != "auto":  # `never`, or a value that names no mode: the quiet choice
        return False
    stream = stream or sys.stderr
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return terminal and os.environ.get("TERM") != "dumb" and not os.environ.get("CI")


class RichReporter:
    """`core.progress.Reporter` on a rich `Progress`: the command's stage as a spinner line, each long loop as a
    bar with its count; started at the first task, stopped (and erased) at the end."""

    def __init__(self, stream: TextIO, command: str):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.text import Text

        class Count(ProgressColumn):
            """`done/total` for a counted loop; nothing for the stage line (its total is unknown)."""

            def render(self, task) -> Text:  # type: ignore[no-untyped-def]
                return Text(f"{int(task.completed)}/{int(task.total)}" if task.total else "")

        console = Console(file=stream, force_terminal=True, highlight=False)
        self.display = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=30), Count(),
                                TimeElapsedColumn(), console=console, transient=True, redirect_stdout=False,
                                redirect_stderr=False)
        self.command = command
        self.top = None
        self.started = False

    def _start(self) -> None:
        if not self.started:
            self.display.start()
            self.started = True

    def stage(self, label: str) -> None:
        self._start()
        text = f"devlane {self.command}: {label}"
        if self.top is None:
            self.top = self.display.add_task(text, total=None)
        else:
            self.display.update(self.top, description=text)
        self.display.refresh()  # a stage is drawn even when it ends before the next tick (a few per command)

    def start(self, label: str, total: int | None) -> object:
        self._start()
        handle = self.display.add_task(f"  {label}", total=total)
        self.display.refresh()
        return handle

    def advance(self, handle: object, steps: int) -> None:
        self.display.advance(handle, steps)  # type: ignore[arg-type]

    def finish(self, handle: object) -> None:
        self.display.remove_task(handle)  # type: ignore[arg-type]

    def stop(self) -> None:
        if self.started:
            self.display.stop()


@contextlib.contextmanager
def shown(command: str, stream: TextIO | None = None) -> Iterator[None]:
    """Progress shown on `stream` (stderr) for the command's duration, when `wanted`."""
    stream = stream or sys.stderr
    if not wanted(stream):
        yield
        return
    with _own_descriptor(stream) as drawn_on:
        reporter = RichReporter(drawn_on, command)
        previous = progress.install(reporter)
        try:
            yield
        finally:
            progress.install(previous)
            reporter.stop()


@contextlib.contextmanager
def _own_descriptor(stream: TextIO) -> Iterator[TextIO]:
    """`stream` on a descriptor of its own (a `dup`), for the display's thread: while the main thread points
    descriptor 2 elsewhere for a moment (`core.yamlfast` silences rapidyaml's own parse errors), a frame drawn
    meanwhile still reaches the terminal, whole."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (tests' StringIO): nothing else writes to it
        yield stream
        return
    with os.fdopen(os.dup(fd), "w", encoding=getattr(stream, "encoding", None) or "utf-8", errors="replace") as own:
        yield own
