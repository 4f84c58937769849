"""The output policy (`renderer.render.plugins.output_policy`), part 2 of what mutation testing found untested (issue
41): where a pod spec is read on a kind devlane does not model, the namespaces of the flow's dev copies, how each of
the three kinds of call pairs what came back with what was sent (objects naming no namespace, several objects of
one call, a hook's objects one by one), a changed object that is no object, and what a refusal lists (the flow's
namespaces, the declared kinds, an unmodeled core kind).

Each case checks one in-process plugin call's refusal or acceptance (`support.policy_lane`), or the invariants run
on what it returned, as a render runs them.
"""

from __future__ import annotations

import pytest
from support.policy_lane import (
    BASE,
    BASELINE,
    FLOW,
    NS,
    OWN,
    _grants,
    caller,
    hook_problems,
    hooked,
    model,
    obj,
    outcome,
    problems_of,
    said,
    transformed,
)

from renderer.render.checks import invariants
from renderer.render.copies.dev_set import DevObject, DevService, DevSet, DevWorkload
from renderer.render.inputs.document import Document
from renderer.render.model.topology import build_model
from renderer.render.plugins.output_policy import OutputPolicy
from renderer.render.settings.repo_config import PluginAllow


def deployment(name: str = "x-pr-7", pod: dict | None = None, **meta) -> dict:
    """A Deployment of the flow with pods labelled `OWN` (one container `c` unless `pod` says otherwise)."""
    return obj("apps/v1", "Deployment", name, meta=meta, spec={"selector": {"matchLabels": OWN}, "template": {
        "metadata": {"labels": OWN}, "spec": {"containers": [{"name": "c"}], **(pod or {})}}})  # fmt: skip


PRIVILEGED = {"hostNetwork": True}
HOST_NETWORK = "(rule privileged): spec.template.spec.hostNetwork is true (the node's namespace)"


# -- a pod spec on a kind devlane does not model -------------------------------------------------------------------

CUSTOM_PODS = [
    ("Pod", {"hostNetwork": True}, "spec"),
    ("CronJob", {"jobTemplate": {"spec": {"template": {"spec": {"hostNetwork": True}}}}},
     "spec.jobTemplate.spec.template.spec"),
    ("Rollout", {"template": {"spec": {"hostNetwork": True}}}, "spec.template.spec"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "spec", "where"), CUSTOM_PODS, ids=[k for k, _, _ in CUSTOM_PODS])
def test_a_pod_spec_of_a_kind_of_another_group_is_checked_where_that_kind_keeps_it(kind, spec, where):
    """A kind the trusted policy lets through (a `Pod` or `CronJob` of another API group) keeps its pod spec where the
    core kind of that name does: it is checked there, and the refusal says where."""
    thing = obj("example.com/v1", kind, "x-pr-7", spec=spec)
    allow = PluginAllow(kinds=(f"example.com/{kind}",))
    assert said(problems_of(thing, allow=allow)) == [f"(rule privileged): {where}.hostNetwork is true (the node's "
                                                     "namespace)"]  # fmt: skip


# -- the flow's namespaces -----------------------------------------------------------------------------------------


def dev_set() -> DevSet:
    """Dev copies in three namespaces of their own: a workload in `alpha`, a Service in `beta`, a ConfigMap in
    `gamma`."""
    doc = Document(BASELINE[0], "app.yaml", 0)
    work = deployment("db-pr-7", namespace="alpha")
    svc = obj("v1", "Service", "db-pr-7", meta={"namespace": "beta"}, spec={"selector": OWN})
    cm = obj("v1", "ConfigMap", "cfg-pr-7", meta={"namespace": "gamma"})
    return DevSet(workloads={"db": DevWorkload("db", FLOW, doc, work, "c")}, services=[DevService(doc, svc, FLOW)],
                  objects=[DevObject(doc, cm, FLOW)])  # fmt: skip


def added_to(pol: OutputPolicy, *objs: dict, **kw) -> list[str]:
    return said(outcome(lambda _: pol.created(caller(*objs, **kw), [], list(objs), NS))[1])


@pytest.mark.parametrize("namespace", ["alpha", "beta", "gamma", NS])
def test_each_namespace_of_the_flows_dev_copies_is_the_flows(namespace):
    """A plugin may add objects next to any dev copy: a workload's, a Service's, another copy's namespace, and the
    destination."""
    pol = OutputPolicy(model(), dev_set(), FLOW, _grants())
    assert added_to(pol, obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": namespace})) == []


def test_a_namespace_not_the_flows_is_refused_and_the_refusal_lists_every_namespace_of_the_flow():
    pol = OutputPolicy(model(), dev_set(), FLOW, _grants())
    assert added_to(pol, obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": "kube-system"})) == [
        "(rule namespace): namespace kube-system is not the flow's (alpha, beta, gamma, shop)"
    ]


def test_without_a_destination_namespace_the_refusal_says_no_namespace_is_the_flows():
    pol = OutputPolicy(build_model([], None), DevSet(), FLOW, _grants())
    assert added_to(pol, obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": "kube-system"})) == [
        "(rule namespace): namespace kube-system is not the flow's (the destination namespace (no namespace set))"
    ]


# -- what a refusal lists --------------------------------------------------------------------------------------------


def test_an_undeclared_kind_lists_every_kind_the_plugin_declares():
    (problem,) = problems_of(obj("v1", "ConfigMap", "c-pr-7"), emits=("Service", "batch/Job"))
    assert problem.message == ("refused by the output policy (rule emits): ConfigMap is not among the kinds plugin "
                               "seed declares (Service, batch/Job)")  # fmt: skip


def test_an_unmodeled_core_kind_is_named_without_a_group_in_the_refusal_and_its_hint():
    (problem,) = problems_of(obj("v1", "Event", "e-pr-7"))
    assert problem.message == ("refused by the output policy (rule unmodeled): devlane does not model the references "
                               "of Event (which fields name or select other objects), so it cannot tell what the "
                               "object reaches")  # fmt: skip
    assert "(its references reviewed by whoever grants it)" in problem.hint
    assert "{kinds: [Event]}" in problem.hint and "trusted with Event " in problem.hint


# -- several objects in one call -------------------------------------------------------------------------------------


def test_every_workload_a_create_flow_changed_is_checked_not_only_the_last():
    """The first dev workload made privileged, the second changed harmlessly: the first is still refused."""
    first, second = deployment("a-pr-7"), deployment("b-pr-7")
    pairs = [(first, deployment("a-pr-7", PRIVILEGED)), (second, deployment("b-pr-7", {"dnsPolicy": "Default"}))]
    problems = outcome(lambda p: p.created(caller(first), pairs, [], NS))[1]
    assert said(problems) == [HOST_NETWORK]
    assert problems[0].where.object.startswith("Deployment/a-pr-7")


FLOW_NAME = (
    "(rule flow-name): seed is not named for flow pr-7: a plugin's objects are named <name>-pr-7, as devlane "
    "names dev objects"
)
STEP_OUTPUTS = {  # a refused object, then an accepted one of the other sort (changed or added)
    "added, then changed": ([obj("v1", "ConfigMap", "seed"), deployment(pod={"dnsPolicy": "Default"})], FLOW_NAME),
    "changed, then added": ([deployment(pod=PRIVILEGED), obj("v1", "ConfigMap", "c-pr-7")], HOST_NETWORK),
}


@pytest.mark.parametrize("order", sorted(STEP_OUTPUTS))
def test_every_object_a_post_render_step_added_or_changed_is_checked_not_only_the_last(order):
    after, refusal = STEP_OUTPUTS[order]
    assert transformed([deployment()], after) == [refusal]


# -- objects that name no namespace ----------------------------------------------------------------------------------


def test_a_post_render_step_that_passes_on_an_object_naming_no_namespace_is_not_judged_for_it():
    """The baseline's own ConfigMap `cfg`, namespace unset both before and after the step: kept, not added (as an
    addition it would be refused for its name)."""
    cfg = obj("v1", "ConfigMap", "cfg", data={"a": "b"})
    assert transformed([cfg], [dict(cfg)]) == []


def test_an_object_a_post_render_step_adds_without_a_namespace_is_judged_in_the_destination_namespace():
    """It lands in the destination namespace, where its selector matches the baseline's pods."""
    svc = obj("v1", "Service", "s-pr-7", spec={"selector": BASE})
    assert transformed([], [svc]) == [
        "(rule isolation): its selector matches the pods of baseline Deployment/db, so the flow's traffic would reach "
        "the baseline"]  # fmt: skip


@pytest.mark.parametrize("step", ["hook", "post-render"])
def test_an_object_naming_no_namespace_a_step_changed_is_its_own_in_the_final_invariants(step):
    """A step that changed the baseline's name-sake `cfg` (namespace unset) is named by the invariant it breaks, and
    told to rename the object, not the baseline."""
    cfg = obj("v1", "ConfigMap", "cfg", data={"a": "b"})
    new = obj("v1", "ConfigMap", "cfg", data={"a": "c"})

    def call(pol: OutputPolicy) -> None:
        if step == "hook":
            pol.hooked(caller(new), [cfg], [new])
        else:
            pol.transformed(caller(new), [cfg], [new])

    pol, problems = outcome(call)
    assert problems == []
    (problem,) = invariants.after_plugins(pol.model, DevSet(), [new], pol.owners)
    assert problem.message == ("isolation violated: dev ConfigMap/cfg (added or changed by plugin seed) reuses the "
                               "name of a baseline object")  # fmt: skip
    assert (problem.where.plugin, problem.hint) == ("seed", "rename the object for the flow (<name>-<flowId>)")


# -- a lifecycle hook's objects, one by one --------------------------------------------------------------------------


def test_a_hook_that_left_one_object_as_it_was_is_still_checked_on_the_next():
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": NS})
    assert hooked([cm, deployment()], [cm, deployment(pod=PRIVILEGED)]) == [HOST_NETWORK]


def test_a_hook_that_moved_one_object_is_still_checked_on_the_next():
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": NS})
    moved = obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": "kube-system"})
    problems = hook_problems([cm, deployment()], [moved, deployment(pod=PRIVILEGED)])
    assert [p.message.split(":")[0] for p in problems] == [
        "refused by the output policy (rule identity)",
        "refused by the output policy (rule privileged)",
    ]
    assert hooked([cm, deployment()], [moved, deployment(pod={"dnsPolicy": "Default"})]) == [
        "(rule identity): the lifecycle hook turned it into ConfigMap/c-pr-7 in namespace kube-system; a hook patches "
        "objects, it does not rename or move them"]  # fmt: skip


def test_a_hook_that_returns_an_object_it_was_not_given_is_never_accepted_unchecked():
    """A hook's objects pair one to one with those it was given: one more is an error, never an object left
    unchecked."""
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": NS})
    with pytest.raises(ValueError):
        hooked([cm], [cm, deployment(pod=PRIVILEGED)])


# -- a changed object that is no object ------------------------------------------------------------------------------


@pytest.mark.parametrize("step", ["hook", "post-render"])
def test_a_step_that_changed_an_object_into_no_object_is_refused_naming_it(step):
    """The kept object lost its apiVersion: no crash, a refusal that names the step, the object and what it lacks."""
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": NS})
    broken = {"kind": "ConfigMap", "metadata": {"name": "c-pr-7", "namespace": NS}}

    def call(pol: OutputPolicy) -> None:
        (pol.hooked if step == "hook" else pol.transformed)(caller(cm), [cm], [broken])

    (problem,) = outcome(call)[1]
    assert problem.message == "returned an object that has no apiVersion"
    assert (problem.where.object, problem.where.plugin, problem.code) == (
        "ConfigMap/c-pr-7 in namespace shop",
        "seed",
        "plugin-malformed",
    )
    assert problem.hint.startswith("return named Kubernetes objects (apiVersion, kind, metadata.name")


def test_a_changed_dev_copy_may_keep_the_labels_the_repository_gave_it_whatever_their_type():
    """A dev copy carries the repository's labels (`release: 2` in YAML is a number): changing its pods is no reason
    to refuse them, as an added object's would be."""
    before = deployment(labels={"app": "x", "release": 2})
    after = deployment(pod={"dnsPolicy": "Default"}, labels={"app": "x", "release": 2})
    assert transformed([before], [after]) == []
    assert hooked([before], [after]) == []
