"""The plugin process's side of stdin/stdout: read one ResourceList, write one reply, and keep stray
output (prints, `os.write(1, ...)`, C extensions) off the reply channel."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any


def read_resource_list(data: bytes | str) -> dict:
    """Parse a ResourceList given as JSON or YAML."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        try:
            import yaml
        except ImportError:
            raise ValueError("the input is not JSON, and reading YAML needs PyYAML") from None
        doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or doc.get("kind") != "ResourceList":
        raise ValueError("the input is not a ResourceList (kind: ResourceList)")
    if doc.get("items") is None:
        doc["items"] = []
    return doc


@contextlib.contextmanager
def reply_channel(stdout: Any = None) -> Iterator[Callable[[bytes], None]]:
    """Yield a function that writes the reply; meanwhile stdout is stderr.

    Without `stdout` (a real plugin process), fd 1 is moved to a private descriptor before any
    plugin code runs, so even C code writing to fd 1 cannot corrupt the reply.
    """
    if stdout is not None:
        with contextlib.redirect_stdout(sys.stderr):
            yield lambda data: _write_stream(stdout, data)
        return
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(line_buffering=True)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield lambda data: _write_fd(private, data)
    finally:
        os.close(private)


def _write_stream(stream: Any, data: bytes) -> None:
    target = getattr(stream, "buffer", stream)
    try:
        target.write(data)
    except TypeError:  # a text stream
        target.write(data.decode("utf-8"))
    with contextlib.suppress(Exception):
        target.flush()


def _write_fd(fd: int, data: bytes) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
