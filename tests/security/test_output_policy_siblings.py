"""The output policy's siblings that no test refused through a real plugin process (issue 41 point 3), each render
exiting 1 with the plugin, the object and the rule named, and leaving the previous output as it was:

- a post-render step re-pointing a dev Service's selector at the baseline's pods (the isolation the render computed
  is checked on the rendered objects first: the dev Service selects no baseline pod);
- a RoleBinding to a ServiceAccount of another namespace named for the flow, and to `User mallory-pr-7`;
- a Pod unconfined by its own AppArmor annotation;
- a KEDA ScaledJob whose job template's pods a baseline selector matches, or whose template moves them to another
  namespace.

The per-item breadth is in-process: tests/unit/render/test_output_policy_siblings.py and test_object_refs_siblings.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import Harness, tree, yamlc

from renderer.core.k8s import map_matches

FLOW = "pr-7"
RENDER = ["--flow", FLOW, "--service", "api=api:2"]
RBAC = "rbac.authorization.k8s.io/v1"

# a post-render step: sets the selector of the Service `change.json` names (none: changes nothing)
REPOINT = r'''
import json, os, sys
doc = json.load(sys.stdin)
here = os.path.dirname(os.path.abspath(__file__))
change = json.load(open(os.path.join(here, "change.json")))
for item in doc["items"]:
    if item.get("kind") == "Service" and item["metadata"]["name"] == change.get("service"):
        item["spec"]["selector"] = change["selector"]
json.dump(doc, sys.stdout)
'''


def step(harness: Harness, change: dict) -> Path:
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "repoint"},
                "spec": {"runtime": {"type": "exec", "command": ["python3", "main.py"]}, "emits": ["Service"]}}
    return harness.plugin("repoint", REPOINT, manifest, files={"change.json": json.dumps(change)},
                          where=harness.tmp / "plugins")


@pytest.mark.e2e
def test_a_post_render_step_repointing_a_dev_service_at_baseline_pods_is_refused_and_nothing_is_written(harness):
    harness.app("api")
    harness.config({"namespace": "shop", "pipeline": [{"name": "repoint", "plugin": "./repoint",
                                                       "stage": "post-render"}]})
    out = harness.tmp / "out"
    done = harness.cli("render", *RENDER, f"--plugin-source=./repoint={step(harness, {})}", "--out", out)
    assert done.returncode == 0, done.stderr
    rendered = [o for f in sorted(out.rglob("*.yaml")) for o in yamlc.safe_load_all(f.read_text()) if o]
    (dev,) = [o for o in rendered if o["kind"] == "Service" and o["metadata"]["name"] == "api-pr-7"]
    assert not map_matches(dev["spec"]["selector"], {"app": "api"})  # as rendered, it selects no baseline pod
    before = tree(out)

    plugin = step(harness, {"service": "api-pr-7", "selector": {"app": "api"}})
    done = harness.cli("render", *RENDER, f"--plugin-source=./repoint={plugin}", "--out", out)
    assert done.returncode == 1, done.stderr
    assert "Service/api-pr-7 in namespace shop, plugin repoint: refused by the output policy (rule isolation): its " \
           "selector matches the pods of baseline Deployment/api, so the flow's traffic would reach the baseline" \
           in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert tree(out) == before


# a repository plugin: adds payload.json's objects ("FLOW" replaced by the flow id)
ADD = r'''
import json, os, sys
doc = json.load(sys.stdin)
flow = doc["functionConfig"]["spec"]["flow"]["id"]
here = os.path.dirname(os.path.abspath(__file__))
doc["items"] += json.loads(open(os.path.join(here, "payload.json")).read().replace("FLOW", flow))
json.dump(doc, sys.stdout)
'''
EMITS = ["ConfigMap", "Pod", "keda.sh/ScaledJob", "rbac.authorization.k8s.io/RoleBinding"]
JOB = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "c:1"}]}


def obj(api: str, kind: str, name: str, **rest) -> dict:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, **rest.pop("meta", {})}, **rest}


def binding(subject: dict) -> dict:
    return obj(RBAC, "RoleBinding", "rb-FLOW", roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                        "name": "r-FLOW"}, subjects=[subject])


CASES = {
    "ServiceAccount of another namespace": (
        binding({"kind": "ServiceAccount", "name": "sa-FLOW", "namespace": "kube-system"}),
        "RoleBinding/rb-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule rbac): it grants "
        "its rights to ServiceAccount sa-pr-7 of namespace kube-system, not to a ServiceAccount of the flow"),
    "User mallory": (
        binding({"kind": "User", "name": "mallory-FLOW", "apiGroup": "rbac.authorization.k8s.io"}),
        "RoleBinding/rb-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule rbac): it grants "
        "its rights to User mallory-pr-7, not to a ServiceAccount of the flow"),
    "Pod AppArmor annotation": (
        obj("v1", "Pod", "p-FLOW", meta={"labels": {"app": "p-FLOW"}, "annotations": {
            "container.apparmor.security.beta.kubernetes.io/c": "unconfined"}}, spec=JOB),
        "Pod/p-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule privileged): "
        "metadata.annotations.container.apparmor.security.beta.kubernetes.io/c is unconfined"),
    "ScaledJob pods a baseline selector matches": (
        obj("keda.sh/v1alpha1", "ScaledJob", "j-FLOW", spec={"jobTargetRef": {"template": {
            "metadata": {"labels": {"app": "worker"}}, "spec": JOB}}, "triggers": []}),
        "ScaledJob/j-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule isolation): the "
        "selector of baseline Service/worker matches its pods, so baseline traffic would reach them"),
    "ScaledJob template moved": (
        obj("keda.sh/v1alpha1", "ScaledJob", "j-FLOW", spec={"jobTargetRef": {"template": {
            "metadata": {"labels": {"app": "j-FLOW"}, "namespace": "kube-system"}, "spec": JOB}}, "triggers": []}),
        "ScaledJob/j-pr-7 in namespace shop, plugin hostile: refused by the output policy (rule metadata): "
        "spec.jobTargetRef.template.metadata.namespace is set"),
}


def repository_plugin(harness: Harness, payload: list[dict]) -> None:
    manifest = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "hostile"},
                "spec": {"runtime": {"type": "exec", "command": ["python3", "main.py"]}, "emits": EMITS}}
    harness.plugin("plugins/hostile", ADD, manifest, files={"payload.json": json.dumps(payload)})


@pytest.mark.e2e
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_sibling_is_refused_through_a_plugin_process_and_nothing_is_written(harness, case):
    added, said = CASES[case]
    harness.app("api", "hostile")
    harness.app("worker")
    harness.plugin_definition({"name": "./plugins/hostile", "type": "stateful", "servicename": "hostile"})
    harness.config({"namespace": "shop"})
    out = harness.tmp / "out"
    repository_plugin(harness, [obj("v1", "ConfigMap", "harmless-FLOW", data={"a": "b"})])
    done = harness.cli("render", *RENDER, "--out", out)
    assert done.returncode == 0, done.stderr
    before = tree(out)
    repository_plugin(harness, [added])
    done = harness.cli("render", *RENDER, "--out", out)
    assert done.returncode == 1, done.stderr
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert tree(out) == before
