"""The output policy (`renderer.render.plugins.output_policy`) where its survivors of mutation testing showed a gap
(issue 41): changes to dev copies that name no namespace (the destination's), each reference and selector said once
per object it reaches, a built-in's reach judged by the changed object's kind, the DNS names and routes that reach a
baseline Service, and what a malformed object's refusal says.

Each case checks the refusal (the rule and what it says, or the problem's code, object and hint) of one in-process
plugin call (`support.policy_lane`), or that the call is accepted.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from support.policy_lane import (
    BASE,
    FLOW,
    NS,
    OWN,
    RBAC,
    added,
    caller,
    hook_problems,
    hooked,
    obj,
    problems_of,
    said,
    transformed,
)

from renderer.errors import PluginError
from renderer.render.copies.dev_set import DevSet
from renderer.render.inputs.document import Document
from renderer.render.model.topology import build_model
from renderer.render.plugins.output_policy import OutputPolicy, _glob
from renderer.render.settings.grants import Grants
from renderer.render.settings.repo_config import PluginAllow
from renderer.render.settings.trust import Trusted

P = "spec.template.spec"
OWN_ONLY = "a plugin's objects reference only the flow's own (named <name>-pr-7, in its namespaces)"
PROD = PluginAllow(namespaces=("prod",))


def workload(name: str = "api-pr-7", labels: dict | None = None, kind: str = "Deployment", **pod) -> dict:
    """A workload of the flow naming no namespace (it lands in the destination's), its pod spec carrying `pod`."""
    labels = labels or {"app": name}
    api = "batch/v1" if kind == "Job" else "apps/v1"
    spec = {"template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "main"}], **pod}}}
    if kind != "Job":
        spec["selector"] = {"matchLabels": labels}
    else:
        spec["template"]["spec"]["restartPolicy"] = "Never"
    return obj(api, kind, name, spec=spec)


def binding(*accounts: str, namespace: str | None = None) -> dict:
    """A RoleBinding of the flow's Role to ServiceAccount `sa-pr-7` of each namespace of `accounts`."""
    meta = {"namespace": namespace} if namespace else {}
    return obj(
        RBAC,
        "RoleBinding",
        "rb-pr-7",
        meta=meta,
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r-pr-7"},
        subjects=[{"kind": "ServiceAccount", "name": "sa-pr-7", "namespace": ns} for ns in accounts],
    )


def elsewhere(ns: str) -> str:
    return (
        f"(rule rbac): it grants its rights to ServiceAccount sa-pr-7 of namespace {ns}, not to a ServiceAccount of "
        "the flow"
    )


def refused(path: str, what: str) -> str:
    return f"(rule reference): {path} names {what}: {OWN_ONLY}"


# -- a change to a dev copy that names no namespace: judged in the destination namespace ------------------------------

SELECTED = [
    f"(rule isolation): the selector of baseline {ref} matches its pods, so baseline traffic would reach them"
    for ref in ("Service/db", "Deployment/db", "Service/metrics")
]


def test_a_post_render_step_giving_a_dev_copy_baseline_labels_is_refused_in_the_destination_namespace():
    """The dev copy names no namespace: its pods land in the destination's, beside the baseline's."""
    assert transformed([workload()], [workload(labels=BASE)]) == [
        *SELECTED,
        (
            "(rule reference): spec.selector selects the pods of baseline Deployment/db: a plugin's selectors match "
            "only the flow's own"
        ),
    ]


def test_a_change_that_keeps_what_a_dev_copy_inherited_in_the_destination_namespace_is_accepted():
    """Baseline labels the copy already had are not the plugin's doing, wherever the copy lands."""
    assert transformed([workload(labels=BASE)], [workload(labels=BASE, hostPID=False)]) == []


def test_a_dev_copy_changed_to_mount_a_baseline_claim_is_refused_for_isolation():
    mounts = workload(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}])
    found = transformed([workload()], [mounts])
    assert found == ["(rule isolation): its pods mount the baseline PersistentVolumeClaim data"]


def test_an_added_workload_mounting_a_baseline_claim_is_refused_for_isolation_and_its_other_references_still_checked():
    """The claim is said once (isolation); a reference after it is still followed."""
    found = added(
        workload(
            "w-pr-7",
            OWN,
            volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
            containers=[{"name": "main", "envFrom": [{"configMapRef": {"name": "cfg"}}]}],
        )
    )
    assert found == [
        "(rule isolation): its pods mount the baseline PersistentVolumeClaim data",
        refused(f"{P}.containers[main].envFrom[0].configMapRef", "the baseline ConfigMap/cfg"),
    ]


@pytest.mark.parametrize(("source", "said_"), [
    ({"configMapRef": {"name": "cfg"}}, refused(f"{P}.containers[main].envFrom[0].configMapRef",
                                                 "the baseline ConfigMap/cfg")),
    ({"secretRef": {"name": "cfg"}}, None),  # no Secret cfg in the repository (a ConfigMap is no Secret)
    ({"configMapRef": {"name": "creds"}}, None),  # nor a ConfigMap creds
])  # fmt: skip
def test_a_dev_copy_pointed_at_the_repositorys_own_object_of_that_kind_is_refused_and_out_of_band_accepted(
    source, said_
):
    """In the destination namespace: the baseline's ConfigMap `cfg` is the repository's; a Secret of that name (or a
    ConfigMap named like the baseline Secret) is provisioned out of band."""
    after = workload(containers=[{"name": "main", "envFrom": [source]}])
    assert transformed([workload()], [after]) == ([] if said_ is None else [said_])


def test_a_changed_binding_to_another_namespaces_account_is_refused_for_the_account_it_adds():
    assert transformed([binding()], [binding("prod")]) == [elsewhere("prod")]
    assert transformed([binding("prod")], [binding("prod", "qa")]) == [elsewhere("qa")]
    assert transformed([binding("prod")], [binding("prod")]) == []


def test_a_changed_role_naming_the_flows_objects_is_accepted_and_one_naming_others_refused():
    def role(*names: str) -> dict:
        return obj(
            RBAC,
            "Role",
            "r-pr-7",
            rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": list(names)}],
        )

    assert transformed([role("a-pr-7")], [role("a-pr-7", "b-pr-7")]) == []
    assert transformed([role("a-pr-7")], [role("a-pr-7", "cfg")]) == [
        "(rule rbac): rules[0] names cfg, not objects of the flow"
    ]


def test_a_binding_in_a_namespace_not_the_flows_is_refused_for_its_namespace_and_its_own_accounts_are_not_elsewhere():
    """Its accounts live where it does: the namespace rule refuses it, no second refusal for the accounts."""
    assert added(binding("prod", namespace="prod")) == ["(rule namespace): namespace prod is not the flow's (shop)"]


# -- a built-in's reach is judged by the kind of the object it changed -------------------------------------------------


def test_a_built_in_changing_its_job_may_reach_what_it_reaches_when_adding_it():
    job = partial(workload, "empty-pr-7", kind="Job")
    reach = dict(plugin="aws-s3", builtin=True)
    assert transformed([job()], [job(serviceAccountName="api-sa")], **reach) == []
    assert hooked([job()], [job(serviceAccountName="api-sa")], **reach) == []
    assert transformed([job()], [job(serviceAccountName="api-sa")]) == [
        refused(f"{P}.serviceAccountName", "the baseline ServiceAccount/api-sa")
    ]


def test_a_built_in_without_a_reach_of_its_own_is_refused_like_any_plugin():
    hpa = obj(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "h-pr-7",
        spec={"scaleTargetRef": {"kind": "Deployment", "name": "db"}},
    )
    assert added(hpa, plugin="helm", builtin=True) == [refused("spec.scaleTargetRef", "the baseline Deployment/db")]


def test_a_built_in_reaches_a_selector_under_a_field_it_reaches():
    """A field its reach lists covers what is under it, a selector too (a trusted kind read by its keys)."""
    env = {"name": "E", "valueFrom": {"secretKeyRef": {"selector": BASE}}}
    widget = obj("example.com/v1", "Widget", "w-pr-7", spec={"containers": [{"name": "c", "env": [env]}]})
    trusted = PluginAllow(kinds=("example.com/Widget",))
    assert added(widget, allow=trusted, plugin="stripe", builtin=True) == []
    assert added(widget, allow=trusted, plugin="stripe") == [
        "(rule reference): spec.containers[0].env[0].valueFrom.secretKeyRef.selector selects the pods of baseline "
        "Deployment/db: a plugin's selectors match only the flow's own"
    ]


@pytest.mark.parametrize(("pattern", "text"), [("Job", "Job.x"), ("*", "a.b"), ("Job", "Job[0]")])
def test_a_built_in_reach_pattern_matches_no_parent_unless_asked(pattern, text):
    assert _glob(pattern, text) is False
    assert _glob(pattern, text, parents=True) is True


# -- each reference and selector is said once per object it reaches ---------------------------------------------------


def test_each_object_a_workload_names_outside_the_flow_is_refused_on_its_own():
    found = added(
        workload(
            "w-pr-7",
            OWN,
            containers=[{"name": "main", "envFrom": [{"secretRef": {"name": "a"}}, {"configMapRef": {"name": "b"}}]}],
        )
    )
    assert found == [
        refused(f"{P}.containers[main].envFrom[{i}].{field}", f"{what}, which is not an object of the flow")
        for i, (field, what) in enumerate((("secretRef", "Secret/a"), ("configMapRef", "ConfigMap/b")))
    ]


def test_one_name_in_two_namespaces_not_the_flows_is_refused_in_each():
    route = obj(
        "gateway.networking.k8s.io/v1",
        "HTTPRoute",
        "r-pr-7",
        spec={"rules": [{"backendRefs": [{"name": "x", "namespace": "prod"}, {"name": "x", "namespace": "qa"}]}]},
    )
    assert added(route) == [
        refused(f"spec.rules[0].backendRefs[{i}]", f"Service/x in namespace {ns}, which is not the flow's")
        for i, ns in enumerate(("prod", "qa"))
    ]


def affinity(*terms: dict) -> dict:
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


def term(labels: dict, *namespaces: str) -> dict:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": "k"} | (
        {"namespaces": list(namespaces)} if namespaces else {}
    )


AFFINITY = f"{P}.affinity.podAffinity.required"


def test_each_selector_over_another_namespace_is_refused_and_names_every_namespace_it_reaches():
    assert added(workload("w-pr-7", OWN, **affinity(term(OWN, "prod"), term(OWN, "qa", "dev")))) == [
        f"(rule reference): {AFFINITY}[0].labelSelector selects pods of namespace prod, not only the flow's namespaces",
        f"(rule reference): {AFFINITY}[1].labelSelector selects pods of namespace qa, dev, not only the flow's "
        "namespaces",
    ]
    monitor = obj(
        "monitoring.coreos.com/v1",
        "ServiceMonitor",
        "m-pr-7",
        spec={"selector": {"matchLabels": OWN}, "namespaceSelector": {"matchNames": ["prod", "qa"]}},
    )
    assert added(monitor) == [
        "(rule reference): spec.selector selects Services of namespace prod, qa, not only the flow's namespaces"
    ]


def test_each_selector_devlane_cannot_read_is_refused():
    spread = [{"labelSelector": {"matchLabels": value}, "topologyKey": "k"} for value in ("a", "b")]
    assert added(workload("w-pr-7", OWN, topologySpreadConstraints=spread)) == [
        f"(rule reference): {P}.topologySpreadConstraints[{i}].labelSelector is no label selector devlane can read, so "
        "it cannot tell which pods it selects"
        for i in (0, 1)
    ]


def test_each_baseline_a_workloads_selectors_match_is_refused():
    """Deployment/db's pods in the flow's namespace, Deployment/orders' in `prod` (which the trusted policy lists)."""
    found = added(workload("w-pr-7", OWN, **affinity(term(BASE), term({"app": "orders"}, "prod"))), allow=PROD)
    assert found == [
        f"(rule reference): {AFFINITY}[{i}].labelSelector selects the pods of baseline {ref}: a plugin's selectors "
        "match only the flow's own"
        for i, ref in enumerate(("Deployment/db", "Deployment/orders"))
    ]


# -- the DNS names and routes that reach a baseline Service ------------------------------------------------------------


def reaches(name: str = "db", namespace: str = NS) -> str:
    return f"(rule isolation): it sends traffic or endpoints to the baseline Service {name} in namespace {namespace}"


@pytest.mark.parametrize(("host", "service"), [
    ("orders.prod.example.com", None),  # outside the cluster, however it starts
    ("db.shop.example.com", None),
    ("orders.prod.pod.svc", ("orders", "prod")),  # under the cluster domain: name and namespace first
    ("db.shop.x.svc.cluster.local", ("db", NS)),
    (5, None), (["db"], None), ({"name": "db"}, None),  # no DNS name
])  # fmt: skip
def test_an_external_name_reaches_a_baseline_service_only_by_a_name_of_the_cluster(host, service):
    alias = obj("v1", "Service", "a-pr-7", spec={"type": "ExternalName", "externalName": host})
    assert added(alias) == ([reaches(*service)] if service else [])


@pytest.mark.parametrize("thing", [
    obj("serving.knative.dev/v1", "Service", "k-pr-7", spec={"type": "ExternalName", "externalName": "db"}),
    obj("v1", "ConfigMap", "c-pr-7", spec={"type": "ExternalName", "externalName": "db"}),
], ids=["knative-service", "configmap"])  # fmt: skip
def test_only_a_core_service_is_an_external_name(thing):
    """A Knative Service (or any other kind) carrying the fields routes nothing to that name."""
    assert added(thing, allow=PluginAllow(kinds=("serving.knative.dev/Service",))) == []


# -- a baseline of this file's own: no destination namespace, objects that are no Services, odd names -----------------


def refusals(baseline: list[dict], namespace: str | None, before: list[dict], after: list[dict], **kw) -> list[str]:
    """The refusals of a post-render step turning `before` into `after` beside `baseline` (destination
    `namespace`)."""
    model = build_model([Document(o, "app.yaml", i) for i, o in enumerate(baseline)], namespace)
    pol = OutputPolicy(model, DevSet(), FLOW, Grants(Trusted({}), {}, Path("/no-repo")))
    try:
        pol.transformed(caller(*after, **kw), before, after)
    except PluginError as e:
        return said(e.problems)
    return []


def test_without_a_destination_namespace_a_baseline_service_reached_is_said_without_one():
    db = obj("v1", "Service", "db", spec={"selector": BASE})
    endpoints = obj(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        "e-pr-7",
        meta={"labels": {"kubernetes.io/service-name": "db"}},
        addressType="IPv4",
        endpoints=[],
    )
    assert refusals([db], None, [], [endpoints]) == [
        "(rule isolation): it sends traffic or endpoints to the baseline Service db"
    ]


def test_a_selector_of_services_matches_baseline_services_only():
    """A ConfigMap or a Knative Service carrying the labels is no Service a ServiceMonitor scrapes."""
    labels = {"team": "x"}
    baseline = [
        obj("v1", "ConfigMap", "c", meta={"labels": labels}),
        obj("serving.knative.dev/v1", "Service", "k", meta={"labels": labels}, spec={}),
    ]
    monitor = obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={"selector": {"matchLabels": labels}})
    assert refusals(baseline, NS, [], [monitor]) == []
    service = obj("v1", "Service", "s", meta={"labels": labels}, spec={"selector": BASE})
    assert refusals([*baseline, service], NS, [], [monitor]) == [
        "(rule reference): spec.selector selects the Services of baseline Service/s: a plugin's selectors match only "
        "the flow's own"
    ]


def test_a_backend_named_by_no_string_reaches_no_service():
    """The API server refuses a backend whose name is no string: it routes to nothing, whatever the repository holds."""
    ingress = obj(
        "networking.k8s.io/v1",
        "Ingress",
        "i-pr-7",
        spec={"defaultBackend": {"service": {"name": 5, "port": {"number": 80}}}},
    )
    assert refusals([obj("v1", "Service", "5", spec={"selector": BASE})], NS, [], [ingress]) == []


def test_a_baseline_named_with_a_colon_is_said_once_by_isolation():
    """A baseline claim or workload named `x:y` (read as the repository holds it): the isolation refusal names it, and
    the reference that reaches it is not refused a second time."""
    claim = obj("v1", "PersistentVolumeClaim", "data:v1", spec={})
    mounts = workload("w-pr-7", OWN, volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data:v1"}}])
    assert refusals([claim], NS, [], [mounts]) == [
        "(rule isolation): its pods mount the baseline PersistentVolumeClaim data:v1"
    ]
    pods = workload("db:v1", BASE)
    service = obj("v1", "Service", "s-pr-7", spec={"selector": BASE})
    assert refusals([pods], NS, [], [service]) == [
        "(rule isolation): its selector matches the pods of baseline Deployment/db:v1, so the flow's traffic would "
        "reach the baseline"
    ]


def test_a_service_selector_devlane_cannot_read_is_refused():
    """No baseline pod is known to match it, so isolation says nothing: the reference rule refuses it."""
    assert added(obj("v1", "Service", "s-pr-7", spec={"selector": {"app": ["db"]}})) == [
        "(rule reference): spec.selector is no label selector devlane can read, so it cannot tell which pods it selects"
    ]


# -- what a malformed object's refusal says ----------------------------------------------------------------------------

HINT = (
    "return named Kubernetes objects (apiVersion, kind, metadata.name; labels and annotations map strings to strings)"
)


def test_a_malformed_object_is_refused_naming_it_and_how_to_return_one():
    (problem,) = problems_of(obj("v1", "ConfigMap", "c-pr-7", meta={"labels": {"a": 1}}))
    assert problem.message == "returned an object that has metadata.labels that is not a map of strings"
    assert (problem.code, problem.hint, problem.where.object, problem.where.plugin) == (
        "plugin-malformed",
        HINT,
        "ConfigMap/c-pr-7 in namespace shop",
        "seed",
    )


def test_an_object_a_hook_leaves_malformed_is_refused_naming_the_object_it_was():
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": NS})
    (problem,) = hook_problems([cm], [{k: v for k, v in cm.items() if k != "apiVersion"}])
    assert (problem.message, problem.code, problem.hint, problem.where.object) == (
        "returned an object that has no apiVersion",
        "plugin-malformed",
        HINT,
        "ConfigMap/c-pr-7 in namespace shop",
    )


def test_a_name_spelled_like_another_namespaces_reference_does_not_hide_it():
    """Found by the mutation test (issue 41): a finding's key was `ref:<name>`, plus ` in namespace <ns>` only
    outside the object's own, so a backend named `x in namespace prod` in the object's namespace keyed like
    Service x of namespace prod, and a step that added the second beside the first was accepted."""

    def route(*refs: dict) -> dict:
        return obj("gateway.networking.k8s.io/v1", "HTTPRoute", "r-pr-7", spec={"rules": [{"backendRefs": list(refs)}]})

    forged, real = {"name": "x in namespace prod"}, {"name": "x", "namespace": "prod"}
    assert transformed([route()], [route(real)]) == [
        refused("spec.rules[0].backendRefs[0]", "Service/x in namespace prod, which is not the flow's")]
    assert transformed([route(forged)], [route(forged, real)]) == [
        refused("spec.rules[0].backendRefs[1]", "Service/x in namespace prod, which is not the flow's")]
