"""What `clone.make` and `clone._copy_workload` must keep, read from the rendered flow (issue 41, surviving
mutants): a dev service without a workload (a stateful external dependency, made by its plugin) does not stop the
copies of the services after it, `--strict` refuses what a flow namespace cannot have, a dev workload keeps its
baseline's labels, and a StatefulSet stays governed by its own headless Service whatever other Service selects it."""

from __future__ import annotations

import pytest
from support import plugin_definition, yaml_doc, yamlc

from renderer.core.names import flow_labels
from renderer.errors import DevlaneError

FLOW = "pr-1"
K = "kardinal.dev.service/"
PASS_THROUGH = """
def create_flow(service_specs, pod_specs, flow_uuid):
    return {"pod_specs": pod_specs, "config_map": None}
"""


def service(name: str, selector: str | None = "api", port: dict | None = None, annotations: dict | None = None,
            ns: str | None = None, **spec) -> str:  # fmt: skip
    meta = {"name": name, **({"namespace": ns} if ns else {}), **({"annotations": annotations} if annotations else {})}
    selected = {"selector": {"app": selector}} if selector else {}
    return yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                     "spec": {**selected, "ports": [port or {"name": "http", "port": 80}], **spec}})  # fmt: skip


def workload(kind: str = "Deployment", labels: dict | None = None, ns: str | None = None, **spec) -> str:
    meta = {"name": "api", **({"namespace": ns} if ns else {}), **({"labels": labels} if labels else {})}
    pod = {"containers": [{"name": "main", "image": "api:1"}], **spec.pop("pod", {})}
    return yaml_doc({"apiVersion": "apps/v1", "kind": kind, "metadata": meta,
                     "spec": {"selector": {"matchLabels": {"app": "api"}}, **spec,
                              "template": {"metadata": {"labels": {"app": "api"}}, "spec": pod}}})  # fmt: skip


def rendered(harness, text: str, **options) -> dict[tuple[str, str], dict]:
    """The flow changing `api`, by (kind, name)."""
    harness.write("app.yaml", text)
    result = harness.render(FLOW, {"api": "api:2"}, **options)
    return {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(result.stream()) if o}


def test_a_dev_service_without_a_workload_does_not_stop_the_copies_after_it(harness):
    """`accounts-db` (stateful, external: its plugin makes the flow's copy) has a dev version but nothing to copy;
    `api`, sorted after it, must still get its dev copy."""
    harness.builtin("accounts-db", PASS_THROUGH)
    db = service("accounts-db", None, {"name": "tcp", "port": 5432}, {K + "external": "true", K + "stateful": "true"},
                 type="ExternalName", externalName="db.example.com")  # fmt: skip
    api = service("api", annotations={K + "plugins": "accounts-db", K + "dependencies": "accounts-db:tcp"})
    defs = plugin_definition([{"name": "accounts-db", "type": "external", "servicename": "accounts-db"}])
    got = rendered(harness, db + api + workload() + defs)
    assert got["Deployment", "api-pr-1"]["spec"]["template"]["spec"]["containers"][0]["image"] == "api:2"
    assert ("Service", "api-pr-1") in got


ENV_FROM = {"containers": [{"name": "main", "image": "api:1", "envFrom": [{"configMapRef": {"name": "api-config"}}]}]}


@pytest.mark.parametrize(("pod", "said", "fix"), [
    pytest.param({"serviceAccountName": "api-sa"}, "runs as ServiceAccount api-sa", "add ServiceAccount api-sa",
                 id="service-account"),
    pytest.param(ENV_FROM, "reads ConfigMap api-config", "add ConfigMap api-config", id="config-map"),
])  # fmt: skip
def test_under_strict_what_the_flow_namespace_cannot_have_is_refused(harness, pod, said, fix):
    """In a flow namespace a ServiceAccount or ConfigMap the repository lacks leaves the dev pods uncreatable:
    under `--strict` that is an error of the render, naming what is missing and what to add."""
    harness.config({"isolation": "namespace"})
    text = service("api", ns="shop") + workload(ns="shop", pod=pod)
    with pytest.raises(DevlaneError) as caught:
        rendered(harness, text, strict=True)
    [problem] = [p for p in caught.value.problems if p.code == "namespace-missing"]
    assert problem.severity == "error" and f"dev workload api in shop-pr-1 {said}" in problem.message
    assert problem.hint.startswith(fix)


def test_a_dev_workload_keeps_its_baselines_labels_beside_the_flows(harness):
    """Labels on the workload itself (owner, part-of) are the baseline's; the dev copy adds the flow's."""
    labels = {"team": "shop", "app.kubernetes.io/part-of": "shop"}
    got = rendered(harness, service("api") + workload(labels=labels))
    assert got["Deployment", "api-pr-1"]["metadata"] == {"name": "api-pr-1", "labels": {**labels, **flow_labels(FLOW)}}


@pytest.mark.parametrize("headless_first", [True, False])
def test_a_statefulset_stays_governed_by_its_own_headless_service(harness, headless_first):
    """`api` also selects the StatefulSet whose governing Service is `api-peers`: the dev pods' DNS names come from
    the dev copy of `api-peers`, in whichever order the two Services come."""
    peers, api = service("api-peers", clusterIP="None"), service("api")
    text = (peers + api if headless_first else api + peers) + workload("StatefulSet", serviceName="api-peers")
    got = rendered(harness, text)
    assert got["StatefulSet", "api-pr-1"]["spec"]["serviceName"] == "api-peers-pr-1"
