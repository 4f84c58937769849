"""Registries are isolation boundaries (TeaStore's shape: each service registers `HOST_NAME` with a registry):
while the lane shares the baseline's registry, a dev pod keeps its own address, so the registry never hands
baseline callers the dev pod; with the registry copied into the lane, dev pods register with the lane's registry
only, under their dev names. Both checked from the rendered objects."""

from __future__ import annotations

from support import app_yaml, yamlc

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
    return {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(result.stream()) if o}


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


APPLICATION_YML = """\
spring:
  datasource:
    url: jdbc:postgresql://orders-db:5432/orders
eureka:
  client:
    service-url:
      defaultZone: http://discovery:8761/eureka
  instance:
    hostname: orders
"""


def spring_orders(harness, registry_in_lane: bool) -> None:
    """A Spring service that registers with Eureka through its mounted application.yml (no registration env)."""
    harness.write("config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: orders-config}\ndata:\n"
                  "  application.yml: |\n" + "".join(f"    {line}\n" for line in APPLICATION_YML.splitlines()))
    orders = app_yaml("orders", containers=[{"name": "main", "image": "acme/orders:1",
                                             "volumeMounts": [{"name": "conf", "mountPath": "/config"}]}])
    orders = orders.replace("    spec: {containers: ", "    spec: {volumes: [{name: conf, configMap: {name: "
                            "orders-config}}], containers: ", 1)
    deps = "orders-db:http" + (",discovery:http" if registry_in_lane else "")
    orders = orders.replace("name: orders\n  annotations: {}", f"name: orders\n  annotations: "
                            f"{{kardinal.dev.service/dependencies: '{deps}'}}")
    harness.write("orders.yaml", orders)
    db = app_yaml("orders-db", containers=[{"name": "main", "image": "postgres:16"}])
    harness.write("db.yaml", db.replace("name: orders-db\n  annotations: {}", "name: orders-db\n  annotations: "
                                        "{kardinal.dev.service/stateful: 'true'}"))
    registry = app_yaml("discovery", containers=[{"name": "main", "image": "springcloud/eureka:latest"}])
    if registry_in_lane:
        registry = registry.replace("name: discovery\n  annotations: {}", "name: discovery\n  annotations: "
                                    "{kardinal.dev.service/stateful: 'true'}")
    harness.write("registry.yaml", registry)


def config_of(objects: dict, pod: dict) -> dict:
    [name] = [v["configMap"]["name"] for v in pod["spec"]["template"]["spec"]["volumes"]]
    return yamlc.safe_load(objects["ConfigMap", name]["data"]["application.yml"]) if ("ConfigMap", name) in objects \
        else yamlc.safe_load(APPLICATION_YML)


def test_an_address_advertised_in_a_mounted_file_is_kept_while_the_registry_is_shared(harness):
    spring_orders(harness, registry_in_lane=False)
    result = harness.render("pr-1", {"orders": "acme/orders:2"})
    objects = rendered(result)
    conf = config_of(objects, objects["Deployment", "orders-pr-1"])
    assert conf["eureka"]["instance"]["hostname"] == "orders"  # the baseline's: the registry never hands it out
    assert conf["spring"]["datasource"]["url"] == "jdbc:postgresql://orders-db-pr-1:5432/orders"  # the lane's copy
    [kept] = [p for p in result.warnings if p.code == "registry-self"]
    assert "registers with the registry discovery" in kept.message
    assert "ConfigMap orders-config key application.yml = hostname: orders" in kept.message
    assert [(r.cls, r.target) for r in result.reach] == [("registry", "discovery")]


def test_with_the_registry_in_the_lane_the_mounted_file_registers_there(harness):
    spring_orders(harness, registry_in_lane=True)
    result = harness.render("pr-1", {"orders": "acme/orders:2"})
    objects = rendered(result)
    conf = config_of(objects, objects["Deployment", "orders-pr-1"])
    services = {name for kind, name in objects if kind == "Service"}
    assert conf["eureka"]["instance"]["hostname"] == "orders-pr-1" in services
    assert conf["eureka"]["client"]["service-url"]["defaultZone"] == "http://discovery-pr-1:8761/eureka"
    assert "discovery-pr-1" in services
    assert not [p for p in result.warnings if p.code in ("registry-self", "reach-registry")] and result.reach == []
