"""Isolation `namespace`: what a lane in its own namespace needs besides the dev copies (`clone`), and what it
cannot have, said loudly.

- A `Namespace` per flow namespace, with the labels of its baseline's (pod security, sidecar injection).
- An `ExternalName` alias for every baseline Service of the namespace without a dev copy, with its ports, so
  a short name resolves by DNS to the dev copy or to the baseline.
- The ServiceAccount a dev pod runs as, and the Roles and RoleBindings that bind it, copied beside it (a
  ClusterRoleBinding cannot be copied: a warning names it).
- The OpenTelemetry `Instrumentation` a dev pod's inject annotation names (the Operator looks in the pod's own
  namespace), copied with `tracecontext` and `baggage` among its propagators, or made where the repository has
  only the Operator's CRD; without either, a warning: the pod would run uninstrumented and drop the lane's baggage.
- Secrets are never copied with values: an `ExternalSecret` that makes the Secret (and its namespaced
  `SecretStore`) is copied, as is a cluster-wide `SealedSecret`; with `secrets.mirror`, an empty Secret
  annotated for a replicator (Reflector or kubernetes-replicator) that fills it from the baseline's;
  anything else is a warning (an error under `policy.strict`) naming the fixes.
- Warnings: a per-pod DNS name of a headless Service (`db-0.db`) that an alias cannot carry; a Gateway in
  another namespace whose listeners do not admit routes from the flow namespace; a baseline
  NetworkPolicy that admits only its own namespace, so the lane's calls through an alias are dropped.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ...core.k8s import LabelIndex, copy_tree, pod_template, policy_selects, required_labels, strip_metadata
from ...core.names import DEVLANE, KARDINAL, flow_labels
from ...errors import Diagnostics, Problem
from ..inputs.document import Document
from ..model.address_reads import config_reads
from ..model.records import Model
from ..settings.isolation import Lane
from .dev_set import DevObject, DevSet, DevWorkload

ALIAS_OF = DEVLANE + "alias-of"
EXTERNAL_SECRETS = "external-secrets.io/"
SEALED_SECRETS = "bitnami.com/"
SEALED_CLUSTER_WIDE = "sealedsecrets.bitnami.com/cluster-wide"
# replicator -> (the mirror's annotation naming its source, the source's annotations that allow it)
REPLICATORS = {
    "reflector": ("reflector.v1.k8s.emberstack.com/reflects",
                  ("reflector.v1.k8s.emberstack.com/reflection-allowed",
                   "reflector.v1.k8s.emberstack.com/reflection-allowed-namespaces")),
    "kubernetes-replicator": ("replicator.v1.mittwald.de/replicate-from",
                              ("replicator.v1.mittwald.de/replication-allowed",
                               "replicator.v1.mittwald.de/replication-allowed-namespaces")),
}
# OpenTelemetry auto-instrumentation: the pod annotation, the Operator's CRD, what a lane's agents must propagate
OTEL_INJECT = "instrumentation.opentelemetry.io/inject-"
OTEL_CRD = "instrumentations.opentelemetry.io"
LANE_PROPAGATORS = ("tracecontext", "baggage")
LANE_INSTRUMENTATION = "devlane-lane"  # the one made where the repository has none but the Operator's CRD
_PER_POD = re.compile(r"\b([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?=[.:/\s\"',]|$)")


def complete(model: Model, dev: DevSet, diags: Diagnostics, strict: bool = False) -> DevSet:
    """The DevSet with what the lane needs in its namespaces; `dev` unchanged in `suffix` isolation."""
    if not dev.lane.by_namespace:
        return dev
    workloads = dev.unique_workloads()
    warn = diags.error if strict else diags.warn
    services: dict[str | None, list[Document]] = {}  # the baseline's Services by namespace
    for doc in model.documents:
        if doc.kind == "Service" and doc.api_version == "v1" and KARDINAL + "plugin-definition" not in doc.annotations:
            services.setdefault(model.namespace_of(doc), []).append(doc)
    objects = _flow_namespaces(model, workloads, dev.lane, diags)
    objects += _aliases(model, workloads, dev.renamed, dev.lane, services)
    needs = _Needs(model, dev, warn)
    headless = {ns: {d.name for d in docs if (d.obj.get("spec") or {}).get("clusterIP") == "None"
                     and (ns, d.name) not in dev.renamed} for ns, docs in services.items()}
    for dw in workloads:
        needs.service_account(dw)
        needs.config_maps(dw)
        needs.instrumentation(dw)
        _per_pod_names(model, dw, dev, diags, headless.get(model.namespace_of(dw.baseline), set()))
    _gateways(model, dev, diags)
    _blocking_policies(model, dev, diags)
    return replace(dev, objects=[*dev.objects, *objects, *needs.objects])


def provide_secrets(model: Model, dev: DevSet, made: list[dict],
                    strict: bool = False) -> tuple[DevSet, list[Problem]]:
    """The Secrets the dev pods read as plugins left them (a plugin may point a pod at a test-mode Secret, or make
    one: `made`), provided in their flow namespaces or reported."""
    if not dev.lane.by_namespace:
        return dev, []
    diags = Diagnostics()
    needs = _Needs(model, dev, diags.error if strict else diags.warn)
    for obj in made:
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if obj.get("kind") == "ExternalSecret":
            name = ((obj.get("spec") or {}).get("target") or {}).get("name") or name
        elif obj.get("kind") not in ("Secret", "SealedSecret"):
            continue
        # a plugin's object without a namespace lands in its dependent's (emit): any flow namespace
        for ns in [meta["namespace"]] if meta.get("namespace") else dev.namespaces.values():
            needs.provided.add(("Secret", ns, name))
    for dw in dev.unique_workloads():
        needs.secrets(dw)
    return replace(dev, objects=[*dev.objects, *needs.objects]), diags.problems


def _flow_namespaces(model: Model, workloads: list[DevWorkload], lane: Lane, diags: Diagnostics) -> list[DevObject]:
    """The `Namespace` of each flow namespace, with the labels and annotations of its baseline's (pod security,
    sidecar injection) when the repository holds that Namespace."""
    out, seen = [], set()
    taken: dict[str, Document] | None = None  # the repository's own namespaces, read once a flow needs one
    for dw in workloads:
        ns = model.namespace_of(dw.baseline)
        if ns is None:
            diags.error(f"isolation namespace: {dw.baseline.kind} {dw.baseline.name} has no namespace, so the flow "
                        "cannot alias the baseline's Services by their DNS names", dw.baseline.where(),
                        hint="set `namespace:` in .devlane.yaml (the namespace Argo CD or Flux deploys the baseline "
                             "into), or give the objects metadata.namespace", code="namespace-unknown")
            continue
        if (ns, dw.version) in seen:
            continue
        seen.add((ns, dw.version))
        name = lane.namespace(ns, dw.version)
        if taken is None:
            taken = _repository_namespaces(model)
        if name in taken:
            diags.error(f"isolation namespace: the flow namespace {name} (of {ns}, flow {dw.version}) is a namespace "
                        "the repository already uses: the lane's copies would mix with the baseline's objects there, "
                        "and deleting the lane would delete that namespace",
                        taken[name].where(),
                        hint="set `namespaceTemplate:` in .devlane.yaml to a pattern no namespace of the repository "
                             "matches (such as `{namespace}-lane-{flow}`), or name the flow differently",
                        code="namespace-taken")
            continue
        doc = model.find("Namespace", None, ns)
        meta: dict = {"name": name}
        base = (doc.obj.get("metadata") or {}) if doc is not None else {}
        meta["labels"] = {**(base.get("labels") or {}), **flow_labels(dw.version)}
        meta["labels"].pop("kubernetes.io/metadata.name", None)
        annotations = {k: v for k, v in (base.get("annotations") or {}).items() if not k.startswith(KARDINAL)}
        if annotations:
            meta["annotations"] = annotations
        out.append(DevObject(doc or dw.baseline, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta},
                             dw.version))
    return out


def _repository_namespaces(model: Model) -> dict[str, Document]:
    """Each namespace the repository's objects live in or declare, with the first object that does."""
    out: dict[str, Document] = {}
    for doc in model.documents:
        ns = doc.name if doc.kind == "Namespace" and doc.api_version == "v1" else model.namespace_of(doc)
        if ns:
            out.setdefault(ns, doc)
    return out


def _aliases(model: Model, workloads: list[DevWorkload], renamed: dict[tuple[str | None, str], str],
             lane: Lane, services: dict[str | None, list[Document]]) -> list[DevObject]:
    """An `ExternalName` Service in each flow namespace for every baseline Service of its namespace that has no
    dev copy, so that a short name a dev pod uses resolves to the baseline."""
    out = []
    for ns, version in sorted({(model.namespace_of(dw.baseline), dw.version) for dw in workloads
                               if model.namespace_of(dw.baseline)}):
        for doc in services.get(ns, []):
            if (ns, doc.name) in renamed:
                continue
            spec = doc.obj.get("spec") if isinstance(doc.obj.get("spec"), dict) else {}
            ports = [{k: v for k, v in p.items() if k in ("name", "port", "protocol", "appProtocol")}
                     for p in spec.get("ports") or [] if isinstance(p, dict)]
            target = spec.get("externalName") if spec.get("type") == "ExternalName" else \
                f"{doc.name}.{ns}.svc.{lane.cluster_domain}"
            meta = {"name": doc.name, "namespace": lane.namespace(ns, version), "labels": flow_labels(version),
                    "annotations": {ALIAS_OF: f"{ns}/{doc.name}"}}
            alias = {"apiVersion": "v1", "kind": "Service", "metadata": meta,
                     "spec": {"type": "ExternalName", "externalName": target, **({"ports": ports} if ports else {})}}
            out.append(DevObject(doc, alias, version))
    return out


class _Needs:
    """ServiceAccounts, RBAC and Secrets the dev pods use, provided in their flow namespaces (each once)."""

    def __init__(self, model: Model, dev: DevSet, warn):
        self.model, self.dev, self.warn = model, dev, warn
        self.objects: list[DevObject] = []
        self._made: set[tuple[str, str | None, str]] = set()
        self.provided: set[tuple[str, str | None, str]] = set()  # Secrets plugins made (or will make)
        # indexes, so that a wide flow costs what its pods read, not that times the repository
        self.bindings: dict[tuple[str | None, str], list[Document]] = {}  # (ns, ServiceAccount) -> bindings
        self.makers: dict[tuple[str | None, str], Document] = {}  # (ns, Secret) -> its ExternalSecret
        self.sealed: dict[tuple[str | None, str], Document] = {}
        for doc in model.documents:
            ns = model.namespace_of(doc)
            if doc.kind in ("RoleBinding", "ClusterRoleBinding"):
                subjects = doc.obj.get("subjects") if isinstance(doc.obj.get("subjects"), list) else []
                for sub in subjects:
                    if isinstance(sub, dict) and sub.get("kind") == "ServiceAccount" and sub.get("name"):
                        self.bindings.setdefault((sub.get("namespace") or ns, str(sub["name"])), []).append(doc)
            elif doc.kind == "ExternalSecret" and doc.api_version.startswith(EXTERNAL_SECRETS):
                target = ((doc.obj.get("spec") or {}).get("target") or {}).get("name") or doc.name
                self.makers.setdefault((ns, str(target)), doc)
            elif doc.kind == "SealedSecret" and doc.api_version.startswith(SEALED_SECRETS):
                self.sealed.setdefault((ns, doc.name), doc)

    def _copy(self, doc: Document, dw: DevWorkload) -> dict | None:
        """`doc` copied into the dev pod's namespace under its own name (None: already there)."""
        key = (doc.kind, dw.namespace, doc.name)
        if key in self._made:
            return None
        self._made.add(key)
        obj = strip_metadata(copy_tree(doc.obj))
        meta = obj["metadata"]
        meta["namespace"] = dw.namespace
        meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(dw.version)}
        self.objects.append(DevObject(doc, obj, dw.version))
        return obj

    def service_account(self, dw: DevWorkload) -> None:
        home = self.model.namespace_of(dw.baseline)
        name = dw.pod_spec.get("serviceAccountName") or dw.pod_spec.get("serviceAccount")
        if not name or name == "default":
            return  # every namespace has its own `default`
        doc = self.model.find("ServiceAccount", home, name)
        if doc is None:
            self.warn(f"dev workload {dw.name} in {dw.namespace} runs as ServiceAccount {name}, which is not in the "
                      "repository, so the flow namespace does not have it (the pods would not be created)",
                      dw.baseline.where(), hint=f"add ServiceAccount {name} (and its RBAC) to the repository",
                      code="namespace-missing")
            return
        self._copy(doc, dw)
        for binding in self.bindings.get((home, name), []):
            if binding.kind == "ClusterRoleBinding":
                self.warn(f"ClusterRoleBinding {binding.name} binds ServiceAccount {home}/{name}, not its copy in "
                          f"{dw.namespace}: dev workload {dw.name} runs without those permissions",
                          binding.where(), hint=f"add a subject for ServiceAccount {name} in {dw.namespace} to "
                          f"{binding.name}, or bind a Role in the namespace instead", code="namespace-rbac")
                continue
            if self.model.namespace_of(binding) != home:
                continue
            obj = self._copy(binding, dw)
            if obj is None:
                continue
            for s in obj.get("subjects") or []:
                if isinstance(s, dict) and s.get("kind") == "ServiceAccount" and (s.get("namespace") or home) == home:
                    s["namespace"] = dw.namespace
            ref = obj.get("roleRef") or {}
            role = self.model.find("Role", home, ref.get("name", "")) if ref.get("kind") == "Role" else None
            if role is not None:
                self._copy(role, dw)

    def config_maps(self, dw: DevWorkload) -> None:
        """A ConfigMap of the repository is copied beside the dev pod (`clone`); any other is reported."""
        home = self.model.namespace_of(dw.baseline)
        for read in config_reads(dw.pod_spec):
            if read.kind == "ConfigMap" and self.model.find("ConfigMap", home, read.name) is None:
                self.warn(f"dev workload {dw.name} in {dw.namespace} reads ConfigMap {read.name}, which is not in "
                          "the repository, so the flow namespace does not have it", dw.baseline.where(),
                          hint=f"add ConfigMap {read.name} to the repository, or create it in {dw.namespace}",
                          code="namespace-missing")

    def instrumentation(self, dw: DevWorkload) -> None:
        """The OpenTelemetry `Instrumentation` a dev pod's inject annotation names, provided in its flow namespace
        with `tracecontext` and `baggage` among its propagators: the Operator looks for it in the pod's own
        namespace, so without it the dev pod runs uninstrumented and no longer forwards the lane's baggage. The
        baseline's is copied; with none in the repository but the Operator's CRD there, a lane one is made; an
        annotation naming another namespace (`ns/name`) needs nothing."""
        meta = (pod_template(dw.obj) or {}).get("metadata") or {}
        annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
        local = {str(v).strip() for k, v in annotations.items() if str(k).startswith(OTEL_INJECT)}
        local = {v for v in local if v not in ("", "false") and "/" not in v}  # "true": the namespace's one
        if not local:
            return
        home = self.model.namespace_of(dw.baseline)
        found = {d.name: d for d in self.model.documents if d.kind == "Instrumentation"
                 and d.api_version.startswith("opentelemetry.io/") and self.model.namespace_of(d) == home}
        wanted = sorted(local - {"true"}) + ([min(found)] if "true" in local and found else [])
        for name in wanted:
            if name in found:
                self._with_lane_propagators(self._copy(found[name], dw))
            else:
                self.warn(f"dev workload {dw.name} in {dw.namespace} names Instrumentation {name}, which is not in "
                          "the repository, so the flow namespace does not have it: the OpenTelemetry Operator "
                          "injects no agent and the lane's baggage stops at this pod", dw.baseline.where(),
                          hint=f"add Instrumentation {name} to the repository (devlane copies it), or name the "
                               f"baseline's as {home}/{name} in the annotation", code="namespace-missing")
        if "true" not in local or found or ("Instrumentation", dw.namespace, LANE_INSTRUMENTATION) in self._made:
            return
        if not any(d.kind == "CustomResourceDefinition" and d.name == OTEL_CRD for d in self.model.documents):
            self.warn(f"dev workload {dw.name} in {dw.namespace} asks the OpenTelemetry Operator for an agent, but "
                      "the repository has no Instrumentation for its namespace (nor the Operator's CRD): the flow "
                      "namespace has none, so the pod runs uninstrumented and the lane's baggage stops there",
                      dw.baseline.where(), hint="add the baseline's Instrumentation to the repository (devlane copies "
                      f"it into the flow namespace), or name it as {home}/NAME in the annotation",
                      code="namespace-missing")
            return
        self._made.add(("Instrumentation", dw.namespace, LANE_INSTRUMENTATION))
        obj = {"apiVersion": "opentelemetry.io/v1alpha1", "kind": "Instrumentation",
               "metadata": {"name": LANE_INSTRUMENTATION, "namespace": dw.namespace,
                            "labels": flow_labels(dw.version)},
               "spec": {"propagators": list(LANE_PROPAGATORS)}}
        self.objects.append(DevObject(dw.baseline, obj, dw.version))

    @staticmethod
    def _with_lane_propagators(obj: dict | None) -> None:
        """The lane's propagators added to a copied Instrumentation's own (None: copied already)."""
        if obj is None:
            return
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else obj.setdefault("spec", {})
        if isinstance(spec, dict):
            listed = [str(p) for p in spec.get("propagators") or []]
            spec["propagators"] = listed + [p for p in LANE_PROPAGATORS if p not in listed]

    def secrets(self, dw: DevWorkload) -> None:
        home = self.model.namespace_of(dw.baseline)
        for read in config_reads(dw.pod_spec):
            if read.kind == "Secret":
                self._secret(dw, read.name, home)
        for ref in dw.pod_spec.get("imagePullSecrets") or []:
            if isinstance(ref, dict) and ref.get("name"):
                self._secret(dw, str(ref["name"]), home)

    def _secret(self, dw: DevWorkload, name: str, home: str | None) -> None:
        if ("Secret", dw.namespace, name) in self._made or ("Secret", dw.namespace, name) in self.provided:
            return
        maker = self.makers.get((home, name))
        if maker is not None:
            self._copy(maker, dw)
            store = (maker.obj.get("spec") or {}).get("secretStoreRef") or {}
            if store.get("kind", "SecretStore") == "SecretStore":
                doc = self.model.find("SecretStore", home, store.get("name", ""))
                if doc is not None:
                    self._copy(doc, dw)
            self._made.add(("Secret", dw.namespace, name))
            return
        sealed = self.sealed.get((home, name))
        if sealed is not None and str(sealed.annotations.get(SEALED_CLUSTER_WIDE, "")).lower() == "true":
            self._copy(sealed, dw)
            self._made.add(("Secret", dw.namespace, name))
            return
        if self.dev.lane.mirror:
            self._mirror(dw, name, home)
            return
        self._made.add(("Secret", dw.namespace, name))
        why = (f" (SealedSecret {name} is sealed to namespace {home}: the controller cannot decrypt a copy in "
               f"{dw.namespace})") if sealed is not None else ""
        self.warn(f"dev workload {dw.name} in {dw.namespace} reads Secret {name}, which the flow namespace does not "
                  f"have{why}", (sealed or dw.baseline).where(),
                  hint=f"put an ExternalSecret for {name} in the repository (devlane copies it), or set "
                       "secrets.mirror: true in .devlane.yaml (a replicator copies the baseline Secret)",
                  code="namespace-missing")

    def _mirror(self, dw: DevWorkload, name: str, home: str | None) -> None:
        """An empty Secret the replicator fills from the baseline's; the baseline Secret must allow it."""
        self._made.add(("Secret", dw.namespace, name))
        annotation, allow = REPLICATORS[self.dev.lane.mirror or "reflector"]
        source = self.model.find("Secret", home, name)
        meta = {"name": name, "namespace": dw.namespace, "labels": flow_labels(dw.version),
                "annotations": {annotation: f"{home}/{name}"}}
        obj: dict = {"apiVersion": "v1", "kind": "Secret", "metadata": meta}
        if source is not None and source.obj.get("type"):
            obj["type"] = source.obj["type"]
        self.objects.append(DevObject(source or dw.baseline, obj, dw.version))
        if source is not None and str(source.annotations.get(allow[0], "")).lower() != "true":
            self.warn(f"Secret {home}/{name} does not allow {self.dev.lane.mirror} to copy it into {dw.namespace}: "
                      "the mirror stays empty", source.where(),
                      hint=f"annotate the Secret with {allow[0]}: \"true\" and {allow[1]}: a pattern of the flow "
                           f"namespaces (for example \"{home}-.*\")", code="namespace-mirror")


def _per_pod_names(model: Model, dw: DevWorkload, dev: DevSet, diags: Diagnostics, headless: set[str]) -> None:
    """`db-0.db`: a per-pod DNS name of a headless Service. An alias (ExternalName) has no pod records, so
    such a name does not resolve in the flow namespace. `headless`: the headless Services of the pod's
    namespace that have no dev copy."""
    home = model.namespace_of(dw.baseline)
    if not headless:
        return
    texts = [str(e.get("value")) for c in (dw.pod_spec.get("containers") or []) + (dw.pod_spec.get("initContainers")
             or []) for e in c.get("env") or [] if isinstance(e, dict) and isinstance(e.get("value"), str)]
    texts += [str(a) for c in dw.pod_spec.get("containers") or [] for f in ("command", "args")
              for a in c.get(f) or []]
    for read in config_reads(dw.pod_spec):
        doc = model.find(read.kind, home, read.name) if read.kind == "ConfigMap" else None
        texts += [str(v) for v in ((doc.obj.get("data") or {}).values() if doc is not None else [])]
    found = sorted({f"{m.group(1)}.{m.group(3)}" for t in texts for m in _PER_POD.finditer(t)
                    if m.group(3) in headless and m.group(1) != m.group(3)})
    for name in found:
        diags.warn(f"dev workload {dw.name} uses {name}, a per-pod name of the headless Service "
                   f"{name.split('.', 1)[1]}: its alias in {dw.namespace} cannot carry per-pod names, so it does "
                   "not resolve there", dw.baseline.where(),
                   hint=f"use the fully qualified name {name}.{home}.svc.{dev.lane.cluster_domain} to reach the "
                        "baseline, or give the Service a dev version in the flow", code="namespace-headless")


def _gateways(model: Model, dev: DevSet, diags: Diagnostics) -> None:
    """A route in a flow namespace attaches to a Gateway elsewhere only if a listener admits that namespace."""
    for entry in model.entries:
        if entry.kind != "HTTPRoute":
            continue
        ns = model.namespace_of(entry.doc)
        flow_ns = dev.namespaces.get(ns or "")
        for parent in (entry.doc.obj.get("spec") or {}).get("parentRefs") or []:
            if not isinstance(parent, dict) or parent.get("kind", "Gateway") != "Gateway" or flow_ns is None:
                continue
            gw_ns = parent.get("namespace") or ns
            gateway = model.find("Gateway", gw_ns, parent.get("name", ""))
            listeners = ((gateway.obj.get("spec") or {}).get("listeners") or []) if gateway is not None else []
            if gateway is not None and not any(_admits(lst, flow_ns, gw_ns) for lst in listeners):
                diags.warn(f"Gateway {gw_ns}/{gateway.name} does not admit routes from {flow_ns}: the flow's "
                           f"HTTPRoute {entry.doc.name} will not attach", gateway.where(),
                           hint="set allowedRoutes.namespaces.from: Selector (selecting the label devlane.dev/flow "
                                "with operator Exists) or All on its listener", code="namespace-gateway")


def _admits(listener: dict, namespace: str, gateway_ns: str | None) -> bool:
    allowed = ((listener.get("allowedRoutes") or {}).get("namespaces") or {}).get("from", "Same")
    if allowed == "All":
        return True
    if allowed == "Same":
        return namespace == gateway_ns
    return allowed == "Selector"  # the Namespace's labels decide; devlane sets devlane.dev/flow on it


def _blocking_policies(model: Model, dev: DevSet, diags: Diagnostics) -> None:
    """A baseline NetworkPolicy whose ingress admits pods only by `podSelector` (its own namespace) drops the
    calls a lane makes to the baseline through its aliases."""
    copied = {id(dw.baseline) for dw in dev.unique_workloads()}
    reached = LabelIndex()  # the pods the lane reaches through an alias
    for w in model.workloads:
        if id(w.doc) not in copied:
            reached.add(model.namespace_of(w.doc), w.pod_labels, w.pod_labels)
    for doc in model.documents:
        if doc.kind != "NetworkPolicy" or model.namespace_of(doc) not in dev.namespaces:
            continue
        spec = doc.obj.get("spec") if isinstance(doc.obj.get("spec"), dict) else {}
        home, selector = model.namespace_of(doc), spec.get("podSelector")
        if not any(policy_selects(selector, labels) for labels in reached.candidates(home, required_labels(selector))):
            continue  # it guards no pod the lane reaches through an alias
        if "Ingress" not in (spec.get("policyTypes") or ["Ingress"]):
            continue
        rules = [r for r in spec.get("ingress") or [] if isinstance(r, dict)]
        peers = [p for r in rules for p in r.get("from") or [] if isinstance(p, dict)]
        if (rules and all(r.get("from") for r in rules) and not any(
                p.get("namespaceSelector") is not None or p.get("ipBlock") for p in peers)) or spec.get(
                "ingress") == []:
            diags.warn(f"NetworkPolicy {doc.name} in {model.namespace_of(doc)} admits only pods of its own namespace: "
                       f"the flow's pods in {dev.namespaces[model.namespace_of(doc)]} calling the baseline through "
                       "an alias are dropped", doc.where(),
                       hint="add a peer with namespaceSelector matching the label devlane.dev/flow (operator Exists)",
                       code="namespace-policy")


NEEDS = ("namespace-missing", "namespace-mirror", "namespace-rbac", "namespace-headless", "namespace-gateway",
         "namespace-policy")  # the problems that say what a lane still needs


def summary(dev: DevSet, problems: list) -> dict | None:
    """What `plan`, `flow.metadata`, the flow README and `preview` say of the isolation: the flow namespaces,
    the aliases, and what the lane still needs (None in `suffix` isolation, whose output is unchanged)."""
    if not dev.lane.by_namespace:
        return None
    aliases = sorted(f"{o.obj['metadata']['namespace']}/{o.obj['metadata']['name']} -> {o.obj['spec']['externalName']}"
                     for o in dev.objects if ALIAS_OF in (o.obj["metadata"].get("annotations") or {}))
    return {"mode": "namespace", "namespaces": dict(sorted(dev.namespaces.items())), "aliases": aliases,
            "needs": sorted({p.message for p in problems if p.code in NEEDS})}
