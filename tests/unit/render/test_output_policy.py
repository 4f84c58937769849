"""The output policy for plugins (`renderer.render.plugins.output_policy`) as functions: names for the flow (with a
property test over flow ids), kinds, each content rule, only-what-was-introduced for changes, the allow
switches of `.devlane.yaml`, identity for lifecycle hooks, owners, and the invariants run again on the final
object set (`invariants.after_plugins`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.errors import DevlaneError, PluginError
from renderer.host.choose import Choice
from renderer.host.manifest import DEFAULT_EMITS, Manifest
from renderer.host.resolve import PluginSource
from renderer.render.checks import invariants
from renderer.render.copies.dev_set import DevSet
from renderer.render.inputs.document import Document
from renderer.render.model.topology import build_model
from renderer.render.plugins.output_policy import (
    OutputPolicy,
    content_findings,
    emitted,
    name_findings,
    pod_spec_findings,
)
from renderer.render.settings.grants import Grants
from renderer.render.settings.repo_config import PluginAllow, parse_config
from renderer.render.settings.trust import Grant, Trusted

FLOW = "pr-7"
LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?", re.ASCII)


def rules(findings) -> list[str]:
    return [f.rule for f in findings]


# -- names --------------------------------------------------------------------------------------------------


@given(base=st.from_regex(LABEL, fullmatch=True), prefix=st.sampled_from(["pr", "mr", "feature"]),
       ours=st.integers(0, 10**6), theirs=st.integers(0, 10**6))
def test_a_name_is_the_flows_when_it_ends_with_its_id_and_another_flows_when_it_ends_with_theirs(base, prefix, ours,
                                                                                                 theirs):
    flow = f"{prefix}-{ours}"
    assert name_findings(f"{base}-{flow}", flow) == []
    if theirs != ours:
        (found,) = name_findings(f"{base}-{prefix}-{theirs}", flow)
        assert found.rule == "other-flow" and f"flow {prefix}-{theirs}," in found.why


@pytest.mark.parametrize(("name", "rule"), [
    ("seed", "flow-name"), ("pr-7", "flow-name"), ("pr-7-seed", "flow-name"), ("seed-pr-70", "other-flow"),
    ("seed-pr-17", "other-flow"), ("redis-shared", "other-flow"), ("shared", "other-flow"), ("x-spr-7", "flow-name"),
])  # fmt: skip
def test_names_not_for_the_flow(name, rule):
    assert rules(name_findings(name, FLOW)) == [rule]


def test_a_flow_id_without_digits_has_no_sibling_shape():
    assert rules(name_findings("db-feature-signup", "feature-login")) == ["flow-name"]
    assert name_findings("db-feature-login", "feature-login") == []


# -- kinds --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("api", "kind", "kinds", "ok"), [
    ("batch/v1", "Job", ("Job",), True), ("batch/v1", "Job", ("batch/Job",), True),
    ("example.com/v1", "Job", ("batch/Job",), False), ("v1", "ConfigMap", DEFAULT_EMITS, True),
    ("v1", "Secret", DEFAULT_EMITS, False), ("apps/v1", "DaemonSet", DEFAULT_EMITS, False),
    ("rds.services.k8s.aws/v1alpha1", "DBInstance", ("rds.services.k8s.aws/DBInstance",), True),
    ("v1", "ConfigMap", (), False),
])  # fmt: skip
def test_emitted_kinds(api, kind, kinds, ok):
    assert emitted({"apiVersion": api, "kind": kind}, kinds) is ok


# -- content ------------------------------------------------------------------------------------------------


def test_a_pod_spec_within_the_baseline_profile_has_no_findings():
    spec = {"containers": [{"name": "a", "image": "a", "ports": [{"containerPort": 80}], "securityContext": {
        "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}, "runAsUser": 0,
        "allowPrivilegeEscalation": False, "seccompProfile": {"type": "RuntimeDefault"}, "procMount": "Default"}}],
        "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}],
                            "seLinuxOptions": {"level": "s0:c1"}},
        "volumes": [{"name": "v", "emptyDir": {}}]}
    assert pod_spec_findings(spec, "spec") == []


def test_root_with_escalation_counts_the_pod_level_user_and_a_container_may_opt_out():
    spec = {"securityContext": {"runAsUser": 0}, "containers": [
        {"name": "a"}, {"name": "b", "securityContext": {"allowPrivilegeEscalation": False}},
        {"name": "c", "securityContext": {"runAsUser": 1000}}]}
    assert [f.key for f in pod_spec_findings(spec, "spec")] == ["spec.containers[a].root"]


def test_malformed_content_is_not_a_crash():
    for obj in [{"kind": "Deployment", "spec": [1, 2]}, {"kind": "Pod", "spec": "x"},
                {"kind": "Deployment", "spec": {"template": {"metadata": [1], "spec": {"containers": "x"}}}},
                {"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1", "rules": [1, {"verbs": "x"}]},
                {"kind": "RoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1", "roleRef": 3, "subjects": [2]},
                {"kind": "Secret", "apiVersion": "v1", "data": None}, {"metadata": "x"}]:
        content_findings(obj, "pr-7")


def test_secrets_only_plain_ones_with_data():
    secret = {"apiVersion": "v1", "kind": "Secret", "data": {"a": "Yg=="}}
    assert rules(content_findings(secret, "pr-7")) == ["secrets"]
    assert content_findings({"apiVersion": "v1", "kind": "Secret", "type": "Opaque"}, "pr-7") == []
    assert content_findings({"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret",
                             "spec": {"encryptedData": {"a": "x"}}}, "pr-7") == []


def test_a_cronjob_template_is_checked_where_it_is():
    job = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": {
        "metadata": {"namespace": "x"}, "spec": {"template": {"metadata": {"creationTimestamp": None, "uid": "1"},
                                                              "spec": {"hostNetwork": True}}}}}}
    keys = [f.key for f in content_findings(job, "pr-7")]
    assert keys == ["spec.jobTemplate.spec.template.spec.hostNetwork", "spec.jobTemplate.metadata.namespace",
                    "spec.jobTemplate.spec.template.metadata.uid"]


# -- the policy of one render ---------------------------------------------------------------------------------

BASELINE = [
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"}, "spec": {"selector": {"app": "db"}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "db"},
     "spec": {"selector": {"matchLabels": {"app": "db"}}, "template": {"metadata": {"labels": {"app": "db"}}}}},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}},
]


def policy(exceptions: dict | None = None) -> OutputPolicy:
    """`exceptions` granted by the operator's policy file, to the operator's own plugin (`choice`)."""
    model = build_model([Document(o, "app.yaml", i) for i, o in enumerate(BASELINE)], "shop")
    trusted = Trusted({key: (Grant(allow, "the policy file"),) for key, allow in (exceptions or {}).items()})
    return OutputPolicy(model, DevSet(), FLOW, Grants(trusted, exceptions or {}, Path("/no-repo")))


def choice(name: str = "./plugins/seed", emits: tuple | None = None) -> Choice:
    manifest = Manifest(name="seed", runtime="exec", path=Path("."), emits=emits)
    return Choice(name, PluginSource(name, Path("/plugins/seed"), "flag"), manifest, {}, False, "preferred")


def deployment(name: str, labels: dict, **pod) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "m"}], **pod}}}}


def refusals(check) -> list[tuple[str, str, str]]:
    """(object, plugin, rule) of each refusal."""
    with pytest.raises(PluginError) as info:
        check()
    return [(p.where.object, p.where.plugin, re.search(r"rule (\S+)\)", p.message).group(1))
            for p in info.value.problems]


def test_added_objects_each_rule_and_the_owner_of_what_passed():
    pol = policy()
    caller = pol.caller("seed", choice())
    bad = [deployment("spy-pr-7", {"app": "db"}), {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "cfg", "namespace": "default"}}]
    assert refusals(lambda: pol.created(caller, [], bad, "shop")) == [
        ("Deployment/spy-pr-7 in namespace shop", "seed", "isolation"),
        ("Deployment/spy-pr-7 in namespace shop", "seed", "isolation"),
        ("ConfigMap/cfg in namespace default", "seed", "namespace"),
        ("ConfigMap/cfg in namespace default", "seed", "flow-name")]
    assert pol.owners == {}
    good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg-pr-7"}}
    pol.created(caller, [], [good], "shop")
    assert pol.owners == {("ConfigMap", "shop", "cfg-pr-7"): "seed"}


def test_a_change_is_refused_only_for_what_it_introduced():
    pol = policy()
    caller = pol.caller("seed", choice())
    before = deployment("api-pr-7", {"app": "api-pr-7"}, hostNetwork=True,
                        volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    after = deployment("api-pr-7", {"app": "api-pr-7"}, hostNetwork=True, hostPID=True,
                       volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    assert refusals(lambda: pol.created(caller, [(before, after)], [], "shop")) == [
        ("Deployment/api-pr-7 in namespace shop", "seed", "privileged")]
    pol.created(caller, [(before, before)], [], "shop")


def test_allow_switches_from_the_plugin_name_and_the_instance_add_up():
    obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "x-pr-7"},
           "roleRef": {"kind": "ClusterRole", "name": "view"}}
    exceptions = {"./plugins/seed": PluginAllow(frozenset({"clusterScoped"})),
                  "seed": PluginAllow(frozenset({"rbac"}), kinds=("rbac.authorization.k8s.io/ClusterRoleBinding",))}
    pol = policy(exceptions)
    pol.created(pol.caller("seed", choice()), [], [obj], None)
    other = pol.caller("other-instance", choice())
    assert [r for _, _, r in refusals(lambda: pol.created(other, [], [obj], None))] == ["emits", "rbac"]


def test_declared_emits_replace_the_default():
    pol = policy()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c-pr-7"}}
    assert [r for _, _, r in refusals(lambda: pol.created(pol.caller("s", choice(emits=())), [], [cm], None))] == [
        "emits"]
    pol.created(pol.caller("s", choice(emits=("ConfigMap",))), [], [cm], None)


def test_a_lifecycle_hook_keeps_identity_and_a_transform_is_judged_by_identity():
    pol = policy()
    caller = pol.caller("hook", choice())
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "web-pr-7", "namespace": "shop"}}
    moved = {**ing, "metadata": {"name": "web-pr-7", "namespace": "kube-system"}}
    assert refusals(lambda: pol.hooked(caller, [ing], [moved])) == [
        ("Ingress/web-pr-7 in namespace shop", "hook", "identity")]
    labelled = {**ing, "metadata": {**ing["metadata"], "labels": {"a": "b"}}}
    pol.hooked(caller, [ing], [labelled])
    assert pol.owners == {("Ingress", "shop", "web-pr-7"): "hook"}
    # a transform may drop objects; one moved to another namespace is a new object there
    assert refusals(lambda: pol.transformed(caller, [ing], [moved])) == [
        ("Ingress/web-pr-7 in namespace kube-system", "hook", "namespace"),
        ("Ingress/web-pr-7 in namespace kube-system", "hook", "emits")]
    pol.transformed(caller, [ing, labelled], [labelled])


def test_a_malformed_object_from_a_step_is_an_error_naming_it_not_a_crash():
    pol = policy()
    caller = pol.caller("stamp", choice())
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c-pr-7", "namespace": "shop"}}
    for bad, text in [({"kind": "ConfigMap"}, "has no apiVersion"),
                      ({**cm, "metadata": {"name": "x-pr-7", "namespace": ["a"]}}, "metadata.namespace that is a list"),
                      ({**cm, "metadata": {"name": "x-pr-7", "labels": {"a": 1}}}, "metadata.labels that is not a map"),
                      ({**cm, "metadata": {"namespace": "shop"}}, "has no metadata.name")]:
        with pytest.raises(PluginError) as info:
            pol.transformed(caller, [cm], [cm, bad])
        (problem,) = info.value.problems
        assert problem.where.plugin == "stamp" and text in problem.message, problem.message
    renamed = {**cm, "metadata": {"namespace": "shop"}}
    with pytest.raises(PluginError) as info:
        pol.hooked(caller, [cm], [renamed])
    assert "(rule identity): the lifecycle hook turned it into ConfigMap/None" in info.value.problems[0].message


# -- the invariants again on the final object set ---------------------------------------------------------------


def test_the_final_object_set_names_the_plugin_that_broke_an_invariant():
    pol = policy()
    spy = deployment("spy-pr-7", {"app": "db"}, volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    reuse = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "shop"}}
    owners = {("Deployment", "shop", "spy-pr-7"): "stamp", ("ConfigMap", "shop", "cfg"): "stamp"}
    problems = invariants.after_plugins(pol.model, DevSet(), [spy, reuse], owners)
    text = [p.format() for p in problems if p.severity == "error"]
    assert text == [
        "Deployment/spy-pr-7, plugin stamp: isolation violated: the selector of baseline Service/db matches the pods "
        "of Deployment/spy-pr-7 (added or changed by plugin stamp)\n  hint: give the pods labels no baseline "
        "selector uses",
        "Deployment/spy-pr-7, plugin stamp: isolation violated: the selector of baseline Deployment/db matches the "
        "pods of Deployment/spy-pr-7 (added or changed by plugin stamp)\n  hint: give the pods labels no baseline "
        "selector uses",
        "Deployment/spy-pr-7, plugin stamp: isolation violated: Deployment/spy-pr-7 (added or changed by plugin "
        "stamp) mounts the baseline PersistentVolumeClaim data\n  hint: give the pods a claim of their own",
        "ConfigMap/cfg, plugin stamp: isolation violated: dev ConfigMap/cfg (added or changed by plugin stamp) "
        "reuses the name of a baseline object\n  hint: rename the object for the flow (<name>-<flowId>)"]
    unowned = invariants.after_plugins(pol.model, DevSet(), [spy], {})
    assert "report this as a devlane bug" in unowned[0].format()


# -- .devlane.yaml ------------------------------------------------------------------------------------------


def test_the_config_shape_is_validated_and_parsed():
    cfg = parse_config(b"policy: {plugins: {./plugins/seed: {allow: [rbac, secrets], kinds: [batch/Job], "
                       b"namespaces: [data]}}}")
    assert cfg.plugin_policy == {"./plugins/seed": PluginAllow(frozenset({"rbac", "secrets"}), ("batch/Job",),
                                                               ("data",))}
    for bad, path in [(b"policy: {plugins: {x: {allow: [root]}}}", "policy.plugins.x.allow.0"),
                      (b"policy: {plugins: {x: {kinds: [batch/v1/Job]}}}", "policy.plugins.x.kinds.0"),
                      (b"policy: {plugins: {x: {kinds: [\"Job\\n\"]}}}", "policy.plugins.x.kinds.0"),
                      (b"policy: {plugins: {x: {deny: []}}}", "policy.plugins.x")]:
        with pytest.raises(DevlaneError) as info:
            parse_config(bad)
        assert info.value.problems[0].message.startswith(path + ":"), info.value.problems[0].message
