"""The one plugin contract on the wire: a KRM `ResourceList` whose `functionConfig` is a FlowInvocation.

Every runtime moves this document (exec on stdin/stdout, gRPC as bytes, Kardinal modules through
the adapter in `renderer.sdk.kardinal`, built-ins in-process). Items carry `config.k8s.io/id`
(kyaml's id technique) so the host can map returned objects back to what it sent, plus
`devlane.dev/role` and `devlane.dev/dependent` so a plugin knows what each item is. The reply is
the same document: changed items keep their id, new items have none, plugin state is one
ConfigMap item annotated `devlane.dev/plugin-state`, and `results` carry KRM results with a
severity; a result's `tags` may carry a fix-it hint (`devlane.dev/hint`) and, for a failure the
plugin side detected, a problem code (`devlane.dev/code`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, get_args

PROTOCOL_VERSION = "v1alpha1"
RESOURCE_LIST = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList"}
INVOCATION_API = "devlane.dev/v1alpha1"
ID = "config.k8s.io/id"
ROLE = "devlane.dev/role"
DEPENDENT = "devlane.dev/dependent"
STATE = "devlane.dev/plugin-state"
LOCAL_CONFIG = "config.kubernetes.io/local-config"
STATE_KEY = "config_map.json"
INTERNAL = (ID, ROLE, DEPENDENT)
SEVERITIES = ("error", "warning", "info")
HINT_TAG = "devlane.dev/hint"
CODE_TAG = "devlane.dev/code"
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # one reply, on any transport; a larger one is refused
ADDRESS_ENV = "DEVLANE_PLUGIN_ADDRESS"  # where a gRPC plugin server listens

Operation = Literal["CreateFlow", "DeleteFlow", "ValidateArgs", "DefaultArgs", "ValidateChange", "LifecycleHook"]
Role = Literal["workload", "service", "extension", "object", "config"]
Stage = Literal["plugin", "pre-render", "per-flow", "post-render"]
RuntimeType = Literal["kardinal-python", "exec", "grpc"]  # how a plugin carries this document (plugin.yaml)
RUNTIMES: tuple[str, ...] = get_args(RuntimeType)


def dumps(doc: Any) -> bytes:
    """Compact JSON, the encoding of every document on the wire."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def spec_of(doc: Mapping[str, Any]) -> dict:
    """`functionConfig.spec` of a request or reply ({} when absent)."""
    spec = (doc.get("functionConfig") or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def operation_of(doc: Mapping[str, Any]) -> str:
    return str(spec_of(doc).get("operation") or "")


def instance_of(doc: Mapping[str, Any]) -> str:
    """The plugin instance (definition servicename or pipeline step) a call is for."""
    return str(((doc.get("functionConfig") or {}).get("metadata") or {}).get("name") or "plugin")


def annotations(obj: Mapping[str, Any]) -> dict:
    """An object's annotations ({} when it has none, or when what it has is not a mapping)."""
    meta = obj.get("metadata")
    found = meta.get("annotations") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def result(message: str, severity: str = "error", hint: str | None = None, code: str | None = None,
           field: str | None = None) -> dict:
    """One KRM result; `hint` and `code` travel as tags."""
    out: dict[str, Any] = {"severity": severity, "message": message}
    if field:
        out["field"] = {"path": field}
    tags = {k: v for k, v in ((HINT_TAG, hint), (CODE_TAG, code)) if v}
    if tags:
        out["tags"] = tags
    return out


def reply(request: Mapping[str, Any] | None, items: list[dict], results: list[dict] | None = None,
          **spec_changes: Any) -> dict:
    """A reply ResourceList: the request's functionConfig (with `spec_changes`), `items`, `results`."""
    request = request if isinstance(request, Mapping) else {}
    out: dict[str, Any] = {**RESOURCE_LIST, "items": items}
    if "functionConfig" in request:
        fc = json.loads(json.dumps(request["functionConfig"]))
        if spec_changes:
            fc.setdefault("spec", {}).update(spec_changes)
        out["functionConfig"] = fc
    if results:
        out["results"] = results
    return out


def error_reply(request: Mapping[str, Any] | None, *messages: str, hint: str | None = None,
                code: str | None = None) -> dict:
    """The request's items with `error` results: how a failed call answers."""
    items = request.get("items") if isinstance(request, Mapping) else None
    return reply(request, list(items) if isinstance(items, list) else [],
                 [result(m, hint=hint, code=code) for m in messages])


def strip_internal(obj: dict) -> dict:
    """Remove devlane's id, role and dependent annotations from an object, in place."""
    meta = obj.get("metadata") or {}
    ann = meta.get("annotations")
    if isinstance(ann, dict):
        for key in INTERNAL:
            ann.pop(key, None)
        if not ann:
            meta.pop("annotations")
    return obj


def state_item(instance: str, flow_id: str, config_map: Any) -> dict:
    """The plugin-state ConfigMap a plugin returns to keep `config_map` for DeleteFlow."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"devlane-state-{instance}-{flow_id}",
                     "annotations": {STATE: instance, LOCAL_CONFIG: "true"}},
        "data": {STATE_KEY: json.dumps(config_map, sort_keys=True, separators=(",", ":"))},
    }
