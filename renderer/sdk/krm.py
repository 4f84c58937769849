"""Python SDK for exec (KRM function) plugins.

An exec plugin is any executable that reads one `ResourceList` on stdin and writes it back on
stdout (see `renderer/protocol/krm.py` for the document devlane sends):

    #!/usr/bin/env python3
    from renderer.sdk.krm import run

    def handler(resource_list: dict) -> dict:
        for item in resource_list["items"]:
            ...
        return resource_list

    run(handler)

A Kardinal-style module (`create_flow`, `delete_flow` and the optional `validate_args`,
`default_args`, `validate_change`, `lifecycle_hook`) becomes a handler with `kardinal(module)`,
usable by `run` (exec) and by `renderer.sdk.serve` (gRPC): `run(kardinal(my_module))`. It is the
same adapter the kardinal-python runtime uses, so a module gives the same results whichever
runtime runs it.

Only the standard library is needed (YAML input needs PyYAML); failures of the handler become
`error` results in the reply, never a traceback on stdout.
"""

from __future__ import annotations

import inspect
import sys
import traceback
from collections.abc import Callable
from typing import Any

from ..protocol.krm import dumps, error_reply, operation_of
from .channel import read_resource_list, reply_channel
from .kardinal import kardinal

__all__ = ["error_reply", "kardinal", "read_resource_list", "run"]


def _wants_operation(handler: Callable) -> bool:
    """True when `handler` takes (operation, resource_list) rather than (resource_list)."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return False
    required = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is p.empty]
    return len(required) >= 2


def run(handler: Callable[..., dict], *, stdin: Any = None, stdout: Any = None, exit: bool = True) -> int:
    """Run a KRM function: ResourceList on stdin -> `handler` -> ResourceList (JSON) on stdout.

    `handler(resource_list) -> resource_list`, or `handler(operation, resource_list)` (the operation
    is read from `functionConfig.spec.operation`), as `kardinal(...)` returns. While the handler
    runs, anything it prints goes to stderr, so stray output cannot corrupt the reply.

    Exit status 0 when the handler returned (its `results` carry any errors, which devlane reads);
    when it raises, or the input is not a ResourceList, the reply holds one `error` result and the
    status is 1. With `exit=False` the status is returned instead of exiting (for tests).
    """
    in_stream = stdin if stdin is not None else sys.stdin.buffer
    request: dict | None = None
    with reply_channel(stdout) as write:
        try:
            request = read_resource_list(in_stream.read())
            reply = handler(operation_of(request), request) if _wants_operation(handler) else handler(request)
            if not isinstance(reply, dict):
                raise TypeError(f"the handler returned {type(reply).__name__}, expected a ResourceList dict")
            data, status = dumps(reply), 0
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            data, status = dumps(error_reply(request, f"{type(exc).__name__}: {exc}")), 1
        write(data)
    if exit:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.exit(status)
    return status
