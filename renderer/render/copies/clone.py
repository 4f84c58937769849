"""Clone: Model + Plan + FlowSpec -> `DevSet`, the additive dev copies, before any plugin runs.

- Dev workloads (Deployments, StatefulSets, DaemonSets, Jobs, CronJobs) are named `<name>-<flowId>`
  in their baseline's namespace; pod label values of every key that a selector in the namespace
  uses get the flow suffix, so no baseline selector can match a dev pod.
- A dev Service is made for every Service that selects a dev workload, selecting the dev pods; a
  StatefulSet's governing Service becomes the dev one.
- References to a service with a dev version are rewritten to the dev name wherever the dev pod
  reads them (`model.address_reads`: env, command, args, init containers); a ConfigMap it reads that holds one
  gets a per-flow copy that the pod reads instead. Secrets are never copied: one holding such a
  reference is a warning.
- A dev pod never mounts a baseline PersistentVolumeClaim: it gets a per-flow copy of the claim
  (`devlane.dev/volume: emptyDir|shared` on its Service chooses otherwise).
- NetworkPolicies that select a dev pod's baseline, or admit traffic from one, get per-flow copies
  that select and admit the dev pods.
- Image and env overrides of the flow go onto the target container.

`patch` gives the DevSet after plugins: the same copies with the pod specs the plugins returned.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from ...core import deadline
from ...core.k8s import (
    LabelIndex,
    copy_tree,
    map_matches,
    pod_spec,
    pod_template,
    policy_selects,
    required_labels,
    selector_label_keys,
    strip_metadata,
    with_pod_spec,
)
from ...core.names import DEVLANE, FLOW_LABEL, KARDINAL, SHARED, dev_label_value, flow_labels
from ...core.references import apply, apply_namespaces
from ...core.secrets_mask import excerpt
from ...core.stores import find_addresses
from ...errors import Diagnostics, Problem
from ..inputs.document import Document
from ..model.address_reads import config_reads, data_of, data_refs, pod_slots, pod_values, repoint
from ..model.records import Model, ServiceNode, Workload
from ..plan.flow_spec import ServiceOverride
from ..plan.planner import Plan
from ..settings.isolation import Lane
from ..settings.render_settings import CopySettings
from . import dapr_lane, flow_namespace
from .dev_set import DevObject, DevService, DevSet, DevWorkload, Rewrite

VOLUME = DEVLANE + "volume"
VOLUME_MODES = ("copy", "emptyDir", "shared")
REPLICATED = ("Deployment", "StatefulSet", "ReplicationController")  # what Services select; replicas set


def isolate_labels(labels: dict, keys: set[str], version: str) -> dict:
    """Suffix every selector-relevant label value so no baseline selector matches."""
    out = {k: dev_label_value(v, version) if k in keys else v for k, v in labels.items()}
    out.update(flow_labels(version))
    return out


def make(model: Model, plan: Plan, settings: CopySettings,
         by_header: frozenset[str] = frozenset()) -> tuple[DevSet, list[Problem]]:
    """The plan's dev copies, with what a lane in its own namespace needs (`flow_namespace`), and the problems
    found making them. `by_header`: on a mesh, the dev services the flow header reaches (kept at their baseline
    address in every reference)."""
    diags = Diagnostics()
    lane, replicas, strict = settings.lane, settings.replicas, settings.strict
    versions = {n: (SHARED if plan.version_of(n) == SHARED else plan.flow_id) for n in plan.dev_services()}
    dev_names = {key: lane.name(model.services[key].name, version) for key, version in versions.items()}
    # in a flow namespace no baseline selector can reach a dev pod: labels stay as they are
    keys = {} if lane.by_namespace else model.index.selector_keys
    # workloads first: a workload selected by two dev services is copied once
    copied: dict[int, DevWorkload] = {}
    workloads: dict[str, DevWorkload] = {}
    for key, version in versions.items():
        node = model.services[key]
        if node.workload is None:
            continue
        wid = id(node.workload.doc)
        if wid not in copied:
            copied[wid] = _copy_workload(node, version, keys, model, replicas, lane)
        workloads[key] = copied[wid]
    services, renamed = _copy_services(model, list(copied.values()), lane)
    namespaces = {ns: lane.namespace(ns, dw.version) for dw in copied.values()
                  if lane.by_namespace and (ns := model.namespace_of(dw.baseline))}
    cloner = _Cloner(model, DevSet(versions=versions, dev_names=dev_names, lane=lane, namespaces=namespaces,
                                   by_header=by_header), diags, strict)
    for dw in copied.values():
        deadline.check()
        cloner.rewrite(dw, model.nodes_on(dw.baseline))
        cloner.volumes(dw, model.nodes_on(dw.baseline))
    for key, override in plan.overrides.items():
        if key in workloads:
            _apply_override(workloads[key], override)
    objects = cloner.objects + _network_policies(model, list(copied.values()), keys, lane)
    dev = DevSet(workloads, services, cloner.rewrites, dev_names, versions, objects, renamed, lane, namespaces,
                 by_header, frozenset(cloner.own_addresses))
    dev = dapr_lane.isolate(model, dev, settings.dapr)
    dapr_lane.report_unloaded(model, dev, settings.dapr, diags.error if strict else diags.warn)
    return flow_namespace.complete(model, dev, diags, strict), diags.problems


def patch(dev: DevSet, pod_specs: dict[tuple[str | None, str], dict]) -> DevSet:
    """The DevSet after plugins: new pod specs, by the `key` of the dev workload they belong to."""
    if not pod_specs:
        return dev
    new: dict[int, DevWorkload] = {}
    for dw in dev.unique_workloads():
        spec = pod_specs.get(dw.key)
        new[id(dw)] = dw if spec is None else replace(dw, obj=_drop_unmounted_claims(with_pod_spec(dw.obj, spec),
                                                                                    pod_spec(dw.obj)))
    return replace(dev, workloads={s: new[id(dw)] for s, dw in dev.workloads.items()})


def _mounted(spec: dict) -> set[str]:
    return {str(m.get("name")) for key in ("initContainers", "containers") for c in spec.get(key) or []
            if isinstance(c, dict) for m in c.get("volumeMounts") or [] if isinstance(m, dict)}


def _drop_unmounted_claims(obj: dict, before: dict) -> dict:
    """A StatefulSet's claim templates that the plugin unmounted (a seed's emptyDir replaced the data volume):
    left in, each flow's copy would still bind a PersistentVolume per replica that nothing uses."""
    templates = obj["spec"].get("volumeClaimTemplates") if obj.get("kind") == "StatefulSet" else None
    if not isinstance(templates, list):
        return obj
    gone = _mounted(before) - _mounted(pod_spec(obj))
    kept = [t for t in templates if not (isinstance(t, dict) and (t.get("metadata") or {}).get("name") in gone)]
    if len(kept) == len(templates):
        return obj
    gone_too = ("volumeClaimTemplates",) if kept else ("volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy")
    spec = {k: v for k, v in obj["spec"].items() if k not in gone_too}
    return {**obj, "spec": {**spec, **({"volumeClaimTemplates": kept} if kept else {})}}


def _copy_workload(node: ServiceNode, version: str, keys: dict[str | None, set[str]], model: Model,
                   replicas: int | str, lane: Lane) -> DevWorkload:
    wl = node.workload
    obj = strip_metadata(copy_tree(wl.doc.obj))
    ns = model.namespace_of(wl.doc)
    meta = obj["metadata"]
    meta["name"] = lane.name(wl.doc.name, version)
    if ns:
        meta["namespace"] = lane.namespace(ns, version)
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(version)}
    template = pod_template(obj)
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = isolate_labels(tmeta.get("labels") or {}, keys.get(ns, set()), version)
    spec = obj["spec"]
    kind = obj.get("kind")
    if kind in ("Deployment", "StatefulSet", "DaemonSet") or (kind == "Job" and spec.get("manualSelector")):
        sel = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
        sel_keys = selector_label_keys(sel)
        spec["selector"] = {"matchLabels": {k: v for k, v in tmeta["labels"].items()
                                            if k in sel_keys or k == FLOW_LABEL}}
    elif kind == "ReplicationController":  # a plain map, defaulting to the template's labels
        sel = spec.get("selector") if isinstance(spec.get("selector"), dict) and spec.get("selector") else \
            (pod_template(wl.doc.obj).get("metadata") or {}).get("labels") or {}
        spec["selector"] = {k: v for k, v in tmeta["labels"].items() if k in sel or k == FLOW_LABEL}
    elif kind == "Job":
        spec.pop("selector", None)  # generated by the API server from the Job's own uid
    if kind == "StatefulSet" and spec.get("volumeClaimTemplates"):
        # a StatefulSet keeps its claims when it is deleted: a pruned lane would leave one (and its volume) a replica
        spec["persistentVolumeClaimRetentionPolicy"] = {**(spec.get("persistentVolumeClaimRetentionPolicy") or {}),
                                                        "whenDeleted": "Delete"}
    if replicas != "keep" and kind in REPLICATED:
        spec["replicas"] = int(replicas)
    return DevWorkload(node.key, version, wl.doc, obj, node.container)


def _copy_services(model: Model, workloads: list[DevWorkload], lane: Lane) -> tuple[
        list[DevService], dict[tuple[str | None, str], str]]:
    """A dev Service for every Service (node or legacy entry) that selects a dev workload."""
    index = LabelIndex()
    for dw in workloads:
        index.add(model.namespace_of(dw.baseline), Workload(dw.baseline).pod_labels, dw)
    out, renamed = [], {}
    for doc, ns, selector in model.index.service_selectors:
        for dw in index.candidates(ns, selector):
            if dw.baseline.kind in REPLICATED and map_matches(selector, Workload(dw.baseline).pod_labels):
                obj = _dev_service(doc, dw, ns, lane)
                out.append(DevService(doc, obj, dw.version))
                renamed.setdefault((ns, doc.name), obj["metadata"]["name"])
                break
    return out, renamed


def _dev_service(doc: Document, dw: DevWorkload, ns: str | None, lane: Lane) -> dict:
    obj = strip_metadata(copy_tree(doc.obj))
    meta = obj["metadata"]
    meta["name"] = lane.name(doc.name, dw.version)
    if ns:
        meta["namespace"] = lane.namespace(ns, dw.version)
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(dw.version)}
    _drop_kardinal(meta)
    spec = obj["spec"]
    pod_labels = dw.pod_labels
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


def _drop_kardinal(meta: dict) -> None:
    ann = {k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith(KARDINAL)}
    if ann:
        meta["annotations"] = ann
    else:
        meta.pop("annotations", None)


def copy_of(doc: Document, version: str, namespace: str | None, lane: Lane) -> dict:
    """A per-flow copy of a repository object: its dev name in `namespace` (the dev pod's), flow labels."""
    obj = strip_metadata(copy_tree(doc.obj))
    meta = obj["metadata"]
    meta["name"] = lane.name(doc.name, version)
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(version)}
    _drop_kardinal(meta)
    return obj


class _Cloner:
    """Rewrites references and volumes of dev pods, making the per-flow ConfigMaps and PVCs they need."""

    def __init__(self, model: Model, dev: DevSet, diags: Diagnostics, strict: bool):
        self.model, self.dev, self.diags, self.strict = model, dev, diags, strict
        self.rewrites: list[Rewrite] = []
        self.objects: list[DevObject] = []
        self._made: dict[tuple[str, str | None, str, str], str] = {}  # (kind, ns, name, version) -> copy name
        self._namespaces: dict[str, dict[str, str]] = {}  # version -> `_flow_namespaces(version)`
        self._names: frozenset[str] | None = None  # `_lane_names()`
        self.own_addresses: set[tuple[str | None, str, str]] = set()  # kept while a registry is shared

    def rewrite(self, dw: DevWorkload, nodes: list[ServiceNode]) -> None:
        """References to services with a dev version: the dev names (suffix), or, in a flow namespace, the flow
        namespace where a reference names one. There, every ConfigMap the pod reads is copied beside it."""
        home = self.model.namespace_of(dw.baseline)
        targets = self.dev.reference_targets(self.model, dw.version, home)
        lane = self.dev.lane
        if not targets and not lane.by_namespace:
            return
        skip = frozenset().union(*(n.no_rewrite for n in nodes))
        spec = dw.pod_spec
        reads = [(read, self.model.find(read.kind, home, read.name)) for read in config_reads(spec)]
        registry = _shared_registry(spec, self._lane_names(), [d for _, d in reads if d is not None]) \
            if dw.service in self.dev.versions else None
        for slot in pod_slots(spec, targets, skip):
            refs = slot.refs
            if registry is not None:  # its own address stays the baseline's: see `_shared_registry`
                refs = [r for r in refs if r.target.key != dw.service]
                if len(refs) < len(slot.refs):
                    self._keep_own_address(dw, slot.where, slot.value, registry)
            new = self._apply(slot.value, refs, dw.version)
            if new != slot.value:
                slot.set(new)
                self.rewrites.append(Rewrite(dw.name, slot.container, slot.field, slot.label, slot.value, new))
        for read, doc in reads:
            if doc is None:
                continue
            found = data_refs(doc, targets, None if read.kind == "ConfigMap" else read.keys, skip) if targets else {}
            if registry is not None and read.kind == "ConfigMap":  # `eureka.instance.hostname` in a mounted file
                found = self._without_own_address(dw, doc, found, registry)
            if read.kind == "Secret":
                if found:
                    self._secret(dw, doc, found)
                continue
            if found or lane.by_namespace:
                repoint(spec, "ConfigMap", read.name, self._configmap(doc, dw, found))

    def _lane_names(self) -> frozenset[str]:
        """The names a lane's copy answers to: each dev service's baseline name and its dev name."""
        if self._names is None:
            self._names = frozenset({self.model.services[k].name for k in self.dev.versions if k in self.model.services}
                                    | set(self.dev.dev_names.values()))
        return self._names

    def _without_own_address(self, dw: DevWorkload, doc: Document, found: dict, registry: str) -> dict:
        """The references of a ConfigMap's entries to rewrite, the pod's own address left as the baseline's."""
        out = {}
        for key, refs in found.items():
            kept = [r for r in refs if r.target.key != dw.service]
            if len(kept) < len(refs):
                text, at = data_of(doc.obj)[key], next(r.start for r in refs if r.target.key == dw.service)
                end = text.find("\n", at)
                line = text[text.rfind("\n", 0, at) + 1:end if end >= 0 else len(text)].strip()
                self._keep_own_address(dw, f"ConfigMap {doc.name} key {key}", line, registry)
                copy = self.dev.lane.name(doc.name, dw.version)  # where the dev pod reads it, if other keys change
                self.own_addresses.add((dw.namespace, dw.name, f"ConfigMap {copy} key {key}"))
            if kept:
                out[key] = kept
        return out

    def _keep_own_address(self, dw: DevWorkload, where: str, value: str, registry: str) -> None:
        self.own_addresses.add((dw.namespace, dw.name, where))
        node = self.model.services[dw.service]
        self._warn(f"dev workload {dw.name} registers with the registry {registry}, which the lane shares with the "
                   f"baseline: its own address ({where} = {excerpt(value)}) is kept as the baseline's, so the "
                   f"registry never hands baseline callers the dev pod (and the lane's callers that look "
                   f"{node.name} up there reach the baseline's)", dw.baseline,
                   hint=f"copy the registry into the lane: annotate {registry} kardinal.dev.service/stateful: "
                        f"\"true\" and add it to {node.name}'s kardinal.dev.service/dependencies (dev pods then "
                        "register with the lane's registry, under their dev names)", code="registry-self")

    def _apply(self, text: str, refs: list, version: str) -> str:
        if not self.dev.lane.by_namespace:
            return apply(text, refs, self.dev.dev_names)
        return apply_namespaces(text, refs, self._flow_namespaces(version))

    def _flow_namespaces(self, version: str) -> dict[str, str]:
        """Service key -> the flow namespace of its dev copy (only services that have one); once per version."""
        if version not in self._namespaces:
            out = self._namespaces[version] = {}
            for key in self.dev.rewrite_targets(version):
                ns = self.model.namespace_of(self.model.services[key].doc)
                if ns is not None:
                    out[key] = self.dev.lane.namespace(ns, self.dev.versions[key])
        return self._namespaces[version]

    def _configmap(self, doc: Document, dw: DevWorkload, found: dict) -> str:
        """The per-flow copy of a ConfigMap with its references rewritten (made once per flow)."""
        slot = ("ConfigMap", dw.namespace, doc.name, dw.version)
        if slot not in self._made:
            obj = copy_of(doc, dw.version, dw.namespace, self.dev.lane)
            obj.pop("immutable", None)
            for key, refs in found.items():
                old = obj["data"][key]
                obj["data"][key] = self._apply(old, refs, dw.version)
                if obj["data"][key] != old:
                    self.rewrites.append(Rewrite(obj["metadata"]["name"], None, "key", key, old, obj["data"][key]))
            self.objects.append(DevObject(doc, obj, dw.version))
            self._made[slot] = obj["metadata"]["name"]
        return self._made[slot]

    def _secret(self, dw: DevWorkload, doc: Document, found: dict) -> None:
        for key, refs in sorted(found.items()):
            services = ", ".join(sorted({r.target.key for r in refs}))
            self._warn(f"Secret {doc.name} key {key} holds the address of {services}, which has a dev version; "
                       f"devlane never copies Secret values, so dev workload {dw.name} still reaches the baseline",
                       doc, "move the address to a ConfigMap or an env value (devlane rewrites those), or give the "
                       "flow its own Secret through a plugin (an ExternalSecret)", "secret-reference")

    def volumes(self, dw: DevWorkload, nodes: list[ServiceNode]) -> None:
        """No dev pod mounts a baseline PersistentVolumeClaim: a per-flow claim, an emptyDir, or shared on purpose."""
        for vol in dw.pod_spec.get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName") if isinstance(vol, dict) else None
            if not isinstance(claim, str):
                continue
            mode, owner = volume_mode(nodes, claim, self.diags)
            if mode == "shared" and self.dev.lane.by_namespace:
                self.diags.error(f"dev workload {dw.name} cannot share the baseline PersistentVolumeClaim {claim}: "
                                 f"it runs in {dw.namespace}, and a pod mounts claims of its own namespace only",
                                 owner.doc.where(), hint=f"use {VOLUME}: copy or emptyDir, or isolation: suffix",
                                 code="volume")
                continue
            if mode == "shared":
                continue
            if mode == "emptyDir":
                vol.pop("persistentVolumeClaim")
                vol["emptyDir"] = {}
                continue
            doc = self.model.find("PersistentVolumeClaim", self.model.namespace_of(dw.baseline), claim)
            if doc is None:
                self.diags.error(
                    f"dev workload {dw.name} would mount the baseline PersistentVolumeClaim {claim}, which is not in "
                    "the repository, so devlane cannot give the flow its own", owner.doc.where(),
                    hint=f"add PersistentVolumeClaim {claim} to the repository, or annotate {owner.ref} with "
                    f"{VOLUME}: emptyDir (or {VOLUME}: shared to share the volume on purpose); in .devlane.yaml: "
                    f"services.{owner.name}.volume", code="volume")
                continue
            vol["persistentVolumeClaim"]["claimName"] = self._claim(doc, dw)

    def _claim(self, doc: Document, dw: DevWorkload) -> str:
        slot = ("PersistentVolumeClaim", dw.namespace, doc.name, dw.version)
        if slot not in self._made:
            obj = copy_of(doc, dw.version, dw.namespace, self.dev.lane)
            spec = obj["spec"] = obj.get("spec") or {}
            spec.pop("volumeName", None)  # a fresh volume, never the baseline's bound one
            ann = obj["metadata"].get("annotations") or {}
            for key in [k for k in ann if k.startswith(("pv.kubernetes.io/", "volume.beta.kubernetes.io/",
                                                        "volume.kubernetes.io/"))]:
                ann.pop(key)
            if not ann:
                obj["metadata"].pop("annotations", None)
            self.objects.append(DevObject(doc, obj, dw.version))
            self._made[slot] = obj["metadata"]["name"]
        return self._made[slot]

    def _warn(self, message: str, doc: Document, hint: str, code: str) -> None:
        (self.diags.error if self.strict else self.diags.warn)(message, doc.where(), hint=hint, code=code)


def _shared_registry(spec: dict, lane: frozenset[str], configs: list[Document] = ()) -> str | None:
    """The registry (service discovery) a dev pod registers with when the lane has no copy of it, else None.

    A pod that names a registry and its own address (`HOST_NAME=auth`, `eureka.instance.hostname`) advertises
    that address to the registry; rewritten to its dev name, a registry the baseline shares would hand baseline
    callers the dev pod. So its own address is kept while the registry is shared, and rewritten (with the
    registry's) once the lane has its own copy. The registry may be named in env, args or a ConfigMap the pod
    reads (Spring's `eureka.client.service-url.defaultZone` in a mounted application.yml)."""
    values = [(key, value) for _, _, key, value in pod_values(spec)]
    values += [(key, value) for doc in configs if doc.kind == "ConfigMap" for key, value in data_of(doc.obj).items()]
    for key, value in values:
        for address in find_addresses(value, key):
            if address.role == "registry" and address.host.split(".", 1)[0] not in lane:
                return address.host.split(".", 1)[0]
    return None


def volume_mode(nodes: list[ServiceNode], claim: str, diags: Diagnostics) -> tuple[str, ServiceNode]:
    """`devlane.dev/volume` on the Service: `MODE` for every claim, or `claim=MODE,...`."""
    owner = nodes[0]
    for node in nodes:
        raw = str(node.doc.annotations.get(VOLUME, "")).strip()
        if not raw:
            continue
        modes = {}
        for item in raw.split(","):
            name, sep, mode = item.strip().rpartition("=")
            modes[name.strip() if sep else "*"] = mode.strip()  # `claim = MODE`, blanks around
        mode = modes.get(claim, modes.get("*"))
        if mode is None:
            continue
        if mode not in VOLUME_MODES:
            diags.error(f"{VOLUME}: {mode!r} is not a volume mode", node.doc.where(),
                        hint=f"use one of {', '.join(VOLUME_MODES)} (or claim=MODE,...)", code="bad-annotation")
            return "copy", node
        return mode, node
    return "copy", owner


def _dev_selector(sel: dict, keys: set[str], version: str) -> dict:
    """The selector that matches the dev pods where `sel` matched their baselines."""
    out = copy.deepcopy(sel)
    labels = out.get("matchLabels") or {}
    for k in labels:
        if k in keys:
            labels[k] = dev_label_value(labels[k], version)
    for e in out.get("matchExpressions") or []:
        if e.get("key") in keys and e.get("values"):
            e["values"] = [dev_label_value(v, version) for v in e["values"]]
    return out


def _network_policies(model: Model, workloads: list[DevWorkload], keys: dict[str | None, set[str]],
                      lane: Lane) -> list[DevObject]:
    """Per-flow copies of the NetworkPolicies that select a dev pod's baseline or admit traffic from one; in a
    flow namespace, as they are, those that select a dev pod (the labels did not change)."""
    policies = [d for d in model.documents if d.kind == "NetworkPolicy" and isinstance(d.obj.get("spec"), dict)]
    if not policies:
        return []
    versions = sorted({dw.version for dw in workloads})
    # the dev workloads of each version by the labels a policy must select: the dev pods' own in a flow namespace,
    # their baselines' in suffix isolation (a policy is copied where it selected the baseline pods)
    by_version: dict[str, LabelIndex] = {v: LabelIndex() for v in versions}
    for dw in workloads:
        labels = dw.pod_labels if lane.by_namespace else Workload(dw.baseline).pod_labels
        by_version[dw.version].add(model.namespace_of(dw.baseline), labels, dw)
    out = []
    for doc in policies:
        ns = model.namespace_of(doc)
        for version in versions:
            mine = by_version[version]
            if lane.by_namespace:
                selector = doc.obj["spec"].get("podSelector")
                hit = isinstance(selector, dict) and any(policy_selects(selector, dw.pod_labels)
                                                         for dw in mine.candidates(ns, required_labels(selector)))
                obj = copy_of(doc, version, lane.namespace(ns, version), lane) if hit else None
            else:
                obj = _policy_copy(doc, mine, keys.get(ns, set()), version, ns, lane)
            if obj is not None:
                out.append(DevObject(doc, obj, version))
    return out


def _policy_copy(doc: Document, mine: LabelIndex, keys: set[str], version: str,
                 ns: str | None, lane: Lane) -> dict | None:
    """`mine`: the flow's dev workloads (of `version`) by their baselines' pod labels."""
    changed = keys | set(flow_labels(version))  # the only labels a dev pod has other than its baseline's

    def moved(sel: object) -> bool:  # matched the baseline pods, and misses their dev copies
        if not isinstance(sel, dict) or not (selector_label_keys(sel) & changed):
            return False  # it reads only labels the dev pods keep: it selects both or neither
        return any(policy_selects(sel, Workload(dw.baseline).pod_labels) and not policy_selects(sel, dw.pod_labels)
                   for dw in mine.candidates(ns, required_labels(sel)))

    spec = doc.obj["spec"]
    selects = moved(spec.get("podSelector"))
    peers = [p for rule in (spec.get("ingress") or []) + (spec.get("egress") or []) if isinstance(rule, dict)
             for p in (rule.get("from") or []) + (rule.get("to") or []) if isinstance(p, dict)]
    admits = any(moved(p.get("podSelector")) and not p.get("namespaceSelector") for p in peers)
    if not selects and not admits:
        return None
    obj = copy_of(doc, version, ns, lane)
    new = obj["spec"]
    if selects:
        new["podSelector"] = _dev_selector(new["podSelector"], keys, version)
    for direction, side in (("ingress", "from"), ("egress", "to")):
        for rule in new.get(direction) or []:
            extra = [{"podSelector": _dev_selector(p["podSelector"], keys, version)} for p in rule.get(side) or []
                     if isinstance(p, dict) and moved(p.get("podSelector")) and not p.get("namespaceSelector")]
            if extra:
                rule[side] = [*rule[side], *extra]
    return obj


def _apply_override(dw: DevWorkload, override: ServiceOverride) -> None:
    containers = dw.pod_spec.get("containers") or []
    target = next((c for c in containers if c.get("name") == dw.container), containers[0] if containers else None)
    if target is None:
        return
    if override.image:
        target["image"] = override.image
    if not override.env:
        return
    env = target.setdefault("env", [])
    for key, value in override.env.items():
        for entry in env:
            if entry.get("name") == key:
                entry.pop("valueFrom", None)
                entry["value"] = value
                break
        else:
            env.append({"name": key, "value": value})
