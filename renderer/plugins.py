"""Plugin sources and the Kardinal-Python plugin runtime (host side).

A Kardinal plugin is a directory with ``main.py`` defining
``create_flow(service_specs, pod_specs, flow_uuid, **args)`` and ``delete_flow(config_map, flow_uuid)``.
`resolve_plugin_source` finds that directory (``--plugin-source``, ``.devlane.yaml``, a path in the
repository, or a built-in under the top-level ``plugins`` package). `run_create_flow` and
`run_delete_flow` run one call each in a subprocess through ``renderer/shim.py``: a fresh temporary
working directory, a scrubbed environment, its own session (so a timeout kills every process the
plugin started), JSON in on stdin and JSON out on a private descriptor, so stray prints cannot
corrupt the reply. Everything the plugin returns is validated here, and every problem names the
plugin instance and says how to fix it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import sandbox
from .errors import DevlaneError, Problem, Where, fail
from .invocation import Outcome as PluginOutcome
from .sources import PluginSource, _source_hint

SHIM = Path(__file__).resolve().with_name("shim.py")
PROTOCOL = 1
MAX_REPLY_BYTES = 64 * 1024 * 1024  # the protocol channel; larger replies are refused
STDERR_KEEP_BYTES = 1024 * 1024  # only the end of a plugin's stderr is kept
STDERR_TAIL_LINES = 20
KILL_GRACE_SECONDS = 2.0
SEVERITIES = ("error", "warning", "info")

_RESULT_SHAPE = '{"pod_specs": [...one per dependent, same order...], "config_map": {...}}'


# --------------------------------------------------------------------------------------------------
# Calls and outcomes


@dataclass
class PluginCall:
    instance: str  # plugin servicename, e.g. "postgres-seed-plugin"
    flow_id: str
    source: PluginSource
    args: dict[str, str]
    service_specs: list[dict]  # Service .spec dicts, one per dependent
    pod_specs: list[dict]  # pod template .spec dicts, same order
    workload_specs: list[dict]  # full workload .spec dicts, same order (for legacy deployment_spec)
    dependents: list[str]  # dependent service names, same order
    extensions: list[dict] = field(default_factory=list)  # repo objects from the definition's `extensions`

    @property
    def flow_uuid(self) -> str:
        return f"{self.instance}-{self.flow_id}"


@dataclass
class _Raw:
    returncode: int
    stdout: bytes
    stderr: str
    timed_out: bool
    overflow: bool


Executor = Callable[[dict, float], "_Raw"]


def _plugin_env(home: str) -> dict[str, str]:
    """The scrubbed environment every plugin process gets (see `sandbox.plugin_env`)."""
    return sandbox.plugin_env(home)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _terminate_group(proc: subprocess.Popen) -> None:
    """SIGTERM the plugin's whole process group, wait the grace period, then SIGKILL it."""
    _signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_SECONDS)
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def spawn(argv: list[str], data: bytes, timeout: float, env: dict[str, str] | None = None,
          limit: int | None = None, network: bool = False) -> _Raw:  # fmt: skip
    """Run one plugin process: its own session and temp working directory, `data` on stdin.

    Stdout is captured up to `limit` (the process group is killed beyond it), only the tail of
    stderr is kept, and on timeout the whole process group gets SIGTERM, then SIGKILL. Without
    `network` (render), the process gets its own network namespace where the OS allows it.
    """
    limit = MAX_REPLY_BYTES if limit is None else limit
    tmp = tempfile.mkdtemp(prefix="devlane-plugin-")
    try:
        proc = subprocess.Popen(
            sandbox.sandboxed_argv(argv, network=network),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp,
            env=_plugin_env(tmp) if env is None else {**_plugin_env(tmp), **env},
            start_new_session=True,
            close_fds=True,
        )
        out = bytearray()
        err: deque[bytes] = deque()
        err_size = [0]
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
            while True:
                chunk = proc.stdout.read1(1 << 16)
                if not chunk:
                    return
                if len(out) + len(chunk) > limit:
                    overflow.set()
                    _signal_group(proc.pid, signal.SIGKILL)
                    return
                out.extend(chunk)

        def read_stderr() -> None:
            while True:
                chunk = proc.stderr.read1(1 << 16)
                if not chunk:
                    return
                err.append(chunk)
                err_size[0] += len(chunk)
                while err_size[0] - len(err[0]) >= STDERR_KEEP_BYTES:
                    err_size[0] -= len(err.popleft())

        threads = [threading.Thread(target=t, daemon=True) for t in (write_stdin, read_stdout, read_stderr)]
        for t in threads:
            t.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _terminate_group(proc)
        # Whatever the plugin left running in its session goes too: render must leave nothing behind.
        _signal_group(proc.pid, signal.SIGKILL)
        for t in threads:
            t.join(timeout=5)
        stderr = b"".join(err).decode("utf-8", errors="replace")
        return _Raw(proc.returncode, bytes(out), stderr, timed_out, overflow.is_set())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _shim_executor(python: str, network: bool = False) -> Executor:
    def execute(request: dict, timeout: float) -> _Raw:
        data = json.dumps(request, separators=(",", ":")).encode("utf-8")
        return spawn([python, str(SHIM)], data, timeout, network=network)

    return execute


_IN_PROCESS = threading.Lock()
_MODULES: dict[Path, Any] = {}


def in_process_executor(request: dict, timeout: float) -> _Raw:
    """Built-in plugins (first-party, in `plugins/`) run in this process through the same shim code.

    Calls are serialized: stray prints are redirected process-wide while a call runs.
    """
    from . import shim

    plugin_dir = Path(request["plugin_dir"])
    with _IN_PROCESS:
        module = _MODULES.get(plugin_dir)
        stray = io.StringIO()
        with contextlib.redirect_stdout(stray):
            try:
                if module is None:
                    module = _MODULES[plugin_dir] = _import_builtin(plugin_dir)
                reply = shim.OPERATIONS[request["operation"]](request, module)
            except shim.PluginFailure as failure:
                reply = {"ok": False, "error": failure.error}
        return _Raw(0, shim._encode(reply), stray.getvalue(), False, False)


def _import_builtin(plugin_dir: Path):
    from . import shim

    spec = importlib.util.spec_from_file_location(f"devlane_builtin_{plugin_dir.name.replace('-', '_')}",
                                                  plugin_dir / "main.py")  # fmt: skip
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(plugin_dir))  # sibling modules import as under the shim, while loading
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        raise shim.PluginFailure(shim._exception("import", exc, str(plugin_dir),
                                                 f"main.py failed to import: {exc}")) from None
    finally:
        sys.path.remove(str(plugin_dir))
    return module


def _stderr_tail(stderr: str, lines: int = STDERR_TAIL_LINES) -> str:
    tail = stderr.rstrip("\n").splitlines()[-lines:]
    if not tail:
        return ""
    lines_text = "\n".join(f"  | {line}" for line in tail)
    return f"\nplugin stderr (last {_plural(len(tail), 'line')}):\n{lines_text}"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class _Runner:
    """One plugin invocation: runs the shim and turns every failure into a DevlaneError."""

    def __init__(self, instance: str, source: PluginSource, operation: str, debug: bool,
                 executor: Executor | None = None):  # fmt: skip
        self.execute = executor or _shim_executor(sys.executable)
        self.instance = instance
        self.source = source
        self.operation = operation
        self.debug = debug
        self.where = Where(plugin=instance)
        self.stderr = ""

    def error(self, message: str, hint: str | None, code: str, with_stderr: bool = True) -> DevlaneError:
        if with_stderr:
            message += _stderr_tail(self.stderr)
        return fail(message, self.where, hint, code=code)

    def run(self, request: dict, timeout: float) -> dict:
        main_py = self.source.path / "main.py"
        if not main_py.is_file():
            raise self.error(
                f"plugin directory {self.source.path} ({self.source.name}) has no main.py",
                "a Kardinal plugin is a directory with main.py defining create_flow and delete_flow; "
                + _source_hint(self.source.name),
                "plugin-no-main",
                with_stderr=False,
            )
        raw = self.execute(request, timeout)
        self.stderr = raw.stderr
        if raw.overflow:
            raise self.error(
                f"{self.operation} wrote more than {MAX_REPLY_BYTES // (1024 * 1024)} MiB of output on the "
                "protocol channel",
                "return smaller pod specs and config_map; keep large data (seed scripts, fixtures) in "
                "extension objects or in the image",
                "plugin-output-too-large",
            )
        if raw.timed_out:
            raise self.error(
                f"{self.operation} timed out after {timeout:g} s; "
                "the plugin's whole process group was killed",
                "raise the limit with --plugin-timeout SECONDS (or spec.timeoutSeconds in plugin.yaml), "
                "or make the plugin faster; plugins must not wait on the network during render",
                "plugin-timeout",
            )
        if not raw.stdout.strip():
            if raw.returncode < 0:
                try:
                    signame = signal.Signals(-raw.returncode).name
                except ValueError:
                    signame = f"signal {-raw.returncode}"
                status = f"was killed by {signame}"
            else:
                status = f"exited with status {raw.returncode}"
            raise self.error(
                f"{self.operation} {status} without a reply "
                "(does the plugin call os._exit, or run out of memory?)",
                "plugins report failure by raising an exception; "
                "rerun with --debug to see the plugin's output",
                "plugin-no-reply",
            )
        try:
            reply = json.loads(raw.stdout.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            message = f"malformed reply from the plugin shim: {exc}"
            raise self.error(message, None, "plugin-malformed") from None
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            raise self.error("malformed reply from the plugin shim", None, "plugin-malformed")
        if not reply["ok"]:
            raise self.failure(reply.get("error") or {})
        return reply

    def failure(self, error: dict) -> DevlaneError:
        kind = error.get("kind")
        frames = error.get("frames") or []
        trace = "".join(f"\n  {line}" for line in frames)
        main_py = self.source.path / "main.py"
        if kind == "import":
            etype = error.get("type", "Exception")
            hint = f"fix the error in {main_py} (try `python {main_py}`)"
            if etype in ("ModuleNotFoundError", "ImportError"):
                hint = (
                    "list the plugin's dependencies in its requirements.txt and build its environment with "
                    "`devlane plugins prepare`, or fix the import"
                )
            return self.error(
                f"main.py of plugin {self.source.name} failed to import: {etype}: {error.get('detail', '')}"
                + trace,
                hint,
                "plugin-import",
            )
        if kind == "no-main":
            return self.error(f"plugin directory {self.source.path} has no main.py", None, "plugin-no-main")
        if kind == "no-function":
            return self.error(
                f"main.py of plugin {self.source.name} defines no "
                f"{error.get('function', self.operation)} function",
                "define create_flow(service_specs, pod_specs, flow_uuid, ...) "
                "and delete_flow(config_map, flow_uuid)",
                "plugin-no-function",
            )
        if kind == "missing-args":
            missing = error.get("missing") or []
            names = ", ".join(repr(m) for m in missing)
            noun = "argument" if len(missing) == 1 else "arguments"
            example = ", ".join(f"{m}: ..." for m in missing)
            return self.error(
                f"{error.get('function', self.operation)}() of plugin {self.source.name} "
                f"requires {noun} {names}, but the plugin definition has no such arg",
                f"add it under `args:` in the plugin-definition of {self.instance} (args: {{{example}}})",
                "plugin-missing-arg",
            )
        if kind == "raised":
            return self.error(
                f"{self.operation} raised {error.get('type', 'Exception')}: {error.get('detail', '')}"
                + trace,
                f"check the args in the plugin-definition of {self.instance}, or fix the plugin "
                f"({self.source.name}); rerun with --debug to see everything it printed",
                "plugin-raised",
            )
        if kind == "not-json":
            return self.error(
                f"{self.operation} returned malformed output: it is not JSON-serializable "
                f"({error.get('type', 'TypeError')}: {error.get('detail', '')})",
                "return only dicts, lists, strings, numbers, booleans and None "
                "(no sets, bytes, NaN or other objects)",
                "plugin-malformed",
            )
        return self.error(
            f"plugin shim failed: {error.get('message') or error}", None, "plugin-malformed"
        )

    def debug_messages(self, reply: dict) -> list[Problem]:
        if not self.debug:
            return []
        out = []
        ignored = reply.get("ignored_args") or []
        if ignored:
            out.append(Problem(f"{self.operation} ignored args not in its signature: {', '.join(ignored)}",
                               self.where, severity="info", code="plugin-debug"))
        if self.stderr.strip():
            out.append(Problem(f"{self.operation} stderr:\n{self.stderr.rstrip()}", self.where,
                               severity="info", code="plugin-stderr"))
        return out

    # -- reply validation ---------------------------------------------------------------------------

    def results(self, value: Any, label: str) -> list[Problem]:
        """`results`: [{message, severity}] -> messages; any `error` fails the call."""
        if value is None:
            return []
        hint = 'return "results": [{"message": "...", "severity": "error" | "warning" | "info"}]'
        if not isinstance(value, list):
            raise self.error(f"{label}: `results` is {_json_type(value)}, expected a list",
                             hint, "plugin-malformed")
        problems: list[Problem] = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.error(f"{label}: results[{i}] is {_json_type(item)}, expected an object",
                                 hint, "plugin-malformed")
            message = item.get("message")
            severity = item.get("severity")
            if not isinstance(message, str) or not message:
                raise self.error(f"{label}: results[{i}] has no `message`", hint, "plugin-malformed")
            if severity not in SEVERITIES:
                raise self.error(
                    f"{label}: results[{i}] has severity {severity!r}; expected error, warning or info",
                    hint, "plugin-malformed",
                )
            fld = item.get("field")
            if isinstance(fld, dict):
                fld = fld.get("path")
            if isinstance(fld, str) and fld:
                message = f"{fld}: {message}"
            problems.append(Problem(message, self.where, severity=severity, code="plugin-result"))
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            raise DevlaneError(errors)
        return problems

    def resources(self, value: Any, label: str) -> list[dict]:
        if value is None:
            return []
        hint = "each extra object needs apiVersion, kind and metadata.name"
        if not isinstance(value, list):
            raise self.error(f"{label}: `resources` is {_json_type(value)}, expected a list of objects",
                             hint, "plugin-malformed")
        for i, obj in enumerate(value):
            if not isinstance(obj, dict):
                raise self.error(f"{label}: resources[{i}] is {_json_type(obj)}, expected an object",
                                 hint, "plugin-malformed")
            for key in ("apiVersion", "kind"):
                if not isinstance(obj.get(key), str) or not obj[key]:
                    raise self.error(f"{label}: resources[{i}] has no {key}", hint, "plugin-malformed")
            meta = obj.get("metadata")
            if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
                raise self.error(f"{label}: resources[{i}] ({obj['kind']}) has no metadata.name",
                                 hint, "plugin-malformed")
        return value

    def pod_spec(self, spec: Any, index: int, dependent: str, label: str) -> dict:
        hint = ("return each dependent's (modified) pod spec, in the order received, with its containers; "
                + "expected " + _RESULT_SHAPE)
        if not isinstance(spec, dict):
            raise self.error(f"{label}: pod spec #{index + 1} (for {dependent}) is {_json_type(spec)}, "
                             "expected an object", hint, "plugin-malformed")
        containers = spec.get("containers")
        if not isinstance(containers, list) or not containers:
            raise self.error(f"{label}: pod spec #{index + 1} (for {dependent}) has no non-empty "
                             "`containers` list", hint, "plugin-malformed")
        for j, container in enumerate(containers):
            if not isinstance(container, dict):
                raise self.error(f"{label}: pod spec #{index + 1} (for {dependent}) containers[{j}] is "
                                 f"{_json_type(container)}, expected an object", hint, "plugin-malformed")
        return spec

    def result_dict(self, result: Any, label: str, expected: str) -> dict:
        if not isinstance(result, dict):
            raise self.error(f"{label} returned {_json_type(result)}, expected an object {expected}",
                             f"return {expected}", "plugin-malformed")
        return result

    def config_map(self, result: dict, label: str) -> Any:
        if "config_map" not in result:
            raise self.error(
                f"{label} returned no `config_map`; Kardinal plugins must return one (it is stored and "
                "handed back to delete_flow)",
                'return "config_map": {} if the plugin keeps no state',
                "plugin-malformed",
            )
        return result["config_map"]


def _check_call(call: PluginCall) -> None:
    n = len(call.dependents)
    if len(call.service_specs) != n or len(call.pod_specs) != n:
        raise ValueError(
            f"PluginCall {call.instance}: {n} dependents, {len(call.service_specs)} service specs, "
            f"{len(call.pod_specs)} pod specs"
        )
    if call.workload_specs and len(call.workload_specs) != n:
        raise ValueError(
            f"PluginCall {call.instance}: {len(call.workload_specs)} workload specs for {n} dependents"
        )


def run_create_flow(call: PluginCall, timeout: float, debug: bool = False,
                    executor: Executor | None = None) -> PluginOutcome:  # fmt: skip
    """Run ``create_flow`` of one plugin instance for all of its dependents and validate the reply."""
    _check_call(call)
    runner = _Runner(call.instance, call.source, "create_flow", debug, executor)
    request = {
        "protocol": PROTOCOL,
        "operation": "create_flow",
        "plugin_dir": str(call.source.path.resolve()),
        "flow_uuid": call.flow_uuid,
        "args": dict(call.args),
        "service_specs": call.service_specs,
        "pod_specs": call.pod_specs,
        "workload_specs": call.workload_specs,
        "extensions": call.extensions,
    }
    reply = runner.run(request, timeout)
    mode = reply.get("mode")
    results = reply.get("results")
    if not isinstance(results, list):
        raise runner.error("malformed reply from the plugin shim (no results)", None, "plugin-malformed")
    messages: list[Problem] = []
    dependents = call.dependents

    if mode == "plural":
        if len(results) != 1:
            raise runner.error("malformed reply from the plugin shim", None, "plugin-malformed")
        result = runner.result_dict(results[0], "create_flow", _RESULT_SHAPE)
        messages.extend(runner.results(result.get("results"), "create_flow"))
        if "pod_specs" not in result:
            raise runner.error("create_flow returned no `pod_specs`", f"return {_RESULT_SHAPE}",
                               "plugin-malformed")
        pod_specs = result["pod_specs"]
        if not isinstance(pod_specs, list):
            raise runner.error(
                f"create_flow returned `pod_specs` as {_json_type(pod_specs)}, expected a list",
                f"return {_RESULT_SHAPE}", "plugin-malformed",
            )
        if len(pod_specs) != len(dependents):
            raise runner.error(
                f"create_flow returned {_plural(len(pod_specs), 'pod spec')} for "
                f"{_plural(len(dependents), 'dependent')} ({', '.join(dependents)})",
                "return exactly one pod spec per entry of pod_specs, in the same order "
                "(modify them in place and return the whole list)",
                "plugin-pod-spec-count",
            )
        checked = [runner.pod_spec(s, i, dependents[i], "create_flow") for i, s in enumerate(pod_specs)]
        config_map = runner.config_map(result, "create_flow")
        resources = runner.resources(result.get("resources"), "create_flow")
    elif mode in ("pod_spec", "deployment_spec"):
        if len(results) != len(dependents):
            raise runner.error("malformed reply from the plugin shim", None, "plugin-malformed")
        messages.append(
            Problem(
                f"plugin {call.source.name} uses the pre-Oct-2024 singular signature "
                f"create_flow(service_spec, {mode}, ...); devlane calls it once per dependent. "
                "Migrate to create_flow(service_specs, pod_specs, flow_uuid, ...) returning "
                '{"pod_specs": [...], "config_map": {...}}',
                runner.where,
                "see Kardinal's plugin API change of October 2024 (kardinal-kontrol#61)",
                severity="warning",
                code="plugin-deprecated-signature",
            )
        )
        checked, config_maps, resources = [], [], []
        shape = f'{{"{mode}": {{...}}, "config_map": {{...}}}}'
        for i, raw_result in enumerate(results):
            label = f"create_flow (for {dependents[i]})"
            result = runner.result_dict(raw_result, label, shape)
            messages.extend(runner.results(result.get("results"), label))
            keys = ("pod_spec", "deployment_spec") if mode == "pod_spec" else ("deployment_spec", "pod_spec")
            if keys[0] in result:
                key = keys[0]
            elif keys[1] in result:
                key = keys[1]
            else:
                raise runner.error(f"{label} returned no `{mode}`", f"return {shape}", "plugin-malformed")
            spec = result[key]
            if key == "deployment_spec":
                template = spec.get("template") if isinstance(spec, dict) else None
                if not isinstance(template, dict) or "spec" not in template:
                    raise runner.error(f"{label} returned a `deployment_spec` without template.spec",
                                       f"return {shape} with the whole deployment spec", "plugin-malformed")
                spec = template["spec"]
            checked.append(runner.pod_spec(spec, i, dependents[i], label))
            config_maps.append(runner.config_map(result, label))
            resources.extend(runner.resources(result.get("resources"), label))
        config_map = config_maps[0] if len(config_maps) == 1 else config_maps
    else:
        raise runner.error(f"malformed reply from the plugin shim (mode {mode!r})", None, "plugin-malformed")

    messages.extend(runner.debug_messages(reply))
    return PluginOutcome(pod_specs=checked, config_map=config_map, resources=resources, messages=messages)


def run_delete_flow(
    source: PluginSource,
    instance: str,
    flow_id: str,
    config_map: Any,
    timeout: float,
    args: dict[str, str] | None = None,
    debug: bool = False,
    executor: Executor | None = None,
) -> list[Problem]:
    """Run ``delete_flow(config_map, flow_uuid)`` with the exact stored config_map; return messages."""
    runner = _Runner(instance, source, "delete_flow", debug, executor)
    request = {
        "protocol": PROTOCOL,
        "operation": "delete_flow",
        "plugin_dir": str(source.path.resolve()),
        "flow_uuid": f"{instance}-{flow_id}",
        "args": dict(args or {}),
        "config_map": config_map,
    }
    reply = runner.run(request, timeout)
    messages: list[Problem] = []
    if reply.get("mode") == "absent":
        messages.append(Problem(f"plugin {source.name} defines no delete_flow; nothing to clean up",
                                runner.where, "define delete_flow(config_map, flow_uuid) if the plugin "
                                "creates anything outside the rendered manifests",
                                severity="warning", code="plugin-no-delete"))
    else:
        results = reply.get("results") or [None]
        result = results[0]
        if isinstance(result, dict):
            messages.extend(runner.results(result.get("results"), "delete_flow"))
    messages.extend(runner.debug_messages(reply))
    return messages


ABSENT = object()


def run_function(source: PluginSource, instance: str, function: str, values: dict, timeout: float,
                 debug: bool = False, executor: Executor | None = None) -> Any:  # fmt: skip
    """Call an optional function (validate_args, default_args, ...); `ABSENT` when main.py lacks it."""
    runner = _Runner(instance, source, function, debug, executor)
    request = {"protocol": PROTOCOL, "operation": "call", "plugin_dir": str(source.path.resolve()),
               "function": function, "values": values}
    reply = runner.run(request, timeout)
    if reply.get("mode") == "absent":
        return ABSENT
    results = reply.get("results") or [None]
    return results[0]
