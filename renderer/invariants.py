"""Isolation invariants, checked on every render; a violation is an error, never a warning.

1. No baseline selector (Service, or workload matchLabels/matchExpressions) matches a dev pod.
2. No env value a dev pod inherited still names a baseline service that has a dev version
   (what counts as a reference is defined once, in `references`).
3. Dev objects never reuse a baseline object's name, and never collide with each other.
"""

from __future__ import annotations

from .clone import DevSet, all_containers, reference_targets
from .errors import Diagnostics, Where
from .model import LabelIndex, Model
from .references import find_references

CLUSTER_SCOPED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume",
    "StorageClass", "PriorityClass", "IngressClass", "GatewayClass", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "APIService", "RuntimeClass", "CSIDriver", "VolumeAttachment",
}  # fmt: skip


def _selector_matches(sel: dict, labels: dict) -> bool:
    """Evaluate a label selector: a Service map, or a workload's matchLabels/matchExpressions."""
    if "matchLabels" in sel or "matchExpressions" in sel:
        if not all(labels.get(k) == v for k, v in (sel.get("matchLabels") or {}).items()):
            return False
        for e in sel.get("matchExpressions") or []:
            key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
            if op == "In" and labels.get(key) not in values:
                return False
            if op == "NotIn" and key in labels and labels[key] in values:
                return False
            if op == "Exists" and key not in labels:
                return False
            if op == "DoesNotExist" and key in labels:
                return False
        return bool(sel.get("matchLabels") or sel.get("matchExpressions"))
    return bool(sel) and all(labels.get(k) == v for k, v in sel.items())


def check_selectors(model: Model, dev: DevSet, diags: Diagnostics) -> None:
    pods = LabelIndex()
    for dw in dev.unique_workloads():
        meta = dw.obj["metadata"]
        pods.add(meta.get("namespace"), dw.obj["spec"]["template"]["metadata"]["labels"], dw)
    for doc in model.documents:
        spec = doc.obj.get("spec") if isinstance(doc.obj.get("spec"), dict) else {}
        sel = spec.get("selector")
        if not isinstance(sel, dict) or not sel:
            continue
        if doc.kind != "Service" and "matchLabels" not in sel and "matchExpressions" not in sel:
            continue
        required = sel.get("matchLabels") or {} if doc.kind != "Service" else sel
        for dw in pods.candidates(doc.namespace or model.default_namespace, required):
            if _selector_matches(sel, dw.obj["spec"]["template"]["metadata"]["labels"]):
                diags.error(
                    f"isolation violated: the selector of baseline {doc.ref} matches the pods of dev workload "
                    f"{dw.obj['metadata']['name']}",
                    doc.where(),
                    hint="report this as a devlane bug; meanwhile add a distinguishing label to the selector",
                    code="isolation",
                )


def check_references(model: Model, dev: DevSet, diags: Diagnostics) -> None:
    """Run after rewriting and before plugins: inherited references must point at dev Services."""
    for dw in dev.unique_workloads():
        targets = reference_targets(model, [n for n in dev.rewrite_targets(dw.version) if n in model.services])
        skip = model.services[dw.service].no_rewrite
        for c in all_containers(dw.pod_spec):
            for env in c.get("env") or []:
                value, name = env.get("value"), str(env.get("name", ""))
                if not isinstance(value, str) or name in skip:
                    continue
                for ref in find_references(name, value, targets):
                    diags.error(
                        f"isolation violated: env {name}={value!r} in dev workload {dw.obj['metadata']['name']} "
                        f"(container {c.get('name')}) still points at baseline service {ref.service}, which has "
                        "a dev version",
                        dw.baseline.where(),
                        hint=f"list the variable in devlane.dev/no-rewrite if {ref.service} is not a host here",
                        code="isolation",
                    )


def check_names(model: Model, objects: list[dict], diags: Diagnostics) -> None:
    baseline = {
        (d.kind, None if d.kind in CLUSTER_SCOPED else (d.namespace or model.default_namespace), d.name): d
        for d in model.documents
    }
    seen: set[tuple] = set()
    for obj in objects:
        meta = obj["metadata"]
        key = (obj["kind"], None if obj["kind"] in CLUSTER_SCOPED else meta.get("namespace"), meta["name"])
        if key in baseline:
            diags.error(
                f"isolation violated: dev {obj['kind']}/{meta['name']} reuses the name of a baseline object",
                baseline[key].where(),
                hint="rename the baseline object or pick another flow id",
                code="isolation",
            )
        if key in seen:
            diags.error(f"two rendered objects are both {obj['kind']}/{meta['name']}", Where(), code="duplicate")
        seen.add(key)
