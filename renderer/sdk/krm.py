"""Python SDK for exec (KRM function) and gRPC plugins.

An exec plugin is any executable that reads one `ResourceList` on stdin and writes it back on
stdout (see `renderer/invocation.py` for the document devlane sends):

    #!/usr/bin/env python3
    from renderer.sdk.krm import run

    def handler(resource_list: dict) -> dict:
        for item in resource_list["items"]:
            ...
        return resource_list

    run(handler)

A Kardinal-style module (`create_flow`, `delete_flow` and the optional `validate_args`,
`default_args`, `validate_change`, `lifecycle_hook`) becomes a handler with `kardinal(module)`,
usable by `run` (exec) and by `renderer.sdk.serve` (gRPC):

    run(kardinal(my_module))                                           # exec
    serve(kardinal(my_module), name=..., version=..., capabilities=[...])  # grpc

Arguments are bound exactly as the Kardinal shim binds them (by name from the signature, legacy
singular signatures included), so a module gives the same results whichever runtime runs it.

Only the standard library is needed (YAML input needs PyYAML); failures of the plugin's functions
become `error` results in the reply, never a traceback on stdout.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import os
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..invocation import DEPENDENT, ID, RESOURCE_LIST, ROLE, state_item, strip_internal
from ..shim import OPTIONAL, PluginFailure
from ..shim import call as _shim_call
from ..shim import create_flow as _shim_create_flow
from ..shim import delete_flow as _shim_delete_flow

__all__ = ["error_reply", "kardinal", "read_resource_list", "run"]

FUNCTIONS = ("create_flow", "delete_flow", *OPTIONAL)
_RESULT_SHAPE = '{"pod_specs": [...one per dependent, same order...], "config_map": {...}}'


# --------------------------------------------------------------------------------------------------
# The KRM function runner


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


def error_reply(request: Mapping[str, Any] | None, message: str) -> dict:
    """The request with one `error` result: how a failed call answers."""
    request = request if isinstance(request, Mapping) else {}
    reply: dict[str, Any] = {**RESOURCE_LIST, "items": list(request.get("items") or [])}
    if "functionConfig" in request:
        reply["functionConfig"] = request["functionConfig"]
    reply["results"] = [{"severity": "error", "message": message}]
    return reply


def _operation(doc: Mapping[str, Any]) -> str:
    spec = (doc.get("functionConfig") or {}).get("spec") or {}
    return str(spec.get("operation") or "") if isinstance(spec, dict) else ""


def _wants_operation(handler: Callable) -> bool:
    """True when `handler` takes (operation, resource_list) rather than (resource_list)."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return False
    required = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is p.empty]  # fmt: skip
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
    private_fd = None
    if stdout is None:  # keep fd 1 for the reply only: prints, os.write(1) and C code go to stderr
        sys.stdout.flush()
        private_fd = os.dup(1)
        os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            try:
                request = read_resource_list(in_stream.read())
                reply = handler(_operation(request), request) if _wants_operation(handler) else handler(request)
                if not isinstance(reply, dict):
                    raise TypeError(f"the handler returned {type(reply).__name__}, expected a ResourceList dict")
                data = _dumps(reply)
                status = 0
            except Exception as exc:
                import traceback

                traceback.print_exc(file=sys.stderr)
                data = _dumps(error_reply(request, f"{type(exc).__name__}: {exc}"))
                status = 1
        _write(data, stdout, private_fd)
    finally:
        if private_fd is not None:
            os.close(private_fd)
    if exit:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.exit(status)
    return status


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _write(data: bytes, stdout: Any, fd: int | None) -> None:
    if fd is None:
        target = getattr(stdout, "buffer", stdout)
        try:
            target.write(data)
        except TypeError:  # a text stream
            target.write(data.decode("utf-8"))
        with contextlib.suppress(Exception):
            target.flush()
        return
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# --------------------------------------------------------------------------------------------------
# Kardinal modules as handlers


def _namespace(module_or_functions: Any) -> Any:
    """A module / object, a {name: function} mapping, or an iterable of functions -> attribute access."""
    if isinstance(module_or_functions, Mapping):
        return types.SimpleNamespace(**{k: v for k, v in module_or_functions.items() if k in FUNCTIONS})
    if isinstance(module_or_functions, Iterable) and not isinstance(module_or_functions, (str, bytes)) \
            and not isinstance(module_or_functions, types.ModuleType):
        return types.SimpleNamespace(**{f.__name__: f for f in module_or_functions if f.__name__ in FUNCTIONS})
    return module_or_functions


def _module_dir(ns: Any) -> str:
    file = getattr(ns, "__file__", None)
    if file is None:
        fn = next((getattr(ns, n) for n in FUNCTIONS if callable(getattr(ns, n, None))), None)
        file = inspect.getsourcefile(fn) if fn is not None else None
    return os.path.dirname(os.path.realpath(file)) if file else os.getcwd()


def _ann(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _plain(obj: dict) -> dict:
    """A copy of an item without devlane's internal annotations (what a Kardinal function sees)."""
    return strip_internal(copy.deepcopy(obj))


def _json_type(value: Any) -> str:
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", dict: "an object"}  # fmt: skip
    return names.get(type(value), type(value).__name__)


class _Reply(Exception):
    """Stop with these `error` results (the plugin's fault, reported like the Kardinal runtime does)."""

    def __init__(self, *messages: str):
        super().__init__(messages[0] if messages else "")
        self.messages = list(messages)


def _failure_message(error: dict, plugin: str) -> str:
    frames = "".join(f"\n  {line}" for line in error.get("frames") or [])
    kind = error.get("kind")
    if kind == "missing-args":
        missing = error.get("missing") or []
        noun = "argument" if len(missing) == 1 else "arguments"
        return (f"{error.get('function')}() of plugin {plugin} requires {noun} "
                f"{', '.join(repr(m) for m in missing)}, but the plugin definition has no such arg")
    if kind == "raised":
        return f"{error.get('message')}{frames}"
    return str(error.get("message") or error)


def _checked_json(value: Any, label: str) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _Reply(f"{label} returned malformed output: it is not JSON-serializable "
                     f"({type(exc).__name__}: {exc})") from None  # fmt: skip
    return value


def _results(value: Any, label: str) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise _Reply(f"{label}: `results` is {_json_type(value)}, expected a list of "
                     '{"message": "...", "severity": "error" | "warning" | "info"}')  # fmt: skip
    return [dict(r) for r in value]


class KardinalHandler:
    """`handler(operation, resource_list)` (gRPC) or `handler(resource_list)` (exec) for a Kardinal module."""

    def __init__(self, module_or_functions: Any):
        self.module = _namespace(module_or_functions)
        self.plugin_dir = _module_dir(self.module)

    def __call__(self, operation: Any, resource_list: dict | None = None) -> dict:
        if resource_list is None:
            if not isinstance(operation, dict):
                raise TypeError("call handler(resource_list) or handler(operation, resource_list)")
            resource_list, operation = operation, _operation(operation)
        doc = resource_list
        operation = operation or _operation(doc)
        method = getattr(self, f"_op_{operation}", None)
        if method is None:
            return error_reply(doc, f"unsupported operation {operation!r}")
        try:
            return method(doc, self._spec(doc))
        except _Reply as stop:
            reply = error_reply(doc, stop.messages[0])
            reply["results"] = [{"severity": "error", "message": m} for m in stop.messages]
            return reply
        except PluginFailure as failure:
            return error_reply(doc, _failure_message(failure.error, str(self._spec(doc).get("plugin") or "")))

    @staticmethod
    def _spec(doc: dict) -> dict:
        spec = (doc.get("functionConfig") or {}).get("spec")
        return spec if isinstance(spec, dict) else {}

    def _reply(self, doc: dict, items: list[dict], results: list[dict] | None = None, **spec_changes: Any) -> dict:
        reply: dict[str, Any] = {**RESOURCE_LIST, "items": items}
        if "functionConfig" in doc:
            fc = copy.deepcopy(doc["functionConfig"])
            if spec_changes:
                fc.setdefault("spec", {}).update(spec_changes)
            reply["functionConfig"] = fc
        if results:
            reply["results"] = results
        return reply

    def _call_optional(self, name: str, values: dict) -> tuple[bool, Any]:
        """(present, value) of an optional function, bound by name like the shim does."""
        reply = _shim_call({"plugin_dir": self.plugin_dir, "function": name, "values": values}, self.module)
        if reply.get("mode") == "absent":
            return False, None
        return True, _checked_json(reply["results"][0], name)

    # -- operations --------------------------------------------------------------------------------

    def _op_CreateFlow(self, doc: dict, spec: dict) -> dict:
        items = doc.get("items") or []
        if spec.get("stage") in ("pre-render", "post-render"):
            return self._reply(doc, copy.deepcopy(items))  # whole-list transforms: a Kardinal module has none
        dependents = list(spec.get("dependents") or [])
        workloads: dict[str, dict] = {}
        services: dict[str, dict] = {}
        for item in items:
            ann = _ann(item)
            if ann.get(ROLE) == "workload":
                workloads[ann.get(DEPENDENT, "")] = item
            elif ann.get(ROLE) == "service":
                services[ann.get(DEPENDENT, "")] = item
        dependents = [d for d in dependents if d in workloads] or list(workloads)
        pod_specs = [copy.deepcopy(((workloads[d].get("spec") or {}).get("template") or {}).get("spec") or {})
                     for d in dependents]  # fmt: skip
        request = {
            "plugin_dir": self.plugin_dir,
            "flow_uuid": (spec.get("flow") or {}).get("uuid") or f"{_instance(doc)}-{_flow_id(spec)}",
            "args": dict(spec.get("args") or {}),
            "service_specs": [copy.deepcopy((services.get(d) or {}).get("spec") or {}) for d in dependents],
            "pod_specs": pod_specs,
            "workload_specs": [copy.deepcopy(workloads[d].get("spec") or {}) for d in dependents],
            "extensions": [_plain(i) for i in items if _ann(i).get(ROLE) == "extension"],
        }
        shim_reply = _shim_create_flow(request, self.module)
        mode, raw = shim_reply["mode"], shim_reply["results"]
        _checked_json(raw, "create_flow")
        results: list[dict] = []
        resources: list[dict] = []
        if mode == "plural":
            result = _result_dict(raw[0], "create_flow", _RESULT_SHAPE)
            results += _results(result.get("results"), "create_flow")
            if "pod_specs" not in result:
                raise _Reply(f"create_flow returned no `pod_specs`; return {_RESULT_SHAPE}")
            new_specs = result["pod_specs"]
            if not isinstance(new_specs, list):
                raise _Reply(f"create_flow returned `pod_specs` as {_json_type(new_specs)}, expected a list")
            if len(new_specs) != len(dependents):
                raise _Reply(f"create_flow returned {_plural(len(new_specs), 'pod spec')} for "
                             f"{_plural(len(dependents), 'dependent')} ({', '.join(dependents)})")  # fmt: skip
            config_map = _config_map(result, "create_flow")
            resources += _resources(result.get("resources"), "create_flow")
        else:
            results.append({"severity": "warning", "message": (
                f"plugin {spec.get('plugin', '')} uses the pre-Oct-2024 singular signature "
                f"create_flow(service_spec, {mode}, ...); devlane calls it once per dependent. "
                "Migrate to create_flow(service_specs, pod_specs, flow_uuid, ...) returning "
                '{"pod_specs": [...], "config_map": {...}}')})  # fmt: skip
            new_specs, config_maps = [], []
            shape = f'{{"{mode}": {{...}}, "config_map": {{...}}}}'
            for dep, raw_result in zip(dependents, raw, strict=True):
                label = f"create_flow (for {dep})"
                result = _result_dict(raw_result, label, shape)
                results += _results(result.get("results"), label)
                keys = ("pod_spec", "deployment_spec") if mode == "pod_spec" else ("deployment_spec", "pod_spec")
                key = next((k for k in keys if k in result), None)
                if key is None:
                    raise _Reply(f"{label} returned no `{mode}`; return {shape}")
                new_spec = result[key]
                if key == "deployment_spec":
                    template = new_spec.get("template") if isinstance(new_spec, dict) else None
                    if not isinstance(template, dict) or "spec" not in template:
                        raise _Reply(f"{label} returned a `deployment_spec` without template.spec")
                    new_spec = template["spec"]
                new_specs.append(new_spec)
                config_maps.append(_config_map(result, label))
                resources += _resources(result.get("resources"), label)
            config_map = config_maps[0] if len(config_maps) == 1 else config_maps
        out: list[dict] = []
        for item in items:
            ann = _ann(item)
            if ann.get(ROLE) == "workload" and ann.get(DEPENDENT) in dependents:
                i = dependents.index(ann[DEPENDENT])
                new_spec = new_specs[i]
                if not isinstance(new_spec, dict) or not isinstance(new_spec.get("containers"), list) \
                        or not new_spec["containers"]:
                    raise _Reply(f"create_flow: pod spec #{i + 1} (for {ann[DEPENDENT]}) has no non-empty "
                                 "`containers` list")  # fmt: skip
                item = copy.deepcopy(item)
                item.setdefault("spec", {}).setdefault("template", {})["spec"] = copy.deepcopy(new_spec)
                out.append(item)
            else:
                out.append(copy.deepcopy(item))
        out += copy.deepcopy(resources)
        out.append(state_item(_instance(doc), _flow_id(spec), config_map))
        return self._reply(doc, out, results)

    def _op_DeleteFlow(self, doc: dict, spec: dict) -> dict:
        request = {"plugin_dir": self.plugin_dir, "flow_uuid": (spec.get("flow") or {}).get("uuid")
                   or f"{_instance(doc)}-{_flow_id(spec)}", "args": dict(spec.get("args") or {}),
                   "config_map": spec.get("state")}  # fmt: skip
        shim_reply = _shim_delete_flow(request, self.module)
        if shim_reply.get("mode") == "absent":
            results = [{"severity": "warning",
                        "message": f"plugin {spec.get('plugin', '')} defines no delete_flow; nothing to clean up"}]
        else:
            result = (shim_reply.get("results") or [None])[0]
            results = _results(result.get("results"), "delete_flow") if isinstance(result, dict) else []
        return self._reply(doc, [], results)

    def _validation(self, name: str, values: dict, doc: dict) -> dict:
        present, value = self._call_optional(name, values)
        if not present or value is None:
            return self._reply(doc, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise _Reply(f"{name} returned {_json_type(value)}, expected a list of {{field, message}}")
        results = []
        for v in value:
            fld = str(v.get("field") or "args")
            if not fld.startswith("args"):
                fld = f"args.{fld}"
            results.append({"severity": "error", "message": str(v.get("message", "invalid")),
                            "field": {"path": fld}})  # fmt: skip
        return self._reply(doc, [], results)

    def _op_ValidateArgs(self, doc: dict, spec: dict) -> dict:
        return self._validation("validate_args", {"args": dict(spec.get("args") or {})}, doc)

    def _op_ValidateChange(self, doc: dict, spec: dict) -> dict:
        values = {"old_args": dict(spec.get("oldArgs") or {}), "new_args": dict(spec.get("args") or {})}
        return self._validation("validate_change", values, doc)

    def _op_DefaultArgs(self, doc: dict, spec: dict) -> dict:
        args = dict(spec.get("args") or {})
        present, value = self._call_optional("default_args", {"args": copy.deepcopy(args)})
        if present and not isinstance(value, dict):
            raise _Reply(f"default_args returned {_json_type(value)}, expected the args as an object")
        return self._reply(doc, [], args=value if present else args)

    def _op_LifecycleHook(self, doc: dict, spec: dict) -> dict:
        flow_id = _flow_id(spec)
        out = []
        for item in doc.get("items") or []:
            present, value = self._call_optional("lifecycle_hook", {"obj": _plain(item), "flow_id": flow_id})
            if not present:
                return self._reply(doc, copy.deepcopy(doc.get("items") or []))
            if not isinstance(value, dict) or not value.get("kind"):
                raise _Reply(f"lifecycle_hook returned {_json_type(value)} for {item.get('kind')}/"
                             f"{(item.get('metadata') or {}).get('name')}, expected the (patched) object")
            value = copy.deepcopy(value)
            ann = value.setdefault("metadata", {}).setdefault("annotations", {})
            for key in (ID, ROLE):  # keep the id as sent, so the host maps the object back
                if key in _ann(item):
                    ann[key] = _ann(item)[key]
            out.append(value)
        return self._reply(doc, out)


def _instance(doc: dict) -> str:
    return str(((doc.get("functionConfig") or {}).get("metadata") or {}).get("name") or "plugin")


def _flow_id(spec: dict) -> str:
    return str((spec.get("flow") or {}).get("id") or "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _result_dict(value: Any, label: str, expected: str) -> dict:
    if not isinstance(value, dict):
        raise _Reply(f"{label} returned {_json_type(value)}, expected an object {expected}")
    return value


def _config_map(result: dict, label: str) -> Any:
    if "config_map" not in result:
        raise _Reply(f"{label} returned no `config_map`; Kardinal plugins must return one (it is stored and "
                     'handed back to delete_flow): return "config_map": {} if the plugin keeps no state')
    return result["config_map"]


def _resources(value: Any, label: str) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Reply(f"{label}: `resources` is {_json_type(value)}, expected a list of objects")
    for i, obj in enumerate(value):
        if not isinstance(obj, dict):
            raise _Reply(f"{label}: resources[{i}] is {_json_type(obj)}, expected an object")
        for key in ("apiVersion", "kind"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise _Reply(f"{label}: resources[{i}] has no {key}")
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise _Reply(f"{label}: resources[{i}] ({obj['kind']}) has no metadata.name")
    return value


def kardinal(module_or_functions: Any) -> KardinalHandler:
    """A handler for `run` (exec) and `serve` (gRPC) from a Kardinal-style module.

    `module_or_functions`: a module or object with `create_flow` (and optionally `delete_flow`,
    `validate_args`, `default_args`, `validate_change`, `lifecycle_hook`), a mapping of those names
    to functions, or an iterable of the functions themselves. The reply follows the devlane
    contract: CreateFlow returns each workload with its new pod spec, the other items unchanged,
    `resources` as new items and the plugin state as the `devlane.dev/plugin-state` ConfigMap;
    ValidateArgs / ValidateChange return `error` results with `field.path`; DefaultArgs returns the
    args in `functionConfig.spec.args`; LifecycleHook returns the patched objects.
    """
    return KardinalHandler(module_or_functions)
