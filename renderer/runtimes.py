"""Runtimes: one plugin contract (an `Invocation`), four ways to run it.

- kardinal-python: `main.py` in a subprocess through the shim (the plugin's prepared virtualenv);
- built-in: the same shim code in-process, for first-party plugins under `plugins/`;
- exec: any executable reading the ResourceList on stdin and writing it back on stdout (KRM);
- grpc: a plugin server (Kplug / CNPG-I style) that receives the same ResourceList as bytes.

Every runtime returns the same host data (`Outcome`, problems, objects), so the orchestration in
`run_plugins` never knows which one ran; the conformance test proves the results are identical.
"""

from __future__ import annotations

import copy
import json
import signal
import sys
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import yaml

from .errors import DevlaneError, Problem, Where, fail
from .invocation import ID, Invocation, Outcome, ReplyReader, encode, request_document, strip_internal
from .manifest import Manifest
from .plugins import (
    ABSENT,
    MAX_REPLY_BYTES,
    PluginCall,
    _stderr_tail,
    in_process_executor,
    run_create_flow,
    run_delete_flow,
    run_function,
    spawn,
)
from .sources import PluginSource


class Runtime(ABC):
    """A plugin ready to be called; `close()` stops whatever it started."""

    def __init__(self, source: PluginSource, manifest: Manifest, debug: bool = False, network: bool = False):
        self.source = source
        self.manifest = manifest
        self.debug = debug
        self.network = network  # only External plugins in provision / delete get the network

    @property
    def kind(self) -> str:
        return self.manifest.runtime

    @abstractmethod
    def create_flow(self, inv: Invocation, timeout: float) -> Outcome: ...

    @abstractmethod
    def delete_flow(self, inv: Invocation, timeout: float) -> list[Problem]: ...

    @abstractmethod
    def validate_args(self, inv: Invocation, timeout: float) -> list[Problem]: ...

    @abstractmethod
    def default_args(self, inv: Invocation, timeout: float) -> dict: ...

    @abstractmethod
    def validate_change(self, inv: Invocation, timeout: float) -> list[Problem]: ...

    @abstractmethod
    def lifecycle_hook(self, inv: Invocation, timeout: float) -> list[dict]: ...

    def close(self) -> None:
        return None


def _field_problems(value: Any, where: Where, label: str, manifest: Manifest) -> list[Problem]:
    """`[{"field": "a.b", "message": "..."}]` (CNPG-I ValidationError shape) -> error problems."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise fail(f"{label} returned {type(value).__name__}, expected a list of {{field, message}}", where,
                   'return [] when valid, else [{"field": "args.name", "message": "..."}]',
                   code="plugin-malformed")  # fmt: skip
    out = []
    for v in value:
        fld = str(v.get("field") or "args")
        if not fld.startswith("args"):
            fld = f"args.{fld}"
        out.append(Problem(f"{fld}: {v.get('message', 'invalid')}", where,
                           f"fix the args in the plugin definition of {where.plugin} ({manifest.name})",
                           code="plugin-args"))  # fmt: skip
    return out


class KardinalRuntime(Runtime):
    """`main.py` through the shim; `executor` decides subprocess (with the plugin's python) or in-process."""

    def __init__(self, source: PluginSource, manifest: Manifest, debug: bool = False, python: str | None = None,
                 in_process: bool = False, network: bool = False):  # fmt: skip
        super().__init__(source, manifest, debug, network)
        if in_process:
            self.executor = in_process_executor
        else:
            from .plugins import _shim_executor

            self.executor = _shim_executor(python or sys.executable, network)

    @property
    def kind(self) -> str:
        return "builtin" if self.executor is in_process_executor else "kardinal-python"

    def create_flow(self, inv: Invocation, timeout: float) -> Outcome:
        call = PluginCall(
            instance=inv.instance,
            flow_id=inv.flow_id,
            source=self.source,
            args=dict(inv.args),
            service_specs=[copy.deepcopy(s.get("spec") or {}) for s in inv.services],
            pod_specs=[copy.deepcopy(w["spec"]["template"]["spec"]) for w in inv.workloads],
            workload_specs=[copy.deepcopy(w.get("spec") or {}) for w in inv.workloads],
            dependents=list(inv.dependents),
            extensions=copy.deepcopy(inv.extensions),
        )
        return run_create_flow(call, timeout, self.debug, self.executor)

    def delete_flow(self, inv: Invocation, timeout: float) -> list[Problem]:
        return run_delete_flow(self.source, inv.instance, inv.flow_id, inv.state, timeout, inv.args, self.debug,
                               self.executor)  # fmt: skip

    def _fn(self, inv: Invocation, name: str, values: dict, timeout: float) -> Any:
        return run_function(self.source, inv.instance, name, values, timeout, self.debug, self.executor)

    def validate_args(self, inv: Invocation, timeout: float) -> list[Problem]:
        value = self._fn(inv, "validate_args", {"args": dict(inv.args)}, timeout)
        where = Where(plugin=inv.instance)
        return [] if value is ABSENT else _field_problems(value, where, "validate_args", self.manifest)

    def default_args(self, inv: Invocation, timeout: float) -> dict:
        value = self._fn(inv, "default_args", {"args": dict(inv.args)}, timeout)
        if value is ABSENT:
            return dict(inv.args)
        if not isinstance(value, dict):
            raise fail(f"default_args returned {type(value).__name__}, expected the args as an object",
                       Where(plugin=inv.instance), "return the args with defaults filled in",
                       code="plugin-malformed")  # fmt: skip
        return value

    def validate_change(self, inv: Invocation, timeout: float) -> list[Problem]:
        value = self._fn(inv, "validate_change", {"old_args": dict(inv.old_args or {}), "new_args": dict(inv.args)},
                         timeout)  # fmt: skip
        where = Where(plugin=inv.instance)
        return [] if value is ABSENT else _field_problems(value, where, "validate_change", self.manifest)

    def lifecycle_hook(self, inv: Invocation, timeout: float) -> list[dict]:
        out = []
        for obj in inv.objects:
            value = self._fn(inv, "lifecycle_hook", {"obj": copy.deepcopy(obj), "flow_id": inv.flow_id}, timeout)
            if value is ABSENT:
                return [copy.deepcopy(o) for o in inv.objects]
            if not isinstance(value, dict) or not value.get("kind"):
                raise fail(f"lifecycle_hook returned {type(value).__name__} for {obj.get('kind')}/"
                           f"{(obj.get('metadata') or {}).get('name')}, expected the (patched) object",
                           Where(plugin=inv.instance), "return the object it received, patched",
                           code="plugin-malformed")  # fmt: skip
            out.append(value)
        return out


class DocumentRuntime(Runtime):
    """Runtimes that exchange the ResourceList document itself (exec, grpc)."""

    @abstractmethod
    def transport(self, inv: Invocation, data: bytes, timeout: float) -> bytes: ...

    def _call(self, inv: Invocation, timeout: float) -> tuple[dict, ReplyReader]:
        reader = ReplyReader(inv, Where(plugin=inv.instance), f"{inv.operation} of {self.manifest.name}")
        data = self.transport(inv, encode(request_document(inv, timeout)), timeout)
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            try:  # kyaml-based KRM functions answer in YAML
                doc = yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            except yaml.YAMLError as exc:
                raise reader.error(f"the reply is neither JSON nor YAML ({exc})",
                                   "write one ResourceList to stdout and logs to stderr") from None
        return reader.document(doc), reader

    def _problems(self, inv: Invocation, timeout: float) -> list[Problem]:
        doc, reader = self._call(inv, timeout)
        try:
            return reader.results(doc)
        except DevlaneError as exc:  # validation errors are the answer here, not a failed call
            return [Problem(p.message, p.where, f"fix the args in the plugin definition of {inv.instance} "
                            f"({self.manifest.name})", code="plugin-args") for p in exc.problems]  # fmt: skip

    def create_flow(self, inv: Invocation, timeout: float) -> Outcome:
        from .invocation import outcome_from_reply

        doc, reader = self._call(inv, timeout)
        return outcome_from_reply(inv, doc, reader)

    def delete_flow(self, inv: Invocation, timeout: float) -> list[Problem]:
        doc, reader = self._call(inv, timeout)
        return reader.results(doc)

    def validate_args(self, inv: Invocation, timeout: float) -> list[Problem]:
        return self._problems(inv, timeout) if self.manifest.has("ValidateArgs") else []

    def validate_change(self, inv: Invocation, timeout: float) -> list[Problem]:
        return self._problems(inv, timeout) if self.manifest.has("ValidateChange") else []

    def default_args(self, inv: Invocation, timeout: float) -> dict:
        if not self.manifest.has("DefaultArgs"):
            return dict(inv.args)
        doc, reader = self._call(inv, timeout)
        reader.results(doc)
        args = ((doc.get("functionConfig") or {}).get("spec") or {}).get("args")
        if not isinstance(args, dict):
            raise reader.error("DefaultArgs must return functionConfig.spec.args as an object")
        return args

    def lifecycle_hook(self, inv: Invocation, timeout: float) -> list[dict]:
        if not self.manifest.has("LifecycleHook"):
            return [copy.deepcopy(o) for o in inv.objects]
        doc, reader = self._call(inv, timeout)
        reader.results(doc)
        by_id = {}
        for item in doc["items"]:
            ident = ((item.get("metadata") or {}).get("annotations") or {}).get(ID)
            if ident is not None:
                by_id[ident] = strip_internal(copy.deepcopy(item))
        return [by_id.get(str(i), copy.deepcopy(o)) for i, o in enumerate(inv.objects)]


PYTHON_NAMES = ("python", "python3")


def _resolve_command(command: tuple[str, ...], plugin_dir: Path) -> list[str]:
    """Paths in `runtime.command` are relative to the plugin directory; bare names use PATH.

    `python`/`python3` as the program means the interpreter devlane runs on (or the plugin's
    prepared virtualenv), so Python plugins can use devlane's SDK (`renderer.sdk`) wherever devlane
    is installed.
    """
    argv = list(command)
    if argv and argv[0] in PYTHON_NAMES:
        argv[0] = _python_for_dir(plugin_dir)
    for i, part in enumerate(argv):
        candidate = plugin_dir / part
        if ("/" in part or i == 0) and not Path(part).is_absolute() and candidate.exists():
            argv[i] = str(candidate.resolve())
    return argv


class ExecRuntime(DocumentRuntime):
    def transport(self, inv: Invocation, data: bytes, timeout: float) -> bytes:
        argv = _resolve_command(self.manifest.command, self.source.path)
        where = Where(plugin=inv.instance)
        label = f"{inv.operation} of {self.manifest.name} ({' '.join(self.manifest.command)})"
        try:
            raw = spawn(argv, data, timeout, env={"DEVLANE_PLUGIN_DIR": str(self.source.path), **_sdk_env(argv)},
                        network=self.network)  # fmt: skip
        except OSError as exc:
            raise fail(f"{label} could not start: {exc}", where,
                       "check spec.runtime.command in plugin.yaml (paths are relative to the plugin directory, "
                       "and scripts need the executable bit)", code="plugin-exec") from None  # fmt: skip
        tail = _stderr_tail(raw.stderr)
        if raw.overflow:
            raise fail(f"{label} wrote more than {MAX_REPLY_BYTES // (1024 * 1024)} MiB on stdout", where,
                       "return smaller objects", code="plugin-output-too-large")  # fmt: skip
        if raw.timed_out:
            raise fail(f"{label} timed out after {timeout:g} s; the plugin's whole process group was killed"
                       + tail, where, "raise spec.timeoutSeconds in plugin.yaml or --plugin-timeout, or make "
                       "the plugin faster", code="plugin-timeout")  # fmt: skip
        if raw.returncode != 0:
            detail = ""
            try:  # KRM functions report why in `results` before exiting non-zero
                doc = json.loads(raw.stdout) if raw.stdout.strip().startswith(b"{") else yaml.safe_load(raw.stdout)
                msgs = [r.get("message") for r in (doc or {}).get("results") or [] if isinstance(r, dict)]
                detail = "".join(f"\n  result: {m}" for m in msgs if m)
            except Exception:
                pass
            status = (f"was killed by {signal.Signals(-raw.returncode).name}" if raw.returncode < 0
                      else f"exited with status {raw.returncode}")  # fmt: skip
            raise fail(f"{label} {status}" + detail + tail, where,
                       "a non-zero exit fails the render; rerun with --debug to see the plugin's output",
                       code="plugin-exit")  # fmt: skip
        if not raw.stdout.strip():
            raise fail(f"{label} wrote nothing on stdout" + tail, where,
                       "an exec plugin must write the ResourceList back on stdout", code="plugin-no-reply")
        return raw.stdout


class GrpcRuntime(DocumentRuntime):
    """A plugin server started from `command` (or dialled at `address`) once per render, probed first."""

    def __init__(self, source: PluginSource, manifest: Manifest, debug: bool = False, network: bool = False):
        super().__init__(source, manifest, debug, network)
        self._client = None
        self._context = None
        self._lock = threading.Lock()

    def client(self, instance: str):
        with self._lock:
            return self._start(instance)

    def _start(self, instance: str):
        if self._client is None:
            from .grpc_client import GrpcPlugin
            from .plugins import _plugin_env
            from .sandbox import sandboxed_argv

            command = _resolve_command(self.manifest.command, self.source.path) if self.manifest.command else None
            env = {**_plugin_env(str(self.source.path)), **_sdk_env(command or [])}
            if command:  # the server talks over a unix socket, which works inside its own network namespace
                command = sandboxed_argv(command, network=self.network)
            self._context = GrpcPlugin(instance, command=command, address=self.manifest.address,
                                       cwd=self.source.path, env=env,
                                       start_timeout=self.manifest.start_timeout)  # fmt: skip
            self._client = self._context.__enter__()
        return self._client

    def transport(self, inv: Invocation, data: bytes, timeout: float) -> bytes:
        try:
            return self.client(inv.instance).invoke(inv.operation, data, timeout)
        except DevlaneError as exc:
            if any(p.code == "plugin-grpc-deadline" for p in exc.problems):
                self.close()  # like an exec plugin on timeout: stop what we started
            raise

    def close(self) -> None:
        if self._context is not None:
            context, self._context, self._client = self._context, None, None
            context.__exit__(None, None, None)


DEVLANE_ROOT = Path(__file__).resolve().parent.parent


def _sdk_env(argv: list[str]) -> dict[str, str]:
    """Python plugins run on devlane's interpreter can import its SDK (`renderer.sdk`), installed or not."""
    return {"PYTHONPATH": str(DEVLANE_ROOT)} if argv and argv[0] == sys.executable else {}


def make_runtime(source: PluginSource, manifest: Manifest, debug: bool = False, network: bool = False) -> Runtime:
    """The runtime for a plugin; `network` only for External plugins run by provision or delete."""
    if manifest.runtime == "exec":
        return ExecRuntime(source, manifest, debug, network)
    if manifest.runtime == "grpc":
        return GrpcRuntime(source, manifest, debug, network)
    if source.origin == "builtin":
        return KardinalRuntime(source, manifest, debug, in_process=True)
    return KardinalRuntime(source, manifest, debug, python=_python_for_dir(source.path, source.name), network=network)


def _python_for_dir(path: Path, name: str | None = None) -> str:
    from .venvs import python_for

    return python_for(path, name)
