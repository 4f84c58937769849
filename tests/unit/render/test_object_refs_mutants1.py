"""The reference model (`renderer.render.plugins.object_refs`) where its siblings' tests left a field unchecked (issue
41, surviving mutants): how a path names a list item that has no name, what a name or namespace that is no string
(or is empty) names, the kind each `{kind, name}` field defaults to, the kind a selector or a shared reference
carries, the volume sources read only for what they name, an Ingress's every backend, and a pod affinity's empty
selector (every pod: refused).

Each case checks what `references` returns for one object, or the refusal of one in-process plugin call
(`support.policy_lane`).
"""

from __future__ import annotations

import pytest
from support.policy_lane import OWN, added, flow_deployment, obj

from renderer.render.plugins.object_refs import PLAIN, Reference, api_group, references

P = "spec.template.spec"
SELECTS = "selects the pods of baseline Deployment/db: a plugin's selectors match only the flow's own"


def deployment(pod: dict | None = None) -> dict:
    return flow_deployment(**(pod or {}))


def statefulset(claims: list) -> dict:
    return obj(
        "apps/v1", "StatefulSet", "x-pr-7", spec={"selector": {"matchLabels": OWN}, "volumeClaimTemplates": claims}
    )


def named(thing: dict) -> list[tuple[str, str, str, str | None]]:
    """(path, kind, name, namespace) of each named reference."""
    return [(r.path, r.kind, r.name, r.namespace) for r in references(thing) if r.selector is None]


def secret_volume(**fields) -> dict:
    return {**fields, "secret": {"secretName": "s"}}


# case -> (the object, the path of the one reference it names): items without a (string) name, beside items that are
# no mapping at all, are named by their position
POSITIONS: dict[str, tuple[dict, str]] = {
    "volume": (deployment({"volumes": [secret_volume()]}), f"{P}.volumes[0].secret"),
    "volume of an empty name": (deployment({"volumes": [secret_volume(name="")]}), f"{P}.volumes[0].secret"),
    "volume of a number name": (deployment({"volumes": [secret_volume(name=5)]}), f"{P}.volumes[0].secret"),
    "volume after no mapping": (deployment({"volumes": ["v", secret_volume(name="v")]}), f"{P}.volumes[v].secret"),
    "container": (
        deployment({"containers": ["c", {"envFrom": [{"secretRef": {"name": "s"}}]}]}),
        f"{P}.containers[1].envFrom[0].secretRef",
    ),
    "env": (
        deployment({"containers": [{"name": "c", "env": [{"valueFrom": {"secretKeyRef": {"name": "s"}}}]}]}),
        f"{P}.containers[c].env[0].valueFrom.secretKeyRef",
    ),
    "resource claim": (
        deployment({"resourceClaims": [None, {"resourceClaimName": "s"}]}),
        f"{P}.resourceClaims[1].resourceClaimName",
    ),
    "claim template": (
        statefulset([{"spec": {"dataSource": {"name": "s"}}}]),
        "spec.volumeClaimTemplates[0].spec.dataSource",
    ),
    "claim template of unnamed metadata": (
        statefulset([{"metadata": {}}, {"metadata": {"labels": {}}, "spec": {"dataSourceRef": {"name": "s"}}}]),
        "spec.volumeClaimTemplates[1].spec.dataSourceRef",
    ),
}


@pytest.mark.parametrize("case", sorted(POSITIONS))
def test_a_list_item_without_a_name_is_named_by_its_position(case):
    """A refusal must point at the item: `[None]`, `[]` or `[5]` names none, and an item that is no mapping breaks
    nothing."""
    thing, path = POSITIONS[case]
    assert [r.path for r in references(thing) if r.name] == [path]


@pytest.mark.parametrize(("version", "group"), [
    (None, ""), (1, ""), ("v1", ""), ("apps/v1", "apps"), ("rbac.authorization.k8s.io/v1", "rbac.authorization.k8s.io"),
])  # fmt: skip
def test_the_api_group_of_an_object_without_a_string_api_version_is_the_core_group(version, group):
    assert api_group({"kind": "Pod"} if version is None else {"apiVersion": version, "kind": "Pod"}) == group


NO_NAMES = ["", 42, True, ["db"], {"name": "db"}]
FIELDS = {  # field -> the object whose field holds `value`
    "serviceAccountName": lambda value: deployment({"serviceAccountName": value}),
    "volume secret": lambda value: deployment({"volumes": [{"name": "v", "secret": {"secretName": value}}]}),
    "PVC volumeName": lambda value: obj("v1", "PersistentVolumeClaim", "c-pr-7", spec={"volumeName": value}),
}


@pytest.mark.parametrize("value", NO_NAMES, ids=repr)
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_a_field_holding_no_name_names_nothing(field, value):
    """An empty name or one that is no string names no object (the API server refuses it): nothing to follow, and
    a PVC whose volumeName is empty binds no cluster volume."""
    thing = FIELDS[field](value)
    assert named(thing) == []
    assert added(thing) == []


@pytest.mark.parametrize("namespace", ["", 7, ["prod"], {"name": "prod"}], ids=repr)
def test_a_reference_whose_namespace_is_empty_or_no_string_is_to_the_objects_own_namespace(namespace):
    hpa = obj(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "h-pr-7",
        spec={"scaleTargetRef": {"kind": "Deployment", "name": "x-pr-7", "namespace": namespace}},
    )
    assert references(hpa) == [Reference("spec.scaleTargetRef", "Deployment", "x-pr-7")]
    assert added(hpa) == []


@pytest.mark.parametrize("kind", ["", 5, ["Job"]], ids=repr)
def test_a_typed_reference_whose_kind_is_empty_or_no_string_names_its_fields_default_kind(kind):
    """A ScaledObject's `scaleTargetRef` without a kind scales a Deployment: the baseline one is refused as such."""
    scaled = obj("keda.sh/v1alpha1", "ScaledObject", "s-pr-7", spec={"scaleTargetRef": {"kind": kind, "name": "db"}})
    assert named(scaled) == [("spec.scaleTargetRef", "Deployment", "db", None)]
    assert added(scaled) == [
        "(rule reference): spec.scaleTargetRef names the baseline Deployment/db: a plugin's "
        "objects reference only the flow's own (named <name>-pr-7, in its namespaces)"
    ]


REF = {"name": "x-pr-7"}  # a `{kind, name}` reference that gives no kind
DEFAULT_KINDS: dict[str, tuple[dict, str, str]] = {  # case -> (the object, the field's path, the kind it defaults to)
    "PVC dataSource": (
        obj("v1", "PersistentVolumeClaim", "c-pr-7", spec={"dataSource": REF}),
        "spec.dataSource",
        "PersistentVolumeClaim",
    ),
    "PVC dataSourceRef": (
        obj("v1", "PersistentVolumeClaim", "c-pr-7", spec={"dataSourceRef": REF}),
        "spec.dataSourceRef",
        "PersistentVolumeClaim",
    ),
    "HPA scaleTargetRef": (
        obj("autoscaling/v2", "HorizontalPodAutoscaler", "h-pr-7", spec={"scaleTargetRef": REF}),
        "spec.scaleTargetRef",
        "",
    ),
    "HPA describedObject": (
        obj(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            "h-pr-7",
            spec={"metrics": [{"type": "Object", "object": {"describedObject": REF}}]},
        ),
        "spec.metrics[0].object.describedObject",
        "",
    ),
    "HPA v2beta1 object target": (
        obj(
            "autoscaling/v2beta1",
            "HorizontalPodAutoscaler",
            "h-pr-7",
            spec={"metrics": [{"type": "Object", "object": {"target": REF}}]},
        ),
        "spec.metrics[0].object.target",
        "",
    ),
    "VPA targetRef": (
        obj("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "v-pr-7", spec={"targetRef": REF}),
        "spec.targetRef",
        "",
    ),
}


@pytest.mark.parametrize("case", sorted(DEFAULT_KINDS))
def test_a_typed_reference_without_a_kind_names_its_fields_default_kind(case):
    """A claim's data source is a claim unless it says otherwise; an autoscaler's target does not say ("": the
    policy takes the kind of the object so named). Not shared: the policy follows it."""
    thing, path, kind = DEFAULT_KINDS[case]
    assert references(thing) == [Reference(path, kind, "x-pr-7")]


@pytest.mark.parametrize(("thing", "path"), [
    (deployment({"imagePullSecrets": [{"name": "x"}, {"name": "pull"}]}), f"{P}.imagePullSecrets[1]"),
    (obj("v1", "ServiceAccount", "sa-pr-7", imagePullSecrets=[{"name": "x"}, {"name": "pull"}]), "imagePullSecrets[1]"),
])  # fmt: skip
def test_an_image_pull_secret_is_a_shared_reference_to_the_secret_it_names(thing, path):
    (found,) = [r for r in references(thing) if r.path == path]
    assert (found.kind, found.name, found.namespace, bool(found.shared)) == ("Secret", "pull", None, True)


@pytest.mark.parametrize("kind", ["Service", "ReplicationController"])
def test_a_plain_selector_of_a_service_or_replication_controller_selects_pods(kind):
    thing = obj("v1", kind, "x-pr-7", spec={"selector": OWN})
    assert references(thing) == [Reference("spec.selector", "Pod", selector=OWN, form=PLAIN, empty_all=False)]


def test_a_replication_controllers_selector_and_its_pods_selector_reaching_one_baseline_object_are_one_refusal():
    """One finding per baseline object reached: the RC's selector is over pods as its pods' spread constraint is."""
    rc = obj(
        "v1",
        "ReplicationController",
        "x-pr-7",
        spec={
            "selector": {"app": "db"},
            "template": {
                "metadata": {"labels": OWN},
                "spec": {
                    "containers": [{"name": "c"}],
                    "topologySpreadConstraints": [{"labelSelector": {"matchLabels": {"app": "db"}}}],
                },
            },
        },
    )
    assert [f for f in added(rc) if "selects" in f] == [
        f"(rule reference): {P}.topologySpreadConstraints[0].labelSelector {SELECTS}"
    ]


@pytest.mark.parametrize("kind", ["podAffinity", "podAntiAffinity"])
@pytest.mark.parametrize("how", ["required", "preferred"])
def test_a_pod_affinity_terms_empty_selector_selects_every_pod_and_is_refused(kind, how):
    term = {"labelSelector": {}, "topologyKey": "zone"}
    rules = {
        f"{how}DuringSchedulingIgnoredDuringExecution": [
            term if how == "required" else {"weight": 1, "podAffinityTerm": term}
        ]
    }
    thing = deployment({"affinity": {kind: rules}})
    path = f"{P}.affinity.{kind}.{how}[0].labelSelector"
    assert [r.empty_all for r in references(thing) if r.path == path] == [True]
    assert added(thing) == [f"(rule reference): {path} {SELECTS}"]


STRAY = {"secretName": "creds", "secretRef": {"name": "creds"}}  # no field of these sources: unknown to the API
SOURCES = {  # volume source -> (its fields, the paths of what it names)
    "configMap": ({"name": "cfg-pr-7"}, [f"{P}.volumes[v].configMap"]),
    "projected": ({"sources": [{"secret": {"name": "s-pr-7"}}]}, [f"{P}.volumes[v].projected.sources[0].secret"]),
    "ephemeral": (
        {"volumeClaimTemplate": {"spec": {"dataSource": {"name": "d-pr-7"}}}},
        [f"{P}.volumes[v].ephemeral.volumeClaimTemplate.spec.dataSource"],
    ),
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_config_map_projected_or_ephemeral_volume_is_read_only_for_what_it_names(source):
    """Only in-tree and CSI sources carry a `secretRef`/`secretName`; these are read by their own fields."""
    fields, paths = SOURCES[source]
    thing = deployment({"volumes": [{"name": "v", source: {**fields, **STRAY}}]})
    assert [r.path for r in references(thing) if r.name] == paths


def test_a_network_policys_pod_selector_is_the_pods_it_governs():
    policy = obj("networking.k8s.io/v1", "NetworkPolicy", "n-pr-7", spec={"podSelector": {"matchLabels": OWN}})
    assert references(policy) == [Reference("spec.podSelector", "Pod", selector={"matchLabels": OWN})]


def test_every_backend_of_an_ingress_is_read_its_default_and_each_rules_paths():
    def backend(name: str) -> dict:
        return {"service": {"name": name, "port": {"number": 80}}}

    ingress = obj(
        "networking.k8s.io/v1",
        "Ingress",
        "i-pr-7",
        spec={
            "defaultBackend": {"resource": {"kind": "ConfigMap", "name": "cfg"}},
            "rules": [
                {"http": {"paths": [{"path": "/", "backend": backend("a")}]}},
                {"http": {"paths": [{"path": "/b", "backend": backend("b")}, {"path": "/c", "backend": backend("c")}]}},
            ],
        },
    )
    at = "spec.rules[{}].http.paths[{}].backend.service"
    assert named(ingress) == [
        ("spec.defaultBackend.resource", "ConfigMap", "cfg", None),
        (at.format(0, 0), "Service", "a", None),
        (at.format(1, 0), "Service", "b", None),
        (at.format(1, 1), "Service", "c", None),
    ]
    assert "(rule reference): spec.defaultBackend.resource names the baseline ConfigMap/cfg" in added(ingress)[0]
