"""Reused plugin outcomes: a Kardinal Python plugin's CreateFlow answer, kept under a digest of everything
that plugin was given.

A warm re-render after a one-file change runs the same plugins with the same inputs as the render before it;
starting a sandboxed interpreter for each call is most of what such a call costs. Render is pure (SPEC §4.5):
a plugin that is not External gets no network, no clock it may rely on and no state beyond its request, so its
answer is a function of:
- its code: the plugin directory's content digest (`plugin_digest`, which also holds requirements.txt);
- the interpreter and libraries it runs on: devlane's own (the cache kind names devlane's code and Python
  version) or the virtualenv `plugins prepare` built (its ready marker, rewritten by every rebuild);
- its request document (flow, args, workloads, services and ConfigMaps sent), the environment it is given
  (`DEVLANE_*` and PATH), and the sandbox and limits it ran under (a weaker sandbox is another key, never a hit
  for a stronger one).

Not reused: exec and gRPC plugins (they may call any program of the machine), built-ins (they run in process
already), External plugins (provision records replay them), a call whose args hold a secret (the cache
directory may be readable by the other users of a shared sidecar), any call while the operator lets plugins
write a directory of the machine (`$DEVLANE_SANDBOX_WRITABLE`: what they leave there is wanted) and any
failure. A reused outcome still
passes the sandbox policy of this run and every output check a live answer passes; a damaged or foreign entry
is a miss.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from ..core import code_version
from ..core.cache import Cache
from ..core.jsonio import dumps_compact
from ..core.version import VERSION
from ..errors import Problem
from .choose import Choice
from .confine import confinement, granted_paths
from .invoke import Invocation, Outcome, request_document
from .resolve import plugin_digest
from .runtimes import Runtime
from .sandbox import ENV_PREFIX, secret_values
from .state import input_hash, outcome_result, recorded_outcome
from .supply import plugin_cache
from .supply.venvs import READY, requirements_hash


@functools.cache
def cache_kind() -> str:
    """The cache directory of outcomes, named by devlane's version, its Python and the distributions installed
    beside it (a plugin without requirements runs on that interpreter and may import any of them), and the code
    that talks to a plugin and reads its answer (the adapter and the host): any of them changing starts afresh."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{VERSION}\0{sys.version}\0".encode())
    digest.update("\0".join(_distributions()).encode())
    digest.update(code_version.of_packages("renderer.sdk", "renderer.host").encode())
    return f"plugin-outcome-{digest.hexdigest()}"


def _distributions() -> list[str]:
    """The distributions on devlane's import path, by their metadata directories' names (which hold name and
    version): what importlib.metadata lists, without importing it."""
    found = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # not a directory (a zip), or gone
            continue
        found += [f"{entry}/{n}" for n in names if n.endswith((".dist-info", ".egg-info"))]
    return sorted(found)


def _interpreter(choice: Choice) -> str | None:
    """What names the interpreter and libraries the plugin runs on; None when that cannot be told. A virtualenv is
    named by its ready marker, which `plugins prepare` writes anew (a new file, renamed into place) on each build."""
    digest = requirements_hash(choice.source.path)
    if digest is None:
        return "devlane"  # devlane's own interpreter: named by the cache kind
    try:
        st = os.stat(plugin_cache.venv_path(digest) / READY)
    except OSError:
        return None
    return f"venv {digest} {st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"


def outcome_key(rt: Runtime, choice: Choice, inv: Invocation,
                digest: Callable[[Path], str] = plugin_digest) -> str | None:
    """The key of this call's outcome, or None when it is not one to reuse (`digest`: the plugin host's, which reads
    a plugin's directory once per command)."""
    if rt.kind != "kardinal-python" or rt.network or inv.operation != "CreateFlow":
        return None
    if secret_values(inv.args, choice.manifest.args_schema) or granted_paths():
        return None
    interpreter = _interpreter(choice)
    if interpreter is None:
        return None
    given = input_hash(choice.name, digest(choice.source.path), request_document(inv, 0))
    got = confinement()
    sandbox = [got.method, *((la.name, la.enforced) for la in got.layers)]
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIX) or k == "PATH")
    return hashlib.sha256(dumps_compact([given, interpreter, sandbox, asdict(rt.limits), env]).encode()).hexdigest()


def _message_row(row: object) -> bool:
    """Whether `row` is a message as `Problem.as_row` wrote it (its place is checked by `Where` itself)."""
    return (isinstance(row, list) and len(row) == 5 and isinstance(row[0], str) and isinstance(row[1], dict)
            and isinstance(row[2], (str, type(None))) and row[3] in ("error", "warning", "info")
            and isinstance(row[4], str))


class Outcomes:
    """The reused outcomes of one command, in its cache."""

    def __init__(self, cache: Cache):
        self.cache = cache

    def get(self, key: str) -> Outcome | None:
        """The outcome stored under `key`, checked as a live reply is; None when missing or not one."""
        value = self.cache.get(cache_kind(), key)
        if not isinstance(value, dict):
            return None
        try:
            rows = value["messages"]
            if not all(_message_row(row) for row in rows):
                return None
            return replace(recorded_outcome(value["result"]), messages=[Problem.from_row(row) for row in rows])
        except (ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, outcome: Outcome) -> None:
        self.cache.put(cache_kind(), key, {"result": outcome_result(outcome),
                                           "messages": [p.as_row() for p in outcome.messages]})
