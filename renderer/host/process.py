"""Plugin processes: start one call, bound what it may write, kill its whole process group, and read
what a finished process means.

Every process-based runtime (exec, and kardinal-python through `renderer.sdk.kardinal`) goes through
`spawn` and `reply_of`, so a crash, a timeout or an oversized reply reads the same whatever ran.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections import deque
from dataclasses import dataclass
from typing import IO

import yaml

from ..errors import PluginError, PluginTimeout, Where, fail
from ..protocol.krm import MAX_MESSAGE_BYTES
from . import sandbox

STDERR_KEEP_BYTES = 1024 * 1024  # only the end of a plugin's stderr is kept
TAIL_LINES = 20
KILL_GRACE_SECONDS = 2.0
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
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


@dataclass(frozen=True)
class Finished:
    """How one plugin process ended."""

    returncode: int
    stdout: bytes
    stderr: str
    timed_out: bool
    overflow: bool


def spawn(argv: list[str], data: bytes, timeout: float, env: dict[str, str] | None = None,
          limit: int | None = None, network: bool = False) -> Finished:
    """Run one plugin process: its own session and temp working directory, `data` on stdin.

    Stdout is captured up to `limit` (the process group is killed beyond it), only the tail of
    stderr is kept, and on timeout the whole process group gets SIGTERM, then SIGKILL. Without
    `network` (render), the process gets its own network namespace where the OS allows it.
    """
    limit = MAX_MESSAGE_BYTES if limit is None else limit
    tmp = tempfile.mkdtemp(prefix="devlane-plugin-")
    try:
        proc = subprocess.Popen(sandbox.sandboxed_argv(argv, network=network), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp,
                                env={**sandbox.plugin_env(tmp), **(env or {})}, start_new_session=True, close_fds=True)
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

        threads = [threading.Thread(target=t, daemon=True) for t in (write_stdin, read_stdout)]
        threads.append(threading.Thread(target=err.drain, args=(proc.stderr,), daemon=True))
        for t in threads:
            t.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            stop_group(proc)
        # Whatever the plugin left running in its session goes too: render must leave nothing behind.
        signal_group(proc.pid, signal.SIGKILL)
        for t in threads:
            t.join(timeout=5)
        return Finished(proc.returncode, bytes(out), err.text(), timed_out, overflow.is_set())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _result_lines(stdout: bytes) -> str:
    """The messages a failing KRM function left in its reply's `results`, one line each."""
    try:
        doc = json.loads(stdout) if stdout.strip().startswith(b"{") else yaml.safe_load(stdout)
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
    if done.timed_out:
        raise fail(f"{label} timed out after {timeout:g} s; the plugin's whole process group was killed" + tail,
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
