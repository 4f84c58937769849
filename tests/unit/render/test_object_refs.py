"""The reference model of the output policy (`renderer.render.plugins.object_refs`) as functions: what each kind's
fields name or select (path, kind, name), what kinds share on purpose, how selectors match (empty, plain, malformed),
the keys an unmodeled kind is read by, that every kind devlane's built-ins emit is modeled, and (a property) that no
object, however malformed, breaks the scanner."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import yamlc

from renderer.render.plugins.object_refs import (
    KINDS,
    PLAIN,
    Reference,
    loose_references,
    modeled,
    pod_spec_at,
    references,
    selector_matcher,
)

ROOT = Path(__file__).resolve().parents[3]


def named(obj: dict) -> list[tuple[str, str, str, str | None]]:
    """(path, kind, name, namespace) of each named reference that is not shared."""
    return [(r.path, r.kind, r.name, r.namespace) for r in references(obj) if r.name and not r.shared]


def selecting(obj: dict) -> list[tuple[str, str, object, tuple | None]]:
    return [(r.path, r.kind, r.selector, r.namespaces) for r in references(obj) if r.selector is not None]


def shared(obj: dict) -> list[tuple[str, str]]:
    return [(r.path, r.name) for r in references(obj) if r.shared]


def test_an_hpa_vpa_and_keda_name_their_targets():
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
        "metrics": [{"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "web"}}}]}}
    assert named(hpa) == [("spec.scaleTargetRef", "Deployment", "worker", None),
                          ("spec.metrics[0].object.describedObject", "Ingress", "web", None)]
    vpa = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
           "spec": {"targetRef": {"kind": "StatefulSet", "name": "db"}}}
    assert named(vpa) == [("spec.targetRef", "StatefulSet", "db", None)]
    scaled = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "spec": {
        "scaleTargetRef": {"name": "worker"}, "advanced": {"horizontalPodAutoscalerConfig": {"name": "h"}},
        "triggers": [{"type": "redis", "authenticationRef": {"name": "auth"}}]}}
    assert named(scaled) == [("spec.scaleTargetRef", "Deployment", "worker", None),
                             ("spec.advanced.horizontalPodAutoscalerConfig.name", "HorizontalPodAutoscaler", "h", None),
                             ("spec.triggers[0].authenticationRef", "TriggerAuthentication", "auth", None)]


def test_a_pod_spec_names_its_account_volumes_env_and_claims_and_selects_with_its_affinity():
    pod = {"serviceAccountName": "runner", "imagePullSecrets": [{"name": "pull"}],
           "volumes": [{"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
                       {"name": "b", "configMap": {"name": "cfg"}}, {"name": "c", "secret": {"secretName": "s"}},
                       {"name": "d", "projected": {"sources": [{"secret": {"name": "p"}},
                                                               {"configMap": {"name": "q"}},
                                                               {"serviceAccountToken": {"path": "t"}}]}},
                       {"name": "e", "csi": {"driver": "x", "nodePublishSecretRef": {"name": "csi"}}},
                       {"name": "f", "azureFile": {"secretName": "az", "shareName": "x"}},
                       {"name": "g", "ephemeral": {"volumeClaimTemplate": {"spec": {
                           "dataSource": {"kind": "VolumeSnapshot", "name": "snap"}}}}}],
           "containers": [{"name": "m", "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s1"}}},
                                                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "c1"}}},
                                                {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                           "envFrom": [{"secretRef": {"name": "s2"}}, {"configMapRef": {"name": "c2"}}]}],
           "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpus"}],
           "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
               {"labelSelector": {"matchLabels": {"app": "x"}}, "namespaces": ["other"]}]}},
           "topologySpreadConstraints": [{"labelSelector": {"matchLabels": {"app": "y"}}}]}
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "spec": {"selector": {"matchLabels": {"app": "z"}}, "template": {"spec": pod}}}
    at = "spec.template.spec"
    assert named(dep) == [
        (f"{at}.serviceAccountName", "ServiceAccount", "runner", None),
        (f"{at}.volumes[a].persistentVolumeClaim", "PersistentVolumeClaim", "data", None),
        (f"{at}.volumes[b].configMap", "ConfigMap", "cfg", None), (f"{at}.volumes[c].secret", "Secret", "s", None),
        (f"{at}.volumes[d].projected.sources[0].secret", "Secret", "p", None),
        (f"{at}.volumes[d].projected.sources[1].configMap", "ConfigMap", "q", None),
        (f"{at}.volumes[e].csi.nodePublishSecretRef", "Secret", "csi", None),
        (f"{at}.volumes[f].azureFile.secretName", "Secret", "az", None),
        (f"{at}.volumes[g].ephemeral.volumeClaimTemplate.spec.dataSource", "VolumeSnapshot", "snap", None),
        (f"{at}.containers[m].env[A].valueFrom.secretKeyRef", "Secret", "s1", None),
        (f"{at}.containers[m].env[B].valueFrom.configMapKeyRef", "ConfigMap", "c1", None),
        (f"{at}.containers[m].envFrom[0].secretRef", "Secret", "s2", None),
        (f"{at}.containers[m].envFrom[1].configMapRef", "ConfigMap", "c2", None),
        (f"{at}.resourceClaims[gpu].resourceClaimTemplateName", "ResourceClaimTemplate", "gpus", None)]
    assert shared(dep) == [(f"{at}.imagePullSecrets[0]", "pull")]
    assert selecting(dep) == [
        (f"{at}.affinity.podAntiAffinity.required[0].labelSelector", "Pod", {"matchLabels": {"app": "x"}}, ("other",)),
        (f"{at}.topologySpreadConstraints[0].labelSelector", "Pod", {"matchLabels": {"app": "y"}}, None),
        ("spec.selector", "Pod", {"matchLabels": {"app": "z"}}, None)]
    default = {"apiVersion": "v1", "kind": "Pod", "spec": {"serviceAccountName": "default"}}
    assert named(default) == [] and shared(default) == [("spec.serviceAccountName", "default")]


@pytest.mark.parametrize(("api", "kind", "where"), [
    ("v1", "Pod", "spec"), ("v1", "PodTemplate", "template.spec"),
    ("v1", "ReplicationController", "spec.template.spec"), ("apps/v1", "Deployment", "spec.template.spec"),
    ("apps/v1", "StatefulSet", "spec.template.spec"), ("apps/v1", "DaemonSet", "spec.template.spec"),
    ("apps/v1", "ReplicaSet", "spec.template.spec"), ("batch/v1", "Job", "spec.template.spec"),
    ("batch/v1", "CronJob", "spec.jobTemplate.spec.template.spec"),
    ("keda.sh/v1alpha1", "ScaledJob", "spec.jobTargetRef.template.spec"),
])  # fmt: skip
def test_each_pod_bearing_kind_keeps_its_pod_spec_where_the_model_reads_it(api, kind, where):
    spec = {"serviceAccountName": "sa"}
    obj: dict = {"apiVersion": api, "kind": kind}
    node = obj
    keys = where.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = spec
    assert pod_spec_at(obj) == (where, spec)
    assert named(obj)[0] == (f"{where}.serviceAccountName", "ServiceAccount", "sa", None)


def test_selectors_of_disruption_monitoring_and_network_policies():
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "spec": {"selector": {}}}
    (ref,) = references(pdb)
    assert (ref.path, ref.kind, ref.empty_all) == ("spec.selector", "Pod", True)
    old = {**pdb, "apiVersion": "policy/v1beta1"}
    assert references(old)[0].empty_all is False  # policy/v1beta1: an empty selector selects nothing
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "spec": {
        "selector": {"matchLabels": {"a": "b"}}, "namespaceSelector": {"any": True},
        "endpoints": [{"bearerTokenSecret": {"name": "t", "key": "k"},
                       "tlsConfig": {"ca": {"configMap": {"name": "ca", "key": "c"}}}}]}}
    assert selecting(monitor) == [("spec.selector", "Service", {"matchLabels": {"a": "b"}}, ("*",))]
    assert named(monitor) == [("spec.endpoints[0].bearerTokenSecret", "Secret", "t", None),
                              ("spec.endpoints[0].tlsConfig.ca.configMap", "ConfigMap", "ca", None)]
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "spec": {
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"a": "b"}}}, {"ipBlock": {"cidr": "10.0.0.0/8"}}]}],
        "egress": [{"to": [{"namespaceSelector": {}}]}]}}
    assert selecting(policy) == [("spec.podSelector", "Pod", {}, None),
                                 ("spec.ingress[0].from[0].podSelector", "Pod", {"matchLabels": {"a": "b"}}, None),
                                 ("spec.egress[0].to[0].podSelector", "Pod", {}, ("*",))]
    service = {"apiVersion": "v1", "kind": "Service", "spec": {"selector": {"app": "a"}}}
    (ref,) = references(service)
    assert (ref.form, ref.empty_all) == (PLAIN, False)


def test_routes_claims_tokens_and_the_built_ins_kinds():
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "spec": {
        "parentRefs": [{"name": "gw", "namespace": "infra"}], "rules": [{
            "backendRefs": [{"name": "svc", "port": 80}],
            "filters": [{"requestMirror": {"backendRef": {"name": "mirror"}}}]}]}}
    assert named(route) == [("spec.parentRefs[0]", "Gateway", "gw", "infra"),
                            ("spec.rules[0].backendRefs[0]", "Service", "svc", None),
                            ("spec.rules[0].filters[0].requestMirror.backendRef", "Service", "mirror", None)]
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "spec": {
        "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "data", "namespace": "prod"}, "volumeName": "pv"}}
    assert named(claim) == [("spec.dataSourceRef", "PersistentVolumeClaim", "data", "prod"),
                            ("spec.volumeName", "PersistentVolume", "pv", None)]
    assert [r.cluster for r in references(claim)] == [False, True]
    token = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
             "metadata": {"annotations": {"kubernetes.io/service-account.name": "admin"}}}
    assert named(token) == [("metadata.annotations.kubernetes.io/service-account.name", "ServiceAccount", "admin",
                             None)]
    export = {"apiVersion": "services.k8s.aws/v1alpha1", "kind": "FieldExport", "spec": {
        "from": {"resource": {"kind": "DBInstance", "name": "db"}}, "to": {"kind": "secret", "name": "out"}}}
    assert named(export) == [("spec.from.resource", "DBInstance", "db", None), ("spec.to", "Secret", "out", None)]
    ack = {"apiVersion": "rds.services.k8s.aws/v1alpha1", "kind": "DBInstance", "spec": {
        "dbSubnetGroupRef": {"from": {"name": "net"}}, "vpcSecurityGroupRefs": [{"from": {"name": "sg"}}],
        "masterUserPassword": {"name": "pw", "key": "password"}}}
    assert named(ack) == [("spec.dbSubnetGroupRef", "DbSubnetGroup", "net", None),
                          ("spec.vpcSecurityGroupRefs[0]", "VpcSecurityGroup", "sg", None),
                          ("spec.masterUserPassword", "Secret", "pw", None)]
    secret = {"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "spec": {
        "secretStoreRef": {"name": "vault"}, "target": {"name": "creds"},
        "dataFrom": [{"sourceRef": {"generatorRef": {"kind": "Password", "name": "pw"}, "storeRef": {"name": "s"}}}]}}
    assert named(secret) == [("spec.target.name", "Secret", "creds", None),
                             ("spec.dataFrom[0].sourceRef.generatorRef", "Password", "pw", None)]
    assert shared(secret) == [("spec.secretStoreRef", "vault"), ("spec.dataFrom[0].sourceRef.storeRef", "s")]
    topic = {"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaTopic",
             "metadata": {"labels": {"strimzi.io/cluster": "events"}}}
    assert named(topic) == [] and shared(topic) == [("metadata.labels.strimzi.io/cluster", "events")]
    owned = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"ownerReferences": [{"kind": "Deployment",
                                                                                        "name": "db"}]}}
    assert named(owned) == [("metadata.ownerReferences[0]", "Deployment", "db", None)]


def test_every_kind_a_built_in_emits_is_modeled():
    """The built-ins are devlane's own: their kinds count as modeled because their references are."""
    kinds = [k for p in sorted((ROOT / "plugins").glob("*/plugin.yaml"))
             for k in yamlc.safe_load(p.read_text())["spec"].get("emits") or []]
    assert kinds
    for entry in kinds:
        group, _, kind = entry.rpartition("/")
        assert modeled({"apiVersion": f"{group}/v1" if group else "v1", "kind": kind}), entry
    assert not modeled({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout"})
    assert not modeled({"apiVersion": "example.com/v1", "kind": "Deployment"})  # the group counts


def ref(selector: object, form: str = "label", empty_all: bool = True) -> Reference:
    return Reference("spec.selector", "Pod", selector=selector, form=form, empty_all=empty_all)


@pytest.mark.parametrize(("selector", "form", "empty_all", "labels", "matches"), [
    ({}, "label", True, {}, True), ({}, "label", False, {"a": "b"}, False), ({}, PLAIN, False, {"a": "b"}, False),
    ({"matchLabels": {"a": "b"}}, "label", True, {"a": "b", "c": "d"}, True),
    ({"matchLabels": {"a": "b"}}, "label", True, {"a": "c"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]}, "label", True, {"a": "y"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, "label", True, {"a": "y"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, "label", True, {"a": "y"}, False),
    ({"a": "b"}, PLAIN, False, {"a": "b"}, True), ({"a": "b"}, PLAIN, False, {"a": "c"}, False),
])  # fmt: skip
def test_selectors_match_as_kubernetes_reads_them(selector, form, empty_all, labels, matches):
    found = selector_matcher(ref(selector, form, empty_all))
    assert (found if isinstance(found, bool) else found(labels)) is matches


@pytest.mark.parametrize("selector", [
    "app=db", ["a"], {"matchLabels": ["a"]}, {"matchExpressions": [{"key": "a", "operator": "Gt"}]},
    {"matchExpressions": [{"key": "a", "operator": "In", "values": "db"}]}, {"matchExpressions": "x"},
])  # fmt: skip
def test_a_selector_devlane_cannot_read_is_said_to_be_unreadable(selector):
    assert selector_matcher(ref(selector)) is None
    assert selector_matcher(ref({"a": ["b"]}, PLAIN)) is None


def test_an_unmodeled_kind_is_read_by_its_reference_like_keys():
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "db"}, "spec": {
        "name": "not-a-reference", "size": "db", "targetRef": {"kind": "Deployment", "name": "db", "namespace": "x"},
        "backendRefs": [{"name": "a"}, {"name": "b"}], "secretName": "s", "target": "t", "claimName": "c",
        "nested": {"configReference": {"name": "cfg"}}, "selector": {"app": "db"},
        "rules": [{"labelSelector": {"matchLabels": {"a": "b"}}}]}}
    refs = loose_references(obj)
    assert [(r.path, r.kind, r.name, r.namespace) for r in refs if r.name] == [
        ("spec.targetRef", "Deployment", "db", "x"), ("spec.backendRefs[0]", "", "a", None),
        ("spec.backendRefs[1]", "", "b", None), ("spec.secretName", "Secret", "s", None),
        ("spec.target", "", "t", None), ("spec.claimName", "PersistentVolumeClaim", "c", None),
        ("spec.nested.configReference", "", "cfg", None)]
    assert [(r.path, r.form) for r in refs if r.selector is not None] == [("spec.selector", PLAIN),
                                                                        ("spec.rules[0].labelSelector", "label")]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["name", "kind", "spec", "template", "selector", "containers", "env",
                                         "valueFrom", "secretKeyRef", "volumes", "scaleTargetRef", "metadata",
                                         "targetRef", "from", "to", "parentRefs", "key", "owner", "rules",
                                         "matchLabels", "matchExpressions", "jobTargetRef", "podSelector", "x"])
                        | st.integers(0, 2), inner, max_size=4), max_leaves=12)


@settings(max_examples=30)
@given(kind=st.sampled_from(sorted(KINDS)), body=st.dictionaries(st.sampled_from(["spec", "metadata", "rules",
                                                                                   "subjects", "secrets"]), JSON))
def test_no_object_however_malformed_breaks_the_scanner(kind, body):
    group, name = kind
    obj = {**body, "apiVersion": f"{group}/v1" if group else "v1", "kind": name}
    for r in references(obj) + loose_references(obj):
        assert (isinstance(r.name, str) and r.name) or r.selector is not None
        if r.selector is not None:
            selector_matcher(r)
