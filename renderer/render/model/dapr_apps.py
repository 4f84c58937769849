"""Dapr apps and Components as the sidecar sees them: a pod's app-id (`dapr.io/app-id`, by default its workload's
name, when `dapr.io/enabled` is "true"), and which Components of its namespace it loads (unscoped, or scoped to its
app-id). One reading for the reach (`checks.dapr`) and for the lane's own Components (`copies.dapr_lane`)."""

from __future__ import annotations

from typing import Any

from ...core.k8s import pod_template

ENABLED, APP_ID = "dapr.io/enabled", "dapr.io/app-id"


def is_component(obj: dict) -> bool:
    return obj.get("kind") == "Component" and str(obj.get("apiVersion", "")).startswith("dapr.io/")


def app_id(obj: dict) -> str | None:
    """The app-id of the workload `obj`'s Dapr sidecar, or None without one."""
    template = pod_template(obj) or {}
    meta = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    ann: Any = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    if str(ann.get(ENABLED, "")).lower() != "true":
        return None
    return str(ann.get(APP_ID) or (obj.get("metadata") or {}).get("name") or "")


def loads(component: dict, app: str) -> bool:
    """Whether a sidecar with app-id `app` loads `component` (unscoped, or scoped to it)."""
    scopes = component.get("scopes")
    return not scopes or (isinstance(scopes, list) and app in [str(s) for s in scopes])


def kind_of(component: dict) -> str:
    spec = component.get("spec") if isinstance(component.get("spec"), dict) else {}
    return str(spec.get("type") or "component")


def metadata_value(component: dict, name: str) -> str | None:
    spec = component.get("spec") if isinstance(component.get("spec"), dict) else {}
    for item in spec.get("metadata") or []:
        if isinstance(item, dict) and item.get("name") == name and isinstance(item.get("value"), str):
            return item["value"]
    return None
