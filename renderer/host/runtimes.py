"""Runtimes: one plugin contract, one call (`Runtime.exchange`: ResourceList bytes in, bytes out), three
ways to move it.

- `ProcessRuntime`: a plugin process per call. An exec plugin's own command, or, for a Kardinal
  Python plugin, `python -m renderer.sdk.kardinal PLUGIN_DIR` in the plugin's prepared virtualenv;
- `InProcessRuntime`: built-in plugins (first-party, in `plugins/`) through the same Kardinal
  adapter, in devlane's own process;
- `GrpcRuntime`: a plugin server (Kplug / CNPG-I style) that receives the same ResourceList as bytes.

The operations (`create_flow`, `delete_flow`, ...) are written once, on the base class, over
`exchange` and the one `ReplyReader`: the orchestration never knows which runtime ran, and the
conformance test's byte-identity holds by construction.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import sys
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..core import deadline
from ..errors import PluginError, PluginTimeout, Problem, Where, fail
from ..protocol.krm import ID, dumps, strip_internal
from ..sdk.kardinal import Failure, KardinalHandler, load_module
from .confine import Confinement, Jail, SandboxPolicy, confinement
from .invoke import Invocation, Outcome, ReplyReader, outcome_from_reply, request_document
from .manifest import OPERATION_FUNCTION, Manifest
from .process import reply_of, spawn
from .resolve import PluginSource, is_builtin_dir
from .sandbox import plugin_env
from .supply.venvs import python_for

Kind = Literal["kardinal-python", "builtin", "exec", "grpc"]
DEVLANE_ROOT = Path(__file__).resolve().parents[2]  # the directory holding the `renderer` package
PYTHON_NAMES = ("python", "python3")
ADAPTER = ("-m", "renderer.sdk.kardinal")


@dataclass(frozen=True)
class Answer:
    """A runtime's raw reply, and what the plugin wrote on stderr meanwhile."""

    data: bytes
    stderr: str = ""


class Runtime(ABC):
    """A plugin ready to be called; `close()` stops whatever it started."""

    kind: Kind

    def __init__(self, source: PluginSource, manifest: Manifest, network: bool = False,
                 sandbox: SandboxPolicy | None = None):
        self.source = source
        self.manifest = manifest
        self.network = network  # only External plugins in provision / delete get the network
        self.sandbox = sandbox or SandboxPolicy()
        self.limits = self.sandbox.limits.for_plugin(manifest.limits, source.origin)

    def confined(self, label: str, where: Where) -> Confinement:
        """The sandbox for this plugin's processes; an error when the policy refuses the layers missing here."""
        got = confinement()
        refusal = self.sandbox.admit(got, self.source.origin)
        if refusal is not None:
            raise fail(f"{label} was not run: {refusal.rule}, and this machine cannot enforce "
                       + "; ".join(refusal.missing), where, refusal.hint(got), "sandbox-required", PluginError)
        return got

    def label(self, operation: str) -> str:
        """The call as the plugin's author knows it."""
        if self.manifest.runtime == "kardinal-python":
            return OPERATION_FUNCTION.get(operation, operation)
        return f"{operation} of {self.manifest.name}"

    @abstractmethod
    def exchange(self, inv: Invocation, data: bytes, timeout: float) -> Answer:
        """Move one request document to the plugin and its reply back."""

    def close(self) -> None:
        return None

    def call(self, inv: Invocation, timeout: float) -> tuple[dict, ReplyReader]:
        """The plugin's reply to `inv`, parsed, with the reader that validates the rest of it."""
        answer = self.exchange(inv, dumps(request_document(inv, timeout)), timeout)
        reader = ReplyReader(inv, self.label(inv.operation), answer.stderr)
        return reader.parse(answer.data), reader

    # -- operations, written once ----------------------------------------------------------------------

    def create_flow(self, inv: Invocation, timeout: float) -> Outcome:
        doc, reader = self.call(inv, timeout)
        return outcome_from_reply(inv, doc, reader)

    def delete_flow(self, inv: Invocation, timeout: float) -> list[Problem]:
        doc, reader = self.call(inv, timeout)
        return reader.results(doc) + reader.stderr_info()

    def _answers(self, inv: Invocation, timeout: float) -> list[Problem]:
        if not self.manifest.has(inv.operation):
            return []
        doc, reader = self.call(inv, timeout)
        return reader.answers(doc, f"fix the args in the plugin definition of {inv.instance} ({self.manifest.name})")

    def validate_args(self, inv: Invocation, timeout: float) -> list[Problem]:
        return self._answers(inv, timeout)

    def validate_change(self, inv: Invocation, timeout: float) -> list[Problem]:
        return self._answers(inv, timeout)

    def default_args(self, inv: Invocation, timeout: float) -> dict:
        if not self.manifest.has("DefaultArgs"):
            return dict(inv.args)
        doc, reader = self.call(inv, timeout)
        reader.results(doc)
        args = ((doc.get("functionConfig") or {}).get("spec") or {}).get("args")
        if not isinstance(args, dict):
            raise reader.error("DefaultArgs must return functionConfig.spec.args as an object")
        return args

    def lifecycle_hook(self, inv: Invocation, timeout: float) -> list[dict]:
        if not self.manifest.has("LifecycleHook"):
            return [copy.deepcopy(o) for o in inv.objects]
        doc, reader = self.call(inv, timeout)
        reader.results(doc)
        by_id = {}
        for item in doc["items"]:
            ident = ((item.get("metadata") or {}).get("annotations") or {}).get(ID)
            if ident is not None:
                by_id[ident] = strip_internal(copy.deepcopy(item))
        return [by_id.get(str(i), copy.deepcopy(o)) for i, o in enumerate(inv.objects)]

    def transform(self, inv: Invocation, timeout: float) -> tuple[list[dict], list[Problem]]:
        """A pipeline stage: the objects, replaced by what comes back (kept ids: edits; new: additions)."""
        doc, reader = self.call(inv, timeout)
        messages = reader.results(doc)
        sent = {str(i) for i in range(len(inv.objects))}
        out = []
        for item in doc["items"]:
            ident = ((item.get("metadata") or {}).get("annotations") or {}).get(ID)
            if ident is not None and ident not in sent:
                raise reader.error(f"returned an item with unknown {ID} {ident!r}")
            out.append(strip_internal(copy.deepcopy(item)))
        return out, messages + reader.stderr_info()


def resolve_command(command: tuple[str, ...], plugin_dir: Path) -> list[str]:
    """Paths in `runtime.command` are relative to the plugin directory: every argument naming a file
    there (`python3 fn.py`, `./fn.sh`, `sh fn.sh`) resolves to it, since the process runs in a temporary
    working directory; other bare names use PATH.

    `python`/`python3` as the program means the interpreter devlane runs on (or the plugin's
    prepared virtualenv), so Python plugins can use devlane's SDK (`renderer.sdk`) wherever devlane
    is installed.
    """
    argv = list(command)
    if argv and argv[0] in PYTHON_NAMES:
        argv[0] = python_for(plugin_dir)
    root = plugin_dir.resolve()
    for i, part in enumerate(argv):
        if not part or Path(part).is_absolute():
            continue
        candidate = (plugin_dir / part).resolve()
        inside = candidate == root or root in candidate.parents
        if inside and (candidate.is_file() or (("/" in part or i == 0) and candidate.exists())):
            argv[i] = str(candidate)
    return argv


def sdk_env(argv: list[str]) -> dict[str, str]:
    """Python plugins run on devlane's interpreter can import its SDK (`renderer.sdk`), installed or not."""
    return {"PYTHONPATH": str(DEVLANE_ROOT)} if argv and argv[0] == sys.executable else {}


class ProcessRuntime(Runtime):
    """One plugin process per call (exec, or a Kardinal module through the adapter)."""

    def __init__(self, source: PluginSource, manifest: Manifest, network: bool = False,
                 sandbox: SandboxPolicy | None = None):
        super().__init__(source, manifest, network, sandbox)
        if manifest.runtime == "kardinal-python":
            self.kind = "kardinal-python"
            self.argv = [python_for(source.path, source.name), *ADAPTER, str(source.path)]
            self.env = {"PYTHONPATH": str(DEVLANE_ROOT)}  # to find the adapter; it drops this before loading
            self.shown = ""
        else:
            self.kind = "exec"
            self.argv = resolve_command(manifest.command, source.path)
            self.env = {"DEVLANE_PLUGIN_DIR": str(source.path), **sdk_env(self.argv)}
            self.shown = f" ({' '.join(manifest.command)})"

    def exchange(self, inv: Invocation, data: bytes, timeout: float) -> Answer:
        where = Where(plugin=inv.instance)
        label = self.label(inv.operation) + self.shown
        self.confined(label, where)
        try:
            done = spawn(self.argv, data, timeout, env=self.env, network=self.network, limits=self.limits,
                         readable=[str(self.source.path)])
        except OSError as exc:
            raise fail(f"{label} could not start: {exc}", where, "check spec.runtime.command in plugin.yaml (paths are "
                       "relative to the plugin directory, and scripts need the executable bit)", "plugin-exec",
                       PluginError) from None
        return Answer(reply_of(done, label, timeout, where), done.stderr)


_IN_PROCESS = threading.Lock()
_MODULES: dict[Path, Any] = {}


class InProcessRuntime(Runtime):
    """Built-in plugins: the Kardinal adapter in devlane's process. Calls are serialized, because stray
    prints are redirected process-wide while a call runs."""

    kind = "builtin"

    def exchange(self, inv: Invocation, data: bytes, timeout: float) -> Answer:
        request = json.loads(data)
        plugin_dir = self.source.path
        stray = io.StringIO()
        # A built-in abandoned past an earlier command's deadline may still hold the lock (nothing can stop a
        # thread): wait for it no longer than this call's own timeout, then say so (a library caller that renders
        # again in the same process must not stall for as long as that built-in runs).
        if not _IN_PROCESS.acquire(timeout=max(timeout, 0.001)):
            raise fail(f"{self.label(inv.operation)} timed out after {timeout:g} s before it started: another built-in "
                       "plugin of this process is still running (one left behind by an earlier command's deadline)",
                       Where(plugin=inv.instance), "run each render in its own process, as the devlane command "
                       "does, or raise --plugin-timeout", "plugin-timeout", PluginTimeout)
        try:
            with contextlib.redirect_stdout(stray):
                try:
                    if plugin_dir not in _MODULES:
                        name = f"devlane_builtin_{plugin_dir.name.replace('-', '_').replace('.', '_')}"
                        _MODULES[plugin_dir] = load_module(str(plugin_dir), self.source.name, name, keep_path=False)
                    reply = KardinalHandler(_MODULES[plugin_dir], str(plugin_dir))(inv.operation, request)
                except Failure as failure:
                    reply = failure.reply(request)
        finally:
            _IN_PROCESS.release()
        return Answer(dumps(reply), stray.getvalue())


class GrpcRuntime(Runtime):
    """A plugin server started from `command` (or dialled at `address`) once per render, probed first."""

    kind = "grpc"

    def __init__(self, source: PluginSource, manifest: Manifest, network: bool = False,
                 sandbox: SandboxPolicy | None = None):
        super().__init__(source, manifest, network, sandbox)
        self._client = None
        self._context = None
        self._lock = threading.Lock()

    def client(self, instance: str):
        with self._lock:
            if self._client is None:
                from .grpc_client import GrpcPlugin  # grpc stays off the import path until a gRPC plugin runs

                command = resolve_command(self.manifest.command, self.source.path) if self.manifest.command else None
                env = {**plugin_env(str(self.source.path)), **sdk_env(command or [])}
                jail = None
                if command:  # the server talks over a unix socket, which works inside its own network namespace
                    confined = self.confined(self.label("start"), Where(plugin=instance))

                    def jail(argv: list[str], private: str) -> Jail:
                        return confined.wrap(argv, writable=[private], network=self.network, limits=self.limits,
                                             readable=[str(self.source.path)])
                self._context = GrpcPlugin(instance, command=command, address=self.manifest.address,
                                           cwd=self.source.path, env=env,
                                           start_timeout=self.manifest.start_timeout, jail=jail)
                self._client = self._context.__enter__()
            return self._client

    def exchange(self, inv: Invocation, data: bytes, timeout: float) -> Answer:
        try:
            with deadline.bounded():  # the call's gRPC deadline ends it by the command's at the latest, naming it
                return Answer(self.client(inv.instance).invoke(inv.operation, data, timeout))
        except PluginTimeout:
            self.close()  # like an exec plugin on timeout: stop what we started
            raise

    def close(self) -> None:
        if self._context is not None:
            context, self._context, self._client = self._context, None, None
            context.__exit__(None, None, None)


def make_runtime(source: PluginSource, manifest: Manifest, network: bool = False,
                 sandbox: SandboxPolicy | None = None) -> Runtime:
    """The runtime for a plugin; `network` only for External plugins run by provision or delete."""
    if manifest.runtime == "grpc":
        return GrpcRuntime(source, manifest, network, sandbox)
    if manifest.runtime == "kardinal-python" and (source.origin == "builtin" or is_builtin_dir(source.path)):
        return InProcessRuntime(source, manifest)
    return ProcessRuntime(source, manifest, network, sandbox)
