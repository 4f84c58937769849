"""The redis-sidecar built-in's logic (plugins/redis-sidecar/main.py), called directly through Kardinal's functions:
which container is the Redis, PORT and REDIS_ADDR from the Service (named targetPorts, namespaces, duplicates),
what overlay mode removes (command, args, hooks, exec probes, mounts, volumes) and keeps, the AUTH/TLS refusals,
mode fresh (emptyDir at the image's data directory, replicas refused), the image rules and validate_args."""

from __future__ import annotations

import copy

import pytest
from support.kardinal import import_builtin
from support.redis_sidecar import PROXY_IMAGE

REDIS = import_builtin("redis-sidecar")


def service(name: str = "cache", namespace: str | None = "shop", port: int = 6379, target: int | str | None = None,
            annotations: dict | None = None) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {}),
            **({"annotations": annotations} if annotations else {})}
    p = {"name": "tcp-redis", "port": port, **({"targetPort": target} if target is not None else {})}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"ports": [p]}}


def redis(image: str = "redis:7.4", **more) -> dict:
    return {"name": "redis", "image": image, "ports": [{"name": "redis", "containerPort": 6379}], **more}


def call(pod_spec: dict, svc: dict | None = None, **args: str) -> dict:
    svc = svc or service()
    out = REDIS.create_flow([svc["spec"]], [pod_spec], "cache-overlay-pr-1", [svc], **args)
    assert len(out["pod_specs"]) == 1
    return out


def overlay(pod_spec: dict, svc: dict | None = None, **args: str) -> dict:
    out = call(pod_spec, svc, **{"image": PROXY_IMAGE, **args})
    assert not [r for r in out["results"] if r["severity"] == "error"], out["results"]
    return out


def error(out: dict) -> str:
    [result] = out["results"]
    assert result["severity"] == "error"
    return result["message"]


def env(container: dict) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def test_overlay_points_the_proxy_at_the_baseline_service():
    out = overlay({"containers": [redis()]})
    [c] = out["pod_specs"][0]["containers"]
    assert c["image"] == PROXY_IMAGE
    assert env(c) == {"PORT": "6379", "REDIS_ADDR": "cache.shop.svc.cluster.local:6379"}
    assert out["config_map"] == {"mode": "overlay", "image": PROXY_IMAGE, "dependents": [
        {"container": "redis", "port": 6379, "upstream": "cache.shop.svc.cluster.local:6379"}]}


@pytest.mark.parametrize(("svc", "expected"), [
    (service(namespace=None), "cache:6379"),  # no namespace known: the short name
    (service(port=6380, target="redis"), "cache.shop.svc.cluster.local:6380"),  # the Service's port, not the target
])
def test_redis_addr_is_the_service_address(svc, expected):
    [c] = overlay({"containers": [redis()]}, svc)["pod_specs"][0]["containers"]
    assert env(c)["REDIS_ADDR"] == expected and env(c)["PORT"] == "6379"


def test_upstream_arg_overrides_the_address():
    [c] = overlay({"containers": [redis()]}, upstream="10.0.3.17:6379")["pod_specs"][0]["containers"]
    assert env(c)["REDIS_ADDR"] == "10.0.3.17:6379"


@pytest.mark.parametrize(("target", "ports", "expected"), [
    (None, [{"containerPort": 6379}], "6379"),  # no targetPort: the port
    (7000, [{"containerPort": 7000}], "7000"),
    ("resp", [{"name": "resp", "containerPort": 7001}], "7001"),
])
def test_port_is_the_services_target_port(target, ports, expected):
    pod = {"containers": [{"name": "redis", "image": "redis:7", "ports": ports}]}
    [c] = overlay(pod, service(target=target))["pod_specs"][0]["containers"]
    assert env(c)["PORT"] == expected


def test_a_named_target_port_that_names_nothing_is_refused():
    out = call({"containers": [redis()]}, service(target="nope"), image=PROXY_IMAGE)
    assert error(out) == "pod spec #1: the Service's targetPort 'nope' names no container port"


def test_env_is_set_by_name_in_place_without_duplicates():
    c = redis(env=[{"name": "REDIS_ADDR", "value": "cache:6379"}, {"name": "KEEP", "value": "1"},
                   {"name": "PORT", "value": "1"}, {"name": "PORT", "value": "2"}])
    [out] = overlay({"containers": [c]})["pod_specs"][0]["containers"]
    assert [(e["name"], e["value"]) for e in out["env"]] == [
        ("REDIS_ADDR", "cache.shop.svc.cluster.local:6379"), ("KEEP", "1"), ("PORT", "6379")]


def test_overlay_clears_what_only_a_redis_image_understands():
    probe = {"exec": {"command": ["redis-cli", "ping"]}, "periodSeconds": 5, "failureThreshold": 3}
    c = redis("bitnami/redis:7.2", command=["/bin/bash"], args=["-c", "start.sh"], workingDir="/data",
              lifecycle={"preStop": {"exec": {"command": ["redis-cli", "shutdown"]}}}, livenessProbe=probe,
              readinessProbe={"tcpSocket": {"port": "redis"}}, startupProbe={"httpGet": {"port": 80, "path": "/"}},
              volumeMounts=[{"name": "data", "mountPath": "/bitnami/redis/data"}, {"name": "conf", "mountPath": "/c"}])
    init = {"name": "init", "image": "busybox:1", "volumeMounts": [{"name": "conf", "mountPath": "/c"}]}
    pod = {"initContainers": [init], "containers": [c], "volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": "cache-data"}}, {"name": "conf", "emptyDir": {}}]}
    spec = overlay(pod)["pod_specs"][0]
    [out] = spec["containers"]
    for key in ("command", "args", "workingDir", "lifecycle", "volumeMounts", "startupProbe"):
        assert key not in out, key
    assert out["livenessProbe"] == {"tcpSocket": {"port": 6379}, "periodSeconds": 5, "failureThreshold": 3}
    assert out["readinessProbe"] == {"tcpSocket": {"port": "redis"}}
    assert spec["volumes"] == [{"name": "conf", "emptyDir": {}}]  # the claim goes; the init container's stays
    assert pod["containers"][0]["command"] == ["/bin/bash"]  # the input is not changed


def test_the_redis_container_is_found_by_image_or_by_annotation():
    exporter = {"name": "metrics", "image": "oliver006/redis_exporter:v1.62.0"}
    pod = {"containers": [exporter, redis("valkey/valkey:8")]}
    spec = overlay(pod)["pod_specs"][0]
    assert [c["image"] for c in spec["containers"]] == [exporter["image"], PROXY_IMAGE]
    annotated = service(annotations={"devlane.dev/container": "metrics"})  # devlane moved its target first
    spec = overlay(copy.deepcopy(pod), annotated)["pod_specs"][0]
    assert [c["image"] for c in spec["containers"]] == [PROXY_IMAGE, "valkey/valkey:8"]


def test_no_redis_image_falls_back_to_containers_0_with_a_warning():
    out = call({"containers": [{"name": "app", "image": "example.com/app:1"}]}, image=PROXY_IMAGE)
    assert out["pod_specs"][0]["containers"][0]["image"] == PROXY_IMAGE
    [warning] = out["results"]
    assert warning["severity"] == "warning" and "using containers[0] ('app'), as Kardinal did" in warning["message"]
    assert warning["tags"]["devlane.dev/hint"] == "set devlane.dev/container on the Service to the Redis container"


@pytest.mark.parametrize(("container", "what"), [
    (redis(args=["--requirepass", "$(PASS)"]), "requires AUTH (--requirepass)"),
    (redis(command=["redis-server", "--aclfile=/etc/users.acl"]), "requires AUTH (--aclfile)"),
    (redis("bitnami/redis:7", env=[{"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {
        "name": "r", "key": "p"}}}]), "requires AUTH (REDIS_PASSWORD)"),
    (redis("redis/redis-stack-server:7.4.0-v1", env=[{"name": "REDIS_ARGS", "value": "--requirepass x"}]),
     "requires AUTH (--requirepass)"),
    (redis(args=["--tls-port", "6379", "--port", "0"]), "uses TLS (--tls-port)"),
    (redis("bitnami/redis:7", env=[{"name": "REDIS_TLS_ENABLED", "value": "yes"}]), "uses TLS (REDIS_TLS_ENABLED)"),
])
def test_overlay_refuses_a_baseline_with_auth_or_tls(container, what):
    out = call({"containers": [container]}, image=PROXY_IMAGE)
    assert what in error(out)
    assert out["results"][0]["tags"]["devlane.dev/hint"].startswith("set mode: fresh")
    assert out["pod_specs"][0]["containers"][0] == container  # unchanged


def test_overlay_without_an_image_runs_kardinals_proxy_by_its_tag():
    """Kardinal's definition works with only its name changed: the proxy by the tag Kardinal used (devlane's check
    of the rendered pods then warns that it is not pinned, and --strict refuses it)."""
    out = call({"containers": [redis()]})
    assert out["pod_specs"][0]["containers"][0]["image"] == "kurtosistech/redis-proxy-overlay:latest"
    assert not [r for r in out.get("results") or [] if r["severity"] == "error"]
    assert out["config_map"]["image"] == "kurtosistech/redis-proxy-overlay:latest"


@pytest.mark.parametrize(("container", "data"), [
    (redis(), "/data"),
    (redis("bitnami/redis:7.2"), "/bitnami/redis/data"),
    (redis("bitnami/valkey:8"), "/bitnami/valkey/data"),
    (redis(args=["--dir", "/var/lib/redis"]), "/var/lib/redis"),
    (redis(command=["redis-server", "--dir=/srv"]), "/srv"),
])
def test_fresh_puts_the_data_directory_on_an_empty_dir(container, data):
    out = call({"containers": [container]}, mode="fresh")
    spec = out["pod_specs"][0]
    [c] = spec["containers"]
    assert c["image"] == container["image"] and c.get("args") == container.get("args")
    assert c["volumeMounts"] == [{"name": "devlane-redis-data", "mountPath": data}]
    assert spec["volumes"] == [{"name": "devlane-redis-data", "emptyDir": {}}]
    assert out["config_map"] == {"mode": "fresh", "dependents": [{"container": "redis", "dataDir": data}]}


def test_fresh_replaces_claims_and_keeps_config_and_secret_references():
    c = redis(env=[{"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "r", "key": "p"}}}],
              args=["--requirepass", "$(REDIS_PASSWORD)"],
              volumeMounts=[{"name": "data", "mountPath": "/data"}, {"name": "conf", "mountPath": "/etc/redis"},
                            {"name": "vct", "mountPath": "/backup"}])
    pod = {"containers": [c], "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}},
                                          {"name": "conf", "configMap": {"name": "redis-conf"}}]}
    out = call(pod, mode="fresh", image="redis@sha256:" + "b" * 64)
    spec = out["pod_specs"][0]
    [fresh] = spec["containers"]
    assert fresh["image"] == "redis@sha256:" + "b" * 64 and fresh["env"] == c["env"] and fresh["args"] == c["args"]
    assert {m["mountPath"]: m["name"] for m in fresh["volumeMounts"]} == {"/etc/redis": "conf",
                                                                          "/data": "devlane-redis-data"}
    assert [v["name"] for v in spec["volumes"]] == ["conf", "devlane-redis-data"]
    [warning] = out["results"]  # the volumeClaimTemplate mounted at /backup
    assert warning["message"] == "pod spec #1: the fresh copy drops the mount of vct at /backup"


@pytest.mark.parametrize("container", [
    redis(args=["--replicaof", "cache-primary", "6379"]),
    redis("bitnami/redis:7", env=[{"name": "REDIS_REPLICATION_MODE", "value": "replica"}]),
])
def test_fresh_refuses_a_replica(container):
    assert "is a replica" in error(call({"containers": [container]}, mode="fresh"))


def test_fresh_needs_a_redis_image():
    out = call({"containers": [{"name": "app", "image": "example.com/app:1"}]}, mode="fresh")
    assert error(out).endswith("runs image 'example.com/app:1', not a Redis image (redis, valkey, redis-stack, "
                               "redis-stack-server, keydb)")


@pytest.mark.parametrize(("args", "expected"), [
    ({}, []),
    ({"image": PROXY_IMAGE, "upstream": "redis.example:6379"}, []),
    ({"image": "kurtosistech/redis-proxy-overlay:latest"}, []),  # a tag: the render warns, --strict refuses
    ({"image": "kurtosistech/redis-proxy-overlay@sha256:abc"}, [
        {"field": "image", "message": "a digest must be sha256:<64 hex digits> (<repository>@sha256:<digest>)"}]),
    ({"image": "redis@sha256:abc"}, ["image"]),
    ({"mode": "fresh", "upstream": "redis:6379"}, [
        {"field": "upstream", "message": "applies to mode overlay only (mode is fresh)"}]),
    ({"upstream": "redis"}, [{"field": "upstream", "message": "must be host:port (a DNS name or IP and a port), "
                                                              "got 'redis'"}]),
    ({"upstream": "-x:6379"}, ["upstream"]),
])
def test_validate_args(args, expected):
    problems = REDIS.validate_args(args)
    if expected and isinstance(expected[0], str):
        assert [p["field"] for p in problems] == expected
    else:
        assert problems == expected


def test_delete_flow_has_nothing_to_undo():
    assert REDIS.delete_flow({"mode": "overlay"}, "cache-overlay-pr-1") is None
