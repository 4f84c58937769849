"""Every guard of the output policy (`renderer.render.plugins.output_policy`) on each of its siblings (issue 41 point
3): one case per item of every list the policy checks (each RBAC resource and verb a Role may not grant, each
wide verb and subject, each Pod Security Standards field at the pod and at each container list, each allowed
capability, sysctl and SELinux type, each metadata key, each Service field, each `*List`, each cluster-scoped kind,
each route kind a baseline Service is reached through, each switch, each built-in's reach, each rule's hint).

The lists are this file's own, never imported from devlane: dropping an item from devlane's fails a case here. Each
case checks the refusal (the rule and what it says) of one in-process plugin call (`support.policy_lane`), or that
the call is accepted; none reads devlane's own report of what it did.
"""

from __future__ import annotations

import pytest
from support.policy_lane import (
    BASE,
    FLOW,
    NS,
    OWN,
    RBAC,
    added,
    changed,
    hook_problems,
    hooked,
    obj,
    problems_of,
    transformed,
)

from renderer.render.plugins.output_policy import _glob, content_findings, list_findings, name_findings
from renderer.render.settings.repo_config import PluginAllow

P = "spec.template.spec"  # where a Deployment keeps its pod spec
RBAC_GROUP = "rbac.authorization.k8s.io"


def deployment(pod: dict | None = None, labels: dict | None = None, template_meta: dict | None = None,
               name: str = "x-pr-7") -> dict:
    """A Deployment of the flow whose pod spec is `pod` (one plain container `c` unless `pod` says otherwise)."""
    labels = labels or OWN
    return obj("apps/v1", "Deployment", name, spec={"selector": {"matchLabels": labels}, "template": {
        "metadata": {"labels": labels, **(template_meta or {})}, "spec": {"containers": [{"name": "c"}],
                                                                         **(pod or {})}}})


def role(*rules: dict, kind: str = "Role") -> dict:
    return obj(RBAC, kind, "r-pr-7", rules=list(rules))


def rule(resources: list[str], verbs: list[str], groups: tuple[str, ...] = ("",), names: list | None = None) -> dict:
    out: dict = {"apiGroups": list(groups), "resources": resources, "verbs": verbs}
    if names is not None:
        out["resourceNames"] = names
    return out


def binding(*subjects: dict, ref: dict | None = None, kind: str = "RoleBinding") -> dict:
    return obj(RBAC, kind, "rb-pr-7", roleRef=ref or {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "r-pr-7"},
               subjects=list(subjects))


# -- RBAC: what a Role may never grant, each (group, resource) and each verb -------------------------------------------

STARTS = "starts pods that may mount any Secret of the namespace and run as any of its ServiceAccounts"
SHELL = "opens a shell or a port in pods, which hold the Secrets and tokens they mount"
WRITE = ("create", "update", "patch")
WORKLOADS = {
    "": ("pods", "replicationcontrollers"), "apps": ("deployments", "replicasets", "statefulsets", "daemonsets"),
    "batch": ("jobs", "cronjobs"), "argoproj.io": ("rollouts", "workflows", "cronworkflows"),
    "serving.knative.dev": ("services", "configurations", "revisions"), "keda.sh": ("scaledjobs",),
    "batch.volcano.sh": ("jobs",), "jobset.x-k8s.io": ("jobsets",), "leaderworkerset.x-k8s.io": ("leaderworkersets",),
    "kubeflow.org": ("pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", "paddlejobs", "jaxjobs", "notebooks"),
    "ray.io": ("rayclusters", "rayjobs", "rayservices"), "tekton.dev": ("taskruns", "pipelineruns"),
    "sparkoperator.k8s.io": ("sparkapplications", "scheduledsparkapplications"),
    "apps.kruise.io": ("clonesets", "statefulsets", "daemonsets", "broadcastjobs", "advancedcronjobs"),
    "apps.openshift.io": ("deploymentconfigs",),
}
REACH: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    **{(group, r): (WRITE, STARTS) for group, found in WORKLOADS.items() for r in found},
    ("", "pods/exec"): (("create", "get"), SHELL),
    ("", "pods/attach"): (("create", "get"), SHELL),
    ("", "pods/portforward"): (("create", "get"), SHELL),
    ("", "pods/ephemeralcontainers"): (WRITE, "adds containers to running pods, with their Secrets and tokens"),
    ("", "serviceaccounts/token"): (("create",), "mints tokens of ServiceAccounts"),
    ("", "secrets"): (("create",), "mints tokens: the control plane fills a Secret of type "
                                   "kubernetes.io/service-account-token with a token of the account it names"),
    ("certificates.k8s.io", "certificatesigningrequests"): (("create",), "mints client certificates"),
}


def full(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


@pytest.mark.parametrize(("group", "resource"), sorted(REACH))
def test_a_role_never_grants_what_starts_pods_enters_them_or_mints_credentials(group, resource):
    """Each verb, whatever names the rule lists (the flow's own objects): a pod template written for the flow's
    workload mounts the namespace's Secrets all the same. The same resource of another group is another thing, and
    the other verbs reach only the objects named."""
    verbs, what = REACH[(group, resource)]
    for verb in verbs:
        for names in (["x-pr-7"], None):
            found = added(role(rule([resource], [verb], (group,), names)))
            assert found == [f"(rule rbac): rules[0] grants {verb} on {full(group, resource)}, which {what}"], names
    assert added(role(rule([resource], list(verbs), ("example.com",), ["x-pr-7"]))) == []
    others = ["delete", "list", "watch"] + [v for v in ("get", "create", "update", "patch") if v not in verbs]
    assert added(role(rule([resource], others, (group,), ["x-pr-7"]))) == []


def test_the_verbs_a_rule_grants_on_one_resource_are_said_together_and_each_rule_by_its_index():
    found = added(role(rule(["configmaps"], ["get"], names=["c-pr-7"]),
                       rule(["deployments"], ["patch", "update", "get", "create"], ("apps",), ["x-pr-7"]),
                       rule(["pods", "pods/exec"], ["create"], ("",))))
    assert found == [f"(rule rbac): rules[1] grants create, patch, update on deployments.apps, which {STARTS}",
                     f"(rule rbac): rules[2] grants create on pods, which {STARTS}",
                     f"(rule rbac): rules[2] grants create on pods/exec, which {SHELL}"]


@pytest.mark.parametrize(("field", "value"), [
    ("apiGroups", "*"), ("resources", "*"), ("verbs", "*"), ("verbs", "escalate"), ("verbs", "bind"),
    ("verbs", "impersonate"),
])  # fmt: skip
def test_a_wildcard_or_an_escalating_verb_is_refused_whatever_the_names(field, value):
    granted = {"apiGroups": [""], "resources": ["roles"], "verbs": ["get"], "resourceNames": ["r-pr-7"], field: [value]}
    assert added(role(granted)) == [f"(rule rbac): rules[0] grants {field} {value}"]


def test_every_wide_field_of_a_rule_is_said_and_escalating_names_are_no_wildcard_as_resources():
    assert added(role(rule(["*"], ["*", "bind", "escalate"], ("*",)))) == [
        "(rule rbac): rules[0] grants apiGroups *; resources *; verbs *, bind, escalate"]
    assert added(role(rule(["bind", "escalate", "impersonate"], ["get"], names=["r-pr-7"]))) == []


def test_non_resource_urls_are_the_clusters():
    assert added(role({"nonResourceURLs": ["/metrics"], "verbs": ["get"]})) == [
        "(rule rbac): rules[0] grants non-resource URLs, which are the cluster's"]


@pytest.mark.parametrize(("names", "foreign"), [
    (["creds"], "creds"),  # the baseline's Secret
    (["cfg"], "cfg"), (["x-pr-8"], "x-pr-8"), (["redis-shared"], "redis-shared"), (["pr-7"], "pr-7"),
    (["x-pr-7", "creds", "cfg"], "cfg, creds"),
])  # fmt: skip
def test_resource_names_name_only_the_flows_objects(names, foreign):
    assert added(role(rule(["secrets"], ["get"], names=names))) == [
        f"(rule rbac): rules[0] names {foreign}, not objects of the flow"]


def test_resource_names_of_the_flow_are_accepted():
    assert added(role(rule(["secrets", "configmaps"], ["get", "update", "delete"], names=["x-pr-7", "y-pr-7"]))) == []


@pytest.mark.parametrize("verb", ["get", "list", "watch", "update", "patch", "delete", "deletecollection"])
def test_a_rule_without_names_reaches_every_object_of_the_namespace(verb):
    assert added(role(rule(["services", "configmaps"], [verb]))) == [
        "(rule rbac): rules[0] reaches every configmaps, services of the namespace, not only the flow's objects (list "
        "their names in resourceNames)"]
    assert added(role(rule(["secrets"], [verb]))) == [
        "(rule rbac): rules[0] reaches every Secret of the namespace, not only the flow's objects (list their names "
        "in resourceNames)"]
    assert added(role(rule([], [verb]))) == [
        "(rule rbac): rules[0] reaches every object of the namespace, not only the flow's objects (list their names "
        "in resourceNames)"]


def test_creating_objects_reaches_nothing_that_exists_and_needs_no_names():
    assert added(role(rule(["configmaps", "services"], ["create"]), rule(["configmaps"], []))) == []
    assert added(role(rule(["configmaps"], ["create", "get"]))) == [
        "(rule rbac): rules[0] reaches every configmaps of the namespace, not only the flow's objects (list their "
        "names in resourceNames)"]


@pytest.mark.parametrize(("group", "resource"), [
    ("", "pods/eviction"), ("", "pods/binding"), ("", "pods/status"), ("", "pods/log"), ("", "pods/proxy"),
    ("", "services/proxy"), ("apps", "deployments/scale"), ("apps", "statefulsets/scale"),
    ("", "serviceaccounts/token"), ("", "pods/exec"), ("", "pods/attach"), ("", "pods/portforward"),
    ("", "pods/ephemeralcontainers"),
])  # fmt: skip
def test_creating_on_a_subresource_acts_on_an_object_that_exists_and_needs_its_name(group, resource):
    """`create` on a subresource (`pods/exec`, `serviceaccounts/token`, an eviction, a scale...) acts on the object it
    belongs to: never granted on the whole namespace."""
    found = added(role(rule([resource], ["create"], (group,))))
    assert len(found) == 1 and found[0].startswith("(rule rbac): rules[0] "), found
    if (group, resource) not in REACH:
        assert found == [f"(rule rbac): rules[0] reaches every {resource} of the namespace, not only the flow's "
                         "objects (list their names in resourceNames)"]
        assert added(role(rule([resource], ["create"], (group,), ["x-pr-7"]))) == []


def test_a_cluster_role_is_held_to_the_same_rules():
    allow = PluginAllow(frozenset({"clusterScoped"}))
    assert added(role(rule(["pods"], ["create"]), kind="ClusterRole"), allow=allow) == [
        f"(rule rbac): rules[0] grants create on pods, which {STARTS}"]
    assert added(role(rule(["secrets"], ["get"], names=["x-pr-7"]), kind="ClusterRole"), allow=allow) == []


# -- RBAC: bindings ---------------------------------------------------------------------------------------------------

OWN_ACCOUNT = {"kind": "ServiceAccount", "name": "sa-pr-7"}


@pytest.mark.parametrize("group", ["system:authenticated", "system:unauthenticated", "system:serviceaccounts"])
def test_a_binding_to_every_user_or_account_is_refused(group):
    subject = {"kind": "Group", "name": group, "apiGroup": RBAC_GROUP}
    assert added(binding(subject)) == [f"(rule rbac): it grants its rights to every {group}"]


def test_a_binding_to_the_anonymous_user_is_refused():
    assert added(binding({"kind": "User", "name": "system:anonymous"})) == [
        "(rule rbac): it grants its rights to every system:anonymous"]


@pytest.mark.parametrize(("subject", "who"), [
    ({"kind": "User", "name": "mallory-pr-7", "apiGroup": RBAC_GROUP}, "User mallory-pr-7"),
    ({"kind": "User", "name": "mallory-pr-7", "namespace": "kube-system"}, "User mallory-pr-7"),
    ({"kind": "Group", "name": "devs-pr-7", "apiGroup": RBAC_GROUP}, "Group devs-pr-7"),
    ({"kind": "Group", "name": "system:serviceaccounts:shop"}, "Group system:serviceaccounts:shop"),
    ({"kind": "ServiceAccount", "name": "default"}, "ServiceAccount default"),
    ({"kind": "ServiceAccount", "name": "api-sa"}, "ServiceAccount api-sa"),
    ({"kind": "ServiceAccount", "name": "sa-pr-8"}, "ServiceAccount sa-pr-8"),
])  # fmt: skip
def test_a_binding_grants_only_to_service_accounts_of_the_flow(subject, who):
    assert added(binding(OWN_ACCOUNT, subject)) == [
        f"(rule rbac): it grants its rights to {who}, not to a ServiceAccount of the flow"]


@pytest.mark.parametrize("namespace", ["kube-system", "prod", "default"])
def test_a_binding_to_an_account_of_another_namespace_is_refused_though_named_for_the_flow(namespace):
    subject = {"kind": "ServiceAccount", "name": "sa-pr-7", "namespace": namespace}
    assert added(binding(OWN_ACCOUNT, subject)) == [
        f"(rule rbac): it grants its rights to ServiceAccount sa-pr-7 of namespace {namespace}, not to a "
        "ServiceAccount of the flow"]
    assert added(binding(subject), allow=PluginAllow(namespaces=(namespace,))) == []  # the trusted policy's
    assert added(binding(subject), allow=PluginAllow(frozenset({"rbac"}))) == []


def test_a_binding_to_the_flows_accounts_in_its_namespace_is_accepted():
    assert added(binding(OWN_ACCOUNT, {"kind": "ServiceAccount", "name": "b-pr-7", "namespace": NS})) == []


@pytest.mark.parametrize(("ref", "said"), [
    ({"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"},
     "it binds ClusterRole view, whose rights are defined for the whole cluster, not by the flow"),
    ({"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view-pr-7"},
     "it binds ClusterRole view-pr-7, whose rights are defined for the whole cluster, not by the flow"),
    ({"apiGroup": RBAC_GROUP, "kind": "Role", "name": "admin"},
     "it binds Role admin, which is not the flow's (its rights were not set by this flow)"),
    ({"apiGroup": RBAC_GROUP, "kind": "Role", "name": "r-pr-8"},
     "it binds Role r-pr-8, which is not the flow's (its rights were not set by this flow)"),
])  # fmt: skip
def test_a_binding_binds_only_a_role_of_the_flow(ref, said):
    assert added(binding(OWN_ACCOUNT, ref=ref)) == [f"(rule rbac): {said}"]


def test_a_cluster_role_binding_is_held_to_the_same_rules():
    allow = PluginAllow(frozenset({"clusterScoped"}))
    crb = binding({"kind": "User", "name": "mallory-pr-7"}, ref={"kind": "ClusterRole", "name": "edit"},
                  kind="ClusterRoleBinding")
    assert added(crb, allow=allow) == [
        "(rule rbac): it binds ClusterRole edit, whose rights are defined for the whole cluster, not by the flow",
        "(rule rbac): it grants its rights to User mallory-pr-7, not to a ServiceAccount of the flow"]


def test_rbac_of_another_api_group_is_not_rbac():
    fake = {"apiVersion": "example.com/v1", "kind": "Role", "metadata": {"name": "r-pr-7"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}
    assert content_findings(fake, FLOW) == []


# -- Pod Security Standards (baseline) and root, each field at each place ----------------------------------------------

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
CONTEXTS = [("pod", f"{P}.securityContext")] + [(key, f"{P}.{key}[c].securityContext") for key in CONTAINER_LISTS]


def with_context(where: str, ctx: dict) -> dict:
    """A Deployment whose pod (`where` = pod) or container `c` of list `where` has security context `ctx`."""
    if where == "pod":
        return deployment({"securityContext": ctx})
    return deployment({where: [{"name": "c", "securityContext": ctx}]} | ({"containers": []} if where != "containers"
                                                                          else {}))


PRIVILEGED_CONTEXTS = [
    ({"privileged": True}, "{at}.privileged is true"),
    ({"windowsOptions": {"hostProcess": True}}, "{at} runs as a Windows host process"),
    ({"seccompProfile": {"type": "Unconfined"}}, "{at}.seccompProfile is Unconfined"),
    ({"appArmorProfile": {"type": "Unconfined"}}, "{at}.appArmorProfile is Unconfined"),
    ({"seLinuxOptions": {"type": "spc_t"}}, "{at}.seLinuxOptions sets a custom user, role or type"),
    ({"seLinuxOptions": {"user": "system_u"}}, "{at}.seLinuxOptions sets a custom user, role or type"),
    ({"seLinuxOptions": {"role": "sysadm_r"}}, "{at}.seLinuxOptions sets a custom user, role or type"),
    ({"procMount": "Unmasked"}, "{at}.procMount is Unmasked"),
    ({"capabilities": {"add": ["SYS_ADMIN"]}}, "{at}.capabilities.add has SYS_ADMIN"),
    ({"capabilities": {"add": ["SYS_PTRACE", "NET_ADMIN", "CHOWN"]}},
     "{at}.capabilities.add has NET_ADMIN, SYS_PTRACE"),
]


@pytest.mark.parametrize(("ctx", "why"), PRIVILEGED_CONTEXTS, ids=[w for _, w in PRIVILEGED_CONTEXTS])
def test_each_field_outside_the_baseline_profile_is_refused_at_the_pod_and_in_each_container_list(ctx, why):
    for where, at in CONTEXTS:
        assert added(with_context(where, ctx)) == ["(rule privileged): " + why.format(at=at)], where
        assert added(with_context(where, ctx), allow=PluginAllow(frozenset({"privileged"}))) == [], where


BASELINE_CAPABILITIES = ["AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                         "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"]
CONFINED_CONTEXTS = [
    {"privileged": False}, {"windowsOptions": {"hostProcess": False}}, {"seccompProfile": {"type": "RuntimeDefault"}},
    {"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}},
    {"appArmorProfile": {"type": "RuntimeDefault"}},
    {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}},
    {"procMount": "Default"}, {"seLinuxOptions": {"level": "s0:c123,c456"}},
    *({"seLinuxOptions": {"type": t}} for t in ("", "container_t", "container_init_t", "container_kvm_t",
                                                "container_engine_t")),
    *({"capabilities": {"add": [c], "drop": ["ALL"]}} for c in BASELINE_CAPABILITIES),
    {"capabilities": {"add": BASELINE_CAPABILITIES}},
]


@pytest.mark.parametrize("ctx", CONFINED_CONTEXTS)
def test_what_the_baseline_profile_allows_is_accepted_at_each_place(ctx):
    for where, _ in CONTEXTS:
        assert added(with_context(where, ctx)) == [], where


@pytest.mark.parametrize("field", ["hostNetwork", "hostPID", "hostIPC"])
def test_each_host_namespace_is_refused(field):
    assert added(deployment({field: True})) == [f"(rule privileged): {P}.{field} is true (the node's namespace)"]
    assert added(deployment({field: False})) == []


SAFE_SYSCTLS = ["kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"]


@pytest.mark.parametrize("name", SAFE_SYSCTLS)
def test_each_safe_sysctl_is_accepted(name):
    assert added(deployment({"securityContext": {"sysctls": [{"name": name, "value": "1"}]}})) == []


@pytest.mark.parametrize("names", [["kernel.msgmax"], ["net.core.somaxconn"], ["vm.swappiness", "kernel.sem"],
                                   ["net.ipv4.tcp_syncookies", "net.ipv4.ip_forward"]])
def test_an_unsafe_sysctl_is_refused(names):
    sysctls = [{"name": n, "value": "1"} for n in names]
    unsafe = ", ".join(sorted(n for n in names if n not in SAFE_SYSCTLS))
    assert added(deployment({"securityContext": {"sysctls": sysctls}})) == [
        f"(rule privileged): {P}.securityContext.sysctls sets {unsafe}"]


def test_a_host_path_volume_is_refused():
    pod = {"volumes": [{"name": "tmp", "emptyDir": {}}, {"name": "logs", "hostPath": {"path": "/var/log"}}]}
    assert added(deployment(pod)) == ["(rule privileged): volume logs mounts the node's /var/log"]


@pytest.mark.parametrize("key", CONTAINER_LISTS)
def test_a_host_port_is_refused_in_each_container_list(key):
    pod = {key: [{"name": "c", "ports": [{"containerPort": 80}, {"containerPort": 8080, "hostPort": 8080}]}]}
    assert added(deployment(pod)) == [f"(rule privileged): {P}.{key}[c] binds host port(s) [8080]"]
    assert added(deployment({key: [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 0}]}]})) == []


@pytest.mark.parametrize(("pod_user", "ctx", "root"), [
    (0, {}, True), (None, {"runAsUser": 0}, True), (1000, {"runAsUser": 0}, True),
    (0, {"allowPrivilegeEscalation": True}, True), (0, {"allowPrivilegeEscalation": False}, False),
    (0, {"runAsUser": 1000}, False), (None, {}, False), (1000, {}, False),
])  # fmt: skip
def test_root_with_privilege_escalation_is_refused_in_each_container_list(pod_user, ctx, root):
    for key in CONTAINER_LISTS:
        pod: dict = {key: [{"name": "c", "securityContext": ctx}]}
        if key != "containers":
            pod["containers"] = []
        if pod_user is not None:
            pod["securityContext"] = {"runAsUser": pod_user}
        expected = [f"(rule privileged): {P}.{key}[c] runs as root (runAsUser 0) with privilege escalation allowed"]
        assert added(deployment(pod)) == (expected if root else []), key


# -- where each kind keeps its pod spec and template -------------------------------------------------------------------

JOB = {"restartPolicy": "Never"}
# kind -> (the object, given its pod spec and template metadata; where its pod spec is)
POD_KINDS = {
    "Pod": (lambda pod, meta: obj("v1", "Pod", "x-pr-7", meta=meta, spec=pod), "spec"),
    "PodTemplate": (lambda pod, meta: obj("v1", "PodTemplate", "x-pr-7", template={"metadata": meta, "spec": pod}),
                    "template.spec"),
    "ReplicationController": (lambda pod, meta: obj("v1", "ReplicationController", "x-pr-7", spec={
        "selector": OWN, "template": {"metadata": meta, "spec": pod}}), P),
    **{kind: (lambda pod, meta, kind=kind: obj("apps/v1", kind, "x-pr-7", spec={
        "selector": {"matchLabels": OWN}, "template": {"metadata": meta, "spec": pod}}), P)
       for kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")},
    "Job": (lambda pod, meta: obj("batch/v1", "Job", "x-pr-7", spec={"template": {"metadata": meta,
                                                                                 "spec": {**JOB, **pod}}}), P),
    "CronJob": (lambda pod, meta: obj("batch/v1", "CronJob", "x-pr-7", spec={"schedule": "* * * * *", "jobTemplate": {
        "spec": {"template": {"metadata": meta, "spec": {**JOB, **pod}}}}}), "spec.jobTemplate.spec.template.spec"),
    "ScaledJob": (lambda pod, meta: obj("keda.sh/v1alpha1", "ScaledJob", "x-pr-7", spec={"jobTargetRef": {
        "template": {"metadata": meta, "spec": {**JOB, **pod}}}}), "spec.jobTargetRef.template.spec"),
}


def pod_kind(kind: str, pod: dict | None = None, labels: dict | None = None, **meta) -> dict:
    build, _ = POD_KINDS[kind]
    return build({"containers": [{"name": "c"}], **(pod or {})}, {"labels": labels or OWN, **meta})


@pytest.mark.parametrize("kind", sorted(POD_KINDS))
def test_each_kind_is_checked_where_it_keeps_its_pod_spec(kind):
    where = POD_KINDS[kind][1]
    assert added(pod_kind(kind, {"hostNetwork": True})) == [
        f"(rule privileged): {where}.hostNetwork is true (the node's namespace)"]
    assert added(pod_kind(kind, {"metadata": {"namespace": "kube-system"}})) == [
        f"(rule metadata): {where}.metadata: a pod spec has no metadata; a plugin may not set a pod's metadata "
        "through it"]
    assert added(pod_kind(kind)) == []


def test_a_workload_of_a_kind_the_trusted_policy_lists_is_checked_at_its_template():
    rollout = obj("argoproj.io/v1alpha1", "Rollout", "x-pr-7", spec={"template": {"metadata": {"labels": OWN},
                                                                                   "spec": {"hostPID": True}}})
    allow = PluginAllow(kinds=("argoproj.io/Rollout",))
    assert added(rollout, allow=allow) == ["(rule privileged): spec.template.spec.hostPID is true (the node's "
                                           "namespace)"]


# -- metadata: object keys in a pod spec, template metadata, server-set fields ----------------------------------------

FOREIGN_POD_SPEC_KEYS = ["apiVersion", "kind", "metadata", "spec", "status", "template", "labels", "annotations",
                         "namespace", "ownerReferences", "finalizers", "managedFields"]


@pytest.mark.parametrize("key", FOREIGN_POD_SPEC_KEYS)
def test_each_object_key_inside_a_pod_spec_is_refused(key):
    assert added(deployment({key: {}})) == [
        f"(rule metadata): {P}.{key}: a pod spec has no {key}; a plugin may not set a pod's metadata through it"]


SERVER_METADATA = {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "db", "uid": "1"}],
                   "finalizers": ["example.com/keep"], "managedFields": [{"manager": "kubectl"}], "uid": "1234",
                   "resourceVersion": "42", "generation": 3, "deletionTimestamp": "2024-01-01T00:00:00Z",
                   "deletionGracePeriodSeconds": 0, "selfLink": "/api/v1/namespaces/shop/configmaps/c-pr-7"}


@pytest.mark.parametrize("key", sorted(SERVER_METADATA))
def test_each_server_set_or_ownership_field_on_the_object_is_refused(key):
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={key: SERVER_METADATA[key]}, data={"a": "b"})
    assert added(cm) == [f"(rule metadata): metadata.{key} is set: owner references, finalizers and server-set "
                         "fields are the cluster's, not a plugin's"]


TEMPLATES = {  # kind -> where its pod template's metadata is
    "Deployment": "spec.template.metadata", "Job": "spec.template.metadata", "PodTemplate": "template.metadata",
    "CronJob": "spec.jobTemplate.spec.template.metadata", "ScaledJob": "spec.jobTargetRef.template.metadata",
    "ReplicationController": "spec.template.metadata",
}
TEMPLATE_EXTRA = {"namespace": "kube-system", "ownerReferences": [{"kind": "Deployment", "name": "db"}],
                  "finalizers": ["example.com/keep"], "uid": "1", "resourceVersion": "1", "managedFields": [],
                  "creationTimestamp": "2024-01-01T00:00:00Z", "deletionTimestamp": "2024-01-01T00:00:00Z"}


@pytest.mark.parametrize("key", sorted(TEMPLATE_EXTRA))
def test_template_metadata_carries_only_labels_and_annotations(key):
    for kind, at in TEMPLATES.items():
        found = added(pod_kind(kind, **{key: TEMPLATE_EXTRA[key]}))
        assert found == [f"(rule metadata): {at}.{key} is set: a pod template carries only labels and annotations (a "
                         "pod may not move namespace or take owners and finalizers)"], kind


@pytest.mark.parametrize("kind", sorted(TEMPLATES))
def test_template_labels_annotations_names_and_a_null_creation_time_are_accepted(kind):
    assert added(pod_kind(kind, annotations={"a": "b"}, name="x", generateName="x-", creationTimestamp=None)) == []


def test_a_cronjobs_job_template_metadata_is_checked_too():
    job = pod_kind("CronJob")
    job["spec"]["jobTemplate"]["metadata"] = {"namespace": "kube-system", "labels": {"a": "b"}}
    assert added(job) == ["(rule metadata): spec.jobTemplate.metadata.namespace is set: a pod template carries only "
                          "labels and annotations (a pod may not move namespace or take owners and finalizers)"]


APPARMOR = "container.apparmor.security.beta.kubernetes.io/c"
# kind -> (the object, given its pods' annotations; where they are)
ANNOTATED = {
    "Pod": (lambda a: obj("v1", "Pod", "x-pr-7", meta={"labels": OWN, "annotations": a}, spec={
        "containers": [{"name": "c"}]}), "metadata.annotations"),
    **{kind: (lambda a, kind=kind: pod_kind(kind, annotations=a), at.replace(".metadata", ".metadata.annotations"))
       for kind, at in TEMPLATES.items()},
    "CronJob's job template": (lambda a: obj("batch/v1", "CronJob", "x-pr-7", spec={"jobTemplate": {
        "metadata": {"annotations": a}, "spec": {"template": {"spec": {**JOB, "containers": [{"name": "c"}]}}}}}),
        "spec.jobTemplate.metadata.annotations"),
}


@pytest.mark.parametrize("kind", sorted(ANNOTATED))
def test_an_apparmor_annotation_that_unconfines_a_container_is_refused_wherever_pods_take_it(kind):
    build, at = ANNOTATED[kind]
    assert added(build({APPARMOR: "unconfined"})) == [f"(rule privileged): {at}.{APPARMOR} is unconfined"]
    assert added(build({APPARMOR: "unconfined"}), allow=PluginAllow(frozenset({"privileged"}))) == []
    assert added(build({APPARMOR: "runtime/default", "container.apparmor.security.beta.kubernetes.io/d":
                        "localhost/profile", "example.com/apparmor": "unconfined"})) == []


# -- Services, Secrets, Lists ------------------------------------------------------------------------------------------


def service(**spec) -> dict:
    return obj("v1", "Service", "s-pr-7", spec={"selector": OWN, "ports": [{"port": 80}], **spec})


@pytest.mark.parametrize(("spec", "said"), [
    ({"type": "NodePort"}, ["a NodePort Service opens a port outside the cluster network (on every node, or to the "
                            "internet)"]),
    ({"type": "LoadBalancer"}, ["a LoadBalancer Service opens a port outside the cluster network (on every node, or "
                                "to the internet)"]),
    ({"externalIPs": ["203.0.113.9"]}, ["spec.externalIPs captures the cluster's traffic to 203.0.113.9"]),
    ({"type": "LoadBalancer", "externalIPs": ["203.0.113.9", "198.51.100.1"]}, [
        "a LoadBalancer Service opens a port outside the cluster network (on every node, or to the internet)",
        "spec.externalIPs captures the cluster's traffic to 203.0.113.9, 198.51.100.1"]),
])  # fmt: skip
def test_each_service_field_that_reaches_past_the_cluster_network_is_refused(spec, said):
    assert added(service(**spec)) == [f"(rule privileged): {s}" for s in said]
    assert added(service(**spec), allow=PluginAllow(frozenset({"privileged"}))) == []


@pytest.mark.parametrize("spec", [{}, {"type": "ClusterIP"}, {"clusterIP": "None"}, {"externalIPs": []},
                                  {"type": "ExternalName", "externalName": "api.example.com"}])
def test_a_service_inside_the_cluster_network_is_accepted(spec):
    assert added(service(**spec)) == []


def test_a_service_of_another_api_group_is_no_core_service():
    knative = {"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": {"name": "s-pr-7"},
               "spec": {"type": "LoadBalancer", "externalIPs": ["203.0.113.9"]}}
    assert content_findings(knative, FLOW) == []


@pytest.mark.parametrize(("key", "value"), [("data", {"password": "aHVudGVyMg=="}), ("stringData", {"password": "x"})])
def test_a_secret_with_values_is_refused(key, value):
    secret = obj("v1", "Secret", "s-pr-7", **{key: value})
    assert added(secret) == [f"(rule secrets): a Secret carrying {key} would be written to git in plain text"]
    assert added(secret, allow=PluginAllow(frozenset({"secrets"}))) == []
    assert added(obj("v1", "Secret", "s-pr-7", **{key: {}})) == []


def test_a_secret_with_both_is_refused_for_both_and_one_of_another_group_is_no_secret():
    assert added(obj("v1", "Secret", "s-pr-7", data={"a": "Yg=="}, stringData={"b": "c"})) == [
        "(rule secrets): a Secret carrying data would be written to git in plain text",
        "(rule secrets): a Secret carrying stringData would be written to git in plain text"]
    assert content_findings({"apiVersion": "example.com/v1", "kind": "Secret", "data": {"a": "Yg=="}}, FLOW) == []


LISTS = [("v1", "List"), ("v1", "ConfigMapList"), ("v1", "SecretList"), ("v1", "PodList"), ("v1", "ServiceList"),
         ("v1", "ServiceAccountList"), ("v1", "NamespaceList"), ("apps/v1", "DeploymentList"),
         ("batch/v1", "JobList"), (RBAC, "RoleList"), (RBAC, "RoleBindingList"), (RBAC, "ClusterRoleBindingList"),
         ("apiextensions.k8s.io/v1", "CustomResourceDefinitionList"), ("example.com/v1", "WidgetList")]


@pytest.mark.parametrize(("api", "kind"), LISTS)
def test_every_list_kind_is_refused_for_its_items(api, kind):
    wrapped = obj(api, kind, "l-pr-7", items=[obj("v1", "ConfigMap", "c-pr-7")])
    assert added(wrapped) == [f"(rule list): a {kind} wraps objects that are applied one by one; return each object "
                              "itself"]


@pytest.mark.parametrize("kind", ["Playlist", "Listener", "ListenerSet", "Blocklist"])
def test_a_kind_that_only_looks_like_a_list_is_no_list(kind):
    assert list_findings({"kind": kind}) == []


# -- scope, namespace and names --------------------------------------------------------------------------------------

CLUSTER_SCOPED = [
    "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume", "StorageClass",
    "PriorityClass", "IngressClass", "GatewayClass", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
    "APIService", "RuntimeClass", "CSIDriver", "VolumeAttachment", "Node", "CSINode", "CertificateSigningRequest",
    "ClusterTrustBundle", "FlowSchema", "PriorityLevelConfiguration", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "IPAddress",
    "ServiceCIDR", "DeviceClass", "ClusterIssuer", "ClusterSecretStore", "ClusterExternalSecret", "ClusterPolicy",
]


@pytest.mark.parametrize("kind", CLUSTER_SCOPED)
def test_each_cluster_scoped_kind_is_refused(kind):
    thing = obj("example.com/v1", kind, "x-pr-7")
    trusted = PluginAllow(kinds=(f"example.com/{kind}",))
    said = f"(rule clusterScoped): {kind} is cluster-scoped; a plugin adds namespaced objects to its flow"
    assert added(thing, allow=trusted) == [said]
    assert added(thing, allow=trusted | PluginAllow(frozenset({"clusterScoped"}))) == []


def test_an_object_in_a_namespace_not_the_flows_is_refused_unless_the_trusted_policy_lists_it():
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": "kube-system"})
    assert added(cm) == ["(rule namespace): namespace kube-system is not the flow's (shop)"]
    assert added(cm, allow=PluginAllow(namespaces=("kube-system",))) == []
    assert added(obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": NS})) == []


@pytest.mark.parametrize(("name", "repository", "flows", "said"), [
    ("api-hotfix-pr-7", {"api"}, {"hotfix-pr-7"}, "the name api-hotfix-pr-7 is also flow hotfix-pr-7's copy of api, "
                                                  "so two flows would write one object"),
    ("a-b-c-pr-7", {"a", "x"}, {"b-c-pr-7", "pr-8"}, "the name a-b-c-pr-7 is also flow b-c-pr-7's copy of a, so two "
                                                     "flows would write one object"),
    ("a-b-c-pr-7", {"a-b"}, {"c-pr-7"}, "the name a-b-c-pr-7 is also flow c-pr-7's copy of a-b"),
])  # fmt: skip
def test_a_name_another_flow_makes_from_a_repository_object_is_not_the_flows(name, repository, flows, said):
    (found,) = name_findings(name, FLOW, frozenset(repository), frozenset(flows))
    assert (found.rule, found.why.split(", so")[0]) == ("other-flow", said.split(", so")[0])
    assert name_findings(name, FLOW, frozenset(), frozenset(flows)) == []  # no repository object of that name
    assert name_findings(name, FLOW, frozenset(repository), frozenset()) == []  # no such flow beside this one
    assert name_findings("api-pr-7", FLOW, frozenset({"api"}), frozenset(flows)) == []


def test_a_name_that_is_also_this_flows_own_copy_of_a_repository_object_is_this_flows():
    """`orders-db-pr-7` with Services `orders` and `orders-db`: flow `db-pr-7`'s copy of `orders` reads the same,
    but devlane names this flow's copy of `orders-db` so: the name is this flow's, whatever flows exist."""
    assert name_findings("orders-db-pr-7", FLOW, frozenset({"orders", "orders-db"}), frozenset({"db-pr-7"})) == []
    (found,) = name_findings("orders-dbx-pr-7", FLOW, frozenset({"orders", "orders-db"}), frozenset({"dbx-pr-7"}))
    assert found.rule == "other-flow"


def test_a_kafka_topic_named_from_a_repository_topic_is_no_other_flows_while_that_flow_does_not_exist():
    """Issue 44: kafka-topic's instance `orders-topic` emitted KafkaTopic/orders-orders-topic-pr-42, refused as
    if it were flow orders-topic-pr-42's copy of the repository's topic `orders`."""
    assert name_findings("orders-orders-topic-pr-42", "pr-42", frozenset({"orders"}), frozenset({"pr-41"})) == []
    (found,) = name_findings("orders-orders-topic-pr-42", "pr-42", frozenset({"orders"}),
                             frozenset({"orders-topic-pr-42"}))  # once that flow is rendered beside it, it is taken
    assert found.rule == "other-flow"


def test_an_unmodeled_kind_and_an_undeclared_kind_are_refused_and_the_trusted_kinds_let_both_through():
    widget = obj("example.com/v1", "Widget", "w-pr-7", spec={"size": 1})
    assert added(widget) == [
        "(rule unmodeled): devlane does not model the references of example.com/Widget (which fields name or select "
        "other objects), so it cannot tell what the object reaches"]
    assert added(widget, allow=PluginAllow(kinds=("Widget",))) == []
    problems = problems_of(widget, plugin="other")
    assert [p.message for p in problems][-1].endswith("cannot tell what the object reaches")


# -- isolation: what selects, mounts or routes to the baseline ---------------------------------------------------------

SELECTED = [f"(rule isolation): the selector of baseline {ref} matches its pods, so baseline traffic would reach them"
            for ref in ("Service/db", "Deployment/db", "Service/metrics")]


@pytest.mark.parametrize("kind", sorted(POD_KINDS))
def test_pods_a_baseline_selector_matches_are_refused_for_each_kind_that_makes_them(kind):
    found = added(pod_kind(kind, labels=BASE))
    assert [f for f in found if "(rule isolation)" in f] == SELECTED


@pytest.mark.parametrize("kind", ["ScaledJob", "PodTemplate", "Deployment"])
def test_template_labels_that_are_no_labels_match_no_selector_and_break_nothing(kind):
    assert added(pod_kind(kind, labels={"app": ["db"], "tier": {"a": "b"}, "x": "y"})) == []


CLAIM = {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}


@pytest.mark.parametrize("kind", sorted(set(POD_KINDS) - {"PodTemplate"}))
def test_pods_that_mount_a_baseline_claim_are_refused_for_each_kind_that_makes_them(kind):
    found = added(pod_kind(kind, CLAIM))
    assert len(found) == 1 and ("(rule isolation): its pods mount the baseline PersistentVolumeClaim data" in found
                                or "persistentVolumeClaim names the baseline PersistentVolumeClaim/data" in found[0])
    own = {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data-pr-7"}}]}
    assert added(pod_kind(kind, own)) == []


SELECTS_DB = ("(rule isolation): its selector matches the pods of baseline Deployment/db, so the flow's traffic would "
              "reach the baseline")


def test_a_service_that_selects_baseline_pods_is_refused_and_one_over_another_namespaces_pods_is_not():
    assert added(service(selector=BASE)) == [SELECTS_DB]
    assert added(service(selector={"app": "orders"})) == []  # Deployment/orders is in namespace prod
    assert added(service(selector={})) == []


DEV_SERVICE = obj("v1", "Service", "api-pr-7", meta={"namespace": NS}, spec={
    "selector": {"app": "api-pr-7", "devlane.dev/flow": FLOW}, "ports": [{"port": 80}]})


def repointed(selector: dict) -> dict:
    return {**DEV_SERVICE, "spec": {**DEV_SERVICE["spec"], "selector": selector}}


def test_a_post_render_step_or_a_hook_repointing_a_dev_service_at_baseline_pods_is_refused():
    assert transformed([DEV_SERVICE], [repointed(BASE)]) == [SELECTS_DB]
    assert hooked([DEV_SERVICE], [repointed(BASE)]) == [SELECTS_DB]
    assert transformed([DEV_SERVICE], [repointed({"app": "api-pr-7"})]) == []
    assert transformed([repointed(BASE)], [repointed(BASE)]) == []  # what it did not change is not its doing


@pytest.mark.parametrize("pods", [{}, None, {"matchLabels": BASE},
                                  {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}])
def test_a_network_policy_over_baseline_pods_is_refused(pods):
    spec = {"policyTypes": ["Ingress"]} | ({} if pods is None else {"podSelector": pods})
    netpol = obj("networking.k8s.io/v1", "NetworkPolicy", "n-pr-7", spec=spec)
    assert added(netpol) == ["(rule isolation): its podSelector selects the pods of baseline Deployment/db, so it "
                             "would change what reaches the baseline"]
    assert added(obj("networking.k8s.io/v1", "NetworkPolicy", "n-pr-7", spec={"podSelector": {
        "matchLabels": OWN}})) == []


def reaches(name: str = "db", namespace: str = NS) -> str:
    return f"(rule isolation): it sends traffic or endpoints to the baseline Service {name} in namespace {namespace}"


def test_endpoints_of_a_baseline_service_are_refused():
    slice_ = obj("discovery.k8s.io/v1", "EndpointSlice", "e-pr-7", meta={"labels": {
        "kubernetes.io/service-name": "db"}}, addressType="IPv4", endpoints=[{"addresses": ["10.0.0.1"]}])
    assert added(slice_) == [reaches()]
    assert reaches() in added(obj("v1", "Endpoints", "db", subsets=[{"addresses": [{"ip": "10.0.0.1"}]}]))
    assert added(obj("v1", "Endpoints", "db-pr-7", subsets=[])) == []


@pytest.mark.parametrize(("host", "service"), [
    ("db", ("db", NS)), ("db.shop", ("db", NS)), ("db.shop.svc", ("db", NS)), ("db.shop.svc.cluster.local", ("db", NS)),
    ("db.shop.svc.cluster.local.", ("db", NS)), ("DB.Shop.SVC", ("db", NS)), ("orders.prod", ("orders", "prod")),
    ("orders.prod.svc.cluster.local", ("orders", "prod")),
    ("db.example.com", None), ("db.prod", None), ("orders", None), ("api.shop.svc", None),
])  # fmt: skip
def test_an_external_name_service_reaching_a_baseline_service_by_each_dns_form_is_refused(host, service):
    alias = obj("v1", "Service", "a-pr-7", spec={"type": "ExternalName", "externalName": host})
    assert added(alias) == ([reaches(*service)] if service else [])


def test_an_ingress_routing_to_a_baseline_service_is_refused_through_each_backend():
    def ingress(default: str, path: str) -> dict:
        return obj("networking.k8s.io/v1", "Ingress", "i-pr-7", spec={
            "defaultBackend": {"service": {"name": default, "port": {"number": 80}}},
            "rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {
                "name": path, "port": {"number": 80}}}}]}}]})

    assert added(ingress("db", "s-pr-7")) == [reaches()]
    assert added(ingress("s-pr-7", "db")) == [reaches()]
    assert added(ingress("s-pr-7", "s-pr-7")) == []


ROUTES = [("gateway.networking.k8s.io/v1", "HTTPRoute"), ("gateway.networking.k8s.io/v1", "GRPCRoute"),
          ("gateway.networking.k8s.io/v1alpha2", "TCPRoute"), ("gateway.networking.k8s.io/v1alpha2", "TLSRoute"),
          ("gateway.networking.k8s.io/v1alpha2", "UDPRoute")]


def route(api: str, kind: str, *refs: dict) -> dict:
    return obj(api, kind, "r-pr-7", spec={"rules": [{"backendRefs": list(refs)}]})


@pytest.mark.parametrize(("api", "kind"), ROUTES)
def test_a_route_to_a_baseline_service_is_refused_for_each_route_kind(api, kind):
    assert added(route(api, kind, {"name": "s-pr-7", "port": 80}, {"name": "db", "port": 5432})) == [reaches()]
    assert added(route(api, kind, {"kind": "Service", "name": "db", "port": 5432})) == [reaches()]
    assert added(route(api, kind, {"name": "s-pr-7", "port": 80})) == []


@pytest.mark.parametrize(("api", "kind"), ROUTES)
def test_a_route_backend_in_another_namespace_is_followed_there(api, kind):
    found = added(route(api, kind, {"name": "orders", "namespace": "prod", "port": 80}))
    assert found == [reaches("orders", "prod"),
                     "(rule reference): spec.rules[0].backendRefs[0] names Service/orders in namespace prod, which is "
                     "not the flow's: a plugin's objects reference only the flow's own (named <name>-pr-7, in its "
                     "namespaces)"]
    found = added(route(api, kind, {"name": "db", "namespace": "prod", "port": 80}))  # no baseline db in prod
    assert found == ["(rule reference): spec.rules[0].backendRefs[0] names Service/db in namespace prod, which is not "
                     "the flow's: a plugin's objects reference only the flow's own (named <name>-pr-7, in its "
                     "namespaces)"]


def test_a_route_backend_of_another_kind_is_no_service():
    found = added(route(*ROUTES[0], {"group": "multicluster.x-k8s.io", "kind": "ServiceImport", "name": "db"}))
    assert found == ["(rule reference): spec.rules[0].backendRefs[0] names ServiceImport/db, which is not an object of "
                     "the flow: a plugin's objects reference only the flow's own (named <name>-pr-7, in its "
                     "namespaces)"]


ISTIO = [
    ("VirtualService", {"http": [{"route": [{"destination": {"host": "db"}}]}]}),
    ("VirtualService", {"tcp": [{"route": [{"destination": {"host": "db.shop.svc.cluster.local"}}]}]}),
    ("VirtualService", {"tls": [{"route": [{"destination": {"host": "db.shop"}}]}]}),
    ("VirtualService", {"http": [{"route": [{"destination": {"host": "s-pr-7"}}], "mirror": {"host": "db"}}]}),
    ("DestinationRule", {"host": "db.shop.svc"}),
]


@pytest.mark.parametrize(("kind", "spec"), ISTIO)
def test_an_istio_route_or_rule_for_a_baseline_service_is_refused(kind, spec):
    trusted = PluginAllow(kinds=(f"networking.istio.io/{kind}",))
    own = {"host": "s-pr-7"} if kind == "DestinationRule" else {"http": [{"route": [{"destination": {
        "host": "s-pr-7"}}]}]}
    for version in ("v1", "v1beta1", "v1alpha3"):
        assert added(obj(f"networking.istio.io/{version}", kind, "v-pr-7", spec=spec), allow=trusted) == [reaches()]
        assert added(obj(f"networking.istio.io/{version}", kind, "v-pr-7", spec=own), allow=trusted) == []


# -- what a plugin changes in a dev copy: only what it introduced, and Secrets provisioned out of band ---------------

DEV = {"labels": {"app": "api-pr-7"}}


def dev_copy(**pod) -> dict:
    """The dev copy of the pull request's `api`, its pod spec carrying `pod`."""
    return obj("apps/v1", "Deployment", "api-pr-7", meta={"namespace": NS}, spec={"selector": {"matchLabels": DEV[
        "labels"]}, "template": {"metadata": DEV, "spec": {"containers": [{"name": "main"}], **pod}}})


def env(*secrets: str) -> dict:
    return {"containers": [{"name": "main", "env": [{"name": f"E{i}", "valueFrom": {"secretKeyRef": {
        "name": s, "key": "k"}}} for i, s in enumerate(secrets)]}]}


@pytest.mark.parametrize(("before", "after", "said"), [
    ({}, env("stripe-test"), None),  # provisioned out of band: no object of the repository
    ({}, {"containers": [{"name": "main", "envFrom": [{"configMapRef": {"name": "flags"}}]}]}, None),
    ({}, {"volumes": [{"name": "v", "secret": {"secretName": "tls-test"}}]}, None),
    ({}, env("secret-pr-7"), None),
    (env("creds"), env("creds", "stripe-test"), None),  # what it read before
    ({}, env("creds"), "spec.template.spec.containers[main].env[E0].valueFrom.secretKeyRef names the baseline "
                       "Secret/creds"),
    ({}, {"volumes": [{"name": "v", "configMap": {"name": "cfg"}}]},
     "spec.template.spec.volumes[v].configMap names the baseline ConfigMap/cfg"),
    ({}, {"serviceAccountName": "admin"}, "spec.template.spec.serviceAccountName names ServiceAccount/admin, which is "
                                          "not an object of the flow"),
    ({}, {"serviceAccountName": "api-sa"}, "spec.template.spec.serviceAccountName names the baseline "
                                           "ServiceAccount/api-sa"),
])  # fmt: skip
def test_a_plugin_may_point_a_dev_copy_at_what_it_read_or_at_what_no_repository_object_is(before, after, said):
    found = changed(dev_copy(**before), dev_copy(**after))
    assert found == ([] if said is None else [f"(rule reference): {said}: a plugin's objects reference only the "
                                              "flow's own (named <name>-pr-7, in its namespaces)"])


def test_a_workload_a_plugin_adds_names_only_the_flows_own_even_out_of_band():
    workload = obj("apps/v1", "Deployment", "w-pr-7", spec={"template": {"metadata": {"labels": OWN},
                                                                         "spec": env("stripe-test")}})
    assert added(workload) == [f"(rule reference): {P}.containers[main].env[E0].valueFrom.secretKeyRef names "
                               "Secret/stripe-test, which is not an object of the flow: a plugin's objects reference "
                               "only the flow's own (named <name>-pr-7, in its namespaces)"]


def test_a_change_is_refused_only_for_what_it_introduced():
    privileged = dev_copy(hostNetwork=True)
    assert changed(privileged, dev_copy(hostNetwork=True, containers=[{"name": "main", "image": "x"}])) == []
    assert changed(privileged, dev_copy(hostNetwork=True, hostPID=True)) == [
        f"(rule privileged): {P}.hostPID is true (the node's namespace)"]


# -- the switches, and the rules no switch lifts -----------------------------------------------------------------------

SWITCHED = {
    "clusterScoped": (obj("v1", "Namespace", "n-pr-7"), PluginAllow(kinds=("Namespace",))),
    "rbac": (role(rule(["pods"], ["create"])), PluginAllow()),
    "privileged": (deployment({"hostNetwork": True}), PluginAllow()),
    "secrets": (obj("v1", "Secret", "s-pr-7", data={"a": "Yg=="}), PluginAllow()),
}


@pytest.mark.parametrize("switch", sorted(SWITCHED))
def test_each_switch_lifts_its_rule_for_the_plugin_and_no_other_switch_does(switch):
    thing, base = SWITCHED[switch]
    found = added(thing, allow=base)
    assert len(found) == 1 and found[0].startswith(f"(rule {switch}): "), found
    others = frozenset(SWITCHED) - {switch}
    assert added(thing, allow=base | PluginAllow(others)) == found
    assert added(thing, allow=base | PluginAllow(frozenset({switch}))) == []


UNLIFTED = {
    "isolation": service(selector=BASE),
    "reference": obj("autoscaling/v2", "HorizontalPodAutoscaler", "h-pr-7", spec={"scaleTargetRef": {
        "kind": "Deployment", "name": "db"}}),
    "metadata": deployment({"metadata": {}}),
    "list": obj("v1", "List", "l-pr-7", items=[]),
    "flow-name": obj("v1", "ConfigMap", "cfg-x"),
    "other-flow": obj("v1", "ConfigMap", "cfg-pr-8"),
}


@pytest.mark.parametrize("rule_name", sorted(UNLIFTED))
def test_a_rule_that_is_no_switch_is_never_lifted(rule_name):
    every = PluginAllow(frozenset({"clusterScoped", "rbac", "privileged", "secrets", rule_name}))  # type: ignore[arg-type]
    found = added(UNLIFTED[rule_name], allow=every)
    assert found and all(f.startswith(f"(rule {rule_name}): ") for f in found), found


# -- what devlane's built-ins reach on purpose (their code only) -------------------------------------------------------

DEV_PASSWORD_PLUGINS = ["aws-rds", "azure-sql", "cloud-sql", "mongodb-seed", "mysql-seed", "postgres-seed", "stripe"]
SECRET_ENV = [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}]


def reads_password(key: str = "containers", kind: str = "Deployment") -> dict:
    return pod_kind(kind, {key: [{"name": "c", "env": SECRET_ENV}]} | ({"containers": []} if key != "containers"
                                                                        else {}))


@pytest.mark.parametrize("plugin", DEV_PASSWORD_PLUGINS)
def test_a_database_built_in_may_point_its_pods_at_the_secret_its_definition_names(plugin):
    for key in ("containers", "initContainers"):
        at = f"{P}.{key}[c].env[PASSWORD].valueFrom.secretKeyRef"
        said = [f"(rule reference): {at} names the baseline Secret/creds: a plugin's objects reference only the "
                "flow's own (named <name>-pr-7, in its namespaces)"]
        assert added(reads_password(key), plugin=plugin, builtin=True) == []
        assert added(reads_password(key, "StatefulSet"), plugin=plugin, builtin=True) == []
        assert added(reads_password(key), plugin=plugin) == said  # the same name, not the built-in's code
        assert added(reads_password(key), plugin="aws-s3", builtin=True) == said  # another built-in
    by_volume = deployment({"volumes": [{"name": "v", "secret": {"secretName": "creds"}}]})
    assert added(by_volume, plugin=plugin, builtin=True) == [
        f"(rule reference): {P}.volumes[v].secret names the baseline Secret/creds: a plugin's objects reference only "
        "the flow's own (named <name>-pr-7, in its namespaces)"]


BUILT_IN_REACH = {  # built-in -> (what it adds, reaching past the flow; the refusal it gets from elsewhere)
    "aws-rds DBInstance": ("aws-rds", obj("rds.services.k8s.aws/v1alpha1", "DBInstance", "d-pr-7", spec={
        "masterUserPassword": {"name": "creds", "key": "password"}}), "spec.masterUserPassword names the baseline "
                                                                       "Secret/creds"),
    "aws-rds DBCluster": ("aws-rds", obj("rds.services.k8s.aws/v1alpha1", "DBCluster", "d-pr-7", spec={
        "masterUserPassword": {"name": "creds", "key": "password"}}), "spec.masterUserPassword names the baseline "
                                                                       "Secret/creds"),
    "aws-s3 Job": ("aws-s3", obj("batch/v1", "Job", "empty-pr-7", spec={"template": {"spec": {
        **JOB, "serviceAccountName": "api-sa", "containers": [{"name": "c"}]}}}),
        "spec.template.spec.serviceAccountName names the baseline ServiceAccount/api-sa"),
    "cloud-sql SQLUser": ("cloud-sql", obj("sql.cnrm.cloud.google.com/v1beta1", "SQLUser", "u-pr-7", spec={
        "password": {"valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}}),
        "spec.password.valueFrom.secretKeyRef names the baseline Secret/creds"),
    "neon-branch Job": ("neon-branch", obj("batch/v1", "Job", "neon-pr-7", spec={"template": {"spec": {
        **JOB, "containers": [{"name": "neon", "env": [{"name": "NEON_API_KEY", "valueFrom": {"secretKeyRef": {
            "name": "creds", "key": "k"}}}]}]}}}),
        "spec.template.spec.containers[neon].env[NEON_API_KEY].valueFrom.secretKeyRef names the baseline "
        "Secret/creds"),
}


@pytest.mark.parametrize("case", sorted(BUILT_IN_REACH))
def test_each_built_in_reaches_past_the_flow_only_where_it_says(case):
    plugin, thing, said = BUILT_IN_REACH[case]
    expected = [f"(rule reference): {said}: a plugin's objects reference only the flow's own (named <name>-pr-7, in "
                "its namespaces)"]
    assert added(thing, plugin=plugin, builtin=True) == []
    assert added(thing, plugin=plugin) == expected
    other = "aws-s3" if plugin != "aws-s3" else "stripe"
    assert added(thing, plugin=other, builtin=True) == expected


@pytest.mark.parametrize(("container", "env"), [("neon", "OTHER_KEY"), ("other", "NEON_API_KEY")])
def test_the_neon_built_ins_reach_is_its_api_key_only(container, env):
    job = obj("batch/v1", "Job", "neon-pr-7", spec={"template": {"spec": {**JOB, "containers": [{"name": container,
                                                                                               "env": [{
        "name": env, "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k"}}}]}]}}})
    assert added(job, plugin="neon-branch", builtin=True) == [
        f"(rule reference): {P}.containers[{container}].env[{env}].valueFrom.secretKeyRef names the baseline "
        "Secret/creds: a plugin's objects reference only the flow's own (named <name>-pr-7, in its namespaces)"]


def test_the_neon_built_in_may_let_its_jobs_create_secrets_and_nothing_more():
    creates = role(rule(["secrets"], ["create"]))
    said = ("(rule rbac): rules[0] grants create on secrets, which mints tokens: the control plane fills a Secret of "
            "type kubernetes.io/service-account-token with a token of the account it names")
    assert added(creates, plugin="neon-branch", builtin=True) == []
    assert added(creates, plugin="neon-branch") == [said]
    assert added(role(rule(["pods"], ["create"])), plugin="neon-branch", builtin=True) == [
        f"(rule rbac): rules[0] grants create on pods, which {STARTS}"]
    assert added(role(rule(["secrets"], ["get"])), plugin="neon-branch", builtin=True) == [
        "(rule rbac): rules[0] reaches every Secret of the namespace, not only the flow's objects (list their names in "
        "resourceNames)"]


@pytest.mark.parametrize(("pattern", "text", "parents", "matches"), [
    ("*", "Job", False, True), ("*", "a.b", False, False), ("**", "a.b", False, True),
    ("spec.x", "spec.x.y", True, True), ("spec.x", "spec.x[0]", True, True), ("spec.x", "spec.xy", True, False),
    ("spec.x", "spec.x.y", False, False), ("**.env[*].k", "a.b.env[E].k", False, True),
    ("**.env[*].k", "a.b.env[E.F].k", False, False), ("a.*", "a.b", False, True), ("a.*", "ab.b", False, False),
])  # fmt: skip
def test_built_in_reach_patterns(pattern, text, parents, matches):
    assert _glob(pattern, text, parents) is matches


# -- what each refusal says and how to fix it -------------------------------------------------------------------------

TRUSTED = ("in the operator's policy file (--policy) or in .devlane.yaml at the trusted base (--trusted-ref); the pull "
           "request's own cannot")
HINTS = {
    "clusterScoped": (obj("v1", "Namespace", "n-pr-7"), PluginAllow(kinds=("Namespace",)),
                      f'if plugin seed is trusted with this, allow it {TRUSTED}: policy: {{plugins: {{"seed": {{allow: '
                      f'[clusterScoped]}}}}}}'),
    "rbac": (role(rule(["*"], ["get"])), PluginAllow(),
             f'if plugin seed is trusted with this, allow it {TRUSTED}: policy: {{plugins: {{"seed": {{allow: '
             f'[rbac]}}}}}}'),
    "privileged": (deployment({"hostPID": True}), PluginAllow(),
                   f'if plugin seed is trusted with this, allow it {TRUSTED}: policy: {{plugins: {{"seed": {{allow: '
                   f'[privileged]}}}}}}'),
    "secrets": (obj("v1", "Secret", "s-pr-7", stringData={"a": "b"}), PluginAllow(),
                f'if plugin seed is trusted with this, allow it {TRUSTED}: policy: {{plugins: {{"seed": {{allow: '
                f'[secrets]}}}}}}'),
    "namespace": (obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": "data"}), PluginAllow(),
                  f"leave metadata.namespace unset (the object gets the flow's namespace), or list the namespace "
                  f'{TRUSTED}: policy: {{plugins: {{"seed": {{namespaces: [data]}}}}}}'),
    "flow-name": (obj("v1", "ConfigMap", "c"), PluginAllow(),
                  "append -<flowId> to the name (flow.id in the request; Kardinal plugins: end it with flow_uuid)"),
    "other-flow": (obj("v1", "ConfigMap", "c-pr-8"), PluginAllow(),
                   "name the object for the flow being rendered: <name>-<flowId>"),
    "metadata": (deployment({"status": {}}), PluginAllow(),
                 "return pod specs and templates without object metadata; devlane sets labels and namespaces"),
    "isolation": (service(selector=BASE), PluginAllow(),
                  "give the plugin's pods labels of their own (no baseline selector may match them) and volumes of "
                  "their own"),
    "reference": (obj("autoscaling/v2", "HorizontalPodAutoscaler", "h-pr-7", spec={"scaleTargetRef": {
        "kind": "Deployment", "name": "db"}}), PluginAllow(),
        "point the field at the flow's own objects (named <name>-<flowId>) and select only the flow's pods (labels no "
        "baseline object carries); no policy setting lifts this rule"),
    "unmodeled": (obj("example.com/v1", "Widget", "w-pr-7"), PluginAllow(),
                  f"if plugin seed is trusted with example.com/Widget (its references reviewed by whoever grants it), "
                  f'list it {TRUSTED}: policy: {{plugins: {{"seed": {{kinds: [example.com/Widget]}}}}}}; spec.emits in '
                  "the plugin's own plugin.yaml is not enough"),
    "list": (obj("v1", "ConfigMapList", "l-pr-7", items=[]), PluginAllow(),
             "return the List's items as objects of their own, each checked by the output policy"),
}


@pytest.mark.parametrize("rule_name", sorted(HINTS))
def test_each_refusal_names_the_plugin_the_object_and_how_to_fix_it(rule_name):
    thing, allow, hint = HINTS[rule_name]
    (problem,) = problems_of(thing, allow=allow)
    assert problem.message.startswith(f"refused by the output policy (rule {rule_name}): "), problem.message
    assert (problem.hint, problem.where.plugin, problem.code) == (hint, "seed", "plugin-policy")
    kind, name = thing["kind"], thing["metadata"]["name"]
    ns = thing["metadata"].get("namespace", NS)
    assert problem.where.object == (f"{kind}/{name}" if kind == "Namespace" else f"{kind}/{name} in namespace {ns}")


def test_an_undeclared_kind_says_how_to_declare_it():
    (problem,) = problems_of(obj("v1", "ConfigMap", "c-pr-7"), emits=("Service",))
    assert problem.message == ("refused by the output policy (rule emits): ConfigMap is not among the kinds plugin "
                               "seed declares (Service)")
    assert problem.hint == (f"declare the kind in the plugin's plugin.yaml (spec.emits: [ConfigMap]), or allow it "
                            f'{TRUSTED}: policy: {{plugins: {{"seed": {{kinds: [ConfigMap]}}}}}}')
    (problem,) = problems_of(obj("batch/v1", "Job", "j-pr-7"), emits=())
    assert problem.message == ("refused by the output policy (rule emits): batch/Job is not among the kinds plugin "
                               "seed declares (none)")


def test_a_hook_that_moves_an_object_says_so():
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": NS})
    moved = obj("v1", "ConfigMap", "c-pr-7", meta={"namespace": "kube-system"})
    (problem,) = hook_problems([cm], [moved])
    assert problem.message == ("refused by the output policy (rule identity): the lifecycle hook turned it into "
                               "ConfigMap/c-pr-7 in namespace kube-system; a hook patches objects, it does not rename "
                               "or move them")
    assert problem.hint == "return each object with the kind, namespace and name it was given"
    assert problem.where.object == "ConfigMap/c-pr-7 in namespace shop"
