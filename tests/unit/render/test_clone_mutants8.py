"""What `clone.make` must do that its siblings' tests left unchecked (issue 41, surviving mutants): every key of a
ConfigMap the pod reads is rewritten (the copy is the whole ConfigMap) but only the keys it reads of a Secret are
warned about, a Secret read first does not end the ConfigMaps after it, each volume is judged on its own whatever
the one before it was, a NetworkPolicy in a namespace without selectors is left alone, in a flow namespace a policy
that selects the flow's own labels is copied with them, and the flow's image and env go onto the target container.

In-process: a repository of a few objects in namespace `shop`, its model, plan and dev copies (`clone.make`) for
flow `pr-1`; the NetworkPolicy copy's directory is read from a render (`harness`).
"""

from __future__ import annotations

import pytest
from support import yaml_doc

from renderer.core.names import FLOW_LABEL, MANAGED_BY
from renderer.render.copies import clone
from renderer.render.inputs.document import Document
from renderer.render.model.topology import build_model
from renderer.render.plan.flow_spec import build_flow
from renderer.render.plan.planner import make_plan
from renderer.render.settings.isolation import Lane
from renderer.render.settings.render_settings import CopySettings

from .test_clone_mutants2 import FLOW, NS, policy, service
from .test_clone_mutants2 import app as plain_app


def deployment(name: str, pod: dict) -> dict:
    """Deployment `name` (pods `app: name`) running `pod`."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}  # fmt: skip


def make(docs: list[dict], images: dict[str, str] | None = None, env: tuple = (), isolation: str = "suffix"):
    """The dev copies of a flow giving `api` (or `images`) a dev version, and the problems found making them."""
    model = build_model([Document(o, "app.yaml", i) for i, o in enumerate(docs)], NS)
    plan = make_plan(model, build_flow(FLOW, images or {"api": "api:2"}, list(env)), "none")[0]
    return clone.make(model, plan, CopySettings(Lane(isolation), 1, False))


def pod_of(dev) -> dict:
    return dev.workloads["api"].obj["spec"]["template"]["spec"]


ORDERS = "http://orders:80"
READS = [  # the Secret first: what the pod reads of it must not end the reads after it
    {"name": "USER", "valueFrom": {"secretKeyRef": {"name": "api-secret", "key": "USER"}}},
    {"name": "LOG_LEVEL", "valueFrom": {"configMapKeyRef": {"name": "api-config", "key": "LOG_LEVEL"}}},
]
CONFIGS = [
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api-secret"},
     "stringData": {"USER": "api", "ORDERS_URL": ORDERS}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "api-config"},
     "data": {"LOG_LEVEL": "info", "ORDERS_URL": ORDERS}},
]  # fmt: skip


@pytest.fixture
def reads():
    """`api` reads key USER of a Secret, then key LOG_LEVEL of a ConfigMap; both also hold `orders`'s address, in a
    key the pod does not read; `api` and `orders` have dev versions."""
    docs = [deployment("api", {"containers": [{"name": "main", "image": "api:1", "env": READS}]}), service("api"),
            *plain_app("orders"), *CONFIGS]  # fmt: skip
    return make(docs, {"api": "api:2", "orders": "orders:2"})


def test_a_configmap_read_by_one_key_is_copied_with_every_key_rewritten(reads):
    """The dev pod reads the flow's copy of the whole ConfigMap, so a key it does not read by name (a file, a
    later edit of the pod) must not still name the baseline: the copy has every reference rewritten."""
    dev, _ = reads
    [copy] = [o.obj for o in dev.objects if o.obj["kind"] == "ConfigMap"]
    assert copy["metadata"]["name"] == f"api-config-{FLOW}"
    assert copy["data"] == {"LOG_LEVEL": "info", "ORDERS_URL": f"http://orders-{FLOW}:80"}
    assert [e["valueFrom"] for e in pod_of(dev)["containers"][0]["env"]] == [
        {"secretKeyRef": {"name": "api-secret", "key": "USER"}},
        {"configMapKeyRef": {"name": f"api-config-{FLOW}", "key": "LOG_LEVEL"}},
    ]


def test_a_secret_key_the_pod_does_not_read_is_no_warning(reads):
    """A Secret is never copied: only a key the pod reads can send it to the baseline, so `ORDERS_URL` (unread)
    is not worth a warning."""
    _, problems = reads
    assert [p.message for p in problems if p.code == "secret-reference"] == []


# each volume's mode, in order: shared, emptyDir, a copy of a claim the repository lacks (an error), emptyDir again
MODES = "shared=shared, scratch=emptyDir, cache=emptyDir"
VOLUMES = ["shared", "scratch", "missing", "cache"]


@pytest.mark.parametrize("isolation", ["suffix", "namespace"])
def test_each_volume_is_judged_whatever_the_one_before_it(isolation):
    """A shared claim (an error in a flow namespace), an emptyDir, a missing claim: none ends the volumes after it,
    so `cache` is still an emptyDir and never the baseline's claim. A volume that is not a map is skipped."""
    pod = {
        "containers": [{"name": "main", "image": "api:1"}],
        "volumes": ["not-a-volume", *({"name": v, "persistentVolumeClaim": {"claimName": v}} for v in VOLUMES)],
    }
    dev, problems = make([deployment("api", pod), service("api", {"devlane.dev/volume": MODES})],
                         isolation=isolation)  # fmt: skip
    assert pod_of(dev)["volumes"][1:] == [
        {"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "missing", "persistentVolumeClaim": {"claimName": "missing"}},
        {"name": "cache", "emptyDir": {}},
    ]
    assert [p.code for p in problems if p.code == "volume"] == ["volume"] * (2 if isolation == "namespace" else 1)


def test_a_policy_in_a_namespace_without_selectors_is_left_alone():
    """Namespace `edge` has no Service or workload (so no selector keys): its policy selects no dev pod's baseline
    and is not copied, and making the copies does not fail."""
    api = {"matchLabels": {"app": "api"}}
    edge = policy("edge-in", api, ingress=[{"podSelector": api}])
    edge["metadata"]["namespace"] = "edge"
    dev, _ = make([*plain_app("api"), edge])
    assert [o.obj for o in dev.objects if o.obj["kind"] == "NetworkPolicy"] == []


def test_in_a_flow_namespace_a_policy_of_devlanes_pods_is_copied_with_the_flows_labels():
    """A policy selecting what devlane deploys (`managed-by: devlane`) selects the dev pods (their labels, not their
    baselines'): the flow namespace gets its copy, under its own name, labelled with the flow."""
    ours = policy("devlane-pods", {"matchLabels": {MANAGED_BY: "devlane"}})
    dev, _ = make([*plain_app("api"), ours], isolation="namespace")
    assert [o.obj["metadata"] for o in dev.objects if o.obj["kind"] == "NetworkPolicy"] == [
        {"name": "devlane-pods", "namespace": f"{NS}-{FLOW}",
         "labels": {"team": "shop", FLOW_LABEL: FLOW, MANAGED_BY: "devlane"}}]  # fmt: skip


def test_a_policy_copy_is_rendered_in_the_flows_directory(harness):
    """The copy belongs to the flow: it is written (and pruned) with the flow's other objects."""
    api = policy("api-in", {"matchLabels": {"app": "api"}})
    harness.write("app.yaml", "".join(yaml_doc(o) for o in [*plain_app("api"), api]))
    result = harness.render(FLOW, {"api": "api:2"})
    assert [o["metadata"]["name"] for o in result.main.objects if o["kind"] == "NetworkPolicy"] == [f"api-in-{FLOW}"]


FROM_FIELD = {"fieldRef": {"fieldPath": "metadata.name"}}


@pytest.mark.parametrize(("env", "expected"), [
    pytest.param([{"name": "LOG_LEVEL", "value": "info"}, {"name": "POD", "valueFrom": FROM_FIELD}],
                 [{"name": "LOG_LEVEL", "value": "debug"}, {"name": "POD", "value": "dev"},
                  {"name": "NEW", "value": "1"}], id="set-and-added"),
    pytest.param(None, [{"name": "LOG_LEVEL", "value": "debug"}, {"name": "POD", "value": "dev"},
                        {"name": "NEW", "value": "1"}], id="no-env"),
])  # fmt: skip
def test_the_flows_env_replaces_an_entry_of_the_same_name_or_is_added(env, expected):
    """A flow's env value wins over the container's (a value, or a `valueFrom` that would shadow it: one entry,
    only the value); a name the container lacks, or a container without env, gets a new entry."""
    container = {"name": "main", "image": "api:1", **({"env": env} if env else {})}
    flow_env = [("api", "LOG_LEVEL", "debug"), ("api", "POD", "dev"), ("api", "NEW", "1")]
    dev, _ = make([deployment("api", {"containers": [container]}), service("api")], env=flow_env)
    assert pod_of(dev)["containers"][0]["env"] == expected


@pytest.mark.parametrize("containers", [[{"image": "api:1"}], []], ids=["unnamed", "none"])
def test_the_flows_image_goes_onto_an_unnamed_container_and_no_container_is_no_crash(containers):
    """The target of a container without a name is the first; a pod without containers (an error of the
    repository, reported by the model) gets no image and makes no copy fail."""
    dev, _ = make([deployment("api", {"containers": containers}), service("api")])
    assert pod_of(dev)["containers"] == [{"image": "api:2"}][: len(containers)]
