"""How `clone._copy_workload` makes a dev copy's own selector, for each kind of workload (issue 41, surviving
mutants): it must select the dev pods only (their isolated labels and the flow's), never the baseline's, whether the
selector is a label selector (StatefulSet, DaemonSet, a Job with `manualSelector`) or a plain map
(ReplicationController, defaulting to the pod template's labels); a pod template without metadata gets the flow's."""

from __future__ import annotations

import pytest
from support import yaml_doc

from renderer.core.names import FLOW_LABEL, flow_labels

from .test_clone_mutants4 import FLOW, rendered, service

API_VERSIONS = {"StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1", "ReplicationController": "v1"}
MATCH = {"matchLabels": {"app": "api"}}
POD = {"containers": [{"name": "main", "image": "api:1"}]}


def pod_owner(kind: str, labels: dict | None = None, **spec) -> str:
    """Workload `api` of `kind` with `spec`; its pods labelled `labels` (no template metadata at all when None)."""
    template = {**({"metadata": {"labels": labels}} if labels is not None else {}), "spec": POD}
    return yaml_doc({"apiVersion": API_VERSIONS[kind], "kind": kind, "metadata": {"name": "api"},
                     "spec": {**spec, "template": template}})  # fmt: skip


def selector_of(harness, text: str, kind: str):
    return rendered(harness, text)[kind, f"api-{FLOW}"]["spec"].get("selector")


DEV = {"app": f"api-{FLOW}", FLOW_LABEL: FLOW}  # `app` (read by a selector) suffixed, plus the flow's label


@pytest.mark.parametrize(("kind", "text", "expected"), [
    pytest.param("StatefulSet", service("api") + pod_owner("StatefulSet", {"app": "api"}, selector=MATCH,
                                                           serviceName="api"), {"matchLabels": DEV}, id="statefulset"),
    pytest.param("DaemonSet", pod_owner("DaemonSet", {"app": "api"}, selector=MATCH), {"matchLabels": DEV},
                 id="daemonset"),
    pytest.param("Job", pod_owner("Job", {"app": "api"}, selector=MATCH, manualSelector=True), {"matchLabels": DEV},
                 id="job-manual-selector"),
    pytest.param("ReplicationController", service("api") + pod_owner("ReplicationController",
                 {"app": "api", "tier": "web"}, selector={"app": "api"}), DEV, id="replication-controller"),
])  # fmt: skip
def test_each_kind_of_dev_workload_selects_its_dev_pods_only(harness, kind, text, expected):
    """The baseline's selector left on the copy would adopt the baseline's pods; the dev one reads the keys the
    baseline's read (a ReplicationController's `tier`, outside its selector, stays out) and the flow label."""
    assert selector_of(harness, text, kind) == expected


@pytest.mark.parametrize("selector", [{"selector": None}, {}, {"selector": {}}], ids=["null", "absent", "empty"])
def test_a_replication_controller_without_a_selector_selects_by_its_dev_pods_labels(harness, selector):
    """An empty or absent selector of a ReplicationController defaults to its pod template's labels: the dev copy's
    is those of its dev pods, every one (`tier` as well), not the flow label alone, which every pod of the flow
    has."""
    rc = pod_owner("ReplicationController", {"app": "api", "tier": "web"}, **selector)
    assert selector_of(harness, service("api") + rc, "ReplicationController") == {**DEV, "tier": "web"}


def test_a_workload_without_a_selector_gets_the_flows(harness):
    """A DaemonSet whose selector is missing (left for the API server to refuse) still renders: its dev copy selects
    by the flow label."""
    daemonset = pod_owner("DaemonSet", {"app": "api"})
    assert selector_of(harness, daemonset, "DaemonSet") == {"matchLabels": {FLOW_LABEL: FLOW}}


def test_a_pod_template_without_metadata_gets_the_flows_labels(harness):
    """A Job needs no pod labels; its dev copy's pods still carry the flow's, which the lane's selectors and
    pruning read."""
    job = rendered(harness, pod_owner("Job"))["Job", f"api-{FLOW}"]
    assert job["spec"]["template"]["metadata"] == {"labels": flow_labels(FLOW)}
