"""Isolation invariants, checked on every render; a violation is an error, never a warning.

1. No baseline selector (Service, or workload matchLabels/matchExpressions) matches a dev pod.
2. No env value a dev pod inherited still names a baseline service that has a dev version
   (what counts as a reference is defined once, in `references`).
3. Dev objects never reuse a baseline object's name, and never collide with each other.
"""

from __future__ import annotations

from ..core.k8s import LabelIndex, all_containers, label_selector_matches, map_matches, namespace_key
from ..core.references import find_references
from ..errors import Diagnostics, Where
from .clone import DevSet, reference_targets
from .model import Model


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
        matches = map_matches if doc.kind == "Service" else label_selector_matches
        for dw in pods.candidates(model.namespace_of(doc), required):
            if matches(sel, dw.obj["spec"]["template"]["metadata"]["labels"]):
                diags.error(
                    f"isolation violated: the selector of baseline {doc.ref} matches the pods of dev workload "
                    f"{dw.name}",
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
    baseline = {(d.kind, namespace_key(d.kind, model.namespace_of(d)), d.name): d for d in model.documents}
    seen: set[tuple] = set()
    for obj in objects:
        meta = obj["metadata"]
        key = (obj["kind"], namespace_key(obj["kind"], meta.get("namespace")), meta["name"])
        if key in baseline:
            diags.error(f"isolation violated: dev {obj['kind']}/{meta['name']} reuses the name of a baseline object",
                        baseline[key].where(), hint="rename the baseline object or pick another flow id",
                        code="isolation")
        if key in seen:
            diags.error(f"two rendered objects are both {obj['kind']}/{meta['name']}", Where(), code="duplicate")
        seen.add(key)


def before_plugins(model: Model, dev: DevSet, diags: Diagnostics) -> None:
    """The invariants on the dev copies as cloned: what a plugin returns afterwards is final."""
    check_references(model, dev, diags)
    check_selectors(model, dev, diags)
