"""The command's deadline (`--timeout`, the Argo CD CMP's budget): it bounds every stage of a command, the ones
in devlane's own process included, as a Go context's deadline bounds a request.

It stops a command two ways:

- cooperatively, for every caller (the library API included): `stage` at the pipeline's stage boundaries and
  `check` in its long loops (loading files, building the model, copying workloads, scanning values, emitting
  objects). A timer thread raises a flag at the deadline, so a check costs a context-variable read;
- a hard stop for one long step that reaches no check, only where devlane owns the main thread (the CLI, through
  `alarms`): SIGALRM just after the deadline raises `TimedOut` wherever Python is (a plugin call or a lock's wait
  that ends at the deadline by itself says so first, naming itself). CPython runs a signal handler between
  bytecodes, and its C code that can run long checks for signals: `re` every 4,096 steps of a match (so a
  backtracking pattern is stopped too), PyYAML's C parser through its Python constructors, waits on locks, pipes
  and processes. What it cannot stop is one C call that never checks (a huge `str.replace`), which is linear.

`TimedOut` is a BaseException: it unwinds through every `except Exception` and `except DevlaneError` of the stages
(a stage that collects problems must not turn it into one more and go on), and the command's edge (the outermost
`Session`) turns it into a `RenderTimeout` naming the budget. `committing()` guards the swap of the output into
place: the alarm (and, in the CLI, SIGINT / SIGTERM) waits until it is done, so the previous output stays whole or
the new one is complete.
"""

from __future__ import annotations

import contextlib
import contextvars
import signal
import threading
import time
from collections.abc import Callable, Iterator

from ..errors import Problem, RenderTimeout, Where
from . import progress

TIMEOUT_FLAG = "--timeout"


class TimedOut(BaseException):
    """The command's deadline passed; `error()` is what the user reads."""

    def __init__(self, deadline: Deadline):
        super().__init__(deadline.message())
        self.deadline = deadline

    def error(self) -> RenderTimeout:
        return self.deadline.error()


class Deadline:
    """`seconds` from `started` (time.monotonic()), set by `by` (the flag or setting the user can raise)."""

    def __init__(self, seconds: float, started: float | None = None, by: str = TIMEOUT_FLAG):
        self.seconds = seconds
        self.at = (time.monotonic() if started is None else started) + seconds
        self.by = by
        self.stage = ""  # the stage running, named in the message
        self.passed = False  # set by the timer at the deadline: what `check` reads
        self._timer: threading.Timer | None = None
        self._token: contextvars.Token | None = None
        self._outer: Deadline | None = None
        self._told = False  # `on_expiry` ran

    def left(self) -> float:
        return self.at - time.monotonic()

    def message(self) -> str:
        where = f" while {self.stage}" if self.stage else ""
        return f"timed out after {self.seconds:g} s{where}: the whole command's budget ({self.by}) ran out; " \
               "nothing was written"

    def error(self) -> RenderTimeout:
        return RenderTimeout(Problem(self.message(), Where(), f"raise {self.by}, or make the render faster "
                                     "(--debug shows where it stopped)", code="render-timeout"))

    # -- in force for one command ----------------------------------------------------------------------------

    def enter(self) -> None:
        """In force for the caller's context (and the alarm, where `alarms` is on) until `leave`; a deadline already
        in force that ends earlier stays the one checked (a command's second session does not extend it)."""
        self._outer = _current.get()
        effective = self if self._outer is None or self.at < self._outer.at else self._outer
        self._token = _current.set(effective)
        self._timer = threading.Timer(max(0.0, self.left()), self._pass)
        self._timer.daemon = True
        self._timer.start()
        _rearm()

    def leave(self) -> bool:
        """Out of force; True when no deadline is left in force (this was the command's outermost)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._token is not None:
            try:
                _current.reset(self._token)
            except (ValueError, RuntimeError):  # left out of order, or from another context
                _current.set(self._outer)
            self._token = None
        _rearm()
        return _current.get() is None

    def _pass(self) -> None:
        self.passed = True


_current: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("devlane_deadline", default=None)


def current() -> Deadline | None:
    """The deadline in force for the caller (None: no budget)."""
    return _current.get()


def check() -> None:
    """In a long loop: stop when the deadline has passed (a flag read; without a deadline, a context read)."""
    d = _current.get()
    if d is not None and d.passed:
        _expire(d)


def stage(name: str) -> None:
    """At a stage boundary: name the stage for the message (and the progress display), and stop when the deadline
    has passed (exactly)."""
    progress.stage(name)
    d = _current.get()
    if d is not None:
        if d.passed or time.monotonic() >= d.at:  # it ran out in the stage before: that one is named
            _expire(d)
        d.stage = name


def _expire(d: Deadline) -> None:
    d.passed = True
    hook = _on_expiry
    if hook is not None and not d._told:
        d._told = True
        hook()
    raise TimedOut(d)


# --------------------------------------------------------------------------------------------------
# The hard stop (SIGALRM) and the commit guard

ALARM_LATE = 0.25  # the alarm comes this long after the deadline: what ends at it by itself (a lock's wait, a
# plugin's timer, a check) says so first, in its own words; the alarm is for the step that would not end
BOUNDED_GRACE = 5.0  # how long past the deadline the alarm waits for `bounded` work (its kill grace is 2 s)
ALARM_RETRY = 0.1
_bounded = 0  # `bounded` blocks running, in any thread
_bounded_lock = threading.Lock()
_bounded_ended = float("-inf")  # when the last `bounded` block ended (time.monotonic())
_alarms = False
_on_expiry: Callable[[], None] | None = None  # what the CLI does at once when the deadline passes (kill plugins)
_shield = 0  # depth of `committing()`
_deferred: list[Callable[[], None]] = []  # what a signal asked while the output was being swapped in


@contextlib.contextmanager
def alarms(on_expiry: Callable[[], None]) -> Iterator[None]:
    """For the length of the block, SIGALRM raises `TimedOut` at the deadline in force, wherever the main thread is,
    after `on_expiry` (the CLI kills every plugin process group). Only for a caller that owns the main thread (the
    handler and the timer are the process's): elsewhere the cooperative checks alone bound the command."""
    global _alarms, _on_expiry
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    _alarms, _on_expiry = True, on_expiry
    try:
        _rearm()
        yield
    finally:
        _alarms, _on_expiry = False, None
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _rearm() -> None:
    """The process's alarm set to just after the deadline in force (or off), from the main thread."""
    if not _alarms or threading.current_thread() is not threading.main_thread():
        return
    d = _current.get()
    signal.setitimer(signal.ITIMER_REAL, 0 if d is None else max(d.left() + ALARM_LATE, 0.001))


def _on_alarm(_signum: int, _frame: object) -> None:
    d = _current.get()
    if d is None or _shield:  # no budget any more, or the output is being swapped in: that finishes
        return
    if d.left() > 0:  # early: the deadline in force changed meanwhile
        _rearm()
        return
    # A plugin call or a build ends by its own timer, naming itself, and its error unwinds to the command's edge
    # (which ends the deadline) in its own words
    if (_bounded or _bounded_ended >= d.at) and -d.left() < BOUNDED_GRACE:
        signal.setitimer(signal.ITIMER_REAL, ALARM_RETRY)
        return
    _expire(d)


@contextlib.contextmanager
def bounded() -> Iterator[None]:
    """Around work that has a timer of its own, set at or before the deadline (a plugin process, a build, a gRPC
    call): while any runs, the alarm lets it end by itself (within `BOUNDED_GRACE`), so the error the user reads is
    its own, naming the plugin or the input, and the command stops as that error unwinds it. One that ends past the
    deadline keeps that grace after it: its error is raised, after its sandbox and temporary directory are gone,
    outside the block."""
    global _bounded, _bounded_ended
    with _bounded_lock:
        _bounded += 1
    try:
        yield
    finally:
        with _bounded_lock:
            _bounded -= 1
            _bounded_ended = time.monotonic()  # in any thread: a plugin call's runs in the calls' pool


def defer(action: Callable[[], None]) -> bool:
    """Inside `committing()`: keep `action` (a signal handler's raise) for when the swap is done, and say so; outside,
    False (the caller acts now). For signal handlers of the main thread."""
    if not _shield:
        return False
    _deferred.append(action)
    return True


@contextlib.contextmanager
def committing(name: str = "writing the output") -> Iterator[None]:
    """The output swapped into place: the deadline is checked before, then neither the alarm nor a deferred signal
    interrupts it, so it completes or leaves the previous output (staging is bounded work: it runs inside too)."""
    global _shield
    stage(name)
    _shield += 1
    try:
        yield
    finally:
        _shield -= 1
        if not _shield and _deferred:
            pending = list(_deferred)
            _deferred.clear()
            for action in pending:
                action()
