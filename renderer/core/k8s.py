"""Kubernetes object helpers: selectors, pod specs and containers, metadata a copy must drop, scope."""

from __future__ import annotations

import copy
import datetime
from collections import defaultdict
from typing import Any

CLUSTER_SCOPED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume",
    "StorageClass", "PriorityClass", "IngressClass", "GatewayClass", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "APIService", "RuntimeClass", "CSIDriver", "VolumeAttachment",
    "Node", "CSINode", "CertificateSigningRequest", "ClusterTrustBundle", "FlowSchema", "PriorityLevelConfiguration",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding", "IPAddress", "ServiceCIDR", "DeviceClass",
    "ClusterIssuer", "ClusterSecretStore", "ClusterExternalSecret", "ClusterPolicy",  # cert-manager, ESO, Kyverno
}

# Metadata a copy must not inherit: server-set fields and GitOps tracking marks.
_DROP_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")
_DROP_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
    "argocd.argoproj.io/tracking-id",
)
_DROP_LABELS = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")


def map_matches(selector: dict, labels: dict) -> bool:
    """A Service's selector (a plain map) against a pod's labels."""
    return all(labels.get(k) == v for k, v in selector.items())


def policy_selects(sel: object, labels: dict) -> bool:
    """A NetworkPolicy's pod selector against a pod's labels: an empty one selects every pod."""
    if not isinstance(sel, dict):
        return False
    return not (sel.get("matchLabels") or sel.get("matchExpressions")) or label_selector_matches(sel, labels)


def label_selector_matches(sel: dict, labels: dict) -> bool:
    """A workload's label selector (matchLabels and matchExpressions) against a pod's labels."""
    if not map_matches(sel.get("matchLabels") or {}, labels):
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


def required_labels(sel: object) -> dict:
    """The label pairs a label selector requires (its matchLabels): what `LabelIndex.candidates` looks up."""
    labels = sel.get("matchLabels") if isinstance(sel, dict) else None
    return labels if isinstance(labels, dict) else {}


def selector_label_keys(sel: dict) -> set[str]:
    """The label keys a workload's label selector reads."""
    return set(sel.get("matchLabels") or {}) | {e.get("key") for e in sel.get("matchExpressions") or [] if e.get("key")}


def pod_template(obj: dict) -> dict:
    """The pod template of a workload or CronJob ({} when there is none)."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if obj.get("kind") == "CronJob":
        job = spec.get("jobTemplate") if isinstance(spec.get("jobTemplate"), dict) else {}
        spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
    tpl = spec.get("template")
    return tpl if isinstance(tpl, dict) else {}


# Kinds whose whole `spec` passes over the repository read (entry points and their routes).
_WHOLE_SPEC = frozenset({"Ingress", "HTTPRoute", "Gateway", "GRPCRoute"})


def outline(obj: dict) -> dict:
    """The parts of an object that passes over the whole repository read: apiVersion, kind, metadata, a
    selector, a Service's ports, a pod template without its pod spec (but with its container names), and an
    entry point's spec. The model and the baseline indexes read only this, so what they derive is the same
    for two objects with one outline: a changed image or env value leaves it as it is. Each part keeps its
    place, so `pod_template` and friends read an outline as they read the object."""
    out = {k: obj[k] for k in ("apiVersion", "kind", "metadata") if k in obj}
    if "spec" not in obj:
        return out
    spec = obj["spec"]
    kind = obj.get("kind")
    if not isinstance(spec, dict) or (isinstance(kind, str) and kind in _WHOLE_SPEC):
        out["spec"] = spec
        return out
    kept = {k: spec[k] for k in ("selector", "ports") if k in spec}
    if "template" in spec:
        kept["template"] = _template_outline(spec["template"])
    job = spec.get("jobTemplate")
    if isinstance(job, dict) and isinstance(job.get("spec"), dict) and "template" in job["spec"]:
        kept["jobTemplate"] = {"spec": {"template": _template_outline(job["spec"]["template"])}}
    elif "jobTemplate" in spec:
        kept["jobTemplate"] = {} if isinstance(job, dict) else job
    out["spec"] = kept
    return out


def _template_outline(template: Any) -> Any:
    """A pod template's metadata and its containers' names (the pod spec's other fields are body)."""
    if not isinstance(template, dict):
        return template
    out = {k: v for k, v in template.items() if k != "spec"}
    if "spec" in template:
        spec = template["spec"]
        containers = spec.get("containers") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or "containers" not in spec:
            out["spec"] = {} if isinstance(spec, dict) else spec
        elif isinstance(containers, list):
            out["spec"] = {"containers": [{"name": c["name"]} if isinstance(c, dict) and "name" in c
                                          else ({} if isinstance(c, dict) else c) for c in containers]}
        else:
            out["spec"] = {"containers": containers}
    return out


def with_pod_spec(obj: dict, spec: dict) -> dict:
    """A shallow copy of a workload or CronJob with another pod spec (the rest shared, not copied)."""
    if obj.get("kind") == "CronJob":
        job = obj["spec"]["jobTemplate"]
        return {**obj, "spec": {**obj["spec"], "jobTemplate": {**job, "spec": with_pod_spec(job, spec)["spec"]}}}
    return {**obj, "spec": {**obj["spec"], "template": {**obj["spec"]["template"], "spec": spec}}}


def pod_spec(obj: dict) -> dict:
    """The pod spec of a workload, CronJob or Pod ({} when there is none)."""
    if obj.get("kind") == "Pod":
        return obj.get("spec") or {}
    spec = pod_template(obj).get("spec")
    return spec if isinstance(spec, dict) else {}


def all_containers(spec: dict) -> list[dict]:
    """Init containers, then containers, of a pod spec."""
    return [c for key in ("initContainers", "containers") for c in spec.get(key) or [] if isinstance(c, dict)]


_ATOMS = frozenset({str, int, float, bool, type(None), bytes, datetime.date, datetime.datetime})


def copy_tree(obj: Any) -> Any:
    """A deep copy of a parsed object, the same as `copy.deepcopy` makes (a part that a YAML alias shares stays
    shared in the copy, so it dumps the same), at a fraction of the cost: a flow copies thousands of manifests.
    A loop, not recursion, whatever the nesting; a value of another type (a `!!set`) goes to `copy.deepcopy`."""
    kind = type(obj)
    if kind in _ATOMS:
        return obj
    if kind is not dict and kind is not list:
        return copy.deepcopy(obj)
    memo: dict[int, Any] = {}
    root = memo[id(obj)] = kind()
    pending = [(obj, root)]

    def child(value: Any) -> Any:
        kind = type(value)
        if kind in _ATOMS:
            return value
        made = memo.get(id(value))
        if made is None:
            if kind is dict or kind is list:
                made = memo[id(value)] = kind()
                pending.append((value, made))
            else:
                made = copy.deepcopy(value, memo)
        return made

    while pending:
        source, target = pending.pop()
        if type(source) is dict:
            for key, value in source.items():
                target[key] = child(value)
        else:
            target.extend([child(value) for value in source])
    return root


def strip_metadata(obj: dict) -> dict:
    """Drop server-set metadata and tracking marks from a copied object, in place."""
    meta = obj.setdefault("metadata", {})
    for key in _DROP_META:
        meta.pop(key, None)
    obj.pop("status", None)
    if isinstance(meta.get("annotations"), dict):
        for key in _DROP_ANNOTATIONS:
            meta["annotations"].pop(key, None)
        if not meta["annotations"]:
            meta.pop("annotations")
    if isinstance(meta.get("labels"), dict):
        for key in _DROP_LABELS:
            meta["labels"].pop(key, None)
    return obj


def namespace_key(kind: str, namespace: str | None) -> str | None:
    """The namespace part of an object's identity: None for cluster-scoped kinds."""
    return None if kind in CLUSTER_SCOPED else namespace


def identity(obj: dict, namespace: str | None = None) -> tuple[str, str | None, str]:
    """(kind, namespace, name) of any object, however malformed; `namespace` when it names none."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    kind, ns = str(obj.get("kind")), meta.get("namespace") or namespace
    return kind, namespace_key(kind, None if ns is None else str(ns)), str(meta.get("name"))


class LabelIndex:
    """Items (workloads, pods) by (namespace, label, value), so matching a selector is not a scan."""

    def __init__(self) -> None:
        self._by_pair: dict[tuple, list] = defaultdict(list)
        self._by_ns: dict[str | None, list] = defaultdict(list)

    def add(self, namespace: str | None, labels: dict, item: object) -> None:
        for k, v in labels.items():
            self._by_pair[(namespace, k, v)].append(item)
        self._by_ns[namespace].append(item)

    def candidates(self, namespace: str | None, required: dict) -> list:
        """Items that may match, in the order they were added: those with the rarest of the required pairs (a
        pair every item shares, `part-of: shop`, would make each match a scan), or all in the namespace if none."""
        if not required:
            return self._by_ns.get(namespace, [])
        best: list | None = None
        for pair in required.items():
            try:
                found = self._by_pair.get((namespace, *pair), [])
            except TypeError:  # an unhashable value matches no label
                return []
            if best is None or len(found) < len(best):
                best = found
        return best or []
