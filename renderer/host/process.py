"""Plugin processes: start one call, bound what it may write, kill its whole process group, and read
what a finished process means.

Every process-based runtime (exec, and kardinal-python through `renderer.sdk.kardinal`) goes through
`spawn` and `reply_of`, so a crash, a timeout or an oversized reply reads the same whatever ran.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import IO, Any

import yaml

from ..core import deadline, tempdirs
from ..errors import DevlaneError, PluginError, PluginTimeout, Problem, Where, fail
from ..protocol.krm import MAX_MESSAGE_BYTES
from . import confine, sandbox

STDERR_KEEP_BYTES = 1024 * 1024  # only the end of a plugin's stderr is kept
TAIL_LINES = 20
KILL_GRACE_SECONDS = 2.0
DRAIN_GRACE = 0.5  # how long the rest of a dead process's output may take to be read
TIMEOUT_HINT = ("raise the limit with --plugin-timeout SECONDS (or spec.timeoutSeconds in plugin.yaml), or make the "
                "plugin faster; plugins must not wait on the network during render")


class BoundedTail:
    """Keeps only the last `limit` bytes of a stream, so a plugin's endless output costs bounded memory.

    One thread feeds it (`drain`); others may read `text()` at any time.
    """

    def __init__(self, limit: int = STDERR_KEEP_BYTES) -> None:
        self.limit = limit
        self.total = 0  # bytes seen
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        with self._lock:
            self.total += len(chunk)
            if len(chunk) >= self.limit:
                self._chunks.clear()
                chunk = chunk[-self.limit :] if self.limit else b""
                self._size = 0
            self._chunks.append(chunk)
            self._size += len(chunk)
            while self._size > self.limit:
                over = self._size - self.limit
                head = self._chunks[0]
                if len(head) <= over:
                    self._chunks.popleft()
                    self._size -= len(head)
                else:
                    self._chunks[0] = head[over:]
                    self._size -= over

    def drain(self, stream: IO[bytes], chunk_size: int = 1 << 16) -> None:
        """Read `stream` to EOF (a thread target); read errors end the drain quietly."""
        read = getattr(stream, "read1", stream.read)
        with contextlib.suppress(OSError, ValueError):
            while chunk := read(chunk_size):
                self.feed(chunk)

    @property
    def truncated(self) -> bool:
        return self.total > self._size

    @property
    def data(self) -> bytes:
        with self._lock:
            return b"".join(self._chunks)

    def text(self) -> str:
        """The kept bytes as text; when the start was cut, from the first whole line on."""
        raw = self.data
        if self.truncated and b"\n" in raw:
            raw = raw[raw.index(b"\n") + 1 :]
        return raw.decode("utf-8", errors="replace")


def tail_text(text: str, title: str = "plugin stderr", lines: int = TAIL_LINES) -> str:
    """The last lines of a plugin's output, indented, for an error message ("" when there is none)."""
    tail = text.rstrip("\n").splitlines()[-lines:]
    if not tail:
        return ""
    body = "\n".join(f"  | {line}" for line in tail)
    return f"\n{title} (last {len(tail)} line{'' if len(tail) == 1 else 's'}):\n{body}"


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group, wait the grace period, then SIGKILL whatever is left of it."""
    signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_SECONDS)
    signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def exit_status(returncode: int) -> str:
    """How a process ended; a sandbox wrapper reports its plugin's death by signal N as status 128+N."""
    signum = -returncode if returncode < 0 else returncode - 128 if 128 < returncode <= 128 + 64 else 0
    if not signum:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    why = {"SIGKILL": " (out of memory, or over a limit of the sandbox: see plugins.limits)",
           "SIGXCPU": " (over its CPU-time limit: see plugins.limits.cpuSeconds)",
           "SIGXFSZ": " (over its file-size limit: see plugins.limits.fileSizeMiB)"}.get(name, "")
    return f"was killed by {name}{why}"


# --------------------------------------------------------------------------------------------------
# Starting and stopping every plugin process

_live: dict[int, subprocess.Popen] = {}  # pid (= process group id) -> process, while it may run
_live_lock = threading.RLock()  # reentrant: `stop_all` runs in a signal handler of a thread that may hold it
_stopping = threading.Event()
_requests: queue.Queue[tuple[list[str], dict[str, Any], Future]] = queue.Queue()
_launcher: threading.Thread | None = None


class Stopped(DevlaneError):
    """devlane is stopping (SIGINT / SIGTERM): no plugin process starts any more."""


def _launch_loop() -> None:
    while True:
        argv, kwargs, fut = _requests.get()
        try:
            proc = subprocess.Popen(argv, **kwargs)
        except BaseException as exc:
            fut.set_exception(exc)
            continue
        with _live_lock:  # registered here, so `stop_all` finds it even if the caller was interrupted meanwhile
            _live[proc.pid] = proc
        if _stopping.is_set():  # a stop raced with this start
            signal_group(proc.pid, signal.SIGKILL)
        fut.set_result(proc)


def launch(argv: list[str], **kwargs: Any) -> subprocess.Popen:
    """Start a plugin process in its own session, from one long-lived thread.

    The sandbox's parent-death signal belongs to the thread that forked it, so processes started
    from short-lived worker threads (a gRPC server outlives the call that started it) would die
    with their thread; the launcher thread lives as long as devlane. Registered until `forget`.
    """
    global _launcher
    if _stopping.is_set():
        raise Stopped(Problem("devlane is stopping; no plugin is started", code="interrupted"))
    with _live_lock:
        if _launcher is None or not _launcher.is_alive():
            _launcher = threading.Thread(target=_launch_loop, name="devlane-launcher", daemon=True)
            _launcher.start()
    fut: Future = Future()
    _requests.put((argv, {**kwargs, "start_new_session": True, "close_fds": True}, fut))
    return fut.result()


def forget(proc: subprocess.Popen) -> None:
    with _live_lock:
        _live.pop(proc.pid, None)


def stop_all() -> None:
    """SIGKILL every live plugin process group at once and refuse new ones (devlane got SIGINT / SIGTERM).

    Safe in a signal handler: no waiting; the threads that wait on those processes then return.
    """
    _stopping.set()
    with _live_lock:
        pids = list(_live)
    for pid in pids:
        signal_group(pid, signal.SIGKILL)


def resume() -> None:
    """Allow plugin processes again (for a library caller that handled the interrupt and goes on)."""
    _stopping.clear()


# --------------------------------------------------------------------------------------------------
# Nothing outlives the command: the CLI adopts its orphans and ends every child at exit

PR_SET_CHILD_SUBREAPER = 36
SWEEP_SECONDS = 2.0  # at exit, how long killed children may take to be reaped
_adopting = False


def adopt_orphans() -> None:
    """Make this process the reaper of every descendant orphaned under it (Linux `PR_SET_CHILD_SUBREAPER`), and end
    them all at exit (`_end_children`). For a process that is only its command (the CLI): a sandbox's setup killed
    in the instant before its parent-death signal is set (bwrap blocks forever on an eventfd then), or a plugin's
    process that escaped its group where no PID namespace or cgroup holds it, comes back to devlane instead of init."""
    global _adopting
    if _adopting or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):
        return
    _adopting = True
    atexit.register(_end_children)


def _children() -> list[int]:
    """Pids of this process's live children (zombies included: they are reaped below), from /proc."""
    me, out = os.getpid(), []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    with open(f"/proc/{entry.name}/stat", "rb") as fh:
                        stat = fh.read()
                    if int(stat[stat.rfind(b")") + 2:].split()[1]) == me:
                        out.append(int(entry.name))
    return out


def _end_children() -> None:
    """At exit: SIGKILL every child still there (with its process group when it leads one: a sandbox in its setup
    is still in its parent's group), reap it, and again for the orphans that killing adopts, until none is left."""
    tempdirs.remove_all()  # the sandbox probe and the temporary directories first, as their owner ends them
    stop = time.monotonic() + SWEEP_SECONDS
    own_group = os.getpgrp()
    while (kids := _children()) and time.monotonic() < stop:
        for pid in kids:
            with contextlib.suppress(OSError):
                if os.getpgid(pid) == pid != own_group:
                    os.killpg(pid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
        while time.monotonic() < stop:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.01)
                if not _children():
                    break


@dataclass(frozen=True)
class Finished:
    """How one plugin process ended."""

    returncode: int
    stdout: bytes
    stderr: str
    timed_out: bool
    overflow: bool
    held: bool = False  # its stdout was still open at the deadline, held by a process it started


def spawn(argv: list[str], data: bytes, timeout: float, env: dict[str, str] | None = None,
          limit: int | None = None, network: bool = False, limits: confine.Limits | None = None,
          readable: Sequence[str] = (), view: confine.View = "host") -> Finished:
    """Run one plugin process in the sandbox (`confine`): a fresh temp working directory, `data` on stdin.

    Stdout is captured up to `limit` (the process group is killed beyond it), only the tail of
    stderr is kept, and on timeout the whole process group gets SIGTERM, then SIGKILL; when the call
    ends everything it started is killed (PID namespace or cgroup). Without `network` (render),
    the process gets its own network namespace where the OS allows it.
    """
    limit = MAX_MESSAGE_BYTES if limit is None else limit
    tmp = tempdirs.make("plugin")
    jail = None
    try:
        jail = confine.confinement().wrap(argv, writable=[tmp], network=network, limits=limits or confine.Limits(),
                                          readable=readable, view=view)
        proc = launch(jail.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp,
                      env={**sandbox.plugin_env(tmp), **(env or {})})
        try:
            with deadline.bounded():  # its own timer ends it at the command's deadline at the latest, naming it
                return _unwrapped(_converse(proc, data, timeout, limit))
        finally:
            forget(proc)
    finally:
        if jail is not None:
            jail.end()
        tempdirs.removed(tmp)


# util-linux unshare re-raises the signal that killed its child on itself, and cannot for SIGKILL: it exits 1 with
# this line instead (an OOM kill in a memory cgroup, a CPU-time SIGKILL, devlane's own kill after a timeout).
_UNSHARE_LOST_SIGKILL = "unshare: sigprocmask unblock failed"


def _unwrapped(done: Finished) -> Finished:
    """`done` as the plugin ended, without what the sandbox wrapper did to the story."""
    text = done.stderr.rstrip("\n")
    last = text.rsplit("\n", 1)[-1]
    if done.returncode == 1 and last.startswith(_UNSHARE_LOST_SIGKILL):
        return replace(done, returncode=128 + signal.SIGKILL, stderr=text[: len(text) - len(last)])
    return done


def _converse(proc: subprocess.Popen, data: bytes, timeout: float, limit: int) -> Finished:
    """Feed the process `data`, read its reply until its stdout closes, all within `timeout` from now."""
    ends = time.monotonic() + timeout
    out = bytearray()
    err = BoundedTail()
    overflow = threading.Event()

    def write_stdin() -> None:
        try:
            proc.stdin.write(data)
        except OSError:  # the plugin died early; its exit status tells the story
            pass
        finally:
            with contextlib.suppress(OSError):
                proc.stdin.close()

    def read_stdout() -> None:
        while chunk := proc.stdout.read1(1 << 16):
            if len(out) + len(chunk) > limit:
                overflow.set()
                signal_group(proc.pid, signal.SIGKILL)
                return
            out.extend(chunk)

    writer = threading.Thread(target=write_stdin, daemon=True)
    reader = threading.Thread(target=read_stdout, daemon=True)
    drain = threading.Thread(target=err.drain, args=(proc.stderr,), daemon=True)
    for t in (writer, reader, drain):
        t.start()
    timed_out, finished = threading.Event(), threading.Event()

    def expire() -> None:  # SIGTERM the group, then SIGKILL after the grace period
        timed_out.set()
        signal_group(proc.pid, signal.SIGTERM)
        if not finished.wait(KILL_GRACE_SECONDS):
            signal_group(proc.pid, signal.SIGKILL)

    # A blocking wait returns the moment the plugin exits (Popen.wait(timeout) polls, up to 50 ms late);
    # the timer enforces the limit.
    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        proc.wait()
        # Whatever the plugin left running in its session goes with it (as its PID namespace or cgroup does): render
        # must leave nothing behind, and every sandbox ends the call the same way.
        signal_group(proc.pid, signal.SIGKILL)
        # The reply is whole once stdout is closed. A process that left the group (setsid) and still holds it, where
        # no PID namespace ended it, keeps the call running until its deadline, as Go's exec.Cmd.Wait does: then the
        # call timed out, whatever it wrote (and the cgroup, or the CLI's sweep of adopted orphans, ends that process).
        while reader.is_alive() and not _stopping.is_set() and (wait := ends - time.monotonic()) > 0:
            reader.join(min(wait, 0.05))
        reader.join(DRAIN_GRACE)  # what the pipe still holds, once the process is gone
    finally:
        finished.set()
        timer.cancel()
        signal_group(proc.pid, signal.SIGKILL)  # on every path: an interrupt or a deadline in the wait above
    held = reader.is_alive() and not overflow.is_set()
    for t in (writer, drain):
        t.join(DRAIN_GRACE)
    if _stopping.is_set():
        raise Stopped(Problem("devlane was interrupted; the plugin was killed", code="interrupted"))
    return Finished(proc.returncode, bytes(out), err.text(), timed_out.is_set() or held, overflow.is_set(), held)


def _result_lines(stdout: bytes) -> str:
    """The messages a failing KRM function left in its reply's `results`, one line each."""
    try:
        doc = json.loads(stdout) if stdout.strip().startswith(b"{") else yaml.load(stdout, Loader=yaml.CSafeLoader)
        messages = [r.get("message") for r in (doc or {}).get("results") or [] if isinstance(r, dict)]
    except Exception:
        return ""
    return "".join(f"\n  result: {m}" for m in messages if m)


def reply_of(done: Finished, label: str, timeout: float, where: Where) -> bytes:
    """The reply of a finished plugin process, or the error that says why there is none."""
    tail = tail_text(done.stderr)
    if done.overflow:
        raise fail(f"{label} wrote more than {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB of output on the protocol "
                   "channel" + tail, where, "return smaller objects; keep large data (seed scripts, fixtures) in "
                   "extension objects or in the image", "plugin-output-too-large", PluginError)
    if done.timed_out:  # whatever it wrote: a reply cut at the deadline is no reply
        held = " (it exited, but a process it started held its output open)" if done.held else ""
        raise fail(f"{label} timed out after {timeout:g} s{held}; the plugin's whole process group was killed" + tail,
                   where, TIMEOUT_HINT, "plugin-timeout", PluginTimeout)
    status = exit_status(done.returncode)
    if not done.stdout.strip():
        raise fail(f"{label} {status} without a reply (does the plugin call os._exit, or run out of memory?)" + tail,
                   where, "plugins report failure in their reply (a Kardinal plugin: by raising an exception); "
                   "rerun with --debug to see the plugin's output", "plugin-no-reply", PluginError)
    if done.returncode != 0:
        raise fail(f"{label} {status}" + _result_lines(done.stdout) + tail, where,
                   "a non-zero exit fails the render; rerun with --debug to see the plugin's output",
                   "plugin-exit", PluginError)
    return done.stdout
