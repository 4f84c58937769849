"""The one Kardinal adapter: a Kardinal Python module as a ResourceList handler.

A Kardinal plugin is a directory with `main.py` defining `create_flow(service_specs, pod_specs,
flow_uuid, **args)` and `delete_flow(config_map, flow_uuid)`, and optionally `validate_args`,
`default_args`, `validate_change` and `lifecycle_hook`. Besides Kardinal's values, a create_flow that
names them gets `extensions` (the extension objects) and `services` (the dependents' whole Service
objects, metadata included, in the order of `service_specs`). This adapter turns such a module into a
handler of the devlane wire document (`renderer.protocol.krm`), exactly as kyaml's
`SimpleProcessor` wraps a config struct on top of the one `ResourceListProcessor` interface:

- the kardinal-python runtime runs it as a plugin process, `python -m renderer.sdk.kardinal
  PLUGIN_DIR`, in the plugin's prepared virtualenv (it needs only the standard library);
- built-in plugins use the same handler in-process;
- `run(kardinal(module))` (exec) and `serve(kardinal(module), ...)` (gRPC) use it too,
so a module gives byte-identical results whichever runtime runs it.

Arguments are bound by name from each function's signature, as Kardinal does; the pre-Oct-2024
singular signatures (`service_spec` with `pod_spec` or `deployment_spec`) are called once per
dependent, with a deprecation warning. What a function returns is checked here against the
Kardinal shapes; every failure becomes an `error` result whose tags carry the fix-it hint and a
problem code, so the host reports it with the same words whatever the runtime.
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import json
import os
import sys
import traceback
import types
from collections.abc import Iterable, Mapping
from typing import Any

from ..protocol.krm import (
    DEPENDENT,
    ID,
    ROLE,
    annotations,
    dumps,
    error_reply,
    instance_of,
    operation_of,
    reply,
    result,
    spec_of,
    state_item,
    strip_internal,
)
from .channel import read_resource_list, reply_channel

__all__ = ["KardinalHandler", "kardinal", "load_module", "main"]

OPTIONAL = ("validate_args", "default_args", "validate_change", "lifecycle_hook")
FUNCTIONS = ("create_flow", "delete_flow", *OPTIONAL)
SHAPE = '{"pod_specs": [...one per dependent, same order...], "config_map": {...}}'
MAX_FRAMES = 5
SDK_DIR = os.path.dirname(os.path.realpath(__file__))
PLAIN_JSON = "return only dicts, lists, strings, numbers, booleans and None (no sets, bytes, NaN or other objects)"
RESULTS_HINT = 'return "results": [{"message": "...", "severity": "error" | "warning" | "info"}]'
RESOURCES_HINT = "each extra object needs apiVersion, kind and metadata.name"


class Failure(Exception):
    """The plugin failed; the reply carries one `error` result with this message, hint and code."""

    def __init__(self, message: str, hint: str | None = None, code: str = "plugin-malformed"):
        super().__init__(message)
        self.message, self.hint, self.code = message, hint, code

    def reply(self, request: Mapping[str, Any] | None) -> dict:
        return error_reply(request, self.message, hint=self.hint, code=self.code)


class _Answered(Exception):
    """Stop early with these results (the plugin reported errors, or malformed results, for the host to read)."""

    def __init__(self, results: list):
        super().__init__("answered")
        self.results = results


# --------------------------------------------------------------------------------------------------
# Loading a plugin directory


def _inside(path: str, directory: str) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(path), directory]) == directory
    except ValueError:
        return False


def _frames(tb: Any, plugin_dir: str) -> list[str]:
    """The last traceback frames that belong to the plugin (or, if none, the last few outside devlane)."""
    entries = [f for f in traceback.extract_tb(tb)
               if not _inside(f.filename, SDK_DIR) and not f.filename.startswith("<frozen")]
    own = [f for f in entries if _inside(f.filename, plugin_dir)]
    out = []
    for f in (own or entries)[-MAX_FRAMES:]:
        name = os.path.relpath(f.filename, plugin_dir) if _inside(f.filename, plugin_dir) else f.filename
        out.append(f"{name}:{f.lineno} in {f.name}" + (f": {f.line.strip()}" if f.line else ""))
    return out


def _exception(exc: BaseException, plugin_dir: str) -> tuple[str, str]:
    """(`Type: detail`, the indented frames) of an exception raised by plugin code."""
    frames = _frames(exc.__traceback__, plugin_dir)
    detail = str(exc)
    if isinstance(exc, SyntaxError):
        filename = exc.filename or "main.py"
        if _inside(filename, plugin_dir):
            filename = os.path.relpath(filename, plugin_dir)
        where = f"{filename}:{exc.lineno}" if exc.lineno else filename
        detail = f"{exc.msg} at {where}"
        if exc.text:
            frames.append(f"{where}: {exc.text.strip()}")
    return f"{type(exc).__name__}: {detail}", "".join(f"\n  {line}" for line in frames)


def load_module(plugin_dir: str, plugin: str, module_name: str = "main", keep_path: bool = True) -> Any:
    """Import `main.py` of a plugin directory; a failure names the plugin and says how to fix it.

    The plugin directory goes first on sys.path (sibling modules import as under Kardinal); with
    `keep_path=False` (built-ins, in devlane's own process) only while the module loads.
    """
    plugin_dir = os.path.realpath(plugin_dir)
    main_py = os.path.join(plugin_dir, "main.py")
    if not os.path.isfile(main_py):
        raise Failure(f"plugin directory {plugin_dir} has no main.py", None, "plugin-no-main")
    spec = importlib.util.spec_from_file_location(module_name, main_py)
    if spec is None or spec.loader is None:
        raise Failure(f"cannot load {main_py}", None, "plugin-import")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, plugin_dir)
    if keep_path:
        sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit, anything at import time
        what, trace = _exception(exc, plugin_dir)
        hint = f"fix the error in {main_py} (try `python {main_py}`)"
        if isinstance(exc, ImportError):
            hint = ("list the plugin's dependencies in its requirements.txt and build its environment with "
                    "`devlane plugins prepare`, or fix the import")
        raise Failure(f"main.py of plugin {plugin} failed to import: {what}{trace}", hint, "plugin-import") from None
    finally:
        if not keep_path:
            sys.path.remove(plugin_dir)
    return module


# --------------------------------------------------------------------------------------------------
# Values


def _json_type(value: Any) -> str:
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _checked_json(value: Any, label: str) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise Failure(f"{label} returned malformed output: it is not JSON-serializable ({type(exc).__name__}: {exc})",
                      PLAIN_JSON) from None
    return value


def _result_dict(value: Any, label: str, expected: str) -> dict:
    if not isinstance(value, dict):
        raise Failure(f"{label} returned {_json_type(value)}, expected an object {expected}", f"return {expected}")
    return value


def _results(value: Any, label: str) -> list:
    """A Kardinal result's `results`, as KRM results; anything but warnings and infos stops the call here,
    so the host reports the plugin's errors (or malformed entries) before anything else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Failure(f"{label}: `results` is {_json_type(value)}, expected a list", RESULTS_HINT)
    if not all(isinstance(r, dict) and r.get("severity") in ("warning", "info") for r in value):
        raise _Answered(list(value))
    return list(value)


def _config_map(value: dict, label: str) -> Any:
    if "config_map" not in value:
        raise Failure(f"{label} returned no `config_map`; Kardinal plugins must return one (it is stored and "
                      "handed back to delete_flow)", 'return "config_map": {} if the plugin keeps no state')
    return value["config_map"]


def _resources(value: Any, label: str) -> list[dict]:
    """New objects; the host checks each one (apiVersion, kind, metadata.name) like any plugin's."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Failure(f"{label}: `resources` is {_json_type(value)}, expected a list of objects", RESOURCES_HINT)
    for i, obj in enumerate(value):
        if not isinstance(obj, dict):
            raise Failure(f"{label}: resources[{i}] is {_json_type(obj)}, expected an object", RESOURCES_HINT)
    return value


def _pod_spec(spec: Any, index: int, dependent: str, label: str) -> dict:
    hint = "return each dependent's (modified) pod spec, in the order received, with its containers; expected " + SHAPE
    where = f"{label}: pod spec #{index + 1} (for {dependent})"
    if not isinstance(spec, dict):
        raise Failure(f"{where} is {_json_type(spec)}, expected an object", hint)
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise Failure(f"{where} has no non-empty `containers` list", hint)
    for j, container in enumerate(containers):
        if not isinstance(container, dict):
            raise Failure(f"{where} containers[{j}] is {_json_type(container)}, expected an object", hint)
    return spec


def _signature_mode(fn: Any) -> str:
    names = set(inspect.signature(fn).parameters)
    if "service_specs" in names or "pod_specs" in names:
        return "plural"
    if "service_spec" in names and "pod_spec" in names:
        return "pod_spec"
    if "service_spec" in names and "deployment_spec" in names:
        return "deployment_spec"
    return "plural"


# --------------------------------------------------------------------------------------------------
# The handler


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


class KardinalHandler:
    """`handler(operation, resource_list)` (gRPC) or `handler(resource_list)` (exec) for a Kardinal module."""

    def __init__(self, module_or_functions: Any, plugin_dir: str | None = None):
        self.module = _namespace(module_or_functions)
        self.plugin_dir = os.path.realpath(plugin_dir) if plugin_dir else _module_dir(self.module)
        self.plugin = self.instance = ""

    def __call__(self, operation: Any, resource_list: dict | None = None) -> dict:
        if resource_list is None:
            if not isinstance(operation, dict):
                raise TypeError("call handler(resource_list) or handler(operation, resource_list)")
            resource_list, operation = operation, operation_of(operation)
        doc = resource_list
        method = getattr(self, f"_op_{operation or operation_of(doc)}", None)
        if method is None:
            return error_reply(doc, f"unsupported operation {operation!r}", code="plugin-malformed")
        spec = spec_of(doc)
        call = copy.copy(self)  # per-call names: a gRPC server calls one handler from several threads
        call.plugin, call.instance = str(spec.get("plugin") or ""), instance_of(doc)
        try:
            return getattr(call, method.__name__)(doc, spec)
        except Failure as failure:
            return failure.reply(doc)
        except _Answered as answered:
            return reply(doc, copy.deepcopy(doc.get("items") or []), answered.results)

    # -- calling plugin functions -------------------------------------------------------------------

    def _function(self, name: str) -> Any:
        fn = getattr(self.module, name, None)
        return fn if callable(fn) else None

    def _bind(self, fn: Any, values: dict, args: dict, name: str) -> tuple[list, dict]:
        """Bind parameters by name exactly as Kardinal does: known values first, then args, then defaults."""
        positional: list = []
        keywords: dict = {}
        missing: list[str] = []
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue  # Kardinal never expands *args / **kwargs
            if param.name in values:
                value = values[param.name]
            elif param.name in args:
                value = args[param.name]
            elif param.default is not param.empty:
                continue
            else:
                missing.append(param.name)
                continue
            if param.kind == param.POSITIONAL_ONLY:
                positional.append(value)
            else:
                keywords[param.name] = value
        if missing:
            noun = "argument" if len(missing) == 1 else "arguments"
            example = ", ".join(f"{m}: ..." for m in missing)
            raise Failure(f"{name}() of plugin {self.plugin} requires {noun} {', '.join(repr(m) for m in missing)}, "
                          "but the plugin definition has no such arg",
                          f"add it under `args:` in the plugin-definition of {self.instance} (args: {{{example}}})",
                          "plugin-missing-arg")
        return positional, keywords

    def _call(self, fn: Any, values: dict, args: dict, name: str) -> Any:
        positional, keywords = self._bind(fn, values, args, name)
        try:
            return fn(*positional, **keywords)
        except BaseException as exc:
            what, trace = _exception(exc, self.plugin_dir)
            raise Failure(f"{name} raised {what}{trace}",
                          f"check the args in the plugin-definition of {self.instance}, or fix the plugin "
                          f"({self.plugin}); rerun with --debug to see everything it printed",
                          "plugin-raised") from None

    def _optional(self, name: str, values: dict) -> tuple[bool, Any]:
        """(present, value) of an optional function, bound by name from `values` alone."""
        fn = self._function(name)
        if fn is None:
            return False, None
        return True, _checked_json(self._call(fn, values, {}, name), name)

    # -- operations ---------------------------------------------------------------------------------

    def _op_CreateFlow(self, doc: dict, spec: dict) -> dict:
        items = doc.get("items") or []
        if spec.get("stage") in ("pre-render", "post-render"):
            return reply(doc, copy.deepcopy(items))  # whole-list transforms: a Kardinal module has none
        fn = self._function("create_flow")
        if fn is None:
            raise Failure(f"main.py of plugin {self.plugin} defines no create_flow function",
                          "define create_flow(service_specs, pod_specs, flow_uuid, ...) and delete_flow(config_map, "
                          "flow_uuid)", "plugin-no-function")
        workloads = {annotations(i).get(DEPENDENT, ""): i for i in items if annotations(i).get(ROLE) == "workload"}
        services = {annotations(i).get(DEPENDENT, ""): i for i in items if annotations(i).get(ROLE) == "service"}
        dependents = [d for d in spec.get("dependents") or [] if d in workloads] or list(workloads)
        pod_specs = [copy.deepcopy(((workloads[d].get("spec") or {}).get("template") or {}).get("spec") or {})
                     for d in dependents]
        args = dict(spec.get("args") or {})
        flow_uuid = (spec.get("flow") or {}).get("uuid") or f"{self.instance}-{(spec.get('flow') or {}).get('id')}"
        mode = _signature_mode(fn)
        configs = _handed_configs(items, dependents)
        edited: list[dict] = [{} for _ in dependents]
        if mode == "plural":
            known = {"service_specs": [copy.deepcopy((services.get(d) or {}).get("spec") or {}) for d in dependents],
                     "services": [strip_internal(copy.deepcopy(services.get(d) or {})) for d in dependents],
                     "pod_specs": pod_specs, "flow_uuid": flow_uuid,
                     "extensions": [strip_internal(copy.deepcopy(i)) for i in items
                                    if annotations(i).get(ROLE) == "extension"],
                     "config_maps": copy.deepcopy(configs)}
            new_specs, config_map, resources, results, edited = self._plural(fn, known, args, dependents)
        else:
            new_specs, config_map, resources, results = self._singular(fn, mode, args, flow_uuid, dependents,
                                                                       workloads, services, pod_specs)
        ignored = sorted(a for a in args if a not in inspect.signature(fn).parameters or a in {
            "service_specs", "services", "pod_specs", "flow_uuid", "extensions", "service_spec", "pod_spec",
            "deployment_spec", "config_maps"})
        if ignored:
            results.append(result(f"create_flow ignored args not in its signature: {', '.join(ignored)}", "info",
                                  code="plugin-debug"))
        out = []
        for item in items:
            item = copy.deepcopy(item)
            dep = annotations(item).get(DEPENDENT)
            if annotations(item).get(ROLE) == "workload" and dep in dependents:
                item.setdefault("spec", {}).setdefault("template", {})["spec"] = copy.deepcopy(
                    new_specs[dependents.index(dep)])
            elif annotations(item).get(ROLE) == "config" and dep in dependents:
                name = (item.get("metadata") or {}).get("name")
                if name in edited[dependents.index(dep)]:
                    item["data"] = copy.deepcopy(edited[dependents.index(dep)][name])
            out.append(item)
        out += copy.deepcopy(resources)
        out.append(state_item(self.instance, str((spec.get("flow") or {}).get("id") or ""), config_map))
        return reply(doc, out, results)

    def _plural(self, fn: Any, known: dict, args: dict, dependents: list[str]) -> tuple:
        value = _result_dict(_checked_json(self._call(fn, known, args, "create_flow"), "create_flow"),
                             "create_flow", SHAPE)
        results = _results(value.get("results"), "create_flow")
        if "pod_specs" not in value:
            raise Failure("create_flow returned no `pod_specs`", f"return {SHAPE}")
        specs = value["pod_specs"]
        if not isinstance(specs, list):
            raise Failure(f"create_flow returned `pod_specs` as {_json_type(specs)}, expected a list",
                          f"return {SHAPE}")
        if len(specs) != len(dependents):
            raise Failure(f"create_flow returned {_plural(len(specs), 'pod spec')} for "
                          f"{_plural(len(dependents), 'dependent')} ({', '.join(dependents)})",
                          "return exactly one pod spec per entry of pod_specs, in the same order (modify them in place "
                          "and return the whole list)", "plugin-pod-spec-count")
        checked = [_pod_spec(s, i, dependents[i], "create_flow") for i, s in enumerate(specs)]
        return (checked, _config_map(value, "create_flow"), _resources(value.get("resources"), "create_flow"), results,
                _edited_configs(value.get("config_maps"), known["config_maps"], dependents))

    def _singular(self, fn: Any, mode: str, args: dict, flow_uuid: str, dependents: list[str], workloads: dict,
                  services: dict, pod_specs: list[dict]) -> tuple:
        """The pre-Oct-2024 signatures: one call per dependent."""
        results = [result(f"plugin {self.plugin} uses the pre-Oct-2024 singular signature create_flow(service_spec, "
                          f"{mode}, ...); devlane calls it once per dependent. Migrate to create_flow(service_specs, "
                          'pod_specs, flow_uuid, ...) returning {"pod_specs": [...], "config_map": {...}}', "warning",
                          "see Kardinal's plugin API change of October 2024 (kardinal-kontrol#61)",
                          "plugin-deprecated-signature")]
        shape = f'{{"{mode}": {{...}}, "config_map": {{...}}}}'
        specs, config_maps, resources = [], [], []
        for i, dep in enumerate(dependents):
            label = f"create_flow (for {dep})"
            workload = copy.deepcopy(workloads[dep].get("spec") or {})
            if not isinstance(workload.get("template"), dict):
                workload["template"] = {}
            workload["template"]["spec"] = copy.deepcopy(pod_specs[i])
            known = {"service_spec": copy.deepcopy((services.get(dep) or {}).get("spec") or {}),
                     "pod_spec": pod_specs[i], "deployment_spec": workload, "flow_uuid": flow_uuid}
            value = _result_dict(_checked_json(self._call(fn, known, args, "create_flow"), "create_flow"), label,
                                 shape)
            try:
                results += _results(value.get("results"), label)
            except _Answered as answered:
                raise _Answered(results + answered.results) from None
            keys = ("pod_spec", "deployment_spec") if mode == "pod_spec" else ("deployment_spec", "pod_spec")
            key = next((k for k in keys if k in value), None)
            if key is None:
                raise Failure(f"{label} returned no `{mode}`", f"return {shape}")
            new = value[key]
            if key == "deployment_spec":
                template = new.get("template") if isinstance(new, dict) else None
                if not isinstance(template, dict) or "spec" not in template:
                    raise Failure(f"{label} returned a `deployment_spec` without template.spec",
                                  f"return {shape} with the whole deployment spec")
                new = template["spec"]
            specs.append(_pod_spec(new, i, dep, label))
            config_maps.append(_config_map(value, label))
            resources += _resources(value.get("resources"), label)
        return specs, config_maps[0] if len(config_maps) == 1 else config_maps, resources, results

    def _op_DeleteFlow(self, doc: dict, spec: dict) -> dict:
        fn = self._function("delete_flow")
        if fn is None:
            return reply(doc, [], [result(f"plugin {self.plugin} defines no delete_flow; nothing to clean up",
                                          "warning", "define delete_flow(config_map, flow_uuid) if the plugin creates "
                                          "anything outside the rendered manifests", "plugin-no-delete")])
        flow = spec.get("flow") or {}
        known = {"config_map": spec.get("state"), "flow_uuid": flow.get("uuid") or f"{self.instance}-{flow.get('id')}"}
        value = self._call(fn, known, dict(spec.get("args") or {}), "delete_flow")
        try:  # Kardinal JSON-dumps and then ignores the return value; keep it only if it is JSON
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            value = None
        return reply(doc, [], _results(value.get("results"), "delete_flow") if isinstance(value, dict) else [])

    def _validation(self, name: str, values: dict, doc: dict) -> dict:
        present, value = self._optional(name, values)
        if not present or value is None:
            return reply(doc, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise Failure(f"{name} returned {_json_type(value)}, expected a list of {{field, message}}",
                          'return [] when valid, else [{"field": "args.name", "message": "..."}]')
        results = []
        for v in value:
            fld = str(v.get("field") or "args")
            fld = fld if fld.startswith("args") else f"args.{fld}"
            results.append(result(str(v.get("message", "invalid")), field=fld))
        return reply(doc, [], results)

    def _op_ValidateArgs(self, doc: dict, spec: dict) -> dict:
        return self._validation("validate_args", {"args": dict(spec.get("args") or {})}, doc)

    def _op_ValidateChange(self, doc: dict, spec: dict) -> dict:
        values = {"old_args": dict(spec.get("oldArgs") or {}), "new_args": dict(spec.get("args") or {})}
        return self._validation("validate_change", values, doc)

    def _op_DefaultArgs(self, doc: dict, spec: dict) -> dict:
        args = dict(spec.get("args") or {})
        present, value = self._optional("default_args", {"args": copy.deepcopy(args)})
        if present and not isinstance(value, dict):
            raise Failure(f"default_args returned {_json_type(value)}, expected the args as an object",
                          "return the args with defaults filled in")
        return reply(doc, [], args=value if present else args)

    def _op_LifecycleHook(self, doc: dict, spec: dict) -> dict:
        flow_id = str((spec.get("flow") or {}).get("id") or "")
        out = []
        for item in doc.get("items") or []:
            present, value = self._optional("lifecycle_hook", {"obj": strip_internal(copy.deepcopy(item)),
                                                                "flow_id": flow_id})
            if not present:
                return reply(doc, copy.deepcopy(doc.get("items") or []))
            if not isinstance(value, dict) or not value.get("kind"):
                raise Failure(f"lifecycle_hook returned {_json_type(value)} for {item.get('kind')}/"
                              f"{(item.get('metadata') or {}).get('name')}, expected the (patched) object",
                              "return the object it received, patched")
            value = copy.deepcopy(value)
            ann = value.setdefault("metadata", {}).setdefault("annotations", {})
            ann.update({k: v for k, v in annotations(item).items() if k in (ROLE, ID)})
            out.append(value)
        return reply(doc, out)


def _handed_configs(items: list[dict], dependents: list[str]) -> list[dict[str, dict[str, str]]]:
    """`config_maps` as create_flow receives it: per dependent (the order of pod_specs), the ConfigMaps its pod
    reads, by name, each as its `data`."""
    out: list[dict[str, dict[str, str]]] = [{} for _ in dependents]
    for item in items:
        dep = annotations(item).get(DEPENDENT)
        if annotations(item).get(ROLE) == "config" and dep in dependents:
            out[dependents.index(dep)][str((item.get("metadata") or {}).get("name"))] = dict(item.get("data") or {})
    return out


def _edited_configs(value: Any, handed: list[dict], dependents: list[str]) -> list[dict]:
    """The `config_maps` create_flow returned (optional: omitted, nothing changed), checked against what it was
    handed: the same shape, the data of ConfigMaps it received, strings only."""
    if value is None:
        return handed
    shape = "a list with one {name: data} mapping per pod spec, in the order of pod_specs"
    if not isinstance(value, list) or len(value) != len(dependents) or not all(isinstance(v, dict) for v in value):
        raise Failure(f"create_flow returned `config_maps` that is not {shape}",
                      "return the config_maps you received, with their data values changed, or leave it out")
    for i, mapping in enumerate(value):
        for name, data in mapping.items():
            if name not in handed[i]:
                raise Failure(f"create_flow returned config_maps[{i}] with {name!r}, which {dependents[i]} does not "
                              "read", "change only the ConfigMaps handed in config_maps")
            if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
                raise Failure(f"create_flow returned config_maps[{i}][{name!r}] that is not a mapping of strings",
                              "ConfigMap data values are strings")
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


# --------------------------------------------------------------------------------------------------
# The plugin process


def _leave_devlane_path() -> None:
    """Drop what devlane added to find this adapter (PYTHONPATH), so the plugin sees its own environment."""
    added = [p for p in os.environ.pop("PYTHONPATH", "").split(os.pathsep) if p]
    for path in added:
        real = os.path.realpath(path)
        first = next((i for i, p in enumerate(sys.path) if os.path.realpath(p or os.curdir) == real), None)
        if first is not None:
            del sys.path[first]
    cwd = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != cwd]


def main(argv: list[str] | None = None) -> None:
    """`python -m renderer.sdk.kardinal PLUGIN_DIR`: one call, ResourceList on stdin, reply on stdout.

    Stray output never reaches the reply (fd 1 is private before plugin code runs); the process
    ends with `os._exit` so plugin atexit handlers or lingering threads cannot change the outcome.
    """
    argv = sys.argv[1:] if argv is None else argv
    with reply_channel() as write:
        request: dict | None = None
        try:
            request = read_resource_list(sys.stdin.buffer.read())
            if len(argv) != 1:
                raise Failure("usage: python -m renderer.sdk.kardinal PLUGIN_DIR")
            _leave_devlane_path()
            module = load_module(argv[0], str(spec_of(request).get("plugin") or argv[0]))
            data = dumps(KardinalHandler(module, argv[0])(operation_of(request), request))
        except Failure as failure:
            data = dumps(failure.reply(request))
        except Exception as exc:  # a bad request or a bug here: report it, never hang
            data = dumps(error_reply(request, f"plugin adapter failed: {type(exc).__name__}: {exc}",
                                     code="plugin-malformed"))
        write(data)
    os._exit(0)


if __name__ == "__main__":
    main()
