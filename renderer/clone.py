"""Clone: make the additive dev copies of workloads and Services, before any plugin runs.

- Dev workloads are named `<name>-<flowId>`; pod label values of every key that a selector in
  the namespace uses get the flow suffix, so no baseline selector can match a dev pod.
- A dev Service is made for every Service that selects a dev workload, selecting the dev pods.
- Env values in dev pods that reference a service with a dev version (`svc`, `svc:port`,
  `http://svc:port/path`, `svc.ns.svc.cluster.local`, ...) are rewritten to the dev name.
- Image and env overrides of the flow go onto the target container.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from .flow import FlowSpec
from .load import Document
from .model import LabelIndex, Model, ServiceNode, Workload
from .names import FLOW_LABEL, MANAGED_BY, MANAGED_BY_VALUE, dev_label_value, dev_name
from .plan import SHARED, Plan
from .references import Target, rewrite

# Metadata a copy must not inherit: server-set fields and GitOps tracking marks.
_DROP_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")
_DROP_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
    "argocd.argoproj.io/tracking-id",
)
_DROP_LABELS = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")


@dataclass
class DevWorkload:
    """A dev copy of one workload and the service it was copied for."""

    service: str
    version: str  # flow id or "shared"
    baseline: Document
    obj: dict
    container: str | None

    @property
    def pod_spec(self) -> dict:
        return self.obj["spec"]["template"]["spec"]


@dataclass
class Rewrite:
    workload: str
    container: str
    env: str
    old: str
    new: str

    def as_dict(self) -> dict:
        return dict(vars(self))


@dataclass
class DevSet:
    """Everything cloned for a flow: workloads (by service), Services, rewrites done."""

    workloads: dict[str, DevWorkload] = field(default_factory=dict)
    services: list[tuple[Document, dict, str]] = field(default_factory=list)  # (baseline, dev obj, version)
    rewrites: list[Rewrite] = field(default_factory=list)
    dev_names: dict[str, str] = field(default_factory=dict)  # service -> dev Service name
    selector_keys: dict[str | None, set[str]] = field(default_factory=dict)

    versions: dict[str, str] = field(default_factory=dict)  # dev service -> flow id or "shared"

    def rewrite_targets(self, version: str) -> list[str]:
        """Services whose dev copies a workload of `version` may point at.

        A shared copy serves every flow, so it may only point at other shared copies.
        """
        return sorted(n for n, v in self.versions.items() if version != SHARED or v == SHARED)

    def unique_workloads(self) -> list[DevWorkload]:
        """Each dev workload once, even when several services select it."""
        return list({id(w): w for w in self.workloads.values()}.values())


def flow_labels(version: str) -> dict[str, str]:
    return {FLOW_LABEL: version, MANAGED_BY: MANAGED_BY_VALUE}


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


def selector_keys(model: Model) -> dict[str | None, set[str]]:
    """Label keys used by any Service or workload selector, per namespace."""
    keys: dict[str | None, set[str]] = {}
    for doc in model.documents:
        ns = doc.namespace or model.default_namespace
        spec = doc.obj.get("spec") if isinstance(doc.obj.get("spec"), dict) else {}
        if doc.kind == "Service" and isinstance(spec.get("selector"), dict):
            keys.setdefault(ns, set()).update(spec["selector"])
        elif isinstance(spec.get("selector"), dict):
            sel = spec["selector"]
            keys.setdefault(ns, set()).update(sel.get("matchLabels") or {})
            keys[ns].update(e.get("key") for e in sel.get("matchExpressions") or [] if e.get("key"))
    return keys


def isolate_labels(labels: dict, keys: set[str], version: str) -> dict:
    """Suffix every selector-relevant label value so no baseline selector matches."""
    out = {k: dev_label_value(v, version) if k in keys else v for k, v in labels.items()}
    out.update(flow_labels(version))
    return out


def make_dev_copies(model: Model, plan: Plan, flow: FlowSpec, replicas: int | str) -> DevSet:
    dev = DevSet(selector_keys=selector_keys(model))
    versions = {n: (SHARED if plan.version_of(n) == SHARED else flow.id) for n in plan.dev_services()}
    dev.versions = versions
    for name in versions:
        dev.dev_names[name] = dev_name(name, versions[name])
    # workloads first: a workload selected by two dev services is copied once
    copied: dict[str, DevWorkload] = {}
    for name, version in versions.items():
        node = model.services[name]
        if node.workload is None:
            continue
        key = f"{node.workload.doc.namespace}/{node.workload.doc.ref}"
        if key not in copied:
            copied[key] = _copy_workload(node, node.workload, version, dev, model, replicas)
        dev.workloads[name] = copied[key]
    overrides = {s.name: s for s in flow.services}
    for dw in dev.unique_workloads():
        _rewrite_references(dw, model, dev)
    for name, dw in dev.workloads.items():
        if name in overrides:
            _apply_override(dw, overrides[name])
    _copy_services(model, dev)
    return dev


def _copy_workload(
    node: ServiceNode, wl: Workload, version: str, dev: DevSet, model: Model, replicas: int | str
) -> DevWorkload:
    obj = strip_metadata(copy.deepcopy(wl.doc.obj))
    ns = wl.doc.namespace or model.default_namespace
    keys = dev.selector_keys.get(ns, set())
    meta = obj["metadata"]
    meta["name"] = dev_name(wl.doc.name, version)
    if ns:
        meta["namespace"] = ns
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(version)}
    spec = obj.setdefault("spec", {})
    template = spec.setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = isolate_labels(tmeta.get("labels") or {}, keys, version)
    sel = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
    sel_keys = set(sel.get("matchLabels") or {}) | {
        e.get("key") for e in sel.get("matchExpressions") or [] if e.get("key")
    }
    spec["selector"] = {
        "matchLabels": {k: v for k, v in tmeta["labels"].items() if k in sel_keys or k == FLOW_LABEL}
    }
    if replicas != "keep":
        spec["replicas"] = int(replicas)
    return DevWorkload(node.name, version, wl.doc, obj, node.container)


def _copy_services(model: Model, dev: DevSet) -> None:
    """A dev Service for every Service (node or legacy entry) that selects a dev workload."""
    index = LabelIndex()
    for dw in dev.unique_workloads():
        index.add(dw.baseline.namespace or model.default_namespace, Workload(dw.baseline).pod_labels, dw)
    for doc in model.documents:
        if doc.kind != "Service" or "kardinal.dev.service/plugin-definition" in doc.annotations:
            continue
        selector = (doc.obj.get("spec") or {}).get("selector")
        if not isinstance(selector, dict) or not selector:
            continue
        ns = doc.namespace or model.default_namespace
        for dw in index.candidates(ns, selector):
            labels = Workload(dw.baseline).pod_labels
            if all(labels.get(k) == v for k, v in selector.items()):
                obj = _dev_service(doc, dw, dev, ns)
                dev.services.append((doc, obj, dw.version))
                dev.dev_names.setdefault(doc.name, obj["metadata"]["name"])
                break


def _dev_service(doc: Document, dw: DevWorkload, dev: DevSet, ns: str | None) -> dict:
    obj = strip_metadata(copy.deepcopy(doc.obj))
    meta = obj["metadata"]
    meta["name"] = dev_name(doc.name, dw.version)
    if ns:
        meta["namespace"] = ns
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(dw.version)}
    ann = {k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith("kardinal.dev.service/")}
    if ann:
        meta["annotations"] = ann
    else:
        meta.pop("annotations", None)
    spec = obj["spec"]
    pod_labels = dw.obj["spec"]["template"]["metadata"]["labels"]
    spec["selector"] = {k: pod_labels[k] for k in spec["selector"]}
    spec["selector"][FLOW_LABEL] = pod_labels[FLOW_LABEL]
    headless = spec.get("clusterIP") == "None"
    for key in ("clusterIP", "clusterIPs", "externalIPs", "loadBalancerIP", "loadBalancerSourceRanges",
                "externalTrafficPolicy", "healthCheckNodePort", "allocateLoadBalancerNodePorts",
                "loadBalancerClass"):  # fmt: skip
        spec.pop(key, None)
    if headless:
        spec["clusterIP"] = "None"
    if spec.get("type") in ("LoadBalancer", "NodePort"):
        spec["type"] = "ClusterIP"  # a dev lane must not buy a cloud load balancer or a node port
    for port in spec.get("ports") or []:
        port.pop("nodePort", None)
    if dw.obj.get("kind") == "StatefulSet" and dw.obj["spec"].get("serviceName") in (doc.name, None):
        dw.obj["spec"]["serviceName"] = meta["name"]  # the governing Service of the dev pods
    return obj


# ---------------------------------------------------------------------------------------------
# Reference rewriting


def reference_targets(model: Model, names: list[str]) -> dict[str, Target]:
    """The services references may name, with their namespaces and port names."""
    out = {}
    for n in names:
        node = model.services[n]
        ports = frozenset(str(p.get("name")) for p in (node.doc.obj.get("spec") or {}).get("ports") or []
                          if isinstance(p, dict) and p.get("name"))  # fmt: skip
        out[n] = Target(node.namespace, ports)
    return out


def _rewrite_references(dw: DevWorkload, model: Model, dev: DevSet) -> None:
    names = [n for n in dev.rewrite_targets(dw.version) if n in model.services]
    if not names:
        return
    targets = reference_targets(model, names)
    node = model.services[dw.service]
    for container in all_containers(dw.pod_spec):
        for env in container.get("env") or []:
            value, name = env.get("value"), str(env.get("name", ""))
            if not isinstance(value, str) or name in node.no_rewrite:
                continue
            new = rewrite(name, value, targets, dev.dev_names)
            if new != value:
                env["value"] = new
                dev.rewrites.append(Rewrite(dw.obj["metadata"]["name"], container.get("name", ""), name, value, new))


def all_containers(pod_spec: dict) -> list[dict]:
    return [c for key in ("initContainers", "containers") for c in pod_spec.get(key) or [] if isinstance(c, dict)]


def _apply_override(dw: DevWorkload, override) -> None:
    containers = dw.pod_spec.get("containers") or []
    target = next((c for c in containers if c.get("name") == dw.container), containers[0] if containers else None)
    if target is None:
        return
    if override.image:
        target["image"] = override.image
    env = target.setdefault("env", [])
    for key, value in override.env.items():
        for entry in env:
            if entry.get("name") == key:
                entry.pop("valueFrom", None)
                entry["value"] = value
                break
        else:
            env.append({"name": key, "value": value})
