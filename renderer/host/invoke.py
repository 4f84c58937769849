"""One plugin call on the host side: the request document, and the one reader of every reply.

An `Invocation` becomes the wire document of `renderer.protocol.krm` (`request_document`); what
comes back, from any runtime, is read by `ReplyReader`: the one validator of the ResourceList (parsed
within the limits of `reply_bounds`), the one parser of `results`, and (`outcome_from_reply`) the
mutation policy: a CreateFlow may change only the pod specs of the workloads it received and may add
objects; anything else is an error that names the plugin, the object and the field path. What those
pod specs and objects may hold is the output policy's business (`render.plugins.output_policy`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from ..core.k8s import pod_spec, with_pod_spec
from ..core.names import flow_uuid
from ..errors import PluginError, Problem, Where, fail
from ..protocol.krm import (
    CODE_TAG,
    DEPENDENT,
    HINT_TAG,
    ID,
    INVOCATION_API,
    PROTOCOL_VERSION,
    RESOURCE_LIST,
    ROLE,
    SEVERITIES,
    STATE,
    STATE_KEY,
    Operation,
    Role,
    Stage,
    annotations,
    strip_internal,
)
from .process import tail_text
from .reply_bounds import MAX_NEW_OBJECTS, MAX_OBJECT_BYTES, ReplyLimit, load_json, load_reply, object_bytes

RESULTS_HINT = 'return "results": [{"message": "...", "severity": "error" | "warning" | "info"}]'
RESOURCES_HINT = "each extra object needs apiVersion, kind and metadata.name"
_CODE = re.compile(r"plugin-[a-z][a-z-]*\Z")


@dataclass(frozen=True)
class Invocation:
    """One plugin call, whatever the runtime."""

    operation: Operation
    instance: str  # the plugin-definition servicename (or the pipeline step name)
    flow_id: str
    plugin: str  # the plugin's name as written in the plugin definition
    args: dict = field(default_factory=dict)
    dependents: list[str] = field(default_factory=list)
    workloads: list[dict] = field(default_factory=list)  # full dev workload objects, one per dependent
    services: list[dict] = field(default_factory=list)  # the dependents' Service objects, same order
    extensions: list[dict] = field(default_factory=list)  # repo objects listed in `extensions`
    objects: list[dict] = field(default_factory=list)  # LifecycleHook / pipeline stages: the objects
    # CreateFlow: (dependent, ConfigMap) for each ConfigMap a dependent's pod reads, as it reads it now
    configs: list[tuple[str, dict]] = field(default_factory=list)
    state: Any = None  # DeleteFlow: the stored config_map
    old_args: dict | None = None  # ValidateChange
    stage: Stage = "plugin"

    @property
    def flow_uuid(self) -> str:
        return flow_uuid(self.instance, self.flow_id)


@dataclass(frozen=True)
class Outcome:
    """What a CreateFlow gives back, in the host's terms."""

    pod_specs: list[dict]
    config_map: Any
    resources: list[dict] = field(default_factory=list)
    messages: list[Problem] = field(default_factory=list)
    # the ConfigMaps the plugin changed: {"dependent", "name", "data"} (the whole new `data`), in request order
    configs: list[dict] = field(default_factory=list)


def _tag(obj: dict, ident: int, role: Role, dependent: str | None) -> dict:
    obj = copy.deepcopy(obj)
    ann = obj.setdefault("metadata", {}).setdefault("annotations", {})
    ann[ID] = str(ident)
    ann[ROLE] = role
    if dependent is not None:
        ann[DEPENDENT] = dependent
    return obj


def request_items(inv: Invocation) -> list[dict]:
    items: list[dict] = []
    for dep, wl, svc in zip(inv.dependents, inv.workloads, inv.services, strict=True):
        items.append(_tag(wl, len(items), "workload", dep))
        items.append(_tag(svc, len(items), "service", dep))
    for ext in inv.extensions:
        items.append(_tag(ext, len(items), "extension", None))
    for obj in inv.objects:
        items.append(_tag(obj, len(items), "object", None))
    for dep, obj in inv.configs:
        items.append(_tag(obj, len(items), "config", dep))
    return items


def request_document(inv: Invocation, timeout: float) -> dict:
    spec: dict[str, Any] = {
        "operation": inv.operation,
        "stage": inv.stage,
        "flow": {"id": inv.flow_id, "uuid": inv.flow_uuid},
        "plugin": inv.plugin,
        "dependents": list(inv.dependents),
        "args": dict(inv.args),
        "host": {"protocolVersion": PROTOCOL_VERSION, "timeoutSeconds": timeout},
    }
    if inv.state is not None or inv.operation == "DeleteFlow":
        spec["state"] = inv.state
    if inv.old_args is not None:
        spec["oldArgs"] = dict(inv.old_args)
    return {
        **RESOURCE_LIST,
        "functionConfig": {"apiVersion": INVOCATION_API, "kind": "FlowInvocation", "metadata": {"name": inv.instance},
                           "spec": spec},
        "items": request_items(inv),
    }


def json_type(value: Any) -> str:
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


class ReplyReader:
    """Validate one reply ResourceList and turn it into host data; every error names the plugin.

    `label` names the call as its author knows it (`create_flow` for a Kardinal module, `CreateFlow
    of NAME` otherwise); `stderr` is what the plugin wrote meanwhile, shown with failures.
    """

    def __init__(self, inv: Invocation, label: str, stderr: str = ""):
        self.inv = inv
        self.where = Where(plugin=inv.instance)
        self.label = label
        self.stderr = stderr

    def error(self, message: str, hint: str | None = None, code: str = "plugin-malformed") -> PluginError:
        return fail(f"{self.label}: {message}" + tail_text(self.stderr), self.where, hint, code, PluginError)

    def parse(self, data: bytes) -> dict:
        """The reply's bytes as a ResourceList (JSON, or YAML as kyaml-based functions answer), within the
        limits of `reply_bounds`: depth, alias expansion, duplicate keys, field, object and object-count sizes."""
        try:
            doc = load_reply(data)
        except ReplyLimit as exc:
            raise self.error(f"the reply {exc.message}", exc.hint, code="plugin-reply-limit") from None
        except ValueError as exc:
            raise self.error(f"the reply is neither JSON nor YAML ({exc})",
                             "write one ResourceList to stdout and logs to stderr") from None
        if not isinstance(doc, dict) or doc.get("kind") != "ResourceList":
            raise self.error("the reply is not a ResourceList (kind: ResourceList, items: [...])",
                             "return the ResourceList you received, with your changes")
        items = doc.get("items")
        if items is None:
            doc["items"] = []
        elif not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise self.error("`items` must be a list of objects")
        self._check_sizes(doc["items"])
        return doc

    def _check_sizes(self, items: list[dict]) -> None:
        """At most MAX_NEW_OBJECTS added objects, each returned object at most MAX_OBJECT_BYTES."""
        added = sum(1 for item in items if ID not in annotations(item))
        if added > MAX_NEW_OBJECTS:
            raise self.error(f"the reply adds {added:,} objects; a reply may add at most {MAX_NEW_OBJECTS:,}",
                             "add fewer objects (one object may hold many entries)", code="plugin-reply-limit")
        for i, item in enumerate(items):
            size = object_bytes(item)
            if size > MAX_OBJECT_BYTES:
                meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
                raise self.error(f"items[{i}] ({item.get('kind')}/{meta.get('name')}) is {size:,} bytes, more than "
                                 f"the {MAX_OBJECT_BYTES // 1024:,} KiB an object may have",
                                 "keep large data out of objects (the API server refuses them too)",
                                 code="plugin-reply-limit")

    def _results(self, doc: dict) -> list[tuple[Problem, bool]]:
        """Each KRM result as a problem, and whether the plugin side reported it as a failure of the call
        (a result tagged with a problem code) rather than as its answer."""
        raw = doc.get("results")
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise self.error(f"`results` is {json_type(raw)}, expected a list", RESULTS_HINT)
        out = []
        for i, r in enumerate(raw):
            if not isinstance(r, dict):
                raise self.error(f"results[{i}] is {json_type(r)}, expected an object", RESULTS_HINT)
            message, severity = r.get("message"), r.get("severity", "error")
            if not isinstance(message, str) or not message:
                raise self.error(f"results[{i}] has no `message`", RESULTS_HINT)
            if severity not in SEVERITIES:
                raise self.error(f"results[{i}] has severity {severity!r}; expected error, warning or info",
                                 RESULTS_HINT)
            fld = r.get("field")
            path = fld.get("path") if isinstance(fld, dict) else fld
            if isinstance(path, str) and path:
                message = f"{path}: {message}"
            ref = r.get("resourceRef")
            if isinstance(ref, dict) and ref.get("name"):
                message = f"{ref.get('kind', '')}/{ref['name']}: {message}".lstrip("/")
            tags = r.get("tags") if isinstance(r.get("tags"), dict) else {}
            failure = bool(_CODE.match(str(tags.get(CODE_TAG) or "")))
            if severity == "error" and failure:
                message += tail_text(self.stderr)
            hint = tags.get(HINT_TAG) if isinstance(tags.get(HINT_TAG), str) else None
            out.append((Problem(message, self.where, hint, severity, tags[CODE_TAG] if failure else "plugin-result"),
                        failure))
        return out

    def results(self, doc: dict) -> list[Problem]:
        """KRM results -> problems; any `error` result fails the call."""
        problems = [p for p, _ in self._results(doc)]
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            raise PluginError(errors)
        return problems

    def answers(self, doc: dict, hint: str) -> list[Problem]:
        """Validation replies: `error` results are the answer (problems with the args), not a failed call;
        a failure the plugin side reported still fails it."""
        results = self._results(doc)
        failures = [p for p, failed in results if failed and p.severity == "error"]
        if failures:
            raise PluginError(failures)
        errors = [p for p, _ in results if p.severity == "error"]
        if errors:
            return [Problem(p.message, p.where, hint, code="plugin-args") for p in errors]
        return [p for p, _ in results]

    def stderr_info(self) -> list[Problem]:
        """What the plugin wrote on stderr, as one `info` message (shown with --debug)."""
        if not self.stderr.strip():
            return []
        return [Problem(f"{self.label} stderr:\n{self.stderr.rstrip()}", self.where, severity="info",
                        code="plugin-stderr")]

    def state(self, items: list[dict]) -> tuple[Any, list[dict]]:
        """Split the plugin-state ConfigMap off the items."""
        found, rest = [], []
        for item in items:
            (found if STATE in annotations(item) else rest).append(item)
        if len(found) > 1:
            raise self.error("more than one plugin-state ConfigMap in the reply")
        if not found:
            return {}, rest
        data = found[0].get("data")
        text = data.get(STATE_KEY, "{}") if isinstance(data, dict) else None
        try:
            return load_json(text), rest
        except ReplyLimit as exc:
            raise self.error(f"the plugin-state ConfigMap's data.{STATE_KEY} {exc.message}", exc.hint,
                             code="plugin-reply-limit") from None
        except (TypeError, ValueError):
            raise self.error(f"the plugin-state ConfigMap's data.{STATE_KEY} is not JSON") from None

    def new_object(self, obj: dict, index: int) -> dict:
        """An object the plugin added: it must be a named Kubernetes object."""
        problem = malformed(obj)
        if problem:
            kind = f" ({obj['kind']})" if isinstance(obj.get("kind"), str) and obj["kind"] else ""
            raise self.error(f"resources[{index}]{kind} {problem}", RESOURCES_HINT)
        return strip_internal(copy.deepcopy(obj))


def malformed(obj: Any, maps: bool = True) -> str | None:
    """What keeps `obj` from being a named Kubernetes object whose metadata devlane can read (None: nothing);
    `maps`: labels and annotations must be maps of strings too."""
    if not isinstance(obj, dict):
        return f"is {json_type(obj)}, not an object"
    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            return f"has no {key}"
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return "has no metadata.name"
    if meta.get("namespace") is not None and not isinstance(meta["namespace"], str):
        return f"has a metadata.namespace that is {json_type(meta['namespace'])}, not a string"
    for key in ("labels", "annotations") if maps else ():
        value = meta.get(key)
        if value is not None and not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
            return f"has metadata.{key} that is not a map of strings"
    return None


def _diff_path(a: Any, b: Any, path: str = "") -> str | None:
    """First field path where `a` and `b` differ (for mutation-policy errors)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key, _MISSING) != b.get(key, _MISSING):
                sub = _diff_path(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}.{key}" if path else str(key))
                return sub or (f"{path}.{key}" if path else str(key))
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _diff_path(x, y, f"{path}[{i}]") or f"{path}[{i}]"
        return None
    return path if a != b else None


_MISSING = object()


def _without_pod_spec(obj: dict) -> dict:
    """The workload with its pod spec blanked (itself when it has no pod template to blank)."""
    try:
        return with_pod_spec(obj, None)  # type: ignore[arg-type]
    except (KeyError, TypeError, AttributeError):
        return obj


def pod_spec_problem(spec: Any) -> str | None:
    """What makes a returned pod spec unusable, if anything."""
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list) or not spec["containers"]:
        return "has no spec.template.spec.containers"
    for key in ("initContainers", "containers"):
        entries = spec.get(key) or []
        if not isinstance(entries, list) or not all(isinstance(c, dict) for c in entries):
            return f"has spec.template.spec.{key} that is not a list of objects"
    return None


def outcome_from_reply(inv: Invocation, doc: dict, reader: ReplyReader) -> Outcome:
    """CreateFlow reply -> new pod specs (same order as sent), state, new objects, messages."""
    messages = reader.results(doc)
    config_map, items = reader.state(doc["items"])
    sent = {annotations(obj)[ID]: obj for obj in request_items(inv)}
    pod_specs = [copy.deepcopy(pod_spec(w)) for w in inv.workloads]
    resources: list[dict] = []
    configs: list[dict] = []
    for item in items:
        ident = annotations(item).get(ID)
        if ident is None:
            resources.append(reader.new_object(item, len(resources)))
            continue
        if ident not in sent:
            raise reader.error(f"returned an item with unknown {ID} {ident!r}", f"keep the {ID} annotation as sent")
        original = sent[ident]
        role = annotations(original)[ROLE]
        kind, name = original.get("kind"), (original.get("metadata") or {}).get("name")
        if role == "config":
            change = _config_change(original, item, reader)
            if change is not None:
                configs.append(change)
            continue
        if role != "workload":
            path = _diff_path(original, item)
            if path is not None:
                raise reader.error(f"changed {kind}/{name} ({role}) at {path}; only workloads' "
                                   "spec.template.spec may change", None, code="plugin-mutation")
            continue
        dep = annotations(original)[DEPENDENT]
        new_spec = pod_spec(item)
        problem = pod_spec_problem(new_spec)
        if problem:
            raise reader.error(f"{kind}/{name} (for {dep}) {problem}", "return each workload with its pod spec")
        path = _diff_path(_without_pod_spec(original), _without_pod_spec(item))
        if path is not None:
            raise reader.error(f"changed {kind}/{name} at {path}; a plugin may change only spec.template.spec of the "
                               "workloads it receives", "add new objects instead of editing others",
                               code="plugin-mutation")
        pod_specs[inv.dependents.index(dep)] = copy.deepcopy(new_spec)
    return Outcome(pod_specs, config_map, resources, messages + reader.stderr_info(), configs)


def _config_change(original: dict, item: dict, reader: ReplyReader) -> dict | None:
    """A ConfigMap the plugin was handed, as it came back: None when unchanged, else its new `data`. Only the
    values of its `data` may change (a renamed topic in a config file); keys, metadata and the rest stay."""
    name = (original.get("metadata") or {}).get("name")
    path = _diff_path({**original, "data": None}, {**item, "data": None})
    data = item.get("data")
    if path is None and (not isinstance(data, dict) or set(data) != set(original.get("data") or {})):
        path = "data"
    if path is not None:
        raise reader.error(f"changed ConfigMap/{name} (config) at {path}; a plugin may change only the values of "
                           "the data of the ConfigMaps it is handed", "keep their keys and metadata as sent",
                           code="plugin-mutation")
    bad = sorted(k for k, v in data.items() if not isinstance(v, str))
    if bad:
        raise reader.error(f"ConfigMap/{name} data.{bad[0]} is {json_type(data[bad[0]])}, expected a string",
                           "ConfigMap data values are strings", code="plugin-malformed")
    if data == original.get("data"):
        return None
    return {"dependent": annotations(original)[DEPENDENT], "name": name, "data": dict(data)}
