"""Run one pure function over shares of a list in forked processes, results back in order.

Parsing YAML is CPU-bound Python (PyYAML's constructor), so threads do not help and one core is the
floor; a forked child starts in a millisecond with the parent's imports and the inputs already in
memory, where a spawned one would pay the interpreter's start-up and a copy of every input. The
parent works on the first share itself while the children do the others.

A child never reports an error: it returns bytes per item, or None for "do this one yourself", and on
any failure (an exception, a crash, a kill) the parent computes the whole share itself. So the results
are the same whether or not a child ran, and errors come from the parent, with its messages.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
_LEN = struct.Struct(">q")  # -1: None (the parent does that item)


def available_cpus() -> int:
    """Cores this process may run on: its affinity mask, within a cgroup v2 CPU quota when one is set."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    with contextlib.suppress(OSError, ValueError):
        with open("/sys/fs/cgroup/cpu.max") as handle:
            quota, period = handle.read().split()[:2]
        if quota != "max":
            count = min(count, max(1, int(int(quota) / int(period))))
    return max(1, count)


def can_fork() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def shares(sizes: Sequence[int], parts: int) -> list[range]:
    """Split indexes 0..len(sizes) into at most `parts` contiguous ranges of about equal total size."""
    total = sum(sizes)
    out: list[range] = []
    start = acc = 0
    for i, size in enumerate(sizes):
        acc += size
        if acc * parts >= total * (len(out) + 1) and len(out) < parts - 1:
            out.append(range(start, i + 1))
            start = i + 1
    out.append(range(start, len(sizes)))
    return [r for r in out if len(r)]


def fork_map(items: Sequence[T], share_of: list[range], work: Callable[[T], bytes | None],
             local: Callable[[range], None],
             then: Callable[[list[tuple[T, bytes | None]]], None] | None = None) -> list[bytes | None]:
    """`work(item)` for every item of `share_of[1:]` in one forked child per share, while `local(share_of[0])`
    runs here; the children's results, by item index (None: not done, for the parent to do). Each child calls
    `then` with its (item, result) pairs once it has sent them (to store them, say).

    A share whose child failed comes back as all None."""
    results: list[bytes | None] = [None] * len(items)
    children: list[tuple[int, int, range]] = []
    try:
        for share in share_of[1:]:
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child, which never returns
                os.close(read_end)
                _child(items, share, work, write_end, then)
            os.close(write_end)
            children.append((pid, read_end, share))
        local(share_of[0])
        for pid, read_end, share in children:
            data = _drain(read_end)
            _, status = os.waitpid(pid, 0)
            if status == 0:
                _unpack(data, share, results)
        children.clear()
    finally:
        for pid, read_end, _ in children:  # interrupted: stop the rest at once
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            with contextlib.suppress(OSError):
                os.close(read_end)
    return results


def _child(items: Sequence[T], share: range, work: Callable[[T], bytes | None], fd: int,
           then: Callable[[list[tuple[T, bytes | None]]], None] | None) -> None:  # pragma: no cover
    """Do `share` and send the results in one write at the end (the parent reads only once it is done)."""
    code = 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        done = [(items[i], work(items[i])) for i in share]
        data = memoryview(b"".join(_LEN.pack(-1) if out is None else _LEN.pack(len(out)) + out for _, out in done))
        while data:
            data = data[os.write(fd, data):]
        os.close(fd)
        if then is not None:
            then(done)
        code = 0
    except BaseException:  # any failure: the parent redoes the share
        pass
    finally:
        os._exit(code)


def _drain(fd: int) -> bytes:
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _unpack(data: bytes, share: range, results: list[bytes | None]) -> None:
    view, pos = memoryview(data), 0
    for i in share:
        if pos + _LEN.size > len(view):
            return
        (length,) = _LEN.unpack_from(view, pos)
        pos += _LEN.size
        if length >= 0:
            results[i] = bytes(view[pos:pos + length])
            pos += length
