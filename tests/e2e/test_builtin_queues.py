"""Every built-in beyond Kardinal's table in one app: orders and order-history (the flow's targets) publish and
consume on a shared Kafka cluster, a shared RabbitMQ broker and shared NATS servers, and orders reads a MongoDB;
kitchen, another consumer, is not in the flow. The real CLI renders it under --strict; every object passes strict
Kubernetes validation or its upstream CRD (Strimzi, topology operator, NACK); `kubectl kustomize` builds the flow;
and, computed from the rendered objects alone, no dev pod names a baseline topic, group, vhost or subject, no
baseline pod names a lane's, the brokers' addresses stay the shared ones, and orders' MongoDB URL reaches the lane's
seeded copy. `devlane delete` removes the lane's topics, vhost and stream with its files."""

from __future__ import annotations

import re

from support import kubectl_kustomize, validate_strict, yamlc
from support.isolation import labels_match_map, pod_labels
from support.queue_app import DURABLE, GROUP, SUBJECT, TOPIC, queue_shop

FLOW = ["--flow", "pr-5", "--service", "orders=example.com/orders:2", "--service",
        "order-history=example.com/order-history:2"]


def words(obj: dict, configmaps: dict[str, dict]) -> set[str]:
    """Every value token the pod reads: its env values and the values of the ConfigMaps its volumes mount (by the
    names the rendered pod spec gives, looked up among `configmaps`); keys of a YAML file are not values."""
    spec = obj["spec"]["template"]["spec"]
    texts = [e.get("value") or "" for c in spec["containers"] for e in c.get("env") or []]
    for volume in spec.get("volumes") or []:
        if "configMap" in volume:
            for text in configmaps[volume["configMap"]["name"]]["data"].values():
                texts += [line.split(": ", 1)[1] for line in text.splitlines() if ": " in line]
    return {w for text in texts for w in re.findall(r"[\w.%-]+", text)}


def test_every_new_builtin_in_one_app_is_valid_builds_and_isolates(harness):
    queue_shop(harness)
    out = harness.tmp / "out"
    result = harness.run("render", *FLOW, "--strict", "--out", out)
    assert result.returncode == 0, result.stderr
    flow = out / "flows" / "pr-5"
    objects = [yamlc.safe_load(p.read_text()) for p in sorted(flow.glob("*.yaml")) if p.name != "kustomization.yaml"]
    for obj in objects:
        validate_strict(obj)  # custom resources against their upstream CRDs
    built = kubectl_kustomize(flow)
    assert sorted((o["kind"], o["metadata"]["name"]) for o in built) == \
        sorted((o["kind"], o["metadata"]["name"]) for o in objects)
    kinds = {o["kind"] for o in objects}
    assert {"KafkaTopic", "KafkaUser", "Vhost", "Permission", "Queue", "Stream", "Consumer"} <= kinds
    assert "never-rendered-4d1" not in "".join(p.read_text() for p in flow.rglob("*") if p.is_file())

    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] in ("Deployment", "StatefulSet")}
    repo = [o for o in yamlc.safe_load_all((harness.root / "app.yaml").read_text()) if o]
    configmaps = {o["metadata"]["name"]: o for o in [*repo, *objects] if o["kind"] == "ConfigMap"}
    assert set(pods) == {"orders-pr-5", "order-history-pr-5", "catalog-db-pr-5"}  # kitchen is not in the flow
    lane = {"topic": next(o["spec"]["topicName"] for o in objects if o["kind"] == "KafkaTopic"),
            "vhost": next(o["spec"]["name"] for o in objects if o["kind"] == "Vhost"),
            "subjects": next(o["spec"]["subjects"][0] for o in objects if o["kind"] == "Stream").removesuffix(">")}
    baseline = {TOPIC, GROUP, SUBJECT, DURABLE}
    for name in ("orders-pr-5", "order-history-pr-5"):
        used = words(pods[name], configmaps)
        assert not used & baseline, (name, used & baseline)
        assert {"events-kafka-bootstrap.kafka.svc", "eventbus.messaging.svc", "nats.messaging.svc"} <= used
        assert "%2F" not in " ".join(used) and lane["vhost"] in " ".join(used)
        assert any(w.startswith(lane["subjects"]) for w in used)
    assert lane["topic"] in words(pods["orders-pr-5"], configmaps)
    assert lane["topic"] in words(pods["order-history-pr-5"], configmaps)  # from its copy of the mounted file
    mongo = next(w for w in words(pods["orders-pr-5"], configmaps) if w.startswith("catalog-db"))
    service = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == mongo)
    assert labels_match_map(service["spec"]["selector"], pod_labels(pods["catalog-db-pr-5"]))  # the seeded copy
    kitchen = next(o for o in repo if o["kind"] == "Deployment" and o["metadata"]["name"] == "kitchen")
    assert baseline <= words(kitchen, configmaps)  # the baseline consumer and its file keep the baseline's names
    assert not any(v in (harness.root / "app.yaml").read_text() for v in (lane["topic"], lane["vhost"],
                                                                          lane["subjects"]))
    queues = [o["spec"] for o in objects if o["kind"] == "Queue"]  # the broker's topology, found by `receives`
    assert queues == [{**queues[0], "name": "OrderHistory", "vhost": lane["vhost"]}]

    deleted = harness.run("delete", "--flow", "pr-5", "--out", out)
    assert deleted.returncode == 0, deleted.stderr
    assert not flow.exists()
