"""Registries are isolation boundaries (TeaStore's shape: each service registers `HOST_NAME` with a registry):
while the lane shares the baseline's registry, a dev pod keeps its own address, so the registry never hands
baseline callers the dev pod; with the registry copied into the lane, dev pods register with the lane's registry
only, under their dev names. Both checked from the rendered objects."""

from __future__ import annotations

import yaml
from support import app_yaml

REGISTRY = "teastore-registry"


def teastore(harness, registry_in_lane: bool) -> None:
    def env(name: str) -> list[dict]:
        return [{"name": "main", "image": f"descartesresearch/{name}:1.4", "env": [
            {"name": "HOST_NAME", "value": name}, {"name": "SERVICE_PORT", "value": "80"},
            {"name": "REGISTRY_HOST", "value": REGISTRY}, {"name": "REGISTRY_PORT", "value": "8080"}]}]

    registry = app_yaml(REGISTRY, containers=[{"name": "main", "image": f"descartesresearch/{REGISTRY}:1.4"}])
    auth = app_yaml("teastore-auth", containers=env("teastore-auth"))
    if registry_in_lane:
        registry = registry.replace("name: teastore-registry\n  annotations: {}",
                                    "name: teastore-registry\n  annotations: {kardinal.dev.service/stateful: 'true'}")
        auth = auth.replace("name: teastore-auth\n  annotations: {}", "name: teastore-auth\n  annotations: "
                            "{kardinal.dev.service/dependencies: 'teastore-registry:http'}")
    harness.write("registry.yaml", registry)
    harness.write("auth.yaml", auth)
    harness.write("webui.yaml", app_yaml("teastore-webui", containers=env("teastore-webui")))


def rendered(result) -> dict[tuple[str, str], dict]:
    return {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(result.stream()) if o}


def env_of(obj: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in obj["spec"]["template"]["spec"]["containers"][0].get("env") or []}


def test_a_dev_pod_keeps_its_own_address_while_the_registry_is_shared(harness):
    teastore(harness, registry_in_lane=False)
    result = harness.render("pr-1", {"teastore-auth": "descartesresearch/teastore-auth:dev"})
    objects = rendered(result)
    dev = env_of(objects["Deployment", "teastore-auth-pr-1"])
    services = {name for kind, name in objects if kind == "Service"}
    # the address it advertises is the baseline Service's, which selects the baseline pods only: never the dev pod
    assert dev["HOST_NAME"] == "teastore-auth" and dev["HOST_NAME"] not in services
    assert dev["REGISTRY_HOST"] == REGISTRY and ("Deployment", f"{REGISTRY}-pr-1") not in objects
    [kept] = [p for p in result.warnings if p.code == "registry-self"]
    assert "registers with the registry teastore-registry" in kept.message and "HOST_NAME" in kept.message
    assert "annotate teastore-registry kardinal.dev.service/stateful" in kept.hint
    assert [(r.cls, r.target) for r in result.reach] == [("registry", REGISTRY)]


def test_with_the_registry_in_the_lane_dev_pods_register_there_only(harness):
    teastore(harness, registry_in_lane=True)
    result = harness.render("pr-1", {"teastore-auth": "descartesresearch/teastore-auth:dev"})
    objects = rendered(result)
    services = {name for kind, name in objects if kind == "Service"}
    dev_pods = [o for (kind, _), o in objects.items() if kind == "Deployment"]
    assert {o["metadata"]["name"] for o in dev_pods} == {"teastore-auth-pr-1", f"{REGISTRY}-pr-1"}
    for obj in dev_pods:
        env = env_of(obj)
        if "REGISTRY_HOST" in env:  # a client: it registers with the lane's registry, under its dev name
            assert env["REGISTRY_HOST"] in services and env["HOST_NAME"] in services
    assert not [p for p in result.warnings if p.code in ("registry-self", "reach-registry")]
    assert result.reach == []
