"""Repositories and readers for the redis-sidecar built-in's tests (plugins/redis-sidecar)."""

from __future__ import annotations

from pathlib import Path

from . import yamlc
from .builders import entry_ingress, plugin_definition, yaml_doc
from .harness import Harness

# A placeholder digest of the test data: syntactically a pinned image, not a published one.
PROXY_IMAGE = "kurtosistech/redis-proxy-overlay@sha256:" + "0" * 63 + "1"
FLOW = ["--flow", "pr-7", "--service", "web=example.com/web:2"]


def redis_shop(harness: Harness, args: dict | None = None, namespace: str | None = "shop",
               redis_container: dict | None = None, plugin: str = "redis-sidecar") -> Path:
    """An app `web` (REDIS_ADDR=redis:6379) and its Redis (stateful, plugin instance `cache-overlay` of
    `plugin`), both in `namespace`; a flow on `web` gives the Redis a dev copy (stateful, over TCP)."""
    meta = {"namespace": namespace} if namespace else {}
    redis = redis_container or {"name": "redis", "image": "redis:7.4", "args": ["--appendonly", "yes"],
                                "ports": [{"name": "redis", "containerPort": 6379}],
                                "readinessProbe": {"exec": {"command": ["redis-cli", "ping"]}},
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}
    objects = [
        _deployment("web", meta, {"name": "web", "image": "example.com/web:1",
                                  "env": [{"name": "REDIS_ADDR", "value": "redis:6379"}]}),
        _service("web", meta, {"name": "http", "port": 80, "targetPort": 8080},
                 {"kardinal.dev.service/dependencies": "redis:tcp-redis"}),
        _deployment("redis", meta, redis, [{"name": "data", "emptyDir": {}}]),
        _service("redis", meta, {"name": "tcp-redis", "port": 6379, "targetPort": "redis"},
                 {"kardinal.dev.service/stateful": "true", "kardinal.dev.service/plugins": "cache-overlay"}),
    ]
    entry = {"name": plugin, "type": "stateful", "servicename": "cache-overlay",
             "args": {"image": PROXY_IMAGE} if args is None else args}
    docs = [d for text in (entry_ingress("web"), plugin_definition([entry])) for d in yamlc.safe_load_all(text) if d]
    for doc in docs:
        doc["metadata"].update(meta)
    harness.write("app.yaml", "".join(yaml_doc(o) for o in [*objects, *docs]))
    return harness.root


def _deployment(name: str, meta: dict, container: dict, volumes: list[dict] | None = None) -> dict:
    spec = {"containers": [container], **({"volumes": volumes} if volumes else {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, **meta},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def _service(name: str, meta: dict, port: dict, annotations: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, **meta, "annotations": annotations},
            "spec": {"selector": {"app": name}, "ports": [port]}}


def parse(text: str) -> dict[tuple[str, str], dict]:
    """A rendered YAML stream by (kind, name)."""
    return {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(text) if o}


def env_of(obj: dict, container: str) -> dict[str, str | None]:
    spec = obj["spec"]["template"]["spec"]
    [c] = [c for c in spec["containers"] if c["name"] == container]
    return {e["name"]: e.get("value") for e in c.get("env") or []}
