"""devlane plugin shim: runs one Kardinal-style plugin call in this (sub)process.

Run as ``python shim.py`` by devlane (``renderer/plugins.py``). It must work in a plugin's own
virtualenv, so it imports nothing from devlane and only uses the standard library.

Protocol
--------
* stdin: one JSON document ``{"protocol": 1, "operation": "create_flow" | "delete_flow",
  "plugin_dir", "flow_uuid", "args", "service_specs", "pod_specs", "workload_specs", "config_map"}``.
  Data is only ever parsed as JSON, never spliced into code.
* Before the plugin is imported, the original stdout (fd 1) is moved to a private descriptor and
  fd 1 is pointed at stderr, so ``print()``, ``os.write(1, ...)`` and C extensions writing to
  stdout cannot corrupt the reply; their output ends up on stderr with the plugin's own logs.
* The reply is one JSON object written to the private descriptor, then the process exits 0:
  ``{"ok": true, "mode": "plural" | "pod_spec" | "deployment_spec", "results": [...],
  "ignored_args": [...]}`` where ``results`` holds the return value of each ``create_flow``
  call (one call for the plural signature, one per dependent for the legacy singular ones), or
  ``{"ok": false, "error": {"kind": ..., "message": ..., ...}}`` when the plugin cannot be loaded,
  cannot be called, raises, or returns something that is not JSON.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import inspect
import json
import os
import sys
import traceback

PROTOCOL = 1
MAX_FRAMES = 5


def _inside(path: str, directory: str) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(path), directory]) == directory
    except ValueError:
        return False


def _frames(tb, plugin_dir: str) -> list[str]:
    """The last traceback frames that belong to the plugin (or, if none, the last few overall)."""
    shim = os.path.realpath(__file__)
    entries = [f for f in traceback.extract_tb(tb)
               if os.path.realpath(f.filename) != shim and not f.filename.startswith("<frozen")]
    own = [f for f in entries if _inside(f.filename, plugin_dir)]
    chosen = (own or entries)[-MAX_FRAMES:]
    out = []
    for f in chosen:
        name = os.path.relpath(f.filename, plugin_dir) if _inside(f.filename, plugin_dir) else f.filename
        line = f"{name}:{f.lineno} in {f.name}"
        if f.line:
            line += f": {f.line.strip()}"
        out.append(line)
    return out


def _exception(kind: str, exc: BaseException, plugin_dir: str, message: str) -> dict:
    err = {
        "kind": kind,
        "message": message,
        "type": type(exc).__name__,
        "detail": str(exc),
        "frames": _frames(exc.__traceback__, plugin_dir),
    }
    if isinstance(exc, SyntaxError):
        filename = exc.filename or "main.py"
        if _inside(filename, plugin_dir):
            filename = os.path.relpath(filename, plugin_dir)
        where = f"{filename}:{exc.lineno}" if exc.lineno else filename
        err["detail"] = f"{exc.msg} at {where}"
        if exc.text:
            err["frames"].append(f"{where}: {exc.text.strip()}")
    return err


class PluginFailure(Exception):
    def __init__(self, error: dict):
        super().__init__(error.get("message", ""))
        self.error = error


def _load(plugin_dir: str):
    main_py = os.path.join(plugin_dir, "main.py")
    if not os.path.isfile(main_py):
        raise PluginFailure({"kind": "no-main", "message": f"no main.py in {plugin_dir}"})
    # The plugin directory replaces this script's directory at sys.path[0], so the plugin can
    # import its sibling modules and cannot accidentally import devlane's renderer modules.
    shim_dir = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != shim_dir]
    sys.path.insert(0, plugin_dir)
    spec = importlib.util.spec_from_file_location("main", main_py)
    if spec is None or spec.loader is None:
        raise PluginFailure({"kind": "import", "message": f"cannot load {main_py}"})
    module = importlib.util.module_from_spec(spec)
    sys.modules["main"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit, anything at import time
        raise PluginFailure(
            _exception("import", exc, plugin_dir, f"main.py failed to import: {type(exc).__name__}: {exc}")
        ) from None
    return module


def _bind(fn, values: dict, args: dict, fn_name: str) -> tuple[list, dict]:
    """Bind parameters by name exactly as Kardinal does: known values first, then args, then defaults."""
    positional: list = []
    keywords: dict = {}
    missing: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue  # Kardinal never expands *args / **kwargs
        name = param.name
        if name in values:
            value = values[name]
        elif name in args:
            value = args[name]
        elif param.default is not param.empty:
            continue
        else:
            missing.append(name)
            continue
        if param.kind == param.POSITIONAL_ONLY:
            positional.append(value)
        else:
            keywords[name] = value
    if missing:
        raise PluginFailure(
            {
                "kind": "missing-args",
                "function": fn_name,
                "missing": missing,
                "message": f"{fn_name} requires {', '.join(missing)} but no value was given",
            }
        )
    return positional, keywords


def _call(fn, positional: list, keywords: dict, plugin_dir: str, fn_name: str):
    try:
        return fn(*positional, **keywords)
    except BaseException as exc:
        raise PluginFailure(
            _exception("raised", exc, plugin_dir, f"{fn_name} raised {type(exc).__name__}: {exc}")
        ) from None


def _signature_mode(fn) -> str:
    names = set(inspect.signature(fn).parameters)
    if "service_specs" in names or "pod_specs" in names:
        return "plural"
    if "service_spec" in names and "pod_spec" in names:
        return "pod_spec"
    if "service_spec" in names and "deployment_spec" in names:
        return "deployment_spec"
    return "plural"


def _ignored_args(fn, args: dict, known: set[str]) -> list[str]:
    names = set(inspect.signature(fn).parameters)
    return sorted(a for a in args if a not in names or a in known)


def create_flow(request: dict, module=None) -> dict:
    plugin_dir = request["plugin_dir"]
    module = module or _load(plugin_dir)
    fn = getattr(module, "create_flow", None)
    if not callable(fn):
        raise PluginFailure({"kind": "no-function", "function": "create_flow",
                             "message": "main.py defines no create_flow function"})
    args = request.get("args") or {}
    flow_uuid = request["flow_uuid"]
    service_specs = request.get("service_specs") or []
    pod_specs = request.get("pod_specs") or []
    workload_specs = request.get("workload_specs") or []
    mode = _signature_mode(fn)
    results = []
    if mode == "plural":
        known = {"service_specs": service_specs, "pod_specs": pod_specs, "flow_uuid": flow_uuid,
                 "extensions": request.get("extensions") or []}
        positional, keywords = _bind(fn, known, args, "create_flow")
        results.append(_call(fn, positional, keywords, plugin_dir, "create_flow"))
    else:
        for index, service_spec in enumerate(service_specs):
            pod_spec = pod_specs[index]
            if index < len(workload_specs) and isinstance(workload_specs[index], dict):
                workload = copy.deepcopy(workload_specs[index])
            else:
                workload = {}
            template = workload.get("template")
            if not isinstance(template, dict):
                template = workload["template"] = {}
            template["spec"] = copy.deepcopy(pod_spec)
            known = {
                "service_spec": service_spec,
                "pod_spec": pod_spec,
                "deployment_spec": workload,
                "flow_uuid": flow_uuid,
            }
            positional, keywords = _bind(fn, known, args, "create_flow")
            results.append(_call(fn, positional, keywords, plugin_dir, "create_flow"))
    return {
        "ok": True,
        "mode": mode,
        "results": results,
        "ignored_args": _ignored_args(fn, args, {"service_specs", "pod_specs", "flow_uuid", "extensions",
                                                 "service_spec", "pod_spec", "deployment_spec"}),
    }


def delete_flow(request: dict, module=None) -> dict:
    plugin_dir = request["plugin_dir"]
    module = module or _load(plugin_dir)
    fn = getattr(module, "delete_flow", None)
    if not callable(fn):
        return {"ok": True, "mode": "absent", "results": [None], "ignored_args": []}
    known = {"config_map": request.get("config_map"), "flow_uuid": request["flow_uuid"]}
    args = request.get("args") or {}
    positional, keywords = _bind(fn, known, args, "delete_flow")
    result = _call(fn, positional, keywords, plugin_dir, "delete_flow")
    try:  # Kardinal JSON-dumps and then ignores the return value; keep it only if it is JSON
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        result = None
    return {"ok": True, "mode": "plural", "results": [result], "ignored_args": []}


OPTIONAL = ("validate_args", "default_args", "validate_change", "lifecycle_hook")


def call(request: dict, module=None) -> dict:
    """One of the optional CNPG-I-style functions, bound by name like the others; absent is not an error."""
    plugin_dir = request["plugin_dir"]
    name = request.get("function")
    if name not in OPTIONAL:
        raise PluginFailure({"kind": "protocol", "message": f"unknown function {name!r}"})
    module = module or _load(plugin_dir)
    fn = getattr(module, name, None)
    if not callable(fn):
        return {"ok": True, "mode": "absent", "results": [None], "ignored_args": []}
    positional, keywords = _bind(fn, request.get("values") or {}, {}, name)
    return {"ok": True, "mode": "plural", "results": [_call(fn, positional, keywords, plugin_dir, name)],
            "ignored_args": []}


OPERATIONS = {"create_flow": create_flow, "delete_flow": delete_flow, "call": call}


def _encode(reply: dict) -> bytes:
    try:
        return json.dumps(reply, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        return json.dumps(
            {
                "ok": False,
                "error": {
                    "kind": "not-json",
                    "type": type(exc).__name__,
                    "detail": str(exc),
                    "message": f"the return value is not JSON-serializable: {type(exc).__name__}: {exc}",
                },
            }
        ).encode("utf-8")


def main() -> None:
    # Keep the protocol channel private before any plugin code can run.
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(line_buffering=True)
    try:
        request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
        if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
            raise PluginFailure({"kind": "protocol", "message": "unsupported shim request"})
        operation = OPERATIONS.get(request.get("operation"))
        if operation is None:
            message = f"unknown operation {request.get('operation')!r}"
            raise PluginFailure({"kind": "protocol", "message": message})
        reply = operation(request)
    except PluginFailure as failure:
        reply = {"ok": False, "error": failure.error}
    except Exception as exc:  # a bug in the shim or a bad request: report it, never hang
        reply = {"ok": False, "error": {"kind": "shim", "type": type(exc).__name__, "detail": str(exc),
                                        "message": f"plugin shim failed: {type(exc).__name__}: {exc}"}}
    data = _encode(reply)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    view = memoryview(data)
    try:
        while view:
            written = os.write(proto_fd, view)
            view = view[written:]
        os.close(proto_fd)
    except OSError:
        os._exit(3)
    # Skip interpreter teardown: plugin atexit handlers or lingering non-daemon threads must not
    # change the outcome or hold the call open.
    os._exit(0)


if __name__ == "__main__":
    main()
