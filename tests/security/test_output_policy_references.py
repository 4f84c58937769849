"""References a plugin's objects carry are followed, or the kind is refused; RBAC never lets a plugin's subjects
start pods or mint credentials (issue 40 point 2).

- The issue's three cases, through a real repository plugin process (`devlane render`, with the sandbox as installed
  and with bwrap hidden): a HorizontalPodAutoscaler scaling the baseline `worker` to 50 replicas, a
  PodDisruptionBudget over baseline pods with `maxUnavailable: 0`, a Role granting `create` on pods bound to the
  plugin's own ServiceAccount. Each render exits 1 naming the plugin, the object, the field and what it reaches,
  and writes nothing.
- The breadth, in-process (a built-in-root plugin: devlane's own reply reader and policy, no process per case), one
  case per entry of this file's own lists, so dropping one from devlane's model fails a test: every reference
  field of every modeled kind refused when it reaches the baseline and accepted when it names the flow's own
  object; every pod-bearing kind; every RBAC resource and verb a Role may not grant; what kinds share on purpose
  accepted unfollowed; a kind devlane does not model refused unless the trusted policy lists it, and then every
  reference-like key naming a baseline object refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import yaml
from support import Harness, app_yaml, plugin_definition, tree, yaml_doc, yamlc

FLOW = "pr-7"
RENDER = ["--flow", FLOW, "--service", "api=api:2"]
NAMESPACE = "shop"


def obj(api: str, kind: str, name: str, **rest) -> dict:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, **rest.pop("meta", {})}, **rest}


# -- the issue's three cases, through a repository plugin's own process ----------------------------------------------

# an exec plugin: adds payload.json's objects ("FLOW" replaced by the flow id) to the flow
EXEC_PLUGIN = r'''
import json, os, sys
doc = json.load(sys.stdin)
flow = doc["functionConfig"]["spec"]["flow"]["id"]
here = os.path.dirname(os.path.abspath(__file__))
doc["items"] += json.loads(open(os.path.join(here, "payload.json")).read().replace("FLOW", flow))
json.dump(doc, sys.stdout)
'''
RBAC = "rbac.authorization.k8s.io/v1"
ISSUE = {
    "hpa-on-baseline-worker": (
        [obj("autoscaling/v2", "HorizontalPodAutoscaler", "burst-FLOW", spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
            "minReplicas": 50, "maxReplicas": 60})],
        ["HorizontalPodAutoscaler/burst-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule "
         "reference): spec.scaleTargetRef names the baseline Deployment/worker"]),
    "pdb-over-baseline-pods": (
        [obj("policy/v1", "PodDisruptionBudget", "pin-FLOW", spec={"maxUnavailable": 0,
                                                                   "selector": {"matchLabels": {"app": "worker"}}})],
        ["PodDisruptionBudget/pin-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule "
         "reference): spec.selector selects the pods of baseline Deployment/worker"]),
    "role-creating-pods": (
        [obj("v1", "ServiceAccount", "runner-FLOW"),
         obj(RBAC, "Role", "runner-FLOW", rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]),
         obj(RBAC, "RoleBinding", "runner-FLOW", roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                          "name": "runner-FLOW"},
             subjects=[{"kind": "ServiceAccount", "name": "runner-FLOW"}])],
        ["Role/runner-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule rbac): rules[0] "
         "grants create on pods, which starts pods that may mount any Secret of the namespace and run as any of its "
         "ServiceAccounts", 'allow: [rbac]']),
}
ISSUE_EMITS = ["ConfigMap", "autoscaling/HorizontalPodAutoscaler", "policy/PodDisruptionBudget", "ServiceAccount",
               "rbac.authorization.k8s.io/Role", "rbac.authorization.k8s.io/RoleBinding"]


def repository_plugin(harness: Harness, payload: list[dict]) -> None:
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "hostile"},
                "spec": {"runtime": {"type": "exec", "command": ["python3", "main.py"]}, "emits": ISSUE_EMITS}}
    harness.plugin("plugins/hostile", EXEC_PLUGIN, manifest, files={"payload.json": json.dumps(payload)})


@pytest.mark.parametrize("case", sorted(ISSUE))
def test_the_issues_cases_are_refused_and_nothing_is_written(harness, sandbox, case):
    payload, expected = ISSUE[case]
    harness.app("api", "hostile")
    harness.app("worker")
    harness.plugin_definition({"name": "./plugins/hostile", "type": "stateful", "servicename": "hostile"})
    harness.config({"namespace": NAMESPACE})
    out = harness.tmp / "out"
    repository_plugin(harness, [obj("v1", "ConfigMap", "harmless-FLOW", data={"a": "b"})])
    done = harness.cli("render", *RENDER, "--out", out)
    assert done.returncode == 0, done.stderr
    before = tree(out)
    repository_plugin(harness, payload)
    done = harness.cli("render", *RENDER, "--out", out)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    for text in expected:
        assert text in done.stderr, done.stderr
    assert tree(out) == before  # nothing written: the previous render stays as it was


# -- the breadth, in-process ---------------------------------------------------------------------------------------

# a built-in-root plugin (devlane runs it in-process): applies its `payload` argument ("FLOW": flow_uuid, seed-pr-7):
# adds `add`, merges `pod` into the dev pod spec
KARDINAL = '''
import json

def create_flow(service_specs, pod_specs, flow_uuid, payload):
    payload = json.loads(payload.replace("FLOW", flow_uuid))
    for spec in pod_specs:
        spec.update(payload.get("pod", {}))
    return {"pod_specs": pod_specs, "config_map": {}, "resources": payload.get("add", [])}
'''
# the baseline beside the flow, by kind: what a baseline reference names
BASE = {"Secret": "creds", "ConfigMap": "cfg", "Deployment": "db", "PersistentVolumeClaim": "data",
        "ServiceAccount": "api-sa", "Service": "db", "Gateway": "web", "HorizontalPodAutoscaler": "db",
        "TriggerAuthentication": "auth"}
BASELINE = [
    obj("v1", "Secret", "creds", type="Opaque"), obj("v1", "ConfigMap", "cfg", data={"a": "b"}),
    obj("v1", "PersistentVolumeClaim", "data", spec={"accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": "1Gi"}}}),
    obj("v1", "ServiceAccount", "api-sa"),
    obj("v1", "Service", "metrics", meta={"labels": {"monitor": "db"}}, spec={"selector": {"app": "db"},
                                                                            "ports": [{"port": 9090}]}),
    obj("gateway.networking.k8s.io/v1", "Gateway", "web", spec={"gatewayClassName": "istio", "listeners": [
        {"name": "http", "port": 80, "protocol": "HTTP"}]}),
    obj("autoscaling/v2", "HorizontalPodAutoscaler", "db", spec={
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "db"}, "maxReplicas": 3}),
    obj("keda.sh/v1alpha1", "TriggerAuthentication", "auth", spec={"secretTargetRef": [
        {"parameter": "password", "name": "creds", "key": "password"}]}),
]
LANE = {"app": "x-FLOW"}  # the labels of the case's own pods


def n(kind: str, base: bool, name: str | None = None) -> str:
    """The name a reference gives: the baseline's object of `kind`, or one of the flow's."""
    return (name or BASE[kind]) if base else f"{kind.lower()}-FLOW"


def sel(base: bool, key: str = "app") -> dict:
    return {"matchLabels": {key: "db"} if base else {key: "lane-FLOW"}}


def container(**rest) -> dict:
    return {"name": "c", "image": "c:1", **rest}


def secret_env(base: bool) -> dict:
    return {"env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": n("Secret", base), "key": "k"}}}]}


def deployment(pod: dict | None = None, kind: str = "Deployment", **c) -> dict:
    """A workload of the flow whose pod spec carries the case's field."""
    spec = {"containers": [container(**c)], **(pod or {})}
    return obj("apps/v1", kind, "x-FLOW", spec={"selector": {"matchLabels": LANE}, "template": {
        "metadata": {"labels": LANE}, "spec": spec}})


def volume(source: dict) -> dict:
    return {"volumes": [{"name": "v", **source}]}


def claim_spec(**rest) -> dict:
    return {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **rest}


def source(kind: str, base: bool, name: str | None = None) -> dict:
    return {"kind": kind, "name": n(kind, base, name)}


JOB_POD = {"restartPolicy": "Never"}
P = "spec.template.spec"
# where each pod-bearing kind keeps its pod spec, and the object (its pod spec reading a Secret)
POD_KINDS: dict[str, tuple[str, str, Callable[[bool], dict]]] = {
    "Pod": ("v1/Pod", "spec", lambda b: obj("v1", "Pod", "x-FLOW", meta={"labels": LANE},
                                             spec={"containers": [container(**secret_env(b))]})),
    "PodTemplate": ("v1/PodTemplate", "template.spec", lambda b: obj("v1", "PodTemplate", "x-FLOW", template={
        "metadata": {"labels": LANE}, "spec": {"containers": [container(**secret_env(b))]}})),
    "ReplicationController": ("v1/ReplicationController", P, lambda b: obj(
        "v1", "ReplicationController", "x-FLOW", spec={"selector": LANE, "template": {
            "metadata": {"labels": LANE}, "spec": {"containers": [container(**secret_env(b))]}}})),
    **{k: (f"apps/v1/{k}", P, lambda b, k=k: deployment(kind=k, **secret_env(b)))
       for k in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")},
    "Job": ("batch/v1/Job", P, lambda b: obj("batch/v1", "Job", "x-FLOW", spec={"template": {
        "spec": {**JOB_POD, "containers": [container(**secret_env(b))]}}})),
    "CronJob": ("batch/v1/CronJob", "spec.jobTemplate.spec.template.spec", lambda b: obj(
        "batch/v1", "CronJob", "x-FLOW", spec={"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {
            "spec": {**JOB_POD, "containers": [container(**secret_env(b))]}}}}})),
    "ScaledJob": ("keda.sh/v1alpha1/ScaledJob", "spec.jobTargetRef.template.spec", lambda b: obj(
        "keda.sh/v1alpha1", "ScaledJob", "x-FLOW", spec={"jobTargetRef": {"template": {"spec": {
            **JOB_POD, "containers": [container(**secret_env(b))]}}}, "triggers": []})),
}

# case -> (the object, given whether it reaches the baseline; what its refusal says)
CASES: dict[str, tuple[Callable[[bool], dict], list[str]]] = {
    # a pod's references (in a Deployment)
    "pod serviceAccountName": (lambda b: deployment({"serviceAccountName": n("ServiceAccount", b)}),
                               [f"{P}.serviceAccountName names the baseline ServiceAccount/api-sa"]),
    "pod volume configMap": (lambda b: deployment(volume({"configMap": {"name": n("ConfigMap", b)}})),
                             [f"{P}.volumes[v].configMap names the baseline ConfigMap/cfg"]),
    "pod volume secret": (lambda b: deployment(volume({"secret": {"secretName": n("Secret", b)}})),
                          [f"{P}.volumes[v].secret names the baseline Secret/creds"]),
    "pod volume projected secret": (
        lambda b: deployment(volume({"projected": {"sources": [{"secret": {"name": n("Secret", b)}}]}})),
        [f"{P}.volumes[v].projected.sources[0].secret names the baseline Secret/creds"]),
    "pod volume projected configMap": (
        lambda b: deployment(volume({"projected": {"sources": [{"configMap": {"name": n("ConfigMap", b)}}]}})),
        [f"{P}.volumes[v].projected.sources[0].configMap names the baseline ConfigMap/cfg"]),
    "pod volume csi secret": (
        lambda b: deployment(volume({"csi": {"driver": "secrets-store.csi.k8s.io",
                                             "nodePublishSecretRef": {"name": n("Secret", b)}}})),
        [f"{P}.volumes[v].csi.nodePublishSecretRef names the baseline Secret/creds"]),
    "pod volume ephemeral claim": (
        lambda b: deployment(volume({"ephemeral": {"volumeClaimTemplate": {"spec": claim_spec(
            dataSource=source("PersistentVolumeClaim", b))}}})),
        [f"{P}.volumes[v].ephemeral.volumeClaimTemplate.spec.dataSource names the baseline "
         "PersistentVolumeClaim/data"]),
    "pod volume claim": (lambda b: deployment(volume({"persistentVolumeClaim": {
        "claimName": n("PersistentVolumeClaim", b)}})), ["(rule isolation): its pods mount the baseline "
                                                         "PersistentVolumeClaim data"]),
    "pod env secretKeyRef": (lambda b: deployment(**secret_env(b)),
                             [f"{P}.containers[c].env[E].valueFrom.secretKeyRef names the baseline Secret/creds"]),
    "pod env configMapKeyRef": (
        lambda b: deployment(env=[{"name": "E", "valueFrom": {"configMapKeyRef": {"name": n("ConfigMap", b),
                                                                                  "key": "a"}}}]),
        [f"{P}.containers[c].env[E].valueFrom.configMapKeyRef names the baseline ConfigMap/cfg"]),
    "pod envFrom secretRef": (lambda b: deployment(envFrom=[{"secretRef": {"name": n("Secret", b)}}]),
                              [f"{P}.containers[c].envFrom[0].secretRef names the baseline Secret/creds"]),
    "pod envFrom configMapRef": (lambda b: deployment(envFrom=[{"configMapRef": {"name": n("ConfigMap", b)}}]),
                                 [f"{P}.containers[c].envFrom[0].configMapRef names the baseline ConfigMap/cfg"]),
    "pod init container env": (
        lambda b: deployment({"initContainers": [{"name": "i", "image": "i:1", **secret_env(b)}]}),
        [f"{P}.initContainers[i].env[E].valueFrom.secretKeyRef names the baseline Secret/creds"]),
    "pod resourceClaims": (lambda b: deployment({"resourceClaims": [{"name": "gpu", "resourceClaimName": n(
        "ResourceClaim", b, "gpu")}]}), [f"{P}.resourceClaims[gpu].resourceClaimName names ResourceClaim/gpu, which "
                                         "is not an object of the flow"]),
    "pod affinity": (
        lambda b: deployment({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": sel(b), "topologyKey": "kubernetes.io/hostname"}]}}}),
        [f"{P}.affinity.podAffinity.required[0].labelSelector selects the pods of baseline Deployment/db"]),
    "pod anti-affinity across namespaces": (
        lambda b: deployment({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"labelSelector": sel(False), "topologyKey": "zone",
                                              **({"namespaceSelector": {}} if b else {})}}]}}}),
        [f"{P}.affinity.podAntiAffinity.preferred[0].labelSelector selects pods of every namespace"]),
    "pod topologySpreadConstraints": (
        lambda b: deployment({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                             "whenUnsatisfiable": "DoNotSchedule",
                                                             "labelSelector": sel(b)}]}),
        [f"{P}.topologySpreadConstraints[0].labelSelector selects the pods of baseline Deployment/db"]),
    # workloads
    "Deployment selector": (
        lambda b: obj("apps/v1", "Deployment", "x-FLOW", spec={"selector": sel(b), "template": {
            "metadata": {"labels": {**sel(b)["matchLabels"], "x": "FLOW"}}, "spec": {"containers": [container()]}}}),
        ["spec.selector selects the pods of baseline Deployment/db"]),
    "ReplicationController selector": (
        lambda b: obj("v1", "ReplicationController", "x-FLOW", spec={"selector": sel(b)["matchLabels"], "template": {
            "metadata": {"labels": sel(b)["matchLabels"]}, "spec": {"containers": [container()]}}}),
        ["spec.selector selects the pods of baseline Deployment/db"]),
    "StatefulSet serviceName": (
        lambda b: obj("apps/v1", "StatefulSet", "x-FLOW", spec={"serviceName": n("Service", b), "selector": {
            "matchLabels": LANE}, "template": {"metadata": {"labels": LANE}, "spec": {"containers": [container()]}}}),
        ["spec.serviceName names the baseline Service/db"]),
    "StatefulSet claim template": (
        lambda b: obj("apps/v1", "StatefulSet", "x-FLOW", spec={
            "selector": {"matchLabels": LANE}, "template": {"metadata": {"labels": LANE}, "spec": {
                "containers": [container()]}},
            "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": claim_spec(
                dataSource=source("PersistentVolumeClaim", b))}]}),
        ["spec.volumeClaimTemplates[d].spec.dataSource names the baseline PersistentVolumeClaim/data"]),
    # claims, Services, Secrets, ServiceAccounts, endpoints
    "PersistentVolumeClaim dataSource": (
        lambda b: obj("v1", "PersistentVolumeClaim", "x-FLOW", spec=claim_spec(
            dataSource=source("PersistentVolumeClaim", b))),
        ["spec.dataSource names the baseline PersistentVolumeClaim/data"]),
    "PersistentVolumeClaim dataSourceRef": (
        lambda b: obj("v1", "PersistentVolumeClaim", "x-FLOW", spec=claim_spec(
            dataSourceRef=source("PersistentVolumeClaim", b))),
        ["spec.dataSourceRef names the baseline PersistentVolumeClaim/data"]),
    "PersistentVolumeClaim volumeName": (
        lambda b: obj("v1", "PersistentVolumeClaim", "x-FLOW", spec=claim_spec(**({"volumeName": "pv-1"} if b
                                                                                 else {}))),
        ["spec.volumeName names PersistentVolume/pv-1, which is the cluster's"]),
    "PersistentVolumeClaim selector": (
        lambda b: obj("v1", "PersistentVolumeClaim", "x-FLOW", spec=claim_spec(**({"selector": sel(True)} if b
                                                                                 else {}))),
        ["spec.selector names PersistentVolume/(by label), which is the cluster's"]),
    "Service selector": (
        lambda b: obj("v1", "Service", "x-FLOW", spec={"selector": sel(b)["matchLabels"], "ports": [{"port": 80}]}),
        ["(rule isolation): its selector matches the pods of baseline Deployment/db"]),
    "token Secret": (
        lambda b: obj("v1", "Secret", "x-FLOW", type="kubernetes.io/service-account-token", meta={
            "annotations": {"kubernetes.io/service-account.name": n("ServiceAccount", b)}}),
        ["metadata.annotations.kubernetes.io/service-account.name names the baseline ServiceAccount/api-sa"]),
    "ServiceAccount secrets": (lambda b: obj("v1", "ServiceAccount", "x-FLOW", secrets=[{"name": n("Secret", b)}]),
                               ["secrets[0] names the baseline Secret/creds"]),
    "Endpoints targetRef": (
        lambda b: obj("v1", "Endpoints", "svc-FLOW", subsets=[{"addresses": [
            {"ip": "10.0.0.1", "targetRef": {"kind": "Pod", "name": "db-0" if b else "pod-FLOW"}}]}]),
        ["subsets[0].addresses[0].targetRef names Pod/db-0, which is not an object of the flow"]),
    "EndpointSlice service": (
        lambda b: obj("discovery.k8s.io/v1", "EndpointSlice", "x-FLOW", addressType="IPv4", meta={"labels": {
            "kubernetes.io/service-name": n("Service", b)}}, endpoints=[{"addresses": ["10.0.0.1"]}]),
        ["(rule isolation): it sends traffic or endpoints to the baseline Service db"]),
    "EndpointSlice targetRef": (
        lambda b: obj("discovery.k8s.io/v1", "EndpointSlice", "x-FLOW", addressType="IPv4", meta={"labels": {
            "kubernetes.io/service-name": "svc-FLOW"}}, endpoints=[{"addresses": ["10.0.0.1"], "targetRef": {
                "kind": "Pod", "name": "db-0" if b else "pod-FLOW"}}]),
        ["endpoints[0].targetRef names Pod/db-0, which is not an object of the flow"]),
    # autoscaling
    "HPA scaleTargetRef": (
        lambda b: obj("autoscaling/v2", "HorizontalPodAutoscaler", "x-FLOW", spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", **source("Deployment", b)}, "maxReplicas": 3}),
        ["spec.scaleTargetRef names the baseline Deployment/db"]),
    "HPA v1 scaleTargetRef": (
        lambda b: obj("autoscaling/v1", "HorizontalPodAutoscaler", "x-FLOW", spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", **source("Deployment", b)}, "maxReplicas": 3}),
        ["spec.scaleTargetRef names the baseline Deployment/db"]),
    "HPA object metric": (
        lambda b: obj("autoscaling/v2", "HorizontalPodAutoscaler", "x-FLOW", spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api-pr-7"}, "maxReplicas": 3,
            "metrics": [{"type": "Object", "object": {"describedObject": source("Service", b), "metric": {
                "name": "rps"}, "target": {"type": "Value", "value": "10"}}}]}),
        ["spec.metrics[0].object.describedObject names the baseline Service/db"]),
    "VPA targetRef": (
        lambda b: obj("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "x-FLOW", spec={
            "targetRef": {"apiVersion": "apps/v1", **source("Deployment", b)}}),
        ["spec.targetRef names the baseline Deployment/db"]),
    "ScaledObject scaleTargetRef": (
        lambda b: obj("keda.sh/v1alpha1", "ScaledObject", "x-FLOW", spec={
            "scaleTargetRef": {"name": n("Deployment", b)}, "triggers": []}),  # kind: Deployment by default
        ["spec.scaleTargetRef names the baseline Deployment/db"]),
    "ScaledObject HPA name": (
        lambda b: obj("keda.sh/v1alpha1", "ScaledObject", "x-FLOW", spec={
            "scaleTargetRef": {"name": "api-pr-7"}, "triggers": [], "advanced": {
                "horizontalPodAutoscalerConfig": {"name": n("HorizontalPodAutoscaler", b)}}}),
        ["spec.advanced.horizontalPodAutoscalerConfig.name names the baseline HorizontalPodAutoscaler/db"]),
    "ScaledObject authenticationRef": (
        lambda b: obj("keda.sh/v1alpha1", "ScaledObject", "x-FLOW", spec={
            "scaleTargetRef": {"name": "api-pr-7"}, "triggers": [{"type": "redis", "metadata": {"listName": "q"},
                                                                  "authenticationRef": {"name": n(
                                                                      "TriggerAuthentication", b)}}]}),
        ["spec.triggers[0].authenticationRef names the baseline TriggerAuthentication/auth"]),
    "ScaledJob authenticationRef": (
        lambda b: obj("keda.sh/v1alpha1", "ScaledJob", "x-FLOW", spec={
            "jobTargetRef": {"template": {"spec": {**JOB_POD, "containers": [container()]}}},
            "triggers": [{"type": "redis", "metadata": {"listName": "q"}, "authenticationRef": {"name": n(
                "TriggerAuthentication", b)}}]}),
        ["spec.triggers[0].authenticationRef names the baseline TriggerAuthentication/auth"]),
    # disruption, monitoring, network policy
    "PodDisruptionBudget selector": (
        lambda b: obj("policy/v1", "PodDisruptionBudget", "x-FLOW", spec={"maxUnavailable": 0, "selector": sel(b)}),
        ["spec.selector selects the pods of baseline Deployment/db"]),
    "PodDisruptionBudget empty selector": (
        lambda b: obj("policy/v1", "PodDisruptionBudget", "x-FLOW", spec={"minAvailable": 1,
                                                                           "selector": {} if b else sel(False)}),
        ["spec.selector selects the pods of baseline"]),
    "ServiceMonitor selector": (
        lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "x-FLOW", spec={
            "selector": sel(b, "monitor"), "endpoints": [{"port": "http"}]}),
        ["spec.selector selects the Services of baseline Service/metrics"]),
    "ServiceMonitor namespaceSelector": (
        lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "x-FLOW", spec={
            "selector": sel(False, "monitor"), "namespaceSelector": {"any": True} if b else {"matchNames": ["shop"]},
            "endpoints": [{"port": "http"}]}),
        ["spec.selector selects Services of every namespace"]),
    "ServiceMonitor endpoint secret": (
        lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "x-FLOW", spec={
            "selector": sel(False, "monitor"), "endpoints": [{"port": "http", "bearerTokenSecret": {
                "name": n("Secret", b), "key": "token"}}]}),
        ["spec.endpoints[0].bearerTokenSecret names the baseline Secret/creds"]),
    "ServiceMonitor endpoint configMap": (
        lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "x-FLOW", spec={
            "selector": sel(False, "monitor"), "endpoints": [{"port": "http", "tlsConfig": {"ca": {"configMap": {
                "name": n("ConfigMap", b), "key": "ca"}}}}]}),
        ["spec.endpoints[0].tlsConfig.ca.configMap names the baseline ConfigMap/cfg"]),
    "PodMonitor selector": (
        lambda b: obj("monitoring.coreos.com/v1", "PodMonitor", "x-FLOW", spec={
            "selector": sel(b), "podMetricsEndpoints": [{"port": "m"}]}),
        ["spec.selector selects the pods of baseline Deployment/db"]),
    "PodMonitor endpoint secret": (
        lambda b: obj("monitoring.coreos.com/v1", "PodMonitor", "x-FLOW", spec={
            "selector": sel(False), "podMetricsEndpoints": [{"port": "m", "basicAuth": {
                "username": {"name": n("Secret", b), "key": "u"}}}]}),
        ["spec.podMetricsEndpoints[0].basicAuth.username names the baseline Secret/creds"]),
    "NetworkPolicy podSelector": (
        lambda b: obj("networking.k8s.io/v1", "NetworkPolicy", "x-FLOW", spec={"podSelector": sel(b)}),
        ["(rule isolation): its podSelector selects the pods of baseline Deployment/db"]),
    "NetworkPolicy peer podSelector": (
        lambda b: obj("networking.k8s.io/v1", "NetworkPolicy", "x-FLOW", spec={
            "podSelector": sel(False), "ingress": [{"from": [{"podSelector": sel(b)}]}]}),
        ["spec.ingress[0].from[0].podSelector selects the pods of baseline Deployment/db"]),
    "NetworkPolicy peer namespaceSelector": (
        lambda b: obj("networking.k8s.io/v1", "NetworkPolicy", "x-FLOW", spec={
            "podSelector": sel(False), "egress": [{"to": [{"podSelector": sel(False),
                                                           **({"namespaceSelector": {}} if b else {})}]}]}),
        ["spec.egress[0].to[0].podSelector selects pods of every namespace"]),
    # routes
    "Ingress backend": (
        lambda b: obj("networking.k8s.io/v1", "Ingress", "x-FLOW", spec={"defaultBackend": {"service": {
            "name": n("Service", b), "port": {"number": 80}}}}),
        ["(rule isolation): it sends traffic or endpoints to the baseline Service db"]),
    "Ingress resource backend": (
        lambda b: obj("networking.k8s.io/v1", "Ingress", "x-FLOW", spec={"defaultBackend": {"resource": {
            "apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "assets" if b else "bucket-FLOW"}}}),
        ["spec.defaultBackend.resource names StorageBucket/assets, which is not an object of the flow"]),
    "Ingress tls": (
        lambda b: obj("networking.k8s.io/v1", "Ingress", "x-FLOW", spec={"tls": [{"hosts": ["x.example.com"],
                                                                                   "secretName": n("Secret", b)}]}),
        ["spec.tls[0].secretName names the baseline Secret/creds"]),
    "HTTPRoute parentRefs": (
        lambda b: obj("gateway.networking.k8s.io/v1", "HTTPRoute", "x-FLOW", spec={
            "parentRefs": [{"name": n("Gateway", b)}]}),
        ["spec.parentRefs[0] names the baseline Gateway/web"]),
    "HTTPRoute backendRefs": (
        lambda b: obj("gateway.networking.k8s.io/v1", "HTTPRoute", "x-FLOW", spec={
            "rules": [{"backendRefs": [{"name": n("Service", b), "port": 80}]}]}),
        ["(rule isolation): it sends traffic or endpoints to the baseline Service db"]),
    "HTTPRoute mirror": (
        lambda b: obj("gateway.networking.k8s.io/v1", "HTTPRoute", "x-FLOW", spec={"rules": [{"filters": [{
            "type": "RequestMirror", "requestMirror": {"backendRef": {"name": n("Service", b), "port": 80}}}]}]}),
        ["spec.rules[0].filters[0].requestMirror.backendRef names the baseline Service/db"]),
    "Gateway certificateRefs": (
        lambda b: obj("gateway.networking.k8s.io/v1", "Gateway", "x-FLOW", spec={
            "gatewayClassName": "istio", "listeners": [{"name": "https", "port": 443, "protocol": "HTTPS", "tls": {
                "certificateRefs": [{"name": n("Secret", b)}]}}]}),
        ["spec.listeners[0].tls.certificateRefs[0] names the baseline Secret/creds"]),
    "BackendTLSPolicy targetRefs": (
        lambda b: obj("gateway.networking.k8s.io/v1", "BackendTLSPolicy", "x-FLOW", spec={"targetRefs": [
            {"group": "", "kind": "Service", "name": n("Service", b)}], "validation": {
                "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": n("ConfigMap", False)}],
                "hostname": "x.example.com"}}),
        ["spec.targetRefs[0] names the baseline Service/db"]),
    "ReferenceGrant to": (
        lambda b: obj("gateway.networking.k8s.io/v1beta1", "ReferenceGrant", "x-FLOW", spec={
            "from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "other"}],
            "to": [{"group": "", "kind": "Secret", "name": n("Secret", b)}]}),
        ["spec.to[0] names the baseline Secret/creds"]),
    # the built-ins' kinds, from a plugin that is no built-in
    "ExternalSecret target": (
        lambda b: obj("external-secrets.io/v1", "ExternalSecret", "x-FLOW", spec={
            "secretStoreRef": {"kind": "ClusterSecretStore", "name": "vault"},
            "target": {"name": n("Secret", b), "creationPolicy": "Merge"}}),
        ["spec.target.name names the baseline Secret/creds"]),
    "ExternalSecret templateFrom": (
        lambda b: obj("external-secrets.io/v1", "ExternalSecret", "x-FLOW", spec={
            "secretStoreRef": {"kind": "ClusterSecretStore", "name": "vault"},
            "target": {"template": {"templateFrom": [{"configMap": {"name": n("ConfigMap", b), "items": [
                {"key": "a"}]}}]}}}),
        ["spec.target.template.templateFrom[0].configMap names the baseline ConfigMap/cfg"]),
    "ExternalSecret generatorRef": (
        lambda b: obj("external-secrets.io/v1", "ExternalSecret", "x-FLOW", spec={"dataFrom": [{"sourceRef": {
            "generatorRef": {"apiVersion": "generators.external-secrets.io/v1alpha1", "kind": "Password",
                             "name": "pw" if b else "password-FLOW"}}}]}),
        ["spec.dataFrom[0].sourceRef.generatorRef names Password/pw, which is not an object of the flow"]),
    "FieldExport to": (
        lambda b: obj("services.k8s.aws/v1alpha1", "FieldExport", "x-FLOW", spec={
            "from": {"path": ".status.endpoint", "resource": {"group": "rds.services.k8s.aws", "kind": "DBInstance",
                                                              "name": "dbinstance-FLOW"}},
            "to": {"kind": "configmap", "name": n("ConfigMap", b), "key": "host"}}),
        ["spec.to names the baseline ConfigMap/cfg"]),
    "FieldExport from": (
        lambda b: obj("services.k8s.aws/v1alpha1", "FieldExport", "x-FLOW", spec={
            "from": {"path": ".spec", "resource": {"group": "apps", "kind": "Deployment", "name": n("Deployment", b)}},
            "to": {"kind": "configmap", "name": "configmap-FLOW", "key": "host"}}),
        ["spec.from.resource names the baseline Deployment/db"]),
    "ACK reference": (
        lambda b: obj("rds.services.k8s.aws/v1alpha1", "DBInstance", "x-FLOW", spec={
            "engine": "postgres", "dbSubnetGroupRef": {"from": {"name": "subnets" if b else "subnets-FLOW"}}}),
        ["spec.dbSubnetGroupRef names DbSubnetGroup/subnets, which is not an object of the flow"]),
    "ACK secret": (
        lambda b: obj("rds.services.k8s.aws/v1alpha1", "DBInstance", "x-FLOW", spec={
            "engine": "postgres", "masterUserPassword": {"name": n("Secret", b), "key": "password"}}),
        ["spec.masterUserPassword names the baseline Secret/creds"]),
    "Config Connector reference": (
        lambda b: obj("sql.cnrm.cloud.google.com/v1beta1", "SQLDatabase", "x-FLOW", spec={
            "instanceRef": {"name": "main" if b else "main-FLOW"}}),
        ["spec.instanceRef names Instance/main, which is not an object of the flow"]),
    "Config Connector secret": (
        lambda b: obj("sql.cnrm.cloud.google.com/v1beta1", "SQLUser", "x-FLOW", spec={
            "instanceRef": {"name": "main-FLOW"}, "password": {"valueFrom": {"secretKeyRef": {
                "name": n("Secret", b), "key": "password"}}}}),
        ["spec.password.valueFrom.secretKeyRef names the baseline Secret/creds"]),
    "Azure reference": (
        lambda b: obj("sql.azure.com/v1api20211101", "ServersDatabase", "x-FLOW", spec={
            "owner": {"name": "server"}, "sourceDatabaseReference": {"group": "sql.azure.com",
                                                                     "kind": "ServersDatabase",
                                                                     "name": "orders" if b else "orders-FLOW"}}),
        ["spec.sourceDatabaseReference names ServersDatabase/orders, which is not an object of the flow"]),
    "Azure secret": (
        lambda b: obj("sql.azure.com/v1api20211101", "ServersDatabase", "x-FLOW", spec={
            "owner": {"name": "server"}, "operatorSpec": {"secrets": {"connectionString": {
                "name": n("Secret", b), "key": "url"}}}}),
        ["spec.operatorSpec.secrets.connectionString names the baseline Secret/creds"]),
    "KafkaUser password": (
        lambda b: obj("kafka.strimzi.io/v1beta2", "KafkaUser", "x-FLOW", meta={"labels": {
            "strimzi.io/cluster": "events"}}, spec={"authentication": {"type": "scram-sha-512", "password": {
                "valueFrom": {"secretKeyRef": {"name": n("Secret", b), "key": "password"}}}}}),
        ["spec.authentication.password.valueFrom.secretKeyRef names the baseline Secret/creds"]),
    "RabbitMQ connection Secret": (
        lambda b: obj("rabbitmq.com/v1beta1", "Vhost", "x-FLOW", spec={"name": "lane", "rabbitmqClusterReference": {
            "connectionSecret": {"name": n("Secret", b)}}}),
        ["spec.rabbitmqClusterReference.connectionSecret names the baseline Secret/creds"]),
    "RabbitMQ userReference": (
        lambda b: obj("rabbitmq.com/v1beta1", "Permission", "x-FLOW", spec={
            "vhost": "lane", "userReference": {"name": "admin" if b else "user-FLOW"}, "permissions": {
                "read": ".*"}, "rabbitmqClusterReference": {"name": "broker"}}),
        ["spec.userReference names User/admin, which is not an object of the flow"]),
    **{f"{kind} pod": (build, [f"{where}.containers[c].env[E].valueFrom.secretKeyRef names the baseline "
                               "Secret/creds"]) for kind, (_, where, build) in POD_KINDS.items()},
}


def kind_of(o: dict) -> str:
    group = o["apiVersion"].rpartition("/")[0]
    return f"{group}/{o['kind']}" if group else o["kind"]


OTHER_KINDS = ("jetstream.nats.io/Stream", "kafka.strimzi.io/KafkaTopic", "rbac.authorization.k8s.io/Role",
               "example.com/Widget")  # the other tests'
EMITS = sorted({kind_of(build(b)) for build, _ in CASES.values() for b in (True, False)} | set(OTHER_KINDS))


def lane(harness: Harness, added: list[dict], policy: dict | None = None, pod: dict | None = None,
         api: list[dict] | None = None) -> object:
    """Flow pr-7 of api (its `api` containers, using built-in-root plugin `seed`, which adds `added` and merges
    `pod` into api's dev pod spec), beside the baseline (db and the objects references name), rendered to stdout;
    `policy`: the operator's policy.plugins."""
    payload = {"add": added, "pod": pod or {}}
    harness.write("app.yaml", app_yaml("api", "seed", api) + app_yaml("db") + "".join(yaml_doc(o) for o in BASELINE)
                  + plugin_definition([{"name": "seed", "type": "stateful", "servicename": "seed",
                                        "args": {"payload": json.dumps(payload)}}]))
    harness.config({"namespace": NAMESPACE})
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "seed"},
                "spec": {"runtime": {"type": "kardinal-python"}, "emits": EMITS}}
    harness.plugin("seed", main_py=KARDINAL, manifest=manifest, where=harness.builtins())
    extra = []
    if policy is not None:
        path = harness.tmp / "policy.yaml"
        path.write_text(yaml.safe_dump({"policy": {"plugins": policy}}))
        extra = [f"--policy={path}"]
    return harness.cli("render", *RENDER, "--stdout", *extra)


def refused(out, *said: str) -> None:
    assert out.returncode == 1 and out.stdout == "", out.stderr
    assert "plugin seed: refused by the output policy" in out.stderr and "Traceback" not in out.stderr
    for text in said:
        assert text in out.stderr, out.stderr


def accepted(out, added: dict) -> None:
    assert out.returncode == 0, out.stderr
    names = {(o["kind"], o["metadata"]["name"]) for o in yamlc.safe_load_all(out.stdout) if o}
    assert (added["kind"], added["metadata"]["name"].replace("FLOW", "seed-pr-7")) in names


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_reference_to_the_baseline_is_refused(harness, case):
    build, said = CASES[case]
    out = lane(harness, [build(True)])
    refused(out, *said)
    if "(rule isolation)" not in said[0]:
        assert "(rule reference)" in out.stderr and "no policy setting lifts this rule" in out.stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_reference_to_the_flows_own_object_is_accepted(harness, case):
    build, _ = CASES[case]
    added = build(False)
    accepted(lane(harness, [added]), added)


def test_what_kinds_share_on_purpose_is_accepted_unfollowed(harness):
    """A KafkaTopic's cluster, an ExternalSecret's store, a RabbitMQ or NATS broker, an Azure database's server,
    the namespace's default ServiceAccount and image pull secrets: none of them the flow's, none followed."""
    added = [
        obj("kafka.strimzi.io/v1beta2", "KafkaTopic", "orders-FLOW", meta={"labels": {"strimzi.io/cluster": "events"}},
            spec={"topicName": "orders-FLOW"}),
        obj("external-secrets.io/v1", "ExternalSecret", "key-FLOW", spec={
            "secretStoreRef": {"kind": "SecretStore", "name": "creds"},
            "data": [{"secretKey": "k", "remoteRef": {"key": "k"}, "sourceRef": {"storeRef": {"name": "vault"}}}]}),
        obj("rabbitmq.com/v1beta1", "Vhost", "v-FLOW", spec={"name": "v", "rabbitmqClusterReference": {
            "name": "broker", "namespace": "messaging"}}),
        obj("jetstream.nats.io/v1beta2", "Stream", "s-FLOW", spec={"name": "s", "subjects": ["s.>"],
                                                                   "account": "shop"}),
        obj("sql.azure.com/v1api20211101", "ServersDatabase", "d-FLOW", spec={"owner": {"name": "server"}}),
        deployment({"serviceAccountName": "default", "imagePullSecrets": [{"name": "creds"}]}),
    ]
    out = lane(harness, added)
    assert out.returncode == 0, out.stderr


def reads(secret: str) -> dict:
    return {"containers": [{"name": "main", "image": "api:2", "env": [
        {"name": "E", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}}]}]}


# what a plugin changes in a dev copy: (the change, the baseline api's containers, what is said when refused)
CHANGES: dict[str, tuple[dict, list[dict] | None, str | None]] = {
    # a Secret provisioned out of band (no object of the repository): what a Kardinal plugin points a dev pod at
    "out-of-band Secret": (reads("stripe-test"), None, None),
    "a baseline Secret the pod read before": (reads("creds"), reads("creds")["containers"], None),
    "a baseline Secret the pod did not read": (
        reads("creds"), None, "Deployment/api-pr-7 in namespace shop, plugin seed: refused by the output policy (rule "
        "reference): spec.template.spec.containers[main].env[E].valueFrom.secretKeyRef names the baseline "
        "Secret/creds"),
    "a baseline ServiceAccount": ({"serviceAccountName": "api-sa"}, None, "(rule reference): "
                                  "spec.template.spec.serviceAccountName names the baseline ServiceAccount/api-sa"),
    "a ServiceAccount provisioned out of band": ({"serviceAccountName": "admin"}, None, "(rule reference): "
                                                 "spec.template.spec.serviceAccountName names ServiceAccount/admin, "
                                                 "which is not an object of the flow"),
    "a volume of a baseline ConfigMap": ({"volumes": [{"name": "v", "configMap": {"name": "cfg"}}]}, None,
                                         "spec.template.spec.volumes[v].configMap names the baseline ConfigMap/cfg"),
    "the flow's own Secret": (reads("secret-FLOW"), None, None),
}


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_what_a_plugin_changes_in_a_dev_copy_is_followed(harness, case):
    """A dev copy is the pull request's own workload: a plugin may point it at what the flow owns, at what it read
    before, or at a Secret or ConfigMap no object of the repository is (provisioned out of band); never at a baseline
    object it did not read, nor at another ServiceAccount."""
    pod, api, said = CHANGES[case]
    out = lane(harness, [], pod=pod, api=api)
    if said is None:
        assert out.returncode == 0, out.stderr
    else:
        refused(out, said)


def test_a_built_ins_reach_belongs_to_the_built_in_not_to_its_name(harness):
    """neon-branch's Job reads the API key Secret its definition names (`BUILTIN_REACH`): the built-in's code may,
    the same code under that name from elsewhere (`--plugin-source`) may not."""
    job = obj("batch/v1", "Job", "neon-create-FLOW", spec={"template": {"spec": {
        **JOB_POD, "containers": [container(name="neon", env=[
            {"name": "NEON_API_KEY", "valueFrom": {"secretKeyRef": {"name": "neon-api", "key": "api-key"}}}])]}}})
    harness.write("app.yaml", app_yaml("api", "neon") + plugin_definition([{
        "name": "neon-branch", "type": "stateful", "servicename": "neon",
        "args": {"payload": json.dumps({"add": [job]})}}]))
    harness.config({"namespace": NAMESPACE})
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "neon-branch"},
                "spec": {"runtime": {"type": "kardinal-python"}, "emits": ["batch/Job"]}}
    harness.plugin("neon-branch", main_py=KARDINAL, manifest=manifest, where=harness.builtins())
    out = harness.cli("render", *RENDER, "--stdout")
    assert out.returncode == 0 and "name: neon-api" in out.stdout, out.stderr
    elsewhere = harness.plugin("neon-branch", main_py=KARDINAL, manifest=manifest, where=harness.tmp / "elsewhere")
    out = harness.cli("render", *RENDER, "--stdout", f"--plugin-source=neon-branch={elsewhere}")
    assert out.returncode == 1 and out.stdout == "", out.stderr
    assert "Job/neon-create-neon-pr-7 in namespace shop, plugin neon: refused by the output policy (rule reference): " \
           "spec.template.spec.containers[neon].env[NEON_API_KEY].valueFrom.secretKeyRef names Secret/neon-api, " \
           "which is not an object of the flow" in out.stderr, out.stderr


# -- RBAC: what a Role may never grant, each resource and verb ------------------------------------------------------

WRITES = ("create", "update", "patch")
# (API group, resource) -> the verbs refused: what starts pods (workload kinds, built-in and custom), what enters a
# pod, what mints credentials
NEVER: dict[tuple[str, str], tuple[str, ...]] = {
    **{(group, r): WRITES for group, found in {
        "": ("pods", "replicationcontrollers"), "apps": ("deployments", "replicasets", "statefulsets", "daemonsets"),
        "batch": ("jobs", "cronjobs"), "argoproj.io": ("rollouts", "workflows", "cronworkflows"),
        "serving.knative.dev": ("services", "configurations", "revisions"), "keda.sh": ("scaledjobs",),
        "batch.volcano.sh": ("jobs",), "jobset.x-k8s.io": ("jobsets",), "leaderworkerset.x-k8s.io": (
            "leaderworkersets",), "kubeflow.org": ("pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", "paddlejobs",
                                                  "jaxjobs", "notebooks"),
        "ray.io": ("rayclusters", "rayjobs", "rayservices"), "tekton.dev": ("taskruns", "pipelineruns"),
        "sparkoperator.k8s.io": ("sparkapplications", "scheduledsparkapplications"),
        "apps.kruise.io": ("clonesets", "statefulsets", "daemonsets", "broadcastjobs", "advancedcronjobs"),
        "apps.openshift.io": ("deploymentconfigs",)}.items() for r in found},
    **{("", f"pods/{r}"): ("create", "get") for r in ("exec", "attach", "portforward")},
    ("", "pods/ephemeralcontainers"): WRITES,
    ("", "serviceaccounts/token"): ("create",),
    ("", "secrets"): ("create",),
    ("certificates.k8s.io", "certificatesigningrequests"): ("create",),
}


@pytest.mark.parametrize(("group", "resource"), sorted(NEVER))
def test_a_role_may_never_grant_what_starts_pods_or_mints_credentials(harness, group, resource):
    """One rule per verb, each naming the flow's own objects (RBAC's names narrow nothing here): every one refused."""
    verbs = NEVER[(group, resource)]
    rules = [{"apiGroups": [group], "resources": [resource], "verbs": [verb], "resourceNames": ["x-FLOW"]}
             for verb in verbs]
    out = lane(harness, [obj(RBAC, "Role", "r-FLOW", rules=rules)])
    full = f"{resource}.{group}" if group else resource
    refused(out, *(f"(rule rbac): rules[{i}] grants {verb} on {full}, which " for i, verb in enumerate(verbs)))


def test_roles_that_reach_only_the_flows_objects_are_accepted(harness):
    """Reading, scaling and evicting the flow's own pods by name, creating ConfigMaps: none starts a pod."""
    role = obj(RBAC, "Role", "r-FLOW", rules=[
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["api-pr-7"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["deployments/scale"], "resourceNames": ["api-pr-7"],
         "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "resourceNames": ["x-FLOW"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}])
    accepted(lane(harness, [role]), role)
    unnamed = obj(RBAC, "Role", "r-FLOW", rules=[{"apiGroups": [""], "resources": ["pods/eviction"],
                                                  "verbs": ["create"]}])
    refused(lane(harness, [unnamed]), "rules[0] reaches every pods/eviction of the namespace")


# -- a kind devlane does not model -----------------------------------------------------------------------------------

WIDGET = "example.com/Widget"
TRUSTED = {"seed": {"kinds": [WIDGET]}}


def widget(**spec) -> dict:
    return obj("example.com/v1", "Widget", "w-FLOW", spec=spec)


def test_an_unmodeled_kind_is_refused_though_the_plugin_declares_it(harness):
    out = lane(harness, [widget(size=1)])
    refused(out, "Widget/w-seed-pr-7 in namespace shop, plugin seed: refused by the output policy (rule unmodeled): "
                 "devlane does not model the references of example.com/Widget",
            'policy: {plugins: {"seed": {kinds: [example.com/Widget]}}}; spec.emits in the plugin\'s own plugin.yaml '
            "is not enough")
    assert lane(harness, [widget(size=1)], TRUSTED).returncode == 0


# reference-like keys of an unmodeled kind: (spec with a baseline reference, with the flow's, what is said)
LOOSE: dict[str, tuple[dict, dict, str]] = {
    "*Ref name": ({"targetRef": {"kind": "Deployment", "name": "db"}}, {"targetRef": {"name": "api-pr-7"}},
                  "spec.targetRef names the baseline Deployment/db"),
    "*Ref string": ({"secretRef": "creds"}, {"secretRef": "secret-FLOW"}, "spec.secretRef names the baseline "
                                                                          "Secret/creds"),
    "*Refs list": ({"backendRefs": [{"name": "api-pr-7"}, {"name": "metrics"}]},
                   {"backendRefs": [{"name": "api-pr-7"}]}, "spec.backendRefs[1] names the baseline Service/metrics"),
    "*Reference": ({"configReference": {"name": "cfg"}}, {"configReference": {"name": "cfg-FLOW"}},
                   "spec.configReference names the baseline ConfigMap/cfg"),
    "*Name": ({"claimName": "data"}, {"claimName": "data-FLOW"},
              "spec.claimName names the baseline PersistentVolumeClaim/data"),
    "serviceName nested": ({"routes": [{"serviceName": "metrics"}]}, {"routes": [{"serviceName": "api-pr-7"}]},
                           "spec.routes[0].serviceName names the baseline Service/metrics"),
    "target": ({"target": "api-sa"}, {"target": "sa-FLOW"}, "spec.target names the baseline ServiceAccount/api-sa"),
    # a *Name key names its thing's kind: databaseName is the service's own, however a baseline object is named
    "secretName": ({"secretName": "creds"}, {"secretName": "creds-FLOW", "databaseName": "db"},
                   "spec.secretName names the baseline Secret/creds"),
    "selector map": ({"selector": {"app": "db"}}, {"selector": {"app": "lane-FLOW"}},
                     "spec.selector selects the pods of baseline Deployment/db"),
    "podSelector": ({"podSelector": {"matchLabels": {"app": "db"}}}, {"podSelector": {"matchLabels": LANE}},
                    "spec.podSelector selects the pods of baseline Deployment/db"),
    "labelSelector expressions": (
        {"rules": [{"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}}]},
        {"rules": [{"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]}}]},
        "spec.rules[0].labelSelector selects the pods of baseline Deployment/db"),
}


@pytest.mark.parametrize("case", sorted(LOOSE))
def test_a_trusted_unmodeled_kind_may_not_name_the_baseline_under_a_reference_like_key(harness, case):
    base, mine, said = LOOSE[case]
    refused(lane(harness, [widget(**base)], TRUSTED), f"(rule reference): {said}",
            "the trusted policy lets the kind through, never a reference to the baseline" if "names" in said else "")
    added = widget(**mine)
    accepted(lane(harness, [added], TRUSTED), added)
