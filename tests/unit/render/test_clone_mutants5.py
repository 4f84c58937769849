"""The rest of `clone.py`'s surviving mutants (issue 41), each case rendering in its own test (a module-scoped render
is credited by mutmut to its first test only): a lane's own Dapr (`dapr: {isolation: app-id}`) and the Components a
flow namespace lacks without it (a warning, an error under `--strict`), the claim copies of a dev pod, and each
NetworkPolicy judged on its own: copied where it selects or admits a dev pod's baseline, in the baseline's namespace
with its labels and the flow's."""

from __future__ import annotations

import pytest
from support import yaml_doc

from renderer.core.names import FLOW_LABEL, MANAGED_BY
from renderer.errors import DevlaneError
from renderer.render.copies import clone
from renderer.render.inputs.document import Document
from renderer.render.model.topology import build_model
from renderer.render.plan.flow_spec import build_flow
from renderer.render.plan.planner import make_plan
from renderer.render.settings.isolation import Lane
from renderer.render.settings.render_settings import CopySettings

from .test_clone_mutants2 import COPIED, NS, POLICIES
from .test_clone_mutants2 import app as policy_app
from .test_clone_mutants3 import LABELS, of_kind, render
from .test_clone_mutants3 import app as shop_app
from .test_clone_mutants4 import FLOW, rendered, service

DAPR = {"dapr.io/enabled": "true", "dapr.io/app-id": "api"}
STORE = {"apiVersion": "dapr.io/v1alpha1", "kind": "Component", "metadata": {"name": "statestore", "namespace": "shop"},
         "spec": {"type": "state.in-memory", "version": "v1", "metadata": []}}  # fmt: skip


def dapr_app() -> str:
    """Service and Deployment `api` in `shop`, with a Dapr sidecar (app-id `api`), and a Component it loads."""
    pod = {"metadata": {"labels": {"app": "api"}, "annotations": DAPR},
           "spec": {"containers": [{"name": "main", "image": "api:1"}]}}  # fmt: skip
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": "shop"},
                  "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": pod}}  # fmt: skip
    return service("api", ns="shop") + yaml_doc(deployment) + yaml_doc(STORE)


def test_a_lanes_own_dapr_runs_its_app_under_its_app_id_with_its_copy_of_the_component(harness):
    """`dapr: {isolation: app-id}`: the dev copy's sidecar is `api-pr-1`, and the lane has its own `statestore`
    (scoped to the lane's app-id, state keyed by it), so it never shares the baseline's state."""
    harness.config({"dapr": {"isolation": "app-id"}})
    got = rendered(harness, dapr_app())
    annotations = got["Deployment", "api-pr-1"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["dapr.io/app-id"] == "api-pr-1"
    store = got["Component", "statestore-pr-1"]
    assert store["scopes"] == ["api-pr-1"] and store["metadata"]["namespace"] == "shop"


def test_in_a_flow_namespace_a_lanes_own_dapr_leaves_nothing_unloaded(harness):
    """With the lane's own Dapr the Component is copied into the flow namespace: no warning that it is missing, and
    `--strict` renders."""
    harness.config({"isolation": "namespace", "dapr": {"isolation": "app-id"}})
    harness.write("app.yaml", dapr_app())
    result = harness.render(FLOW, {"api": "api:2"}, strict=True)
    assert [o["metadata"]["name"] for o in result.main.objects if o["kind"] == "Component"] == ["statestore"]
    assert not [p for p in result.messages if p.code == "namespace-missing"]


UNLOADED = (
    "dev workload api in shop-pr-1 runs a Dapr sidecar (app-id api) that loads Component statestore in shop: "
    "Components are namespaced, so the flow namespace has none and its Dapr calls to them fail"
)


@pytest.mark.parametrize("strict", [False, True])
def test_in_a_flow_namespace_a_component_left_at_home_is_named_with_the_fix(harness, strict):
    """Without the lane's own Dapr the dev sidecar in the flow namespace finds no Component: a warning naming it and
    telling the fix, an error that stops the render under `--strict`."""
    harness.config({"isolation": "namespace"})
    harness.write("app.yaml", dapr_app())
    if strict:
        with pytest.raises(DevlaneError) as caught:
            harness.render(FLOW, {"api": "api:2"}, strict=True)
        problems = caught.value.problems
    else:
        problems = harness.render(FLOW, {"api": "api:2"}).messages
    [problem] = [p for p in problems if p.code == "namespace-missing"]
    assert (problem.severity, problem.message) == ("error" if strict else "warning", UNLOADED)
    assert problem.hint.startswith("set `dapr: {isolation: app-id}` in .devlane.yaml")


BINDING = ("pv.kubernetes.io/bind-completed", "volume.beta.kubernetes.io/storage-provisioner",
           "volume.kubernetes.io/selected-node")  # fmt: skip
CLAIMS = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  labels: {tier: db}
  annotations: {%s: "yes", team: shop}
spec: {accessModes: [ReadWriteOnce], volumeName: pvc-1234}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: logs}
"""


@pytest.mark.parametrize("binding", BINDING)
def test_each_claim_copy_is_a_fresh_unbound_claim_of_the_flow(tmp_path, binding):
    """Each claim its own copy (in the flow's directory), without the baseline's bound volume and whichever binding
    annotation it has, its other annotations and labels kept; a claim without a spec gets an empty one."""
    api = shop_app(
        "api",
        ", volumeMounts: [{name: data, mountPath: /data}, {name: logs, mountPath: /logs}]",
        ", volumes: [{name: data, persistentVolumeClaim: {claimName: data}}, "
        "{name: logs, persistentVolumeClaim: {claimName: logs}}]",
    )
    result = render(tmp_path / "repo", api + CLAIMS % binding, {"api": "api:2"})
    volumes = of_kind(result, "Deployment")["api-pr-1"]["spec"]["template"]["spec"]["volumes"]
    assert [v["persistentVolumeClaim"]["claimName"] for v in volumes] == ["data-pr-1", "logs-pr-1"]
    assert of_kind(result, "PersistentVolumeClaim") == {
        "data-pr-1": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data-pr-1", "labels": {"tier": "db", **LABELS}, "annotations": {"team": "shop"}},
            "spec": {"accessModes": ["ReadWriteOnce"]},
        },
        "logs-pr-1": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "logs-pr-1", "labels": LABELS},
            "spec": {},
        },
    }


@pytest.mark.parametrize("policy", POLICIES, ids=[p["metadata"]["name"] for p in POLICIES])
def test_each_policy_alone_is_copied_only_where_it_misses_the_dev_pods(policy):
    """The verdict on a policy is its own, whatever others the namespace holds: only `api-in` and `db-out` (by an
    egress peer alone) are copied, each in the baseline's namespace with its labels and the flow's."""
    docs = [*policy_app("api"), *policy_app("db"), policy]
    model = build_model([Document(o, "app.yaml", i) for i, o in enumerate(docs)], NS)
    plan = make_plan(model, build_flow(FLOW, {"api": "api:2"}, []), "none")[0]
    dev = clone.make(model, plan, CopySettings(Lane(), 1, False))[0]
    copies = [o.obj for o in dev.objects if o.obj["kind"] == "NetworkPolicy"]
    name = policy["metadata"]["name"]
    expected = COPIED.get(name)
    assert [c["spec"] for c in copies] == ([expected] if expected else [])
    labels = {"team": "shop", FLOW_LABEL: FLOW, MANAGED_BY: "devlane"}
    assert [c["metadata"] for c in copies] == ([{"name": f"{name}-{FLOW}", "namespace": NS, "labels": labels}]
                                               if expected else [])  # fmt: skip
