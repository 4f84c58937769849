"""Hostile plugin OUTPUT: what a plugin returns is refused when it would escape the flow (SPEC §4.1, issue 10
points 2 and 5).

One hostile plugin per forbidden thing, each a real exec plugin (a small Python script run as its own
process, through `devlane render`): a ClusterRoleBinding to cluster-admin, an object in kube-system, a plain
Secret with data, an object named after another flow, a Deployment whose labels a baseline selector matches,
a privileged pod, a hostPath volume, a Role with wildcards, pod template metadata that moves the pod, and
replies that are an alias bomb, 10,000 levels deep or carry an oversized field. Each render exits 1 with one
error naming the plugin, the object and the rule, and the previous output stays byte-identical. Then the
`.devlane.yaml` switches that let one plugin through, a post-render step, and (in-process, fast) the
breadth: every rule on a built-in plugin, bypass, and what Kardinal-style plugins emit by default.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from support import Harness, tree, yamlc

FLOW = "pr-7"
RENDER = ["--flow", FLOW, "--service", "api=api:2"]
# reads payload.json beside it: {"add": [objects], "pod": {fields merged into each workload's pod spec}} with
# "FLOW" replaced by the flow id, or writes reply.txt as its whole reply
HOSTILE = r'''
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
raw = os.path.join(here, "reply.txt")
if os.path.exists(raw):
    sys.stdin.read()
    sys.stdout.write(open(raw).read())
    sys.exit(0)
doc = json.load(sys.stdin)
flow = doc["functionConfig"]["spec"]["flow"]["id"]
payload = json.loads(open(os.path.join(here, "payload.json")).read().replace("FLOW", flow))
for item in doc["items"]:
    if item["metadata"]["annotations"].get("devlane.dev/role") == "workload":
        item["spec"]["template"]["spec"].update(payload.get("pod", {}))
doc["items"] += payload.get("add", [])
json.dump(doc, sys.stdout)
'''


def hostile(harness: Harness, payload: dict | None = None, reply: str | None = None, emits: list | None = None,
            name: str = "hostile") -> Path:
    """An exec plugin outside the repository that returns `payload` (or exactly `reply`)."""
    spec = {"version": "0.1.0", "runtime": {"type": "exec", "command": ["python3", "hostile.py"]}}
    if emits is not None:
        spec["emits"] = emits
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": name}, "spec": spec}
    files = {"hostile.py": HOSTILE, "payload.json": json.dumps(payload or {})}
    if reply is not None:
        files["reply.txt"] = reply
    return harness.plugin(name, manifest=manifest, files=files, where=harness.tmp / "plugins")


def repo(harness: Harness, config: dict | None = None) -> None:
    """api (using plugin instance `hostile` of plugin `hostile`) and db, in namespace shop."""
    harness.app("api", "hostile")
    harness.app("db")
    harness.plugin_definition({"name": "hostile", "type": "stateful", "servicename": "hostile"})
    harness.config({"namespace": "shop", **(config or {})})


def render(harness: Harness, plugin: Path, *extra: str):
    return harness.cli("render", *RENDER, f"--plugin-source=hostile={plugin}", "--out", harness.tmp / "out", *extra)


def operator_policy(harness: Harness, plugins: dict) -> str:
    """The operator's policy file, outside the repository (`--policy`)."""
    path = harness.tmp / "policy.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "devlane.dev/v1alpha1", "kind": "Config",
                                    "policy": {"plugins": plugins}}))
    return f"--policy={path}"


def refused(harness: Harness, payload: dict | None = None, reply: str | None = None, emits: list | None = None,
            config: dict | None = None, beside: str | None = None) -> str:
    """Render once with a harmless plugin (and flow `beside` too, when given), then with the hostile one: exit 1,
    the output as it was. Returns stderr."""
    repo(harness, config)
    assert render(harness, hostile(harness, {})).returncode == 0
    if beside:
        assert harness.cli("render", "--flow", beside, "--service", "api=api:3", f"--plugin-source=hostile="
                           f"{hostile(harness, {})}", "--out", harness.tmp / "out").returncode == 0
    before = tree(harness.tmp / "out")
    out = render(harness, hostile(harness, payload, reply, emits))
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr and "internal error" not in out.stderr
    assert "plugin hostile" in out.stderr
    assert tree(harness.tmp / "out") == before
    return out.stderr


def obj(kind: str, name: str, api: str = "v1", **rest) -> dict:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, **rest.pop("meta", {})}, **rest}


def deployment(name: str, labels: dict, pod: dict | None = None, template_meta: dict | None = None) -> dict:
    pod = {"containers": [{"name": "x", "image": "x:1"}], **(pod or {})}
    return obj("Deployment", name, "apps/v1", spec={"selector": {"matchLabels": labels}, "template": {
        "metadata": {"labels": labels, **(template_meta or {})}, "spec": pod}})


# -- each forbidden thing, through a real plugin process ------------------------------------------------------

CASES = {
    "cluster-admin": (
        {"add": [obj("ClusterRoleBinding", "pwn-FLOW", "rbac.authorization.k8s.io/v1",
                     roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                     subjects=[{"kind": "ServiceAccount", "name": "default", "namespace": "shop"}])]},
        ["ClusterRoleBinding/pwn-pr-7, plugin hostile: refused by the output policy (rule clusterScoped)",
         "(rule rbac): it binds ClusterRole cluster-admin", "allow: [clusterScoped]"]),
    "kube-system": (
        {"add": [obj("ConfigMap", "cfg-FLOW", meta={"namespace": "kube-system"}, data={"a": "b"})]},
        ["ConfigMap/cfg-pr-7 in namespace kube-system, plugin hostile: refused by the output policy (rule namespace)",
         "namespace kube-system is not the flow's (shop)", "leave metadata.namespace unset"]),
    "secret": (
        {"add": [obj("Secret", "creds-FLOW", stringData={"password": "hunter2"})]},
        ["Secret/creds-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule secrets)",
         "written to git in plain text", "allow: [secrets]"]),
    "other-flow": (
        {"add": [obj("ConfigMap", "api-pr-8", data={"a": "b"})]},
        ["ConfigMap/api-pr-8 in namespace shop, plugin hostile: refused by the output policy (rule other-flow)",
         "the name api-pr-8 belongs to flow pr-8, not to flow pr-7"]),
    "selector": (
        {"add": [deployment("spy-FLOW", {"app": "db"})]},
        ["Deployment/spy-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule isolation)",
         "the selector of baseline Service/db matches its pods"]),
    "privileged": (
        {"pod": {"containers": [{"name": "main", "image": "api:2", "securityContext": {"privileged": True}}]}},
        ["Deployment/api-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule privileged)",
         "containers[main].securityContext.privileged is true", "allow: [privileged]"]),
    "hostPath": (
        {"add": [deployment("agent-FLOW", {"app": "agent-FLOW"}, {"volumes": [
            {"name": "root", "hostPath": {"path": "/"}}]})]},
        ["Deployment/agent-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule privileged)",
         "volume root mounts the node's /"]),
    "wildcard-role": (
        {"add": [obj("Role", "all-FLOW", "rbac.authorization.k8s.io/v1",
                     rules=[{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])]},
        ["Role/all-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule rbac)",
         "rules[0] grants apiGroups *; resources *; verbs *",
         "(rule emits): rbac.authorization.k8s.io/Role is not among the kinds",
         "spec.emits: [rbac.authorization.k8s.io/Role]"]),
    "template-metadata": (
        {"add": [deployment("mover-FLOW", {"app": "mover-FLOW"}, template_meta={"namespace": "kube-system"})]},
        ["Deployment/mover-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule metadata)",
         "spec.template.metadata.namespace is set"]),
    # round two (issue 30): a List, endpoints and policies on the baseline, another flow's name, wide RBAC
    "list": (
        {"add": [obj("List", "wrap-FLOW", items=[obj(
            "ClusterRoleBinding", "pwn-FLOW", "rbac.authorization.k8s.io/v1",
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            subjects=[{"kind": "ServiceAccount", "name": "default", "namespace": "shop"}])])]},
        ["List/wrap-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule list)",
         "return the List's items as objects of their own"]),
    "endpointslice": (
        {"add": [obj("EndpointSlice", "db-extra-FLOW", "discovery.k8s.io/v1",
                     meta={"labels": {"kubernetes.io/service-name": "db"}}, addressType="IPv4",
                     endpoints=[{"addresses": ["203.0.113.7"]}], ports=[{"port": 80}])]},
        ["EndpointSlice/db-extra-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule "
         "isolation)", "the baseline Service db"]),
    "network-policy": (
        {"add": [obj("NetworkPolicy", "deny-FLOW", "networking.k8s.io/v1",
                     spec={"podSelector": {}, "policyTypes": ["Ingress"]})]},
        ["NetworkPolicy/deny-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule isolation)",
         "its podSelector selects the pods of baseline"]),
    "external-name": (
        {"add": [obj("Service", "alias-FLOW", spec={"type": "ExternalName",
                                                    "externalName": "db.shop.svc.cluster.local"})]},
        ["Service/alias-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule isolation)",
         "the baseline Service db"]),
    "another-flows-copy": (
        {"add": [deployment("api-hotfix-FLOW", {"app": "api-hotfix-FLOW"})]},
        ["Deployment/api-hotfix-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule "
         "other-flow)", "also flow hotfix-pr-7's copy of api"]),
    "secret-reader": (
        {"add": [obj("Role", "reader-FLOW", "rbac.authorization.k8s.io/v1",
                     rules=[{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]),
                 obj("RoleBinding", "reader-FLOW", "rbac.authorization.k8s.io/v1",
                     roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader-pr-7"},
                     subjects=[{"kind": "ServiceAccount", "name": "default"}])]},
        ["Role/reader-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule rbac)",
         "rules[0] reaches every Secret of the namespace",
         "it grants its rights to ServiceAccount default, not to a ServiceAccount of the flow"]),
}


@pytest.mark.e2e
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_forbidden_object_is_refused_naming_plugin_object_and_rule(harness, case, sandbox):
    payload, expected = CASES[case]
    err = refused(harness, payload, beside="hotfix-pr-7" if case == "another-flows-copy" else None)
    for text in expected:
        assert text in err, err


def test_a_name_is_another_flows_only_while_that_flow_is_rendered_beside_this_one(harness, sandbox):
    """The other-flow rule refuses names that are really another flow's (issue 44, point 6): without a flow
    `hotfix-pr-7` in the output directory, `api-hotfix-pr-7` takes nothing from anyone."""
    repo(harness)
    payload, _ = CASES["another-flows-copy"]
    done = render(harness, hostile(harness, payload))
    assert done.returncode == 0, done.stderr
    assert (harness.tmp / "out" / "flows" / FLOW / "deployment-api-hotfix-pr-7.yaml").is_file()


REPLIES = {
    "alias-bomb": ("".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))
                   .replace("*l0", "lol"),
                   "the reply is refused: YAML aliases expand the document past 1,000,000 nodes"),
    "10,000-deep": ("[" * 10_000 + "]" * 10_000, "the reply is nested more than 200 levels deep"),
    "100,000-deep YAML": ("- " * 100_000 + "x\n",
                          "the reply is refused: YAML nesting is deeper than 200 levels (line 1)"),
    "oversized field": (json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [
        obj("ConfigMap", "big", data={"blob": "x" * (2 * 1024 * 1024)})]}),
        "the reply has a field of 2,097,152 bytes at items[0].data.blob, more than the 1,024 KiB a field may hold"),
}


@pytest.mark.e2e
@pytest.mark.parametrize("case", sorted(REPLIES))
def test_unbounded_replies_are_refused_before_they_are_built(harness, case):
    reply, expected = REPLIES[case]
    err = refused(harness, reply=reply)
    assert expected in err and "CreateFlow of hostile" in err, err


TRUSTED = {"allow": ["secrets", "privileged"], "kinds": ["Secret"]}
PAYLOAD = {"add": [obj("Secret", "creds-FLOW", stringData={"password": "dev"}),
                   deployment("agent-FLOW", {"app": "agent-FLOW"}, {"hostNetwork": True})]}


@pytest.mark.e2e
def test_the_operators_policy_lets_one_plugin_through_and_no_other(harness):
    repo(harness)
    out = render(harness, hostile(harness, PAYLOAD), operator_policy(harness, {"hostile": TRUSTED}))
    assert out.returncode == 0, out.stderr
    flow = harness.tmp / "out" / "flows" / FLOW
    assert "password: dev" in (flow / "secret-creds-pr-7.yaml").read_text()
    assert "hostNetwork: true" in (flow / "deployment-agent-pr-7.yaml").read_text()
    err = render(harness, hostile(harness, PAYLOAD), operator_policy(harness, {"someone-else": TRUSTED})).stderr
    assert "(rule secrets)" in err and "(rule privileged)" in err and "(rule emits)" in err


@pytest.mark.e2e
def test_the_pull_requests_own_config_relaxes_nothing(harness):
    """The head's .devlane.yaml asks to lift the policy for its own plugin: ignored with a warning naming the
    setting, the plugin refused; under --strict the ask itself is an error."""
    repo(harness, {"policy": {"plugins": {"hostile": TRUSTED}}})
    out = render(harness, hostile(harness, PAYLOAD))
    assert out.returncode == 1 and "(rule secrets)" in out.stderr, out.stderr
    assert "allow it in the operator's policy file (--policy) or in .devlane.yaml at the trusted base " \
           "(--trusted-ref); the pull request's own cannot" in out.stderr
    out = render(harness, hostile(harness, {"add": [obj("ConfigMap", "c-FLOW", data={"a": "b"})]}))
    assert out.returncode == 0, out.stderr  # what needs no relaxation renders, and the ignored ask is said
    assert "warning: .devlane.yaml: policy.plugins.hostile (allow privileged, allow secrets, kinds Secret) relaxes " \
           "devlane's safety, which only a trusted source may do (no trusted source is given); ignored" in out.stderr
    out = render(harness, hostile(harness, PAYLOAD), "--strict")
    assert out.returncode == 1 and "error: .devlane.yaml: policy.plugins.hostile" in out.stderr, out.stderr


@pytest.mark.e2e
def test_the_trusted_base_ref_grants_and_the_head_may_only_narrow(harness):
    repo(harness, {"policy": {"plugins": {"hostile": TRUSTED}}})
    base = harness.commit("base: the platform team's grant")
    plugin = hostile(harness, PAYLOAD)
    out = render(harness, plugin, f"--trusted-ref={base}")
    assert out.returncode == 0, out.stderr
    harness.config({"namespace": "shop", "policy": {"plugins": {"hostile": {"allow": ["secrets", "privileged",
                                                                                      "rbac"], "kinds": ["Secret"]}}}})
    out = render(harness, plugin, f"--trusted-ref={base}")  # asks one more switch: the rest still holds
    assert out.returncode == 0 and "policy.plugins.hostile (allow rbac)" in out.stderr, out.stderr
    harness.config({"namespace": "shop", "policy": {"plugins": {"hostile": {"allow": ["privileged"]}}}})
    out = render(harness, plugin, f"--trusted-ref={base}")  # narrows: the Secret is refused again
    assert out.returncode == 1 and "(rule secrets)" in out.stderr and "relaxes" not in out.stderr


@pytest.mark.e2e
def test_a_post_render_step_is_held_to_the_same_policy(harness):
    harness.app("api")
    plugin = hostile(harness, {"add": [obj("Namespace", "evil-FLOW"), deployment("spy-FLOW", {"app": "api"})]},
                     name="stamp")
    harness.config({"namespace": "shop",
                    "pipeline": [{"name": "stamp", "plugin": "./stamp", "stage": "post-render"}]})
    out = harness.cli("render", *RENDER, f"--plugin-source=./stamp={plugin}", "--stdout")
    assert out.returncode == 1 and out.stdout == ""
    assert "Namespace/evil-pr-7, plugin stamp: refused by the output policy (rule clusterScoped)" in out.stderr
    assert '{"./stamp": {allow: [clusterScoped]}}' in out.stderr
    # it names no namespace, so it lands in the destination namespace, beside the baseline it would receive
    assert "Deployment/spy-pr-7 in namespace shop, plugin stamp: refused by the output policy (rule isolation): " \
           "the selector of baseline Service/api matches its pods" in out.stderr


# -- in-process breadth: a built-in Kardinal plugin (devlane's own process, the same reply reader) -------------

KARDINAL = '''
import json

def create_flow(service_specs, pod_specs, flow_uuid, payload):
    payload = json.loads(payload.replace("FLOW", flow_uuid))
    for spec in pod_specs:
        spec.update(payload.get("pod", {}))
        spec["containers"][0].update(payload.get("container", {}))
    return {"pod_specs": pod_specs, "config_map": {}, "resources": payload.get("add", [])}
'''


def kardinal_repo(harness: Harness, payload: dict, baseline_pod: dict | None = None, behavior: str = "enforce",
                  config: dict | None = None, manifest: dict | None = None) -> None:
    """api (with `baseline_pod` fields) using built-in plugin `seed`, which applies `payload`, its argument
    ("FLOW" becomes flow_uuid, seed-pr-7); db with a claim, all in namespace shop."""
    containers = [{"name": "main", "image": "api:1"}]
    harness.app("api", "seed", containers)
    if baseline_pod:
        text = (harness.root / "app.yaml").read_text().replace(
            "    spec: {containers:", "    spec: {" + json.dumps(baseline_pod)[1:-1] + ", containers:", 1)
        harness.write("app.yaml", text)
    harness.app("db")
    harness.append("app.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n"
                               "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n---\n")
    harness.plugin_definition({"name": "seed", "type": "stateful", "servicename": "seed", "behavior": behavior,
                               "args": {"payload": json.dumps(payload)}})
    harness.config({"namespace": "shop", **(config or {})})
    harness.plugin("seed", main_py=KARDINAL, manifest=manifest, where=harness.builtins())


def in_process(harness: Harness, payload: dict, **kw):
    kardinal_repo(harness, payload, **kw)
    return harness.cli("render", *RENDER, "--stdout")


def test_what_kardinal_style_plugins_emit_is_accepted_by_default(harness):
    job = obj("Job", "provision-FLOW", "batch/v1", meta={"annotations": {"argocd.argoproj.io/hook": "PreSync"}},
              spec={"template": {"metadata": {"creationTimestamp": None}, "spec": {
                  "restartPolicy": "Never", "containers": [{"name": "p", "image": "busybox", "command": ["true"]}]}}})
    added = [job, obj("ConfigMap", "seed-FLOW", data={"sql": "select 1"}),
             obj("PersistentVolumeClaim", "scratch-FLOW", spec={"accessModes": ["ReadWriteOnce"]}),
             obj("Service", "seed-svc-FLOW", spec={"selector": {"app": "seed-FLOW"}, "ports": [{"port": 5432}]}),
             deployment("seed-db-FLOW", {"app": "seed-FLOW"}, {"volumes": [
                 {"name": "d", "persistentVolumeClaim": {"claimName": "scratch-seed-pr-7"}}]})]
    out = in_process(harness, {"add": added, "container": {"env": [{"name": "DB", "value": "seed-db-pr-7"}]}})
    assert out.returncode == 0, out.stderr
    rendered = {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(out.stdout) if o}
    for kind, name in [("Job", "provision-seed-pr-7"), ("ConfigMap", "seed-seed-pr-7"),
                       ("Service", "seed-svc-seed-pr-7"), ("PersistentVolumeClaim", "scratch-seed-pr-7"),
                       ("Deployment", "seed-db-seed-pr-7")]:
        assert rendered[(kind, name)]["metadata"]["namespace"] == "shop"


POD_CASES = {
    "hostPID": ({"pod": {"hostPID": True}}, "spec.template.spec.hostPID is true"),
    "hostIPC": ({"pod": {"hostIPC": True}}, "spec.template.spec.hostIPC is true"),
    "capability": ({"container": {"securityContext": {"capabilities": {"add": ["NET_ADMIN", "CHOWN"]}}}},
                   "containers[main].securityContext.capabilities.add has NET_ADMIN"),
    "hostPort": ({"container": {"ports": [{"containerPort": 80, "hostPort": 80}]}},
                 "containers[main] binds host port(s) [80]"),
    "seccomp": ({"pod": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}},
                "spec.template.spec.securityContext.seccompProfile is Unconfined"),
    "procMount": ({"container": {"securityContext": {"procMount": "Unmasked"}}}, "procMount is Unmasked"),
    "sysctl": ({"pod": {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}},
               "securityContext.sysctls sets kernel.msgmax"),
    "root": ({"pod": {"securityContext": {"runAsUser": 0}}},
             "containers[main] runs as root (runAsUser 0) with privilege escalation allowed"),
    "selinux": ({"container": {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}},
                "seLinuxOptions sets a custom user, role or type"),
    "hostProcess": ({"pod": {"securityContext": {"windowsOptions": {"hostProcess": True}}}},
                    "runs as a Windows host process"),
}


def test_what_the_baseline_already_had_is_not_the_plugins_doing(harness):
    inherited = {"hostNetwork": True, "volumes": [{"name": "logs", "hostPath": {"path": "/var/log"}}]}
    out = in_process(harness, {"container": {"env": [{"name": "A", "value": "1"}]}}, baseline_pod=inherited)
    assert out.returncode == 0, out.stderr
    assert "hostNetwork: true" in out.stdout and "path: /var/log" in out.stdout


MORE_CASES = {
    "edit-role": ({"add": [obj("RoleBinding", "rb-FLOW", "rbac.authorization.k8s.io/v1", roleRef={
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}, subjects=[])]},
        "(rule rbac): it binds ClusterRole edit"),
    "everyone": ({"add": [obj("RoleBinding", "rb-FLOW", "rbac.authorization.k8s.io/v1", roleRef={
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, subjects=[
        {"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"}])]},
        "(rule rbac): it grants its rights to every system:authenticated"),
    "escalate": ({"add": [obj("Role", "r-FLOW", "rbac.authorization.k8s.io/v1", rules=[
        {"apiGroups": [""], "resources": ["roles"], "verbs": ["escalate", "get"]}])]},
        "(rule rbac): rules[0] grants verbs escalate"),
    "unsuffixed": ({"add": [obj("ConfigMap", "seed", data={})]},
                   "(rule flow-name): seed is not named for flow pr-7: a plugin's objects are named <name>-pr-7"),
    "shared": ({"add": [obj("ConfigMap", "redis-shared", data={})]},
               "(rule other-flow): the name redis-shared belongs to the copies every flow shares"),
    "owner": ({"add": [obj("ConfigMap", "c-FLOW", meta={"ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "db", "uid": "1"}]})]},
        "(rule metadata): metadata.ownerReferences is set"),
    "finalizer-in-template": ({"add": [deployment("w-FLOW", {"app": "w-FLOW"}, template_meta={
        "finalizers": ["x/y"]})]}, "(rule metadata): spec.template.metadata.finalizers is set"),
    "metadata-in-pod-spec": ({"pod": {"metadata": {"labels": {"app": "db"}}}},
                             "(rule metadata): spec.template.spec.metadata: a pod spec has no metadata"),
    "baseline-claim": ({"add": [obj("Job", "copy-FLOW", "batch/v1", spec={"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "c"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}})]},
        "(rule isolation): its pods mount the baseline PersistentVolumeClaim data"),
    "apparmor": ({"add": [deployment("w-FLOW", {"app": "w-FLOW"}, template_meta={"annotations": {
        "container.apparmor.security.beta.kubernetes.io/x": "unconfined"}})]},
        "(rule privileged): spec.template.metadata.annotations.container.apparmor"),
    "nodeport": ({"add": [obj("Service", "db-FLOW", spec={"type": "NodePort", "selector": {"app": "x-FLOW"}})]},
                 "(rule privileged): a NodePort Service opens a port outside the cluster network"),
    "external-ips": ({"add": [obj("Service", "mitm-FLOW", spec={"externalIPs": ["8.8.8.8"], "ports": [
        {"port": 53}]})]}, "(rule privileged): spec.externalIPs captures the cluster's traffic to 8.8.8.8"),
    "service-to-baseline": ({"add": [obj("Service", "db-FLOW", spec={"selector": {"app": "db"}})]},
                            "(rule isolation): its selector matches the pods of baseline Deployment/db"),
    "network-policy": ({"add": [obj("NetworkPolicy", "deny-FLOW", "networking.k8s.io/v1", spec={"podSelector": {}})]},
                       "(rule emits): networking.k8s.io/NetworkPolicy is not among the kinds plugin seed declares"),
}


PRIVILEGED = ["Deployment/api-pr-7 in namespace shop, plugin seed: refused by the output policy (rule privileged)",
              '{"seed": {allow: [privileged]}}']
IN_PROCESS = {**{case: (payload, [*PRIVILEGED, text]) for case, (payload, text) in POD_CASES.items()},
              **{case: (payload, [text]) for case, (payload, text) in MORE_CASES.items()}}


@pytest.mark.parametrize("case", sorted(IN_PROCESS))
def test_every_rule_names_plugin_object_and_rule(harness, case):
    payload, expected = IN_PROCESS[case]
    out = in_process(harness, payload)
    assert out.returncode == 1
    assert "plugin seed: refused by the output policy" in out.stderr and out.stdout == ""
    for text in expected:
        assert text in out.stderr, out.stderr


def test_the_final_object_set_names_the_plugin_whose_object_collides_with_devlanes_own(harness):
    out = in_process(harness, {"add": [obj("ConfigMap", "devlane-state-FLOW", data={"config_map.json": "{}"})]})
    assert out.returncode == 1 and out.stdout == ""
    assert "plugin seed: two rendered objects are both ConfigMap/devlane-state-seed-pr-7 (added or changed by plugin " \
           "seed)" in out.stderr, out.stderr


def test_a_bypassed_plugin_that_breaks_the_policy_is_dropped_with_a_warning(harness):
    payload = {"add": [obj("Namespace", "x-FLOW")], "container": {"env": [{"name": "B", "value": "1"}]}}
    out = in_process(harness, payload, behavior="bypass")
    assert out.returncode == 0, out.stderr
    assert "plugin failed and was bypassed" in out.stderr and "(rule clusterScoped)" in out.stderr
    assert "Namespace" not in out.stdout and "name: B" not in out.stdout


def test_spec_emits_and_the_kinds_switch_decide_the_kinds(harness):
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "seed"},
                "spec": {"runtime": {"type": "kardinal-python"}, "emits": ["rds.services.k8s.aws/DBInstance"]}}
    db = obj("DBInstance", "orders-FLOW", "rds.services.k8s.aws/v1alpha1", spec={"engine": "postgres"})
    assert in_process(harness, {"add": [db]}, manifest=manifest).returncode == 0
    app = harness.root / "app.yaml"
    app.write_text(app.read_text().replace("rds.services.k8s.aws/v1alpha1", "example.com/v1"))
    out = harness.cli("render", *RENDER, "--stdout")
    assert "(rule emits): example.com/DBInstance is not among the kinds plugin seed declares " \
           "(rds.services.k8s.aws/DBInstance)" in out.stderr
    policy = operator_policy(harness, {"seed": {"kinds": ["DBInstance"]}})
    assert harness.cli("render", *RENDER, "--stdout", policy).returncode == 0


def test_narrow_rbac_that_the_plugin_declares_is_accepted(harness):
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "seed"},
                "spec": {"runtime": {"type": "kardinal-python"},
                         "emits": ["ServiceAccount", "rbac.authorization.k8s.io/Role", "RoleBinding", "Job"]}}
    rbac = "rbac.authorization.k8s.io/v1"
    added = [obj("ServiceAccount", "seeder-FLOW"),
             obj("Role", "seeder-FLOW", rbac, rules=[{"apiGroups": [""], "resources": ["configmaps"],
                                                     "resourceNames": ["seed-data-seed-pr-7"], "verbs": ["get"]},
                                                    {"apiGroups": [""], "resources": ["configmaps"],
                                                     "verbs": ["create"]}]),
             obj("RoleBinding", "seeder-FLOW", rbac, roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                               "name": "seeder-seed-pr-7"},
                 subjects=[{"kind": "ServiceAccount", "name": "seeder-seed-pr-7"}])]
    out = in_process(harness, {"add": added}, manifest=manifest)
    assert out.returncode == 0, out.stderr
    assert {(o["kind"], o["metadata"]["name"]) for o in yamlc.safe_load_all(out.stdout) if o} >= {
        ("ServiceAccount", "seeder-seed-pr-7"), ("Role", "seeder-seed-pr-7"), ("RoleBinding", "seeder-seed-pr-7")}


def test_an_allowed_namespace_is_accepted_for_that_plugin(harness):
    payload = {"add": [obj("ConfigMap", "c-FLOW", meta={"namespace": "data"})]}
    assert in_process(harness, payload).returncode == 1
    out = harness.cli("render", *RENDER, "--stdout", operator_policy(harness, {"seed": {"namespaces": ["data"]}}))
    assert out.returncode == 0, out.stderr
    assert "namespace: data" in out.stdout


@pytest.mark.e2e
def test_a_replayed_provision_record_is_held_to_the_same_policy(harness, tmp_path):
    """A provision record lives in the repository (.devlane/state), so a pull request can edit what it says the
    plugin returned; the input hash covers what the plugin was given, not its result. A record that now adds a
    cluster-admin binding is refused on replay, as the plugin's own reply would be."""
    main = ("def create_flow(service_specs, pod_specs, flow_uuid):\n"
            "    return {'pod_specs': pod_specs, 'config_map': {}}\n")
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "branch"},
                "spec": {"runtime": {"type": "kardinal-python"}, "sideEffects": "External"}}
    plugin = harness.plugin("branch", main, manifest, where=tmp_path)
    harness.app("api", "db")
    harness.plugin_definition({"name": "branch", "type": "external", "servicename": "db"})
    source = f"--plugin-source=branch={plugin}"
    assert harness.cli("provision", *RENDER, source).returncode == 0
    record_file = harness.root / ".devlane" / "state" / FLOW / "db.json"
    record = json.loads(record_file.read_text())
    record["result"]["resources"] = [obj(
        "ClusterRoleBinding", "pwn-pr-7", "rbac.authorization.k8s.io/v1",
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        subjects=[{"kind": "ServiceAccount", "name": "default", "namespace": "default"}])]
    record_file.write_text(json.dumps(record))
    out = harness.cli("render", *RENDER, source, "--stdout")
    assert out.returncode == 1 and out.stdout == "", out.stderr
    assert "ClusterRoleBinding/pwn-pr-7" in out.stderr and "(rule clusterScoped)" in out.stderr


@pytest.mark.e2e
def test_cmp_generate_renders_the_head_whose_own_config_relaxes_nothing(harness):
    """Argo CD's repo-server renders the pull request's head: its .devlane.yaml lifting the policy for its own
    plugin (clusterScoped, rbac) changes nothing, and nothing reaches stdout."""
    payload = CASES["cluster-admin"][0]
    repo(harness)
    plugin = hostile(harness, payload)
    harness.config({"namespace": "shop", "plugins": {"sources": {"hostile": {"path": "hostile-plugin"}}},
                    "policy": {"plugins": {"hostile": {"allow": ["clusterScoped", "rbac"],
                                                       "kinds": ["ClusterRoleBinding"]}}}})  # fmt: skip
    shutil.copytree(plugin, harness.root / "hostile-plugin")  # the pull request's own plugin
    env = {"ARGOCD_ENV_FLOW_ID": FLOW, "ARGOCD_APP_PARAMETERS": json.dumps([{"name": "services",
                                                                             "array": ["api=api:2"]}])}
    out = harness.cli("cmp", "generate", cwd=harness.root, env={**env, "DEVLANE_ALLOW_WEAK_SANDBOX": ""})
    assert out.returncode == 1 and out.stdout == "", out.stderr
    assert "ClusterRoleBinding/pwn-pr-7" in out.stderr and "(rule clusterScoped)" in out.stderr
