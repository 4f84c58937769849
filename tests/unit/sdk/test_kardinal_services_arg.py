"""The Kardinal adapter hands a create_flow that names `services` the dependents' whole Service objects (name,
namespace, annotations; devlane's internal annotations removed), in the order of `service_specs`; and the render
gives each Service the namespace it lives in when the repository object names none (`.devlane.yaml` namespace)."""

from __future__ import annotations

import json

from renderer.host.invoke import Invocation, request_document
from renderer.protocol.krm import annotations
from renderer.render.inputs.document import Document
from renderer.render.model.topology import build_model
from renderer.render.plugins.calls import _service_object
from renderer.sdk.kardinal import kardinal


def create_flow(service_specs, pod_specs, flow_uuid, services):
    return {"pod_specs": pod_specs, "config_map": {"specs": service_specs, "services": services}}


def delete_flow(config_map, flow_uuid):
    return None


def svc(name: str, **meta) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, **meta},
            "spec": {"selector": {"app": name}, "ports": [{"port": 6379}]}}


def wl(name: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"{name}-pr-1"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}


def test_create_flow_gets_whole_service_objects_in_order():
    services = [svc("b", namespace="shop", annotations={"x": "1"}), svc("a")]
    inv = Invocation("CreateFlow", "inst", "pr-1", "./p", dependents=["b", "a"], workloads=[wl("b"), wl("a")],
                     services=services)
    reply = kardinal([create_flow, delete_flow])(request_document(inv, 30))
    state = next(i for i in reply["items"] if i["kind"] == "ConfigMap")
    got = json.loads(state["data"]["config_map.json"])
    assert got["services"] == services  # the ids and roles devlane tags items with are gone
    assert got["specs"] == [s["spec"] for s in services]
    assert not [r for r in reply.get("results") or [] if "ignored" in r["message"]]
    assert all(annotations(i).get("config.k8s.io/id") for i in reply["items"] if i["kind"] == "Deployment")


def test_a_plugin_sees_the_namespace_a_service_lives_in():
    docs = [Document(svc("a"), "app.yaml", 0), Document(svc("b", namespace="other"), "app.yaml", 1)]
    model = build_model(docs, default_namespace="shop")
    assert _service_object(model, "a")["metadata"] == {"name": "a", "namespace": "shop"}
    assert docs[0].obj["metadata"] == {"name": "a"}  # the repository object is not changed
    assert _service_object(build_model(docs[:1]), "a")["metadata"] == {"name": "a"}
