"""The references a plugin's object can carry to other objects, by kind: what the output policy follows.

A plugin's object lands beside the baseline, in the same namespace. Whatever one of its fields names, a
controller acts on: an HPA scales its `scaleTargetRef`, a PodDisruptionBudget blocks evictions of the pods its
selector matches, a pod mounts the Secret its volume names and runs as its `serviceAccountName`, a route
attaches to its `parentRefs`. So the output policy (`output_policy`) checks every reference this module finds
and accepts it only when it resolves inside the flow; a kind not modeled here is refused unless the trusted
policy lists it (and then `loose_references` reads it by the shape of its keys).

Each kind's references (`references`) are:
- named (`Reference.name`): the kind, name and namespace (the object's own when unset) of the object named;
- selectors (`Reference.selector`): a label selector over pods or Services of the namespace (`kind`), a plain
  map or a LabelSelector, and whether an empty one selects everything; `namespaces` when it reaches further;
- shared (`Reference.shared` says why): a reference a kind cannot do without to infrastructure every flow
  shares (the Kafka cluster a KafkaTopic lives on, the store an ExternalSecret reads through, the namespace's
  default ServiceAccount). The policy accepts those without following them.

Modeled: the core kinds (pods and their templates everywhere a workload holds one), autoscaling (HPA, VPA,
KEDA ScaledObject and ScaledJob), PodDisruptionBudget, NetworkPolicy, Ingress, EndpointSlice, RBAC (its rules
are `output_policy.rbac_findings`'), Prometheus Operator ServiceMonitor/PodMonitor/PrometheusRule, the Gateway
API, and the kinds devlane's built-in plugins emit (ACK, Config Connector, Azure Service Operator, External
Secrets, Strimzi, NACK, the RabbitMQ topology operator); ACK, Config Connector and Azure Service Operator
objects are read by their families' conventions (`*Ref`/`*Reference` objects, `{name, key}` Secret selectors).
Data-plane names (a topic's, a stream's, a bucket's) are no objects of the namespace and are not followed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ...core.k8s import label_selector_matches, map_matches

Json = dict[str, Any]

# the two forms of a selector: a LabelSelector (matchLabels, matchExpressions), a plain map of labels (a Service's)
LABEL, PLAIN = "label", "plain"


@dataclass(frozen=True)
class Reference:
    """One field of an object that names or selects other objects."""

    path: str  # where, e.g. spec.scaleTargetRef or spec.template.spec.volumes[data].persistentVolumeClaim
    kind: str  # the kind named or selected ("" when the field does not say)
    name: str = ""  # a named reference
    namespace: str | None = None  # a named reference's own namespace, when it gives one
    selector: Any = None  # a selector over `kind` objects (Pod or Service)
    form: str = LABEL  # LABEL: a LabelSelector, PLAIN: a map of labels
    empty_all: bool = True  # an empty selector selects every `kind` object (NetworkPolicy, PDB); else none
    namespaces: tuple[str, ...] | None = None  # a selector reaching these namespaces too ("*": every one)
    shared: str = ""  # why it may name what every flow shares: the policy accepts it unfollowed
    cluster: bool = False  # it names a cluster-scoped object (a PersistentVolume): never the flow's

    @property
    def named(self) -> str:
        return f"{self.kind or 'object'}/{self.name}"


def get_in(value: Any, *keys: str) -> Any:
    """The value at `keys` under `value`, None where a step is no mapping (a malformed object reads as absent)."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


_get, _list = get_in, as_list


def _dict(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _name(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _item(i: int, item: Any) -> str:
    """How a path names a list item: by its name when it has one (`containers[api]`), else by position."""
    name = item.get("name") if isinstance(item, dict) else None
    return f"[{name}]" if isinstance(name, str) and name else f"[{i}]"


def api_group(obj: dict) -> str:
    version = obj.get("apiVersion")
    return version.rpartition("/")[0] if isinstance(version, str) else ""


def named(path: str, kind: str, name: Any, namespace: Any = None, shared: str = "") -> Iterator[Reference]:
    """A named reference, when the field names something (an absent or empty name names nothing)."""
    if isinstance(name, str) and name:
        yield Reference(path, kind, name, namespace if isinstance(namespace, str) and namespace else None,
                        shared=shared)


def selected(path: str, kind: str, selector: Any, form: str = LABEL, empty_all: bool = True,
             namespaces: tuple[str, ...] | None = None) -> Iterator[Reference]:
    """A selector over `kind` objects, when the field holds one (null selects nothing)."""
    if selector is not None:
        yield Reference(path, kind, selector=selector, form=form, empty_all=empty_all, namespaces=namespaces)


def _typed(path: str, ref: Any, default_kind: str) -> Iterator[Reference]:
    """A `{kind, name[, namespace]}` reference (scaleTargetRef, targetRef, parentRefs, dataSource...)."""
    ref = _dict(ref)
    kind = ref.get("kind") if isinstance(ref.get("kind"), str) and ref.get("kind") else default_kind
    yield from named(path, kind, ref.get("name"), ref.get("namespace"))


# -- pods: every place a pod spec names another object ---------------------------------------------------------

SECRET_SOURCE_KEYS = ("secretRef", "nodePublishSecretRef", "nodeExpandSecretRef", "nodeStageSecretRef",
                      "controllerPublishSecretRef", "controllerExpandSecretRef")  # in-tree and CSI volume sources
DEFAULT_ACCOUNT = "the namespace's default ServiceAccount, which a pod that names none runs as"
PULL_SECRET = "an image pull secret: the kubelet pulls the image with it; the pod cannot read it"


def pod_spec_references(spec: Any, at: str) -> Iterator[Reference]:
    """What a pod spec names: its ServiceAccount, volumes (claims, ConfigMaps, Secrets, projected sources, CSI
    and in-tree secret references, ephemeral claims), env and envFrom sources, resource claims, and the pods its
    affinity and topology spread select."""
    spec = _dict(spec)
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    field = "serviceAccountName" if spec.get("serviceAccountName") else "serviceAccount"
    yield from named(f"{at}.{field}", "ServiceAccount", account,
                     shared=DEFAULT_ACCOUNT if account == "default" else "")
    for i, secret in enumerate(_list(spec.get("imagePullSecrets"))):
        yield from named(f"{at}.imagePullSecrets[{i}]", "Secret", _get(secret, "name"), shared=PULL_SECRET)
    for i, vol in enumerate(_list(spec.get("volumes"))):
        yield from _volume_references(vol, f"{at}.volumes{_item(i, vol)}")
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(_list(spec.get(key))):
            yield from _container_references(c, f"{at}.{key}{_item(i, c)}")
    for i, claim in enumerate(_list(spec.get("resourceClaims"))):
        where = f"{at}.resourceClaims{_item(i, claim)}"
        yield from named(f"{where}.resourceClaimName", "ResourceClaim", _get(claim, "resourceClaimName"))
        yield from named(f"{where}.resourceClaimTemplateName", "ResourceClaimTemplate",
                         _get(claim, "resourceClaimTemplateName"))
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = _dict(_get(spec, "affinity", kind))
        terms = [("required", t) for t in _list(rules.get("requiredDuringSchedulingIgnoredDuringExecution"))]
        terms += [("preferred", _get(t, "podAffinityTerm"))
                  for t in _list(rules.get("preferredDuringSchedulingIgnoredDuringExecution"))]
        for i, (how, term) in enumerate(terms):
            yield from _affinity_term(term, f"{at}.affinity.{kind}.{how}[{i}]")
    for i, constraint in enumerate(_list(spec.get("topologySpreadConstraints"))):
        yield from selected(f"{at}.topologySpreadConstraints[{i}].labelSelector", "Pod",
                            _get(constraint, "labelSelector"))


def _affinity_term(term: Any, at: str) -> Iterator[Reference]:
    """A pod affinity term selects pods of its namespace, or of `namespaces` and the namespaces
    `namespaceSelector` matches (an empty one: every namespace)."""
    term = _dict(term)
    listed = tuple(str(n) for n in _list(term.get("namespaces")))
    if isinstance(term.get("namespaceSelector"), dict):
        listed = ("*",)
    yield from selected(f"{at}.labelSelector", "Pod", term.get("labelSelector"), empty_all=True,
                        namespaces=listed or None)


def _volume_references(vol: Any, at: str) -> Iterator[Reference]:
    vol = _dict(vol)
    yield from named(f"{at}.persistentVolumeClaim", "PersistentVolumeClaim", _get(vol, "persistentVolumeClaim",
                                                                                  "claimName"))
    yield from named(f"{at}.configMap", "ConfigMap", _get(vol, "configMap", "name"))
    yield from named(f"{at}.secret", "Secret", _get(vol, "secret", "secretName"))
    for i, source in enumerate(_list(_get(vol, "projected", "sources"))):
        yield from named(f"{at}.projected.sources[{i}].configMap", "ConfigMap", _get(source, "configMap", "name"))
        yield from named(f"{at}.projected.sources[{i}].secret", "Secret", _get(source, "secret", "name"))
    template = _get(vol, "ephemeral", "volumeClaimTemplate", "spec")
    if template is not None:
        yield from claim_spec_references(template, f"{at}.ephemeral.volumeClaimTemplate.spec")
    for source_key, source in vol.items():
        if not isinstance(source, dict) or source_key in ("secret", "configMap", "projected", "ephemeral"):
            continue
        for key in SECRET_SOURCE_KEYS:  # csi, cephfs, rbd, iscsi, flexVolume, scaleIO, storageos...
            yield from named(f"{at}.{source_key}.{key}", "Secret", _get(source, key, "name"))
        yield from named(f"{at}.{source_key}.secretName", "Secret", source.get("secretName"))  # azureFile


def _container_references(c: Any, at: str) -> Iterator[Reference]:
    c = _dict(c)
    for i, env in enumerate(_list(c.get("env"))):
        source = _get(env, "valueFrom")
        where = f"{at}.env{_item(i, env)}.valueFrom"
        yield from named(f"{where}.secretKeyRef", "Secret", _get(source, "secretKeyRef", "name"))
        yield from named(f"{where}.configMapKeyRef", "ConfigMap", _get(source, "configMapKeyRef", "name"))
    for i, env in enumerate(_list(c.get("envFrom"))):
        yield from named(f"{at}.envFrom[{i}].secretRef", "Secret", _get(env, "secretRef", "name"))
        yield from named(f"{at}.envFrom[{i}].configMapRef", "ConfigMap", _get(env, "configMapRef", "name"))


def claim_spec_references(spec: Any, at: str) -> Iterator[Reference]:
    """A claim's data source (a claim or snapshot it is cloned from), the PersistentVolume it binds by name or
    selects by label (the cluster's, never the flow's)."""
    spec = _dict(spec)
    yield from _typed(f"{at}.dataSource", spec.get("dataSource"), "PersistentVolumeClaim")
    yield from _typed(f"{at}.dataSourceRef", spec.get("dataSourceRef"), "PersistentVolumeClaim")
    volume = spec.get("volumeName")
    if isinstance(volume, str) and volume:
        yield Reference(f"{at}.volumeName", "PersistentVolume", volume, cluster=True)
    selector = spec.get("selector")
    if isinstance(selector, dict) and selector:
        yield Reference(f"{at}.selector", "PersistentVolume", "(by label)", cluster=True)


# where each kind keeps its pod spec (and a workload its pod selector)
POD_SPECS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec",), ("", "PodTemplate"): ("template", "spec"),
    ("", "ReplicationController"): ("spec", "template", "spec"),
    **{("apps", k): ("spec", "template", "spec") for k in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")},
    ("batch", "Job"): ("spec", "template", "spec"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template", "spec"),
    ("keda.sh", "ScaledJob"): ("spec", "jobTargetRef", "template", "spec"),
}


def pod_spec_at(obj: dict) -> tuple[str, Any] | None:
    """(path, pod spec) of a modeled kind that holds one, else None."""
    keys = POD_SPECS.get((api_group(obj), str(obj.get("kind"))))
    if keys is None:
        return None
    return ".".join(keys), _get(obj, *keys)


def _pods(obj: dict) -> Iterator[Reference]:
    found = pod_spec_at(obj)
    if found is not None:
        yield from pod_spec_references(found[1], found[0])
    kind = obj.get("kind")
    spec = _dict(obj.get("spec"))
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        yield from selected("spec.selector", "Pod", spec.get("selector"), empty_all=False)
    if kind == "ReplicationController":
        yield from selected("spec.selector", "Pod", spec.get("selector"), PLAIN, empty_all=False)
    if kind == "StatefulSet":
        yield from named("spec.serviceName", "Service", spec.get("serviceName"))
        for i, claim in enumerate(_list(spec.get("volumeClaimTemplates"))):
            at = f"spec.volumeClaimTemplates{_item(i, _get(claim, 'metadata'))}.spec"
            yield from claim_spec_references(_get(claim, "spec"), at)


# -- the other kinds ---------------------------------------------------------------------------------------------

TOKEN_ACCOUNT = "kubernetes.io/service-account.name"


def _core(obj: dict) -> Iterator[Reference]:
    kind, spec = obj.get("kind"), _dict(obj.get("spec"))
    if kind == "Service":
        yield from selected("spec.selector", "Pod", spec.get("selector"), PLAIN, empty_all=False)
    elif kind == "PersistentVolumeClaim":
        yield from claim_spec_references(spec, "spec")
    elif kind == "ServiceAccount":
        for i, secret in enumerate(_list(obj.get("secrets"))):
            yield from named(f"secrets[{i}]", "Secret", _get(secret, "name"))
        for i, secret in enumerate(_list(obj.get("imagePullSecrets"))):
            yield from named(f"imagePullSecrets[{i}]", "Secret", _get(secret, "name"), shared=PULL_SECRET)
    elif kind == "Secret":  # a token Secret: the control plane fills it with a token of the account it names
        yield from named(f"metadata.annotations.{TOKEN_ACCOUNT}", "ServiceAccount",
                         _get(obj, "metadata", "annotations", TOKEN_ACCOUNT))
    elif kind == "Endpoints":
        yield from named("metadata.name", "Service", _get(obj, "metadata", "name"))
        for i, subset in enumerate(_list(obj.get("subsets"))):
            for key in ("addresses", "notReadyAddresses"):
                for j, address in enumerate(_list(_get(subset, key))):
                    yield from _typed(f"subsets[{i}].{key}[{j}].targetRef", _get(address, "targetRef"), "Pod")


def _autoscaling(obj: dict) -> Iterator[Reference]:
    """HPA (`scaleTargetRef`, an Object metric's `describedObject`), VPA (`targetRef`), KEDA ScaledObject
    (`scaleTargetRef`, the HPA it makes, each trigger's `authenticationRef`) and ScaledJob (its triggers)."""
    group, kind, spec = api_group(obj), obj.get("kind"), _dict(obj.get("spec"))
    if kind == "HorizontalPodAutoscaler":
        yield from _typed("spec.scaleTargetRef", spec.get("scaleTargetRef"), "")
        for i, metric in enumerate(_list(spec.get("metrics"))):
            yield from _typed(f"spec.metrics[{i}].object.describedObject", _get(metric, "object", "describedObject"),
                              "")
            yield from _typed(f"spec.metrics[{i}].object.target", _get(metric, "object", "target"), "")  # v2beta1
    elif kind == "VerticalPodAutoscaler":
        yield from _typed("spec.targetRef", spec.get("targetRef"), "")
    elif group == "keda.sh":
        if kind == "ScaledObject":
            yield from _typed("spec.scaleTargetRef", spec.get("scaleTargetRef"), "Deployment")
            yield from named("spec.advanced.horizontalPodAutoscalerConfig.name", "HorizontalPodAutoscaler",
                             _get(spec, "advanced", "horizontalPodAutoscalerConfig", "name"))
        for i, trigger in enumerate(_list(spec.get("triggers"))):
            yield from _typed(f"spec.triggers[{i}].authenticationRef", _get(trigger, "authenticationRef"),
                              "TriggerAuthentication")


def _disruption(obj: dict) -> Iterator[Reference]:
    """A PodDisruptionBudget's selector (policy/v1: an empty one selects every pod of the namespace)."""
    yield from selected("spec.selector", "Pod", _get(obj, "spec", "selector"),
                        empty_all=obj.get("apiVersion") != "policy/v1beta1")


def _networking(obj: dict) -> Iterator[Reference]:
    kind, spec = obj.get("kind"), _dict(obj.get("spec"))
    if kind == "NetworkPolicy":
        yield from selected("spec.podSelector", "Pod", spec.get("podSelector") if "podSelector" in spec else {})
        for direction, peers in (("ingress", "from"), ("egress", "to")):
            for i, rule in enumerate(_list(spec.get(direction))):
                for j, peer in enumerate(_list(_get(rule, peers))):
                    at = f"spec.{direction}[{i}].{peers}[{j}]"
                    reaches = ("*",) if isinstance(_get(peer, "namespaceSelector"), dict) else None
                    if "podSelector" in _dict(peer) or reaches:
                        yield from selected(f"{at}.podSelector", "Pod", _get(peer, "podSelector") or {},
                                            namespaces=reaches)
    elif kind == "Ingress":
        backends = [("spec.defaultBackend", spec.get("defaultBackend"))]
        for i, rule in enumerate(_list(spec.get("rules"))):
            backends += [(f"spec.rules[{i}].http.paths[{j}].backend", _get(p, "backend"))
                         for j, p in enumerate(_list(_get(rule, "http", "paths")))]
        for at, backend in backends:
            yield from named(f"{at}.service", "Service", _get(backend, "service", "name"))
            yield from _typed(f"{at}.resource", _get(backend, "resource"), "")
        for i, tls in enumerate(_list(spec.get("tls"))):
            yield from named(f"spec.tls[{i}].secretName", "Secret", _get(tls, "secretName"))


def _discovery(obj: dict) -> Iterator[Reference]:
    labels = _dict(_get(obj, "metadata", "labels"))
    yield from named("metadata.labels.kubernetes.io/service-name", "Service", labels.get("kubernetes.io/service-name"))
    for i, endpoint in enumerate(_list(obj.get("endpoints"))):
        yield from _typed(f"endpoints[{i}].targetRef", _get(endpoint, "targetRef"), "Pod")


def _rbac(obj: dict) -> Iterator[Reference]:
    """A binding's role and subjects (what they may do is `output_policy.rbac_findings`'); a Role names
    objects only through `resourceNames`, which the RBAC rules check."""
    if obj.get("kind") in ("RoleBinding", "ClusterRoleBinding"):
        yield from _typed("roleRef", obj.get("roleRef"), "Role")
        for i, subject in enumerate(_list(obj.get("subjects"))):
            if _get(subject, "kind") == "ServiceAccount":
                yield from _typed(f"subjects[{i}]", subject, "ServiceAccount")


# a key selector of the Prometheus Operator: {name, key} of a Secret, or of a ConfigMap under `configMap`
def _key_selectors(value: Any, at: str, kind: str = "Secret") -> Iterator[Reference]:
    """Every `{name, key}` selector in `value`: a Secret's, or a ConfigMap's under a `configMap` key."""
    stack = [(value, at, kind)]
    while stack:
        node, where, kind = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("name"), str) and "key" in node and set(node) <= {"name", "key", "optional",
                                                                                     "namespace"}:
                yield from named(where, kind, node["name"], node.get("namespace"))
                continue
            for key, child in reversed(list(node.items())):
                stack.append((child, f"{where}.{key}", "ConfigMap" if key == "configMap" else
                              "Secret" if key in ("secret", "secretKeyRef") else kind))
        elif isinstance(node, list):
            stack += [(child, f"{where}[{i}]", kind) for i, child in reversed(list(enumerate(node)))]


def _monitoring(obj: dict) -> Iterator[Reference]:
    """ServiceMonitor (Services by label), PodMonitor (pods by label), each in the namespaces its
    `namespaceSelector` names (`any: true`: every one), and the Secrets and ConfigMaps its endpoints read
    (credentials, TLS material) through Prometheus. A PrometheusRule names no object."""
    kind, spec = obj.get("kind"), _dict(obj.get("spec"))
    if kind not in ("ServiceMonitor", "PodMonitor"):
        return
    chosen = _dict(spec.get("namespaceSelector"))
    reach = ("*",) if chosen.get("any") is True else tuple(str(n) for n in _list(chosen.get("matchNames"))) or None
    yield from selected("spec.selector", "Service" if kind == "ServiceMonitor" else "Pod", spec.get("selector") or {},
                        namespaces=reach)
    endpoints = "endpoints" if kind == "ServiceMonitor" else "podMetricsEndpoints"
    for i, endpoint in enumerate(_list(spec.get(endpoints))):
        yield from _key_selectors(endpoint, f"spec.{endpoints}[{i}]")


GATEWAY_KEYS = {"parentRefs": "Gateway", "backendRefs": "Service", "backendRef": "Service", "targetRef": "",
                "targetRefs": "", "certificateRefs": "Secret", "caCertificateRefs": "ConfigMap",
                "extensionRef": "", "parametersRef": ""}


Visit = Callable[[str, Any, str], "list[Reference] | None"]


def _walk(root: Any, at: str, visit: Visit) -> Iterator[Reference]:
    """Every mapping entry under `root`, in document order (a loop, whatever the nesting): `visit(key, value,
    path)` gives the references the entry holds (the walk does not go into it), or None to go into it."""
    stack: list[Iterator[tuple[str | None, Any, str]]] = [iter([(None, root, at)])]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        key, node, where = item
        found = visit(key, node, where) if key is not None else None
        if found is not None:
            yield from found
        elif isinstance(node, (dict, list)):
            stack.append(_children(node, where))


def _children(node: dict | list, where: str) -> Iterator[tuple[str | None, Any, str]]:
    if isinstance(node, dict):
        return ((str(k), v, f"{where}.{k}") for k, v in node.items())
    return ((None, v, f"{where}[{i}]") for i, v in enumerate(node))


def _each(path: str, value: Any) -> list[tuple[str, Any]]:
    """(path, item) of a reference field holding one object or a list of them."""
    return [(f"{path}[{i}]", v) for i, v in enumerate(value)] if isinstance(value, list) else [(path, value)]


def _conventional(obj: dict, keys: dict[str, str], at: str = "spec") -> Iterator[Reference]:
    """References found by key anywhere under `at` (a family whose references follow one convention): each
    `keys` key holds a `{kind, name[, namespace]}` object or a list of them (kind defaulting to the key's)."""
    yield from _walk(obj.get(at), at, lambda key, value, where: [
        r for path, item in _each(where, value) for r in _typed(path, item, keys[key])] if key in keys else None)


def _gateway(obj: dict) -> Iterator[Reference]:
    """Gateway API routes (`parentRefs`, `backendRefs`, a mirror's `backendRef`, `extensionRef`), a Gateway's
    certificates and parameters, policies' `targetRef(s)`, ReferenceGrant's `to`."""
    yield from _conventional(obj, GATEWAY_KEYS)
    if obj.get("kind") == "ReferenceGrant":
        for i, to in enumerate(_list(_get(obj, "spec", "to"))):
            yield from named(f"spec.to[{i}]", _name(_get(to, "kind")), _get(to, "name") or "*")


# -- the built-ins' kinds (devlane's own plugins emit them) -------------------------------------------------------

BROKER = "the {} every flow's {} lives on: the operator creates the flow's own in it"
STORE = "the secret store an ExternalSecret reads through (the platform's; what it may read is the store's policy)"


def _aws(obj: dict) -> Iterator[Reference]:
    """ACK: `*Ref`/`*Refs` fields (`{from: {name, namespace}}`), Secret key references (`{name, key}`), and a
    FieldExport's source object and target ConfigMap or Secret."""
    if obj.get("kind") == "FieldExport":
        spec = _dict(obj.get("spec"))
        resource = _dict(_get(spec, "from", "resource"))
        yield from named("spec.from.resource", _name(resource.get("kind")), resource.get("name"))
        target = _dict(spec.get("to"))
        yield from named("spec.to", "Secret" if str(target.get("kind")).lower() == "secret" else "ConfigMap",
                         target.get("name"), target.get("namespace"))
        return
    yield from _by_suffix(obj, lambda value: _get(value, "from"))
    yield from _key_selectors(obj.get("spec"), "spec")


def _by_suffix(obj: dict, target: Callable[[Any], Any], suffixes: tuple[str, ...] = ("Ref", "Refs"),
               skip: tuple[str, ...] = ()) -> Iterator[Reference]:
    """References of a controller family that names them `<thing>Ref` (a list: `<thing>Refs`): the kind is the
    thing's (`dbSubnetGroupRef`: DBSubnetGroup), the name and namespace in `target(value)`."""

    def visit(key: str, value: Any, where: str) -> list[Reference] | None:
        suffix = next((s for s in suffixes if key.endswith(s) and len(key) > len(s)), None)
        if suffix is None or key in skip:
            return None
        kind = key[:1].upper() + key[1: -len(suffix)]
        return [r for path, item in _each(where, value)
                for r in named(path, kind, _dict(target(item)).get("name"), _dict(target(item)).get("namespace"))]

    yield from _walk(obj.get("spec"), "spec", visit)


def _gcp(obj: dict) -> Iterator[Reference]:
    """Config Connector: `*Ref` fields (`{name, namespace}` of an object; `external` names a cloud resource,
    no object), Secret key references (`secretKeyRef`)."""
    yield from _by_suffix(obj, lambda value: value, skip=("secretKeyRef",))
    yield from _key_selectors(obj.get("spec"), "spec")


def _azure(obj: dict) -> Iterator[Reference]:
    """Azure Service Operator: the `owner` (the server a database lives on: shared), `*Reference` fields
    (`{group, kind, name}`; `armId` names a cloud resource), Secret and ConfigMap references (`{name, key}`,
    including the Secrets `operatorSpec` writes)."""
    owner = _dict(_get(obj, "spec", "owner"))
    yield from named("spec.owner", _name(owner.get("kind")), owner.get("name"),
                     shared="the Azure resource the object lives on (its owner), which every flow's shares")

    def visit(key: str, value: Any, where: str) -> list[Reference] | None:
        if key.endswith("Reference") and isinstance(value, dict):
            return list(named(where, _name(value.get("kind")), value.get("name")))
        return [] if where == "spec.owner" else None

    yield from _walk(obj.get("spec"), "spec", visit)
    yield from _key_selectors(obj.get("spec"), "spec")


def _external_secrets(obj: dict) -> Iterator[Reference]:
    """ExternalSecret: the Secret it writes (`target.name`, default its own name), generators it runs,
    ConfigMaps and Secrets its template reads; its stores are shared. A Password generator names nothing."""
    if obj.get("kind") != "ExternalSecret":
        return
    spec = _dict(obj.get("spec"))
    yield from named("spec.secretStoreRef", "SecretStore", _get(spec, "secretStoreRef", "name"), shared=STORE)
    yield from named("spec.target.name", "Secret", _get(spec, "target", "name"))
    for key in ("data", "dataFrom"):
        for i, item in enumerate(_list(spec.get(key))):
            source = _dict(_get(item, "sourceRef"))
            yield from named(f"spec.{key}[{i}].sourceRef.storeRef", "SecretStore", _get(source, "storeRef", "name"),
                             shared=STORE)
            yield from _typed(f"spec.{key}[{i}].sourceRef.generatorRef", source.get("generatorRef"), "")
    for i, source in enumerate(_list(_get(spec, "target", "template", "templateFrom"))):
        yield from named(f"spec.target.template.templateFrom[{i}].configMap", "ConfigMap",
                         _get(source, "configMap", "name"))
        yield from named(f"spec.target.template.templateFrom[{i}].secret", "Secret", _get(source, "secret", "name"))


STRIMZI_CLUSTER = "strimzi.io/cluster"


def _strimzi(obj: dict) -> Iterator[Reference]:
    """KafkaTopic and KafkaUser: the cluster they live on (a label: shared), a user's password Secret."""
    yield from named(f"metadata.labels.{STRIMZI_CLUSTER}", "Kafka",
                     _get(obj, "metadata", "labels", STRIMZI_CLUSTER), shared=BROKER.format("Kafka cluster", "topics"))
    yield from _key_selectors(_get(obj, "spec", "authentication"), "spec.authentication")


def _nats(obj: dict) -> Iterator[Reference]:
    """NACK Stream and Consumer: the NATS Account they live in (shared)."""
    yield from named("spec.account", "Account", _get(obj, "spec", "account"),
                     shared=BROKER.format("NATS account", "streams"))


def _rabbitmq(obj: dict) -> Iterator[Reference]:
    """The RabbitMQ topology operator: the cluster (shared), its connection Secret, a Permission's User."""
    spec = _dict(obj.get("spec"))
    cluster = _dict(spec.get("rabbitmqClusterReference"))
    yield from named("spec.rabbitmqClusterReference", "RabbitmqCluster", cluster.get("name"), cluster.get("namespace"),
                     shared=BROKER.format("RabbitMQ cluster", "vhosts"))
    yield from named("spec.rabbitmqClusterReference.connectionSecret", "Secret",
                     _get(cluster, "connectionSecret", "name"), cluster.get("namespace"))
    yield from named("spec.userReference", "User", _get(spec, "userReference", "name"))


Extractor = Callable[[dict], Iterator[Reference]]
_NONE: Extractor = lambda obj: iter(())  # noqa: E731

# (API group, kind) -> what finds its references; a group ending in "." stands for the group and its subgroups
KINDS: dict[tuple[str, str], Extractor] = {
    **{("", k): _core for k in ("Service", "PersistentVolumeClaim", "ServiceAccount", "Secret", "Endpoints",
                                "ConfigMap", "LimitRange", "ResourceQuota", "Pod", "PodTemplate",
                                "ReplicationController")},
    **{("apps", k): _NONE for k in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")},
    ("batch", "Job"): _NONE, ("batch", "CronJob"): _NONE,
    ("autoscaling", "HorizontalPodAutoscaler"): _autoscaling,
    ("autoscaling.k8s.io", "VerticalPodAutoscaler"): _autoscaling,
    ("keda.sh", "ScaledObject"): _autoscaling, ("keda.sh", "ScaledJob"): _autoscaling,
    ("policy", "PodDisruptionBudget"): _disruption,
    ("networking.k8s.io", "NetworkPolicy"): _networking, ("networking.k8s.io", "Ingress"): _networking,
    ("discovery.k8s.io", "EndpointSlice"): _discovery,
    **{("rbac.authorization.k8s.io", k): _rbac for k in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")},
    **{("monitoring.coreos.com", k): _monitoring for k in ("ServiceMonitor", "PodMonitor", "PrometheusRule")},
    **{("gateway.networking.k8s.io", k): _gateway for k in ("Gateway", "HTTPRoute", "GRPCRoute", "TCPRoute",
                                                            "TLSRoute", "UDPRoute", "ReferenceGrant",
                                                            "BackendTLSPolicy")},
    # the built-ins' (plugins/*/plugin.yaml spec.emits)
    ("s3.services.k8s.aws", "Bucket"): _aws, ("sqs.services.k8s.aws", "Queue"): _aws,
    ("rds.services.k8s.aws", "DBInstance"): _aws, ("rds.services.k8s.aws", "DBCluster"): _aws,
    ("services.k8s.aws", "FieldExport"): _aws,
    **{("sql.cnrm.cloud.google.com", k): _gcp for k in ("SQLInstance", "SQLDatabase", "SQLUser")},
    ("sql.azure.com", "ServersDatabase"): _azure,
    ("external-secrets.io", "ExternalSecret"): _external_secrets,
    ("generators.external-secrets.io", "Password"): _NONE,
    ("kafka.strimzi.io", "KafkaTopic"): _strimzi, ("kafka.strimzi.io", "KafkaUser"): _strimzi,
    ("jetstream.nats.io", "Stream"): _nats, ("jetstream.nats.io", "Consumer"): _nats,
    **{("rabbitmq.com", k): _rabbitmq for k in ("Vhost", "Permission", "Queue", "Exchange", "Binding")},
}


OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
Matcher = Callable[[dict], bool] | bool


def selector_matcher(ref: Reference) -> Matcher | None:
    """How the reference's selector matches labels: a function, True (it selects every object: an empty selector
    where that means all), False (it selects none), or None (no selector devlane can read: the API server would
    refuse it, or read it otherwise)."""
    sel = ref.selector
    if not isinstance(sel, dict) or not all(isinstance(k, str) for k in sel):
        return None
    if ref.form == PLAIN:
        if not all(isinstance(v, (str, int, float, bool)) for v in sel.values()):
            return None
        return (lambda labels: map_matches(sel, labels)) if sel else ref.empty_all
    wanted, exprs = sel.get("matchLabels"), sel.get("matchExpressions")
    if wanted is not None and not isinstance(wanted, dict):
        return None
    if exprs is not None and not (isinstance(exprs, list) and all(_expression(e) for e in exprs)):
        return None
    if not wanted and not exprs:
        return ref.empty_all
    return lambda labels: label_selector_matches(sel, labels)


def _expression(e: Any) -> bool:
    return (isinstance(e, dict) and isinstance(e.get("key"), str) and e.get("operator") in OPERATORS
            and (e.get("values") is None or isinstance(e.get("values"), list)))


def modeled(obj: dict) -> bool:
    """Whether this module knows every reference an object of this kind can carry."""
    return (api_group(obj), str(obj.get("kind"))) in KINDS


def references(obj: dict) -> list[Reference]:
    """Every reference the object carries (its kind modeled; [] otherwise): its owners, its pods', its own."""
    extract = KINDS.get((api_group(obj), str(obj.get("kind"))))
    if extract is None:
        return []
    out = [r for i, owner in enumerate(_list(_get(obj, "metadata", "ownerReferences")))
           for r in _typed(f"metadata.ownerReferences[{i}]", owner, "")]
    out += _pods(obj)
    out += extract(obj)
    return out


# -- an unmodeled kind the trusted policy lets through: references read by the shape of their keys ----------------

SELECTOR_KEYS = ("selector", "podSelector", "labelSelector", "workloadSelector")
TARGET_KEYS = ("target", "targets", "owner", "parent", "parents", "backend", "backends", "service")


STEM_KINDS = {"claim": "PersistentVolumeClaim", "pvc": "PersistentVolumeClaim", "volumeClaim": "PersistentVolumeClaim",
              "persistentVolumeClaim": "PersistentVolumeClaim", "sa": "ServiceAccount"}


def reference_like(key: str) -> bool:
    """`*Ref`, `*Refs`, `*Reference(s)`, `*Name` (serviceName, secretName, claimName), `target`, `owner`..."""
    return key in TARGET_KEYS or (key != "name" and key.endswith(("Ref", "Refs", "Reference", "References", "Name")))


def named_kind(key: str) -> str:
    """The kind a `<thing>Name` key names (serviceName: Service, claimName: PersistentVolumeClaim): a name such as
    `databaseName` or `topicName` names something of the service's own, not an object of the namespace; "" for a
    reference that does not say (`targetRef`, `target`)."""
    if not key.endswith("Name") or key == "Name":
        return ""
    stem = key[: -len("Name")]
    return STEM_KINDS.get(stem) or stem[:1].upper() + stem[1:]


def loose_references(obj: dict) -> list[Reference]:
    """The references of an object whose kind is not modeled, read by key: the string or `{name, namespace}` a
    reference-like key holds (`name` inside a `*Ref`), and every selector. Kind unknown (""); the policy refuses
    those that name a baseline object or select baseline pods."""
    out: list[Reference] = []
    stack: list[tuple[Any, str, str]] = [(v, k, k) for k, v in reversed(list(obj.items()))
                                         if k not in ("apiVersion", "kind", "metadata", "status")]
    while stack:
        node, where, key = stack.pop()
        if isinstance(node, str):
            if reference_like(key):
                out += named(where, named_kind(key), node)
        elif isinstance(node, list):
            stack += [(child, f"{where}[{i}]", key) for i, child in reversed(list(enumerate(node)))]
        elif isinstance(node, dict):
            if key in SELECTOR_KEYS:
                out += selected(where, "Pod", node, LABEL if {"matchLabels", "matchExpressions"} & set(node)
                                else PLAIN)
                continue
            ref = reference_like(key)
            if ref:
                out += named(where, _name(node.get("kind")), node.get("name"), node.get("namespace"))
            for child_key, child in reversed(list(node.items())):
                if not (ref and child_key in ("name", "kind", "namespace", "apiVersion", "group")):
                    stack.append((child, f"{where}.{child_key}", str(child_key)))
    return out
