"""Clone: Model + Plan + FlowSpec -> `DevSet`, the additive dev copies, before any plugin runs.

- Dev workloads are named `<name>-<flowId>`; pod label values of every key that a selector in
  the namespace uses get the flow suffix, so no baseline selector can match a dev pod.
- A dev Service is made for every Service that selects a dev workload, selecting the dev pods; a
  StatefulSet's governing Service becomes the dev one.
- Env values in dev pods that reference a service with a dev version (`svc`, `svc:port`,
  `http://svc:port/path`, `svc.ns.svc.cluster.local`, ...) are rewritten to the dev name.
- Image and env overrides of the flow go onto the target container.

`patch` gives the DevSet after plugins: the same copies with the pod specs the plugins returned.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

from ..core.k8s import LabelIndex, all_containers, map_matches, selector_label_keys, strip_metadata
from ..core.names import FLOW_LABEL, KARDINAL, SHARED, dev_label_value, dev_name, flow_labels
from ..core.references import Target, rewrite
from .flow import FlowSpec, ServiceOverride
from .load import Document
from .model import Model, ServiceNode, Workload
from .plan import Plan


@dataclass(frozen=True)
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

    @property
    def name(self) -> str:
        return self.obj["metadata"]["name"]

    @property
    def key(self) -> tuple[str | None, str]:
        """(namespace, name): unique among a flow's dev workloads."""
        return self.obj["metadata"].get("namespace"), self.name


@dataclass(frozen=True)
class Rewrite:
    workload: str
    container: str
    env: str
    old: str
    new: str

    def as_dict(self) -> dict:
        return {"workload": self.workload, "container": self.container, "env": self.env, "old": self.old,
                "new": self.new}


@dataclass(frozen=True)
class DevService:
    baseline: Document
    obj: dict
    version: str


@dataclass(frozen=True)
class DevSet:
    """Everything cloned for a flow: workloads (by service), Services, rewrites done."""

    workloads: dict[str, DevWorkload] = field(default_factory=dict)
    services: list[DevService] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    dev_names: dict[str, str] = field(default_factory=dict)  # service -> dev Service name
    versions: dict[str, str] = field(default_factory=dict)  # dev service -> flow id or "shared"

    def rewrite_targets(self, version: str) -> list[str]:
        """Services whose dev copies a workload of `version` may point at.

        A shared copy serves every flow, so it may only point at other shared copies.
        """
        return sorted(n for n, v in self.versions.items() if version != SHARED or v == SHARED)

    def unique_workloads(self) -> list[DevWorkload]:
        """Each dev workload once, even when several services select it."""
        return list({id(w): w for w in self.workloads.values()}.values())


def selector_keys(model: Model) -> dict[str | None, set[str]]:
    """Label keys used by any Service or workload selector, per namespace."""
    keys: dict[str | None, set[str]] = {}
    for doc in model.documents:
        ns = model.namespace_of(doc)
        spec = doc.obj.get("spec") if isinstance(doc.obj.get("spec"), dict) else {}
        sel = spec.get("selector")
        if not isinstance(sel, dict):
            continue
        keys.setdefault(ns, set()).update(sel if doc.kind == "Service" else selector_label_keys(sel))
    return keys


def isolate_labels(labels: dict, keys: set[str], version: str) -> dict:
    """Suffix every selector-relevant label value so no baseline selector matches."""
    out = {k: dev_label_value(v, version) if k in keys else v for k, v in labels.items()}
    out.update(flow_labels(version))
    return out


def make(model: Model, plan: Plan, flow: FlowSpec, replicas: int | str) -> DevSet:
    versions = {n: (SHARED if plan.version_of(n) == SHARED else flow.id) for n in plan.dev_services()}
    dev_names = {name: dev_name(name, version) for name, version in versions.items()}
    keys = selector_keys(model)
    # workloads first: a workload selected by two dev services is copied once
    copied: dict[str, DevWorkload] = {}
    workloads: dict[str, DevWorkload] = {}
    for name, version in versions.items():
        node = model.services[name]
        if node.workload is None:
            continue
        key = f"{node.workload.doc.namespace}/{node.workload.doc.ref}"
        if key not in copied:
            copied[key] = _copy_workload(node, version, keys, model, replicas)
        workloads[name] = copied[key]
    services = _copy_services(model, list(copied.values()), dev_names)
    rewrites: list[Rewrite] = []
    probe = DevSet(versions=versions, dev_names=dev_names)
    overrides = {s.name: s for s in flow.services}
    for dw in copied.values():
        rewrites += _rewrite_references(dw, model, probe)
    for name, dw in workloads.items():
        if name in overrides:
            _apply_override(dw, overrides[name])
    return DevSet(workloads, services, rewrites, dev_names, versions)


def patch(dev: DevSet, pod_specs: dict[tuple[str | None, str], dict]) -> DevSet:
    """The DevSet after plugins: new pod specs, by the `key` of the dev workload they belong to."""
    if not pod_specs:
        return dev
    new: dict[int, DevWorkload] = {}
    for dw in dev.unique_workloads():
        spec = pod_specs.get(dw.key)
        if spec is None:
            new[id(dw)] = dw
            continue
        template = {**dw.obj["spec"]["template"], "spec": spec}
        new[id(dw)] = replace(dw, obj={**dw.obj, "spec": {**dw.obj["spec"], "template": template}})
    return replace(dev, workloads={s: new[id(dw)] for s, dw in dev.workloads.items()})


def _copy_workload(node: ServiceNode, version: str, keys: dict[str | None, set[str]], model: Model,
                   replicas: int | str) -> DevWorkload:
    wl = node.workload
    obj = strip_metadata(copy.deepcopy(wl.doc.obj))
    ns = model.namespace_of(wl.doc)
    meta = obj["metadata"]
    meta["name"] = dev_name(wl.doc.name, version)
    if ns:
        meta["namespace"] = ns
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(version)}
    spec = obj.setdefault("spec", {})
    template = spec.setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = isolate_labels(tmeta.get("labels") or {}, keys.get(ns, set()), version)
    sel = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
    sel_keys = selector_label_keys(sel)
    spec["selector"] = {"matchLabels": {k: v for k, v in tmeta["labels"].items() if k in sel_keys or k == FLOW_LABEL}}
    if replicas != "keep":
        spec["replicas"] = int(replicas)
    return DevWorkload(node.name, version, wl.doc, obj, node.container)


def _copy_services(model: Model, workloads: list[DevWorkload], dev_names: dict[str, str]) -> list[DevService]:
    """A dev Service for every Service (node or legacy entry) that selects a dev workload."""
    index = LabelIndex()
    for dw in workloads:
        index.add(model.namespace_of(dw.baseline), Workload(dw.baseline).pod_labels, dw)
    out = []
    for doc in model.documents:
        if doc.kind != "Service" or KARDINAL + "plugin-definition" in doc.annotations:
            continue
        selector = (doc.obj.get("spec") or {}).get("selector")
        if not isinstance(selector, dict) or not selector:
            continue
        ns = model.namespace_of(doc)
        for dw in index.candidates(ns, selector):
            if map_matches(selector, Workload(dw.baseline).pod_labels):
                obj = _dev_service(doc, dw, ns)
                out.append(DevService(doc, obj, dw.version))
                dev_names.setdefault(doc.name, obj["metadata"]["name"])
                break
    return out


def _dev_service(doc: Document, dw: DevWorkload, ns: str | None) -> dict:
    obj = strip_metadata(copy.deepcopy(doc.obj))
    meta = obj["metadata"]
    meta["name"] = dev_name(doc.name, dw.version)
    if ns:
        meta["namespace"] = ns
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(dw.version)}
    ann = {k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith(KARDINAL)}
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
                "loadBalancerClass"):
        spec.pop(key, None)
    if headless:
        spec["clusterIP"] = "None"
    if spec.get("type") in ("LoadBalancer", "NodePort"):
        spec["type"] = "ClusterIP"  # a dev lane must not buy a cloud load balancer or a node port
    for port in spec.get("ports") or []:
        port.pop("nodePort", None)
    if dw.obj.get("kind") == "StatefulSet" and dw.obj["spec"].get("serviceName") in (doc.name, None):
        dw.obj["spec"]["serviceName"] = meta["name"]  # the governing Service of the dev pods (still being made)
    return obj


# ---------------------------------------------------------------------------------------------
# Reference rewriting


def reference_targets(model: Model, names: list[str]) -> dict[str, Target]:
    """The services references may name, with their namespaces and port names."""
    return {n: Target(model.services[n].namespace, model.services[n].port_names) for n in names}


def _rewrite_references(dw: DevWorkload, model: Model, dev: DevSet) -> list[Rewrite]:
    names = [n for n in dev.rewrite_targets(dw.version) if n in model.services]
    if not names:
        return []
    targets = reference_targets(model, names)
    node = model.services[dw.service]
    done = []
    for container in all_containers(dw.pod_spec):
        for env in container.get("env") or []:
            value, name = env.get("value"), str(env.get("name", ""))
            if not isinstance(value, str) or name in node.no_rewrite:
                continue
            new = rewrite(name, value, targets, dev.dev_names)
            if new != value:
                env["value"] = new
                done.append(Rewrite(dw.name, container.get("name", ""), name, value, new))
    return done


def _apply_override(dw: DevWorkload, override: ServiceOverride) -> None:
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
