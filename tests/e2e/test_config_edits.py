"""A plugin edits the ConfigMaps its dependents read (`config_maps`): the edits land in the flow's own copy, every dev
pod that read the baseline's reads the copy, the baseline's ConfigMap and pods are untouched, and an edit joins the
clone's copy when references were rewritten there already. Checked from the rendered objects: which ConfigMap each
rendered pod mounts, and what that ConfigMap holds (end-to-end: a repository plugin runs as a subprocess)."""

from __future__ import annotations

import pytest
from support import yaml_doc, yamlc

from renderer.errors import DevlaneError

RENAMER = '''
def create_flow(service_specs, pod_specs, flow_uuid, config_maps):
    renamed = [{name: {key: value.replace("topic: orders", "topic: orders-" + flow_uuid) for key, value in data.items()}
                for name, data in per.items()} for per in config_maps]
    return {"pod_specs": pod_specs, "config_maps": renamed, "config_map": {}}

def delete_flow(config_map, flow_uuid):
    return None
'''
ADDS_A_KEY = '''
def create_flow(service_specs, pod_specs, flow_uuid, config_maps):
    return {"pod_specs": pod_specs, "config_map": {},
            "config_maps": [{name: {**data, "extra": "x"} for name, data in per.items()} for per in config_maps]}
'''


def _app(name: str, configs: list[str], annotations: dict[str, str]) -> str:
    volumes = [{"name": f"v{i}", "configMap": {"name": c}} for i, c in enumerate(configs)]
    mounts = [{"name": f"v{i}", "mountPath": f"/config/{i}"} for i in range(len(configs))]
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                  "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                      "metadata": {"labels": {"app": name}},
                      "spec": {"containers": [{"name": "main", "image": f"{name}:1", "volumeMounts": mounts}],
                               "volumes": volumes}}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "annotations": annotations},
               "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80}]}}
    return yaml_doc(deployment) + yaml_doc(service)


def shop(harness, main_py: str = RENAMER) -> None:
    """a and b (the flow's) and c (not in it) mount `shared`; b also mounts `b-only`, which names a."""
    uses = {"kardinal.dev.service/plugins": "bus"}
    harness.write("app.yaml", "".join([
        _app("a", ["shared"], uses),
        _app("b", ["shared", "b-only"], {**uses, "kardinal.dev.service/dependencies": "a:http"}),
        _app("c", ["shared"], {"kardinal.dev.service/dependencies": "b:http"}),
        yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"},
                  "data": {"app.yml": "topic: orders\n", "other": "topic: orders\n"}}),
        yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b-only"},
                  "data": {"app.yml": "upstream: http://a:80\ntopic: orders\n"}}),
    ]))
    harness.plugin("plugins/renamer", main_py)
    harness.plugin_definition({"name": "./plugins/renamer", "type": "external", "servicename": "bus"})


def rendered(result) -> dict[tuple[str, str], dict]:
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
            for o in yamlc.safe_load_all(result.stream()) if o}


def mounted(objects: dict, kind_ns_name: tuple[str, str, str]) -> dict[str, dict]:
    """The ConfigMaps a rendered pod mounts, by name, looked up among the rendered objects of its namespace."""
    pod = objects[kind_ns_name]
    ns = kind_ns_name[1]
    return {v["configMap"]["name"]: objects[("ConfigMap", ns, v["configMap"]["name"])]["data"]
            for v in pod["spec"]["template"]["spec"]["volumes"]}


def test_an_edit_lands_in_the_flows_copy_and_every_dev_pod_reads_it(harness):
    shop(harness)
    result = harness.render("pr-1", {"b": "b:2"})
    objects = rendered(result)
    lane = "topic: orders-bus-pr-1\n"
    assert mounted(objects, ("Deployment", "", "a-pr-1")) == {"shared-pr-1": {"app.yml": lane, "other": lane}}
    assert mounted(objects, ("Deployment", "", "b-pr-1")) == {
        "shared-pr-1": {"app.yml": lane, "other": lane},
        "b-only-pr-1": {"app.yml": "upstream: http://a-pr-1:80\n" + lane},  # the clone's rewrite and the plugin's
    }
    assert ("ConfigMap", "", "shared") not in objects and ("Deployment", "", "c-pr-1") not in objects
    assert "topic: orders\n" in (harness.root / "app.yaml").read_text()  # the baseline's, which c reads
    edits = [r for r in result.dev.rewrites if r.container is None and "orders-bus-pr-1" in r.new]
    assert sorted((r.object, r.label) for r in edits) == [
        ("b-only-pr-1", "app.yml"), ("shared-pr-1", "app.yml"), ("shared-pr-1", "other")]


def test_in_a_flow_namespace_the_edit_lands_in_the_namespaces_copy(harness):
    shop(harness)
    harness.config({"isolation": "namespace", "namespace": "shop"})
    objects = rendered(harness.render("pr-1", {"b": "b:2"}))
    ns = next(ns for kind, ns, name in objects if kind == "Deployment" and name == "b")
    assert ns != "shop"
    assert mounted(objects, ("Deployment", ns, "b"))["shared"] == {"app.yml": "topic: orders-bus-pr-1\n",
                                                                    "other": "topic: orders-bus-pr-1\n"}
    assert ("ConfigMap", "shop", "shared") not in objects


def test_without_edits_the_dev_pods_read_the_baselines_configmap(harness):
    shop(harness, RENAMER.replace('"config_maps": renamed, ', ""))
    objects = rendered(harness.render("pr-1", {"b": "b:2"}))
    volumes = objects["Deployment", "", "a-pr-1"]["spec"]["template"]["spec"]["volumes"]
    assert [v["configMap"]["name"] for v in volumes] == ["shared"] and ("ConfigMap", "", "shared-pr-1") not in objects


def test_a_plugin_may_change_only_the_values_it_was_handed(harness):
    shop(harness, ADDS_A_KEY)
    with pytest.raises(DevlaneError) as caught:
        harness.render("pr-1", {"b": "b:2"})
    [problem] = caught.value.problems
    assert problem.code == "plugin-mutation" and problem.where.plugin == "bus"
    assert "changed ConfigMap/shared (config) at data; a plugin may change only the values" in problem.message


TWO_RENAMERS = '''
def create_flow(service_specs, pod_specs, flow_uuid, config_maps, key):
    # each instance edits one key of every ConfigMap it is handed and returns the whole data back
    out = [{name: {k: (v + "-" + flow_uuid if k == key else v) for k, v in data.items()} for name, data in per.items()}
           for per in config_maps]
    return {"pod_specs": pod_specs, "config_maps": out, "config_map": {}}

def delete_flow(config_map, flow_uuid):
    return None
'''


def test_two_plugins_of_different_dependents_editing_one_configmap_both_land(harness):
    """They share no dependent, so nothing but the ConfigMap orders them: each must see the other's edit."""
    harness.write("app.yaml", "".join([
        _app("a", ["shared"], {"kardinal.dev.service/plugins": "first"}),
        _app("b", ["shared"], {"kardinal.dev.service/plugins": "second"}),
        yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"},
                  "data": {"topic": "orders", "group": "history"}}),
    ]))
    harness.plugin("plugins/renamer", TWO_RENAMERS)
    harness.plugin_definition({"name": "./plugins/renamer", "type": "external", "servicename": "first",
                               "args": {"key": "topic"}},
                              {"name": "./plugins/renamer", "type": "external", "servicename": "second",
                               "args": {"key": "group"}})
    objects = rendered(harness.render("pr-1", {"a": "a:2", "b": "b:2"}))
    assert mounted(objects, ("Deployment", "", "a-pr-1")) == mounted(objects, ("Deployment", "", "b-pr-1")) == {
        "shared-pr-1": {"topic": "orders-first-pr-1", "group": "history-second-pr-1"}}


def test_a_plugin_may_not_receive_the_repositorys_secrets(harness):
    harness.app("a", "bus")
    harness.plugin("plugins/greedy", RENAMER, {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin",
                                               "metadata": {"name": "greedy"}, "spec": {"receives": ["Secret"]}})
    harness.plugin_definition({"name": "./plugins/greedy", "type": "external", "servicename": "bus"})
    with pytest.raises(DevlaneError) as caught:
        harness.render("pr-1", {"a": "a:2"})
    assert "plugin.yaml spec.receives lists Secret: devlane never hands a plugin the repository's Secrets" in \
        caught.value.problems[0].message
