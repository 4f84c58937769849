"""The one plugin contract on the wire: a KRM `ResourceList` whose `functionConfig` is a FlowInvocation.

Exec and gRPC plugins receive exactly this document (JSON); Kardinal Python plugins receive the
same information bound to `create_flow(service_specs, pod_specs, flow_uuid, **args)` by the shim.
Items carry `config.k8s.io/id` (kyaml's id technique) so the host can map returned objects back to
what it sent, plus `devlane.dev/role` and `devlane.dev/dependent` so a plugin knows what each item
is. The reply is the same document: changed items keep their id, new items have none, plugin
state is one ConfigMap item annotated `devlane.dev/plugin-state`, and `results` carry KRM results
with a severity. `outcome_from_reply` enforces the mutation policy: a CreateFlow may change only
the pod specs of the workloads it received and may add objects; anything else is an error that
names the plugin, the object and the field path.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from .errors import DevlaneError, Problem, Where, fail

RESOURCE_LIST = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList"}
INVOCATION_API = "devlane.dev/v1alpha1"
ID = "config.k8s.io/id"
ROLE = "devlane.dev/role"
DEPENDENT = "devlane.dev/dependent"
STATE = "devlane.dev/plugin-state"
LOCAL_CONFIG = "config.kubernetes.io/local-config"
STATE_KEY = "config_map.json"
INTERNAL = (ID, ROLE, DEPENDENT)
PROTOCOL_VERSION = "v1alpha1"
SEVERITIES = ("error", "warning", "info")


@dataclass
class Invocation:
    """One plugin call, whatever the runtime."""

    operation: str  # CreateFlow | DeleteFlow | ValidateArgs | DefaultArgs | ValidateChange | LifecycleHook
    instance: str  # the plugin-definition servicename (or the pipeline step name)
    flow_id: str
    plugin: str  # the plugin's name as written in the plugin definition
    args: dict = field(default_factory=dict)
    dependents: list[str] = field(default_factory=list)
    workloads: list[dict] = field(default_factory=list)  # full dev workload objects, one per dependent
    services: list[dict] = field(default_factory=list)  # the dependents' Service objects, same order
    extensions: list[dict] = field(default_factory=list)  # repo objects listed in `extensions`
    objects: list[dict] = field(default_factory=list)  # LifecycleHook / pipeline stages: the objects
    state: Any = None  # DeleteFlow: the stored config_map
    old_args: dict | None = None  # ValidateChange
    stage: str = "plugin"  # plugin | pre-render | per-flow | post-render

    @property
    def flow_uuid(self) -> str:
        return f"{self.instance}-{self.flow_id}"


@dataclass
class Outcome:
    """What a CreateFlow gives back, in the host's terms."""

    pod_specs: list[dict]
    config_map: Any
    resources: list[dict] = field(default_factory=list)
    messages: list[Problem] = field(default_factory=list)


def _tag(obj: dict, ident: int, role: str, dependent: str | None) -> dict:
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
        "functionConfig": {
            "apiVersion": INVOCATION_API,
            "kind": "FlowInvocation",
            "metadata": {"name": inv.instance},
            "spec": spec,
        },
        "items": request_items(inv),
    }


def encode(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class ReplyReader:
    """Validate a reply ResourceList and turn it into host data; every error names the plugin."""

    def __init__(self, inv: Invocation, where: Where, label: str):
        self.inv = inv
        self.where = where
        self.label = label

    def error(self, message: str, hint: str | None = None, code: str = "plugin-malformed") -> DevlaneError:
        return fail(f"{self.label}: {message}", self.where, hint, code=code)

    def parse(self, data: bytes) -> dict:
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise self.error(f"the reply is not a JSON ResourceList ({exc})",
                             "write one ResourceList as JSON (or YAML) to stdout and logs to stderr") from None
        return self.document(doc)

    def document(self, doc: Any) -> dict:
        if not isinstance(doc, dict) or doc.get("kind") != "ResourceList":
            raise self.error("the reply is not a ResourceList (kind: ResourceList, items: [...])",
                             "return the ResourceList you received, with your changes")
        items = doc.get("items")
        if items is None:
            doc["items"] = []
        elif not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise self.error("`items` must be a list of objects")
        return doc

    def results(self, doc: dict) -> list[Problem]:
        """KRM results -> problems; an `error` result fails the call."""
        raw = doc.get("results") or []
        if not isinstance(raw, list):
            raise self.error("`results` must be a list")
        problems = []
        for i, r in enumerate(raw):
            if not isinstance(r, dict) or not isinstance(r.get("message"), str) or not r.get("message"):
                raise self.error(f"results[{i}] needs a non-empty `message`")
            severity = r.get("severity", "error")
            if severity not in SEVERITIES:
                raise self.error(f"results[{i}] has severity {severity!r}; expected error, warning or info")
            message = r["message"]
            fld = r.get("field")
            path = fld.get("path") if isinstance(fld, dict) else fld
            if isinstance(path, str) and path:
                message = f"{path}: {message}"
            ref = r.get("resourceRef")
            if isinstance(ref, dict) and ref.get("name"):
                message = f"{ref.get('kind', '')}/{ref['name']}: {message}".lstrip("/")
            problems.append(Problem(message, self.where, severity=severity, code="plugin-result"))
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            raise DevlaneError(errors)
        return problems

    def state(self, items: list[dict]) -> tuple[Any, list[dict]]:
        """Split the plugin-state ConfigMap off the items."""
        found, rest = [], []
        for item in items:
            ann = (item.get("metadata") or {}).get("annotations") or {}
            (found if STATE in ann else rest).append(item)
        if len(found) > 1:
            raise self.error("more than one plugin-state ConfigMap in the reply")
        if not found:
            return {}, rest
        data = found[0].get("data") or {}
        text = data.get(STATE_KEY, "{}")
        try:
            return json.loads(text), rest
        except (TypeError, json.JSONDecodeError):
            raise self.error(f"the plugin-state ConfigMap's data.{STATE_KEY} is not JSON") from None


def strip_internal(obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    ann = meta.get("annotations")
    if isinstance(ann, dict):
        for key in INTERNAL:
            ann.pop(key, None)
        if not ann:
            meta.pop("annotations")
    return obj


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


def outcome_from_reply(inv: Invocation, doc: dict, reader: ReplyReader) -> Outcome:
    """CreateFlow reply -> new pod specs (same order as sent), state, extra objects, messages."""
    messages = reader.results(doc)
    config_map, items = reader.state(doc["items"])
    sent = {i[ID]: (obj, i) for obj in request_items(inv) for i in [obj["metadata"]["annotations"]]}
    pod_specs = [copy.deepcopy(((w.get("spec") or {}).get("template") or {}).get("spec") or {}) for w in inv.workloads]
    resources: list[dict] = []
    seen: set[str] = set()
    for item in items:
        ann = (item.get("metadata") or {}).get("annotations") or {}
        ident = ann.get(ID)
        if ident is None:
            resources.append(strip_internal(copy.deepcopy(item)))
            continue
        if ident not in sent:
            raise reader.error(f"returned an item with unknown {ID} {ident!r}", f"keep the {ID} annotation as sent")
        seen.add(ident)
        original, _ = sent[ident]
        role = original["metadata"]["annotations"][ROLE]
        kind, name = original.get("kind"), (original.get("metadata") or {}).get("name")
        if role == "workload":
            dep = original["metadata"]["annotations"][DEPENDENT]
            new_spec = ((item.get("spec") or {}).get("template") or {}).get("spec")
            if not isinstance(new_spec, dict) or not isinstance(new_spec.get("containers"), list) \
                    or not new_spec["containers"]:
                raise reader.error(f"{kind}/{name} (for {dep}) has no spec.template.spec.containers",
                                   "return each workload with its pod spec")
            outside = {**copy.deepcopy(item), "spec": {**item.get("spec", {}), "template": {
                **item["spec"]["template"], "spec": None}}}
            before = {**copy.deepcopy(original), "spec": {**original.get("spec", {}), "template": {
                **original["spec"]["template"], "spec": None}}}
            path = _diff_path(before, outside)
            if path is not None:
                raise reader.error(f"changed {kind}/{name} at {path}; a plugin may change only "
                                   "spec.template.spec of the workloads it receives",
                                   "add new objects instead of editing others", code="plugin-mutation")
            pod_specs[inv.dependents.index(dep)] = copy.deepcopy(new_spec)
        else:
            path = _diff_path(original, item)
            if path is not None:
                raise reader.error(f"changed {kind}/{name} ({role}) at {path}; only workloads' "
                                   "spec.template.spec may change", None, code="plugin-mutation")
    return Outcome(pod_specs, config_map, resources, messages)


def state_item(instance: str, flow_id: str, config_map: Any) -> dict:
    """The plugin-state item a plugin returns (SDK side)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"devlane-state-{instance}-{flow_id}",
                     "annotations": {STATE: instance, LOCAL_CONFIG: "true"}},
        "data": {STATE_KEY: json.dumps(config_map, sort_keys=True, separators=(",", ":"))},
    }
