"""What `clone._copy_workload`, `clone._copy_services` and `_Cloner.rewrite` must keep, read from the rendered flow
(issue 41, surviving mutants): the spec of each kind's dev copy (its selector of the dev pods, its replicas, a Job's
generated selector dropped, a claim retention policy only with claim templates), a dev Service only for the kinds
Services select, and the references of a dev pod: rewritten where DNS resolves them (recorded in `flow.metadata`),
a registry-held own address kept, a Secret judged by the keys the pod reads, a `no-rewrite` key left alone, and the
ConfigMaps a dev pod reads (copied into a flow namespace even when nothing in them changes)."""

from __future__ import annotations

import pytest
from support import yaml_doc, yamlc

from renderer.core.names import FLOW_LABEL, dev_label_value

from .test_clone_mutants4 import FLOW, rendered, service

DEV = dev_label_value("api", FLOW)
POD = {"metadata": {"labels": {"app": "api", "team": "shop"}},
       "spec": {"containers": [{"name": "main", "image": "api:1"}]}}  # fmt: skip
MATCH = {"matchLabels": {"app": "api"}}


def doc(kind: str, name: str = "api", ns: str | None = None, api_version: str = "apps/v1", **body) -> str:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return yaml_doc({"apiVersion": api_version, "kind": kind, "metadata": meta, **body})


# the baseline's kind and spec (with its pod template `POD`) -> its dev copy's spec, but for the template
SPECS = {
    "Deployment": (service("api") + doc("Deployment", spec={"replicas": 3, "selector": MATCH, "template": POD}),
                   {"replicas": 1, "selector": {"matchLabels": {"app": DEV, FLOW_LABEL: FLOW}}}),
    "StatefulSet without claims": (
        service("api") + doc("StatefulSet", spec={"replicas": 3, "serviceName": "api", "selector": MATCH,
                                                  "template": POD}),
        {"replicas": 1, "serviceName": "api-pr-1", "selector": {"matchLabels": {"app": DEV, FLOW_LABEL: FLOW}}}),
    "ReplicationController": (
        service("api") + doc("ReplicationController", api_version="v1",
                             spec={"replicas": 3, "selector": {"app": "api"}, "template": POD}),
        {"replicas": 1, "selector": {"app": DEV, FLOW_LABEL: FLOW}}),
    "ReplicationController without selector": (
        service("api") + doc("ReplicationController", api_version="v1", spec={"replicas": 3, "template": POD}),
        {"replicas": 1, "selector": {"app": DEV, "team": "shop", FLOW_LABEL: FLOW}}),
    "DaemonSet": (doc("DaemonSet", spec={"selector": MATCH, "template": POD}),
                  {"selector": {"matchLabels": {"app": DEV, FLOW_LABEL: FLOW}}}),
    "Job": (doc("Job", api_version="batch/v1", spec={"selector": {"matchLabels": {"controller-uid": "1"}},
                                                      "template": POD}), {}),
    "Job with manualSelector": (
        doc("Job", api_version="batch/v1", spec={"manualSelector": True, "selector": MATCH, "template": POD}),
        {"manualSelector": True, "selector": {"matchLabels": {"app": DEV, FLOW_LABEL: FLOW}}}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(SPECS))
def test_each_kinds_dev_copy_selects_the_dev_pods_with_the_flows_replicas(harness, case):
    """A selector (a label selector, or a ReplicationController's plain map, defaulting to the template's labels)
    picks the dev pods by the keys it read and the flow label; a Job's generated selector goes (the API server makes
    the copy's own) unless it is manual; replicas (1 by default) only for what Services scale, and a claim retention
    policy only where a StatefulSet has claim templates."""
    text, expected = SPECS[case]
    kind = case.split()[0]
    copy = rendered(harness, text)[kind, "api-pr-1"]
    assert {k: v for k, v in copy["spec"].items() if k != "template"} == expected


@pytest.mark.parametrize("kind", ["DaemonSet", "Job"])
def test_a_service_selecting_pods_of_a_kind_services_do_not_scale_gets_no_dev_copy(harness, kind):
    """`api-metrics` selects the pods of a DaemonSet (or Job) with a dev version: only Deployments, StatefulSets and
    ReplicationControllers get dev Services (their Service is their node); the others are nodes of their own."""
    spec = {"selector": MATCH, "template": POD} if kind == "DaemonSet" else {"template": POD}
    text = service("api-metrics") + doc(kind, api_version="apps/v1" if kind == "DaemonSet" else "batch/v1", spec=spec)
    got = rendered(harness, text)
    assert [key for key in got if key[0] in ("Service", kind)] == [(kind, "api-pr-1")]


def app(name: str, ns: str | None = None, env: dict | None = None, annotations: dict | None = None,
        main: dict | None = None) -> str:  # fmt: skip
    """Deployment `name` (its container `main` with `env` values, or extended by `main`) and its Service."""
    container = {"name": "main", "image": f"{name}:1", **({"env": [{"name": k, "value": v} for k, v in env.items()]}
                                                          if env else {}), **(main or {})}  # fmt: skip
    spec = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
    }
    return service(name, name, annotations=annotations, ns=ns) + doc("Deployment", name, ns, spec=spec)


def flow(harness, text: str, *services: str, **options):
    """The render of a flow giving `services` dev versions, and its objects by (kind, name)."""
    harness.write("app.yaml", text)
    result = harness.render(FLOW, {s: f"{s}:2" for s in services}, **options)
    return result, {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(result.stream()) if o}


def env_of(obj: dict) -> dict:
    return {e["name"]: e.get("value") for e in obj["spec"]["template"]["spec"]["containers"][0].get("env") or []}


def test_a_reference_is_rewritten_where_dns_resolves_it_and_recorded(harness):
    """From `shop`, `orders` alone names no Service (`orders` is in `billing`): left as it is; `orders.billing`
    names it and becomes its dev copy's address, recorded in `flow.metadata` (workload, container, variable, values)."""
    env = {"SHORT_URL": "http://orders:80/v1", "ORDERS_URL": "http://orders.billing:80/v1"}
    result, got = flow(harness, app("api", "shop", env) + app("orders", "billing"), "api", "orders")
    assert env_of(got["Deployment", "api-pr-1"]) == {**env, "ORDERS_URL": "http://orders-pr-1.billing:80/v1"}
    assert result.main.metadata["rewrites"] == [{"workload": "api-pr-1", "container": "main", "env": "ORDERS_URL",
                                                 "old": "http://orders.billing:80/v1",
                                                 "new": "http://orders-pr-1.billing:80/v1"}]  # fmt: skip


def test_a_pod_registered_with_a_shared_registry_keeps_only_its_own_address(harness):
    """`orders` registers `HOST_NAME` with `discovery`, which the lane shares: that address is kept (one warning,
    quoting the variable and its value), while its reference to `payments` (a dev version) is rewritten silently."""
    env = {"HOST_NAME": "orders", "REGISTRY_HOST": "discovery", "PAYMENTS_URL": "http://payments:80"}
    result, got = flow(harness, app("orders", env=env) + app("payments") + app("discovery"), "orders", "payments")
    assert env_of(got["Deployment", "orders-pr-1"]) == {**env, "PAYMENTS_URL": "http://payments-pr-1:80"}
    [kept] = [p for p in result.warnings if p.code == "registry-self"]
    assert "its own address (container main env HOST_NAME = orders) is kept as the baseline's" in kept.message


def config_map(name: str, data: dict, kind: str = "ConfigMap") -> str:
    return yaml_doc({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}, "data" if kind == "ConfigMap"
                     else "stringData": data})  # fmt: skip


def test_a_configmap_read_after_a_missing_one_is_copied_but_for_the_keys_its_service_exempts(harness):
    """The pod reads an optional ConfigMap the repository lacks, then `api-config`: the latter still gets its copy,
    with `ORDERS_URL` rewritten and `LEGACY_URL`, which the Service's `devlane.dev/no-rewrite` names, kept."""
    refs = [{"configMapRef": {"name": "absent", "optional": True}}, {"configMapRef": {"name": "api-config"}}]
    text = app("api", annotations={"devlane.dev/no-rewrite": "LEGACY_URL"}, main={"envFrom": refs})
    data = {"ORDERS_URL": "http://orders:80", "LEGACY_URL": "http://orders:80"}
    _, got = flow(harness, text + app("orders") + config_map("api-config", data), "api", "orders")
    pod = got["Deployment", "api-pr-1"]["spec"]["template"]["spec"]
    assert [r["configMapRef"]["name"] for r in pod["containers"][0]["envFrom"]] == ["absent", "api-config-pr-1"]
    assert got["ConfigMap", "api-config-pr-1"]["data"] == {**data, "ORDERS_URL": "http://orders-pr-1:80"}


@pytest.mark.parametrize(("key", "warned"), [("PASSWORD", False), ("UPSTREAM", True)])
def test_a_secret_is_judged_by_the_keys_the_pod_reads(harness, key, warned):
    """The pod reads one key of `api-secret`: only when that key holds a dev service's address is it a warning (the
    other key is never in the pod's environment)."""
    ref = {"name": "VALUE", "valueFrom": {"secretKeyRef": {"name": "api-secret", "key": key}}}
    text = app("api", main={"env": [ref]})
    secret = config_map("api-secret", {"PASSWORD": "hunter2", "UPSTREAM": "http://orders:80"}, "Secret")
    result, _ = flow(harness, text + app("orders") + secret, "api", "orders")
    assert bool([p for p in result.warnings if p.code == "secret-reference"]) is warned


def test_in_a_flow_namespace_a_configmap_is_copied_beside_the_dev_pod_even_unchanged(harness):
    """A Job alone (no Service: nothing for references to name) reads `api-config`: in a flow namespace its dev
    copy reads the ConfigMap's copy there, as it is, and nothing is missing."""
    harness.config({"isolation": "namespace", "namespace": "shop"})
    pod = {**POD, "spec": {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "api:1", "envFrom": [{"configMapRef": {"name": "api-config"}}]}]}}  # fmt: skip
    text = doc("Job", api_version="batch/v1", spec={"template": pod}) + config_map("api-config", {"MODE": "migrate"})
    result, got = flow(harness, text, "api")
    copies = [o for (kind, _), o in got.items() if kind == "ConfigMap"]
    assert [(c["metadata"]["name"], c["metadata"]["namespace"], c["data"]) for c in copies] == [
        ("api-config", "shop-pr-1", {"MODE": "migrate"})
    ]
    assert not [p for p in result.warnings if p.code == "namespace-missing"]
