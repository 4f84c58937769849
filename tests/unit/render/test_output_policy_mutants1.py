"""The output policy (`renderer.render.plugins.output_policy`) where its siblings' tests left a guard unchecked
(issue 41, surviving mutants): a change adding a second item of what its object already broke is refused for that
item (each finding is told apart by what it is about), the pod templates of kinds devlane does not model, a Pod of
another API group, and the names that only look like a flow's.

Each case checks the refusal of one in-process plugin call (`support.policy_lane`), or that it is accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.policy_lane import (
    FLOW,
    NS,
    OWN,
    RBAC,
    added,
    caller,
    flow_deployment,
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
from renderer.render.plugins.output_policy import OutputPolicy
from renderer.render.settings.grants import Grants
from renderer.render.settings.repo_config import PluginAllow
from renderer.render.settings.trust import Trusted

P = "spec.template.spec"  # where a Deployment keeps its pod spec
RBAC_GROUP = "rbac.authorization.k8s.io"
ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
OWN_ACCOUNT = {"kind": "ServiceAccount", "name": "sa-pr-7"}


def deployment(containers: list[dict] | None = None, annotations: dict | None = None, **pod) -> dict:
    """A Deployment of the flow: its pod spec `pod` with `containers` (one plain container `c` unless given)."""
    return flow_deployment(containers, annotations, **pod)


def binding(*subjects: dict, ref: dict | None = None) -> dict:
    return obj(
        RBAC, "RoleBinding", "rb-pr-7", roleRef=ref or own_role("r-pr-7"), subjects=list(subjects) or [OWN_ACCOUNT]
    )


def role(*rules: dict) -> dict:
    return obj(RBAC, "Role", "r-pr-7", rules=list(rules))


def rule(resources: list[str], verbs: list[str], groups: tuple[str, ...] = ("",), **more) -> dict:
    return {"apiGroups": list(groups), "resources": resources, "verbs": verbs, **more}


def container(name: str, **more) -> dict:
    return {"name": name, **more}


def ctx(name: str, security: dict) -> dict:
    return container(name, securityContext=security)


def cluster_role(name: str) -> dict:
    return {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name}


def own_role(name: str) -> dict:
    return {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name}


def user(kind: str, name: str) -> dict:
    return {"kind": kind, "name": name, "apiGroup": RBAC_GROUP}


WIDE = rule(["configmaps"], ["*"])
URLS = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
C = f"{P}.containers"

# (what the object carried before, what the call made of it, the one refusal: what it added beside it)
SECOND = {
    "secret value": (
        obj("v1", "Secret", "s-pr-7", data={"a": "Yg=="}),
        obj("v1", "Secret", "s-pr-7", data={"a": "Yg=="}, stringData={"b": "c"}),
        "(rule secrets): a Secret carrying stringData would be written to git in plain text",
    ),
    "cluster role bound": (
        binding(ref=cluster_role("view")),
        binding(ref=cluster_role("edit")),
        "(rule rbac): it binds ClusterRole edit, whose rights are defined for the whole cluster, not by the flow",
    ),
    "role not the flow's bound": (
        binding(ref=own_role("admin")),
        binding(ref=own_role("owner")),
        "(rule rbac): it binds Role owner, which is not the flow's (its rights were not set by this flow)",
    ),
    "wide subject": (
        binding(user("Group", "system:authenticated")),
        binding(user("Group", "system:authenticated"), user("User", "system:anonymous")),
        "(rule rbac): it grants its rights to every system:anonymous",
    ),
    "subject not the flow's": (
        binding(user("User", "alice")),
        binding(user("User", "alice"), user("User", "bob")),
        "(rule rbac): it grants its rights to User bob, not to a ServiceAccount of the flow",
    ),
    "subject of another kind, same name": (
        binding(user("User", "devs")),
        binding(user("User", "devs"), user("Group", "devs")),
        "(rule rbac): it grants its rights to Group devs, not to a ServiceAccount of the flow",
    ),
    "wide rule": (role(WIDE), role(WIDE, WIDE), "(rule rbac): rules[1] grants verbs *"),
    "non-resource rule": (
        role(URLS),
        role(URLS, URLS),
        "(rule rbac): rules[1] grants non-resource URLs, which are the cluster's",
    ),
    "foreign names": (
        role(rule(["secrets"], ["get"], resourceNames=["creds"])),
        role(rule(["secrets"], ["get"], resourceNames=["creds"]), rule(["configmaps"], ["get"], resourceNames=["cfg"])),
        "(rule rbac): rules[1] names cfg, not objects of the flow",
    ),
    "rule without names": (
        role(rule(["configmaps"], ["get"])),
        role(rule(["configmaps"], ["get"]), rule(["secrets"], ["get"])),
        "(rule rbac): rules[1] reaches every Secret of the namespace, not only the flow's objects (list their names "
        "in resourceNames)",
    ),
    "reach": (
        role(rule(["pods"], ["create"])),
        role(rule(["pods"], ["create"]), rule(["jobs"], ["create"], ("batch",))),
        "(rule rbac): rules[1] grants create on jobs.batch, which starts pods that may mount any Secret of the "
        "namespace and run as any of its ServiceAccounts",
    ),
    "privileged": (
        deployment([ctx("a", {"privileged": True})]),
        deployment([ctx("a", {"privileged": True}), ctx("b", {"privileged": True})]),
        f"(rule privileged): {C}[b].securityContext.privileged is true",
    ),
    "host process": (
        deployment([ctx("a", {"windowsOptions": {"hostProcess": True}})]),
        deployment(
            [ctx("a", {"windowsOptions": {"hostProcess": True}}), ctx("b", {"windowsOptions": {"hostProcess": True}})]
        ),
        f"(rule privileged): {C}[b].securityContext runs as a Windows host process",
    ),
    "unconfined profile": (
        deployment([ctx("a", {"seccompProfile": {"type": "Unconfined"}})]),
        deployment(
            [ctx("a", {"seccompProfile": {"type": "Unconfined"}}), ctx("b", {"seccompProfile": {"type": "Unconfined"}})]
        ),
        f"(rule privileged): {C}[b].securityContext.seccompProfile is Unconfined",
    ),
    "selinux": (
        deployment([ctx("a", {"seLinuxOptions": {"user": "root"}})]),
        deployment([ctx("a", {"seLinuxOptions": {"user": "root"}}), ctx("b", {"seLinuxOptions": {"user": "root"}})]),
        f"(rule privileged): {C}[b].securityContext.seLinuxOptions sets a custom user, role or type",
    ),
    "proc mount": (
        deployment([ctx("a", {"procMount": "Unmasked"})]),
        deployment([ctx("a", {"procMount": "Unmasked"}), ctx("b", {"procMount": "Unmasked"})]),
        f"(rule privileged): {C}[b].securityContext.procMount is Unmasked",
    ),
    "capability": (
        deployment([ctx("a", {"capabilities": {"add": ["SYS_ADMIN"]}})]),
        deployment(
            [ctx("a", {"capabilities": {"add": ["SYS_ADMIN"]}}), ctx("b", {"capabilities": {"add": ["SYS_ADMIN"]}})]
        ),
        f"(rule privileged): {C}[b].securityContext.capabilities.add has SYS_ADMIN",
    ),
    "object key in the pod spec": (
        deployment(status={}),
        deployment(status={}, namespace="kube-system"),
        f"(rule metadata): {P}.namespace: a pod spec has no namespace; a plugin may not set a pod's metadata through "
        "it",
    ),
    "host path": (
        deployment(volumes=[{"name": "a", "hostPath": {"path": "/etc"}}]),
        deployment(volumes=[{"name": "a", "hostPath": {"path": "/etc"}}, {"name": "b", "hostPath": {"path": "/var"}}]),
        "(rule privileged): volume b mounts the node's /var",
    ),
    "host port": (
        deployment([container("a", ports=[{"hostPort": 80}])]),
        deployment([container("a", ports=[{"hostPort": 80}]), container("b", ports=[{"hostPort": 81}])]),
        f"(rule privileged): {C}[b] binds host port(s) [81]",
    ),
    "apparmor annotation": (
        deployment(annotations={f"{ANNOTATION}a": "unconfined"}),
        deployment(annotations={f"{ANNOTATION}a": "unconfined", f"{ANNOTATION}b": "unconfined"}),
        f"(rule privileged): spec.template.metadata.annotations.{ANNOTATION}b is unconfined",
    ),
    "server-set metadata": (
        obj("v1", "ConfigMap", "c-pr-7", meta={"finalizers": ["x"]}),
        obj("v1", "ConfigMap", "c-pr-7", meta={"finalizers": ["x"], "ownerReferences": [{"kind": "Pod", "name": "p"}]}),
        "(rule metadata): metadata.ownerReferences is set: owner references, finalizers and server-set fields are the "
        "cluster's, not a plugin's",
    ),
}


@pytest.mark.parametrize("case", sorted(SECOND))
def test_a_change_adding_a_second_item_of_what_the_object_already_broke_is_refused_for_it(case):
    """What a dev copy inherited is not the plugin's doing, but a sibling it adds beside it (another container,
    subject, rule, volume, key) is: each is told apart, never taken for the one the object already had."""
    before, after, refusal = SECOND[case]
    assert transformed([before], [after]) == [refusal]
    assert hooked([before], [after]) == [refusal]
    assert transformed([before], [before]) == []


def test_a_hook_that_moves_a_pod_spec_to_where_another_group_keeps_it_is_checked_there():
    """A ScaledJob of another API group is no KEDA ScaledJob: its pod spec is read at `spec.template.spec`, and
    what it carries there is new, whatever the KEDA one carried at its job target."""
    sysctls = {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}, "containers": [{"name": "c"}]}
    keda = obj("keda.sh/v1alpha1", "ScaledJob", "j-pr-7", spec={"jobTargetRef": {"template": {"spec": sysctls}}})
    other = obj("example.com/v1", "ScaledJob", "j-pr-7", spec={"template": {"spec": sysctls}})
    assert hooked([keda], [other]) == [f"(rule privileged): {P}.securityContext.sysctls sets kernel.msgmax"]
    assert hooked([other], [{**other, "metadata": {**other["metadata"], "labels": OWN}}]) == []


def test_a_container_that_is_no_object_does_not_hide_the_containers_after_it():
    pod = deployment(["sidecar", ctx("b", {"privileged": True})])
    assert added(pod) == [f"(rule privileged): {C}[b].securityContext.privileged is true"]


# -- pod templates of kinds devlane does not model -----------------------------------------------------------------

TRUSTED = {"Widget": PluginAllow(kinds=("example.com/Widget",)), "CronJob": PluginAllow(kinds=("example.com/CronJob",))}
TEMPLATE = {"metadata": {"labels": OWN, "namespace": "kube-system"}, "spec": {"containers": [{"name": "c"}]}}


@pytest.mark.parametrize(("kind", "spec", "at"), [
    ("Widget", {"template": TEMPLATE}, "spec.template"),
    ("CronJob", {"jobTemplate": {"spec": {"template": TEMPLATE}}}, "spec.jobTemplate.spec.template"),
])  # fmt: skip
def test_the_pod_template_of_a_kind_the_trusted_policy_lists_is_checked_where_it_keeps_it(kind, spec, at):
    """A kind of another API group (a `CronJob` of `example.com`) keeps its template where its kind says: the
    refusal names the field the plugin must drop."""
    found = added(obj("example.com/v1", kind, "w-pr-7", spec=spec), allow=TRUSTED[kind])
    assert found == [
        f"(rule metadata): {at}.metadata.namespace is set: a pod template carries only labels and "
        "annotations (a pod may not move namespace or take owners and finalizers)"
    ]


def test_a_pods_other_keys_are_no_pod_template():
    """A Pod's metadata is its own: no other key of it is read as a template (a key `""` included)."""
    pod = obj("v1", "Pod", "p-pr-7", spec={"containers": [{"name": "c"}]})
    assert added({**pod, "": {"metadata": {"namespace": "kube-system"}}}) == []


def open_policy() -> OutputPolicy:
    """Flow `pr-7` beside a baseline Deployment whose selector requires no label (it matches pods that carry none)."""
    unlabelled = {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}
    base = obj(
        "apps/v1",
        "Deployment",
        "any",
        spec={"selector": unlabelled, "template": {"metadata": {}, "spec": {"containers": [{"name": "c"}]}}},
    )
    return OutputPolicy(
        build_model([Document(base, "app.yaml", 0)], NS), DevSet(), FLOW, Grants(Trusted({}), {}, Path("/no-repo"))
    )


def test_an_object_that_makes_no_pods_is_matched_by_no_selector_even_one_that_requires_no_label():
    pol = open_policy()
    pol.created(caller(cm := obj("v1", "ConfigMap", "c-pr-7", data={"a": "b"})), [], [cm], NS)
    with pytest.raises(PluginError) as refused:
        pol.created(caller(pod := deployment()), [], [pod], NS)  # pods without that label: the baseline's
    assert said(refused.value.problems) == [
        "(rule isolation): the selector of baseline Deployment/any matches its "
        "pods, so baseline traffic would reach them"
    ]


# -- metadata and a Pod of another API group ------------------------------------------------------------------------


def test_an_apparmor_annotation_is_a_pods_only_not_any_core_objects():
    assert added(obj("v1", "ConfigMap", "c-pr-7", meta={"annotations": {f"{ANNOTATION}c": "unconfined"}})) == []


def test_a_pods_unconfining_annotation_is_refused_beside_its_server_set_fields():
    pod = obj(
        "v1",
        "Pod",
        "p-pr-7",
        meta={"finalizers": ["x"], "annotations": {f"{ANNOTATION}c": "unconfined"}},
        spec={"containers": [{"name": "c"}]},
    )
    assert added(pod) == [
        "(rule metadata): metadata.finalizers is set: owner references, finalizers and server-set fields are the "
        "cluster's, not a plugin's",
        f"(rule privileged): metadata.annotations.{ANNOTATION}c is unconfined",
    ]


def test_a_pod_of_another_api_group_the_trusted_policy_lists_is_checked_at_its_spec():
    pod = obj("example.com/v1", "Pod", "p-pr-7", spec={"hostNetwork": True, "containers": [{"name": "c"}]})
    assert added(pod, allow=PluginAllow(kinds=("example.com/Pod",))) == [
        "(rule privileged): spec.hostNetwork is true (the node's namespace)"
    ]


# -- names ----------------------------------------------------------------------------------------------------------


def test_a_name_that_is_only_the_flows_suffix_names_no_object_of_the_flow():
    """`-pr-7` ends with `-pr-7` but has no name before it."""
    assert added(role(rule(["secrets"], ["get"], resourceNames=[f"-{FLOW}"]))) == [
        f"(rule rbac): rules[0] names -{FLOW}, not objects of the flow"
    ]


def test_a_name_not_for_the_flow_says_how_devlane_names_a_plugins_objects():
    (problem,) = problems_of(obj("v1", "ConfigMap", "cfg"))
    assert problem.message == (
        "refused by the output policy (rule flow-name): cfg is not named for flow pr-7: a "
        "plugin's objects are named <name>-pr-7, as devlane names dev objects"
    )
    assert problem.hint.startswith("append -<flowId> to the name")
