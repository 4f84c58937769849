"""A flow's dev copy of a Service (`clone._dev_service`), asserted whole from the rendered stream (issue 41,
surviving mutants): its name, namespace and labels (the baseline's plus the flow's), its selector of the dev pods,
a cluster-internal type without node ports, none of the fields that pin an address or a load balancer, and a
headless Service that stays headless. Each case renders in its own test, so every test runs the function."""

from __future__ import annotations

import pytest
from support import yaml_doc, yamlc

from renderer.core.names import FLOW_LABEL, dev_label_value

FLOW = "pr-1"
PINNED = {  # what a baseline Service may hold and its dev copy must not
    "clusterIP": "10.96.0.50", "clusterIPs": ["10.96.0.50"], "externalIPs": ["203.0.113.7"],
    "loadBalancerIP": "198.51.100.9", "loadBalancerSourceRanges": ["0.0.0.0/0"], "externalTrafficPolicy": "Local",
    "healthCheckNodePort": 30999, "allocateLoadBalancerNodePorts": True, "loadBalancerClass": "example.com/lb",
}  # fmt: skip
PORT = {"name": "http", "port": 80, "targetPort": 8080}
KEPT = {"selector": {"app": "api"}, "sessionAffinity": "ClientIP"}


def workload(kind: str, service_name: str | None = None) -> dict:
    spec = {"selector": {"matchLabels": {"app": "api"}},
            "template": {"metadata": {"labels": {"app": "api"}}, "spec": {"containers": [{"name": "m", "image": "a"}]}},
            **({"serviceName": service_name} if service_name else {})}  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "api", "namespace": "shop"}, "spec": spec}


def render(harness, spec: dict, kind: str = "Deployment", service_name: str | None = None) -> dict:
    """The dev objects of a flow changing `api`, whose Service has `spec`, by (kind, name)."""
    meta = {"name": "api", "namespace": "shop", "labels": {"team": "shop"},
            "annotations": {"kardinal.dev.service/stateful": "false", "example.com/owner": "shop"}}  # fmt: skip
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}
    harness.write("app.yaml", yaml_doc(svc) + yaml_doc(workload(kind, service_name)))
    result = harness.render(FLOW, {"api": "api:2"})
    return {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(result.stream()) if o}


@pytest.mark.parametrize(("spec", "dev_spec"), [
    pytest.param({"type": "LoadBalancer", **KEPT, **PINNED, "ports": [{**PORT, "nodePort": 30080}]},
                 {"type": "ClusterIP", "ports": [PORT]}, id="load-balancer"),
    pytest.param({"type": "NodePort", **KEPT, "clusterIP": "10.96.0.51", "externalTrafficPolicy": "Local",
                  "ports": [{**PORT, "nodePort": 30081}]}, {"type": "ClusterIP", "ports": [PORT]}, id="node-port"),
    pytest.param({"type": "ClusterIP", **KEPT, "clusterIP": "10.96.0.52", "clusterIPs": ["10.96.0.52"],
                  "ports": [PORT]}, {"type": "ClusterIP", "ports": [PORT]}, id="cluster-ip"),
    pytest.param({**KEPT, "clusterIP": "None", "clusterIPs": ["None"], "ports": [PORT]},
                 {"clusterIP": "None", "ports": [PORT]}, id="headless"),
    pytest.param({**KEPT, "ports": [PORT]}, {"ports": [PORT]}, id="no-type"),
])  # fmt: skip
def test_a_dev_service_is_the_baselines_cluster_internal_copy_selecting_the_dev_pods(harness, spec, dev_spec):
    """A dev lane must not buy a load balancer or a node port, take an address the baseline holds, or capture
    traffic for external IPs (CVE-2020-8554); a headless Service stays headless (its pods' DNS names), and a
    Service without a type gets none."""
    got = render(harness, spec)["Service", "api-pr-1"]
    assert got["metadata"] == {
        "name": "api-pr-1", "namespace": "shop",
        "labels": {"team": "shop", FLOW_LABEL: FLOW, "app.kubernetes.io/managed-by": "devlane"},
        "annotations": {"example.com/owner": "shop"}}  # fmt: skip
    assert got["spec"] == {**dev_spec, "sessionAffinity": "ClientIP",
                           "selector": {"app": dev_label_value("api", FLOW), FLOW_LABEL: FLOW}}  # fmt: skip


@pytest.mark.parametrize("service_name", ["api", None])
def test_a_statefulset_governed_by_the_service_is_governed_by_its_dev_copy(harness, service_name):
    """The dev pods' DNS names come from their governing Service: the dev copy, not the baseline's."""
    got = render(harness, {"clusterIP": "None", **KEPT, "ports": [PORT]}, "StatefulSet", service_name)
    assert got["StatefulSet", "api-pr-1"]["spec"]["serviceName"] == "api-pr-1"
