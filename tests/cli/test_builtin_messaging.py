"""The messaging built-ins (plugins/kafka-topic, plugins/nats-stream), in-process (their golden cases run with every
built-in's, in tests/cli/test_builtin_catalogue.py): each argsSchema lists exactly the args create_flow binds, and
on a small shop (orders produces, order-history and kitchen consume, all on the shared cluster) a flow that changes
orders and order-history gives them the lane's topics, subjects, groups and consumers, computed from the rendered
objects: no dev pod names a baseline name, no baseline pod names a lane's, the cluster address stays the shared
one, and every custom resource passes its upstream CRD (Strimzi 1.2 for v1, 0.51 for v1beta2; NACK 0.22). `delete`
removes the lane's topics with its files."""

from __future__ import annotations

import inspect
import re

import pytest
import yaml
from support import ROOT, validate_against_crd, yaml_doc, yamlc
from support.kardinal import import_builtin

KAFKA = import_builtin("kafka-topic")
NATS = import_builtin("nats-stream")
RABBIT = import_builtin("rabbitmq-vhost")
BOOTSTRAP = "events-kafka-bootstrap.kafka.svc:9092"
NATS_SERVER = "nats.messaging.svc:4222"
TOPICS = ("orders.created", "orders.paid")
GROUP = "order-history"
# the pull request changes the producer and one consumer (kitchen, another consumer, is not in the flow)
FLOW = ["--flow", "pr-3", "--service", "orders=example.com/orders:2", "--service",
        "order-history=example.com/order-history:2"]


@pytest.mark.parametrize("name,module", [("kafka-topic", KAFKA), ("nats-stream", NATS), ("rabbitmq-vhost", RABBIT)])
def test_args_schema_lists_exactly_the_args_create_flow_binds(name, module):
    manifest = yamlc.safe_load((ROOT / "plugins" / name / "plugin.yaml").read_text())
    schema = manifest["spec"]["argsSchema"]
    bound = [p for p in inspect.signature(module.create_flow).parameters
             if p not in ("service_specs", "pod_specs", "flow_uuid", "extensions", "config_maps")]
    assert list(schema["properties"]) == bound == list(module.ARGS)


def _app(name: str, env: dict[str, str], args: list[str] | None = None, plugins: str = "order-topics") -> str:
    container = {"name": name, "image": f"example.com/{name}:1",
                 "env": [{"name": k, "value": v} for k, v in env.items()], **({"args": args} if args else {})}
    return yaml_doc({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"},
                     "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                         "metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}}}) + yaml_doc(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "shop", "annotations": {
            "kardinal.dev.service/plugins": plugins}}, "spec": {"selector": {"app": name}, "ports": [
                {"name": "http", "port": 80}]}})


def shop(harness, user: bool = False, api: str = "", topics: tuple[str, ...] = TOPICS, nats: bool = False) -> None:
    args = {"cluster": "events", "topics": ",".join(topics), "groups": GROUP, "partitions": "1",
            "retention_ms": "86400000", **({"user": "true"} if user else {}), **({"api_version": api} if api else {})}
    defs = [{"name": "kafka-topic", "type": "external", "servicename": "order-topics", "args": args}]
    if nats:  # the same names on NATS: subjects, stream ORDERS, durable consumer order-history
        defs = [{"name": "nats-stream", "type": "external", "servicename": "order-topics", "args": {
            "stream": "ORDERS", "subjects": ",".join(topics), "consumers": GROUP, "max_age": "24h"}}]
    harness.write("plugins.yaml", yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "plugins", "namespace": "shop", "annotations": {
            "kardinal.dev.service/plugin-definition": yaml.safe_dump(defs)}}, "spec": {"ports": [{"port": 1}]}}))
    server = {"NATS_URL": f"nats://{NATS_SERVER}"} if nats else {"KAFKA_BOOTSTRAP_SERVERS": BOOTSTRAP}
    harness.write("orders.yaml", _app("orders", {**server, "ORDERS_TOPIC": TOPICS[0]},
                                      [f"--payments-topic={TOPICS[1]}"]))
    harness.write("history.yaml", _app("order-history", {**server, "TOPICS": ",".join(TOPICS), "GROUP_ID": GROUP}))
    harness.write("kitchen.yaml", _app("kitchen", {**server, "TOPIC": TOPICS[0], "GROUP_ID": "kitchen"}))


def words(obj: dict) -> set[str]:
    """Every name-like token of a pod's env values, command and args."""
    spec = obj["spec"]["template"]["spec"]
    texts = [e.get("value") or "" for c in spec["containers"] for e in c.get("env") or []]
    texts += [a for c in spec["containers"] for f in ("command", "args") for a in c.get(f) or []]
    return {w for t in texts for w in re.findall(r"[\w.-]+", t)}


@pytest.mark.parametrize("api", ["kafka.strimzi.io/v1", "kafka.strimzi.io/v1beta2"])
def test_the_lanes_producer_and_consumer_use_the_lanes_topics_only(harness, api):
    shop(harness, user=True, api=api)
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 0, result.stderr
    objects = [o for o in yamlc.safe_load_all(result.stdout) if o]
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    assert set(pods) == {"orders-pr-3", "order-history-pr-3"}  # kitchen consumes, but is not in the flow
    topics = {o["spec"]["topicName"] for o in objects if o["kind"] == "KafkaTopic"}
    assert len(topics) == 2 and all(t.startswith(TOPICS) and t.endswith("-pr-3") for t in topics)
    [user] = [o for o in objects if o["kind"] == "KafkaUser"]
    lane_group = next(a["resource"]["name"] for a in user["spec"]["authorization"]["acls"]
                      if a["resource"]["type"] == "group")
    assert {a["resource"]["name"] for a in user["spec"]["authorization"]["acls"]} == topics | {lane_group}
    baseline = set(TOPICS) | {GROUP}
    for name, pod in pods.items():
        used = words(pod)
        assert not used & baseline, (name, used & baseline)  # no baseline topic or group in a lane's pod
        assert BOOTSTRAP.split(":")[0] in used  # the shared cluster
    assert {t for t in topics if t in words(pods["orders-pr-3"])} == topics
    assert lane_group in words(pods["order-history-pr-3"])
    for obj in objects:
        if obj["kind"] in ("KafkaTopic", "KafkaUser"):
            assert obj["metadata"]["labels"]["strimzi.io/cluster"] == "events" and obj["apiVersion"] == api
            validate_against_crd(obj)
    for file in ("history.yaml", "kitchen.yaml"):  # the baseline's consumers keep the baseline's names
        for obj in yamlc.safe_load_all((harness.root / file).read_text()):
            if obj and obj["kind"] == "Deployment":
                assert not words(obj) & topics


def test_on_nats_the_lanes_publisher_and_subscriber_use_the_lanes_subjects_only(harness):
    shop(harness, nats=True)
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 0, result.stderr
    assert "reaches the store outside the repository" not in result.stderr  # isolates: nats, the servers shared
    objects = [o for o in yamlc.safe_load_all(result.stdout) if o]
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    assert set(pods) == {"orders-pr-3", "order-history-pr-3"}
    [stream] = [o for o in objects if o["kind"] == "Stream"]
    [consumer] = [o for o in objects if o["kind"] == "Consumer"]
    prefix = stream["spec"]["subjects"][0].removesuffix(">")
    assert prefix.endswith("-pr-3.") and consumer["spec"]["streamName"] == stream["spec"]["name"]
    for name, pod in pods.items():
        used = words(pod)
        assert not used & (set(TOPICS) | {GROUP}), name
        assert NATS_SERVER.split(":")[0] in used
        assert all(w.startswith(prefix) for w in used if w.endswith(TOPICS)), used  # in the lane stream's subjects
    assert consumer["spec"]["durableName"] in words(pods["order-history-pr-3"])
    for obj in (stream, consumer):
        validate_against_crd(obj)


TOPOLOGY = [
    {"kind": "Exchange", "metadata": {"name": "event-bus"}, "spec": {"name": "event_bus", "type": "direct"}},
    {"kind": "Queue", "metadata": {"name": "history"}, "spec": {"name": "OrderHistory", "durable": True}},
    {"kind": "Binding", "metadata": {"name": "history-created"}, "spec": {
        "source": "event_bus", "destination": "OrderHistory", "destinationType": "queue", "routingKey": "created"}},
]


def test_on_rabbitmq_the_lane_has_its_own_vhost_and_topology(harness):
    """eShop's shape: every service on one broker, its topology in the repository. The lane's producer and consumer
    connect to the lane's vhost on the same broker with the same credentials; kitchen stays on the baseline's."""
    url = "amqp://shop:{}@eventbus.messaging.svc:5672/%2F"
    shop(harness)
    for file in ("orders.yaml", "history.yaml", "kitchen.yaml"):
        path = harness.root / file
        path.write_text(re.sub(r"KAFKA_BOOTSTRAP_SERVERS\n(\s+)value: \S+", lambda m: "EVENTBUS\n"
                               f"{m.group(1)}value: {url.format('s3cret')}", path.read_text()))
    topology = [{"apiVersion": "rabbitmq.com/v1beta1", **o, "metadata": {**o["metadata"], "namespace": "shop"},
                 "spec": {**o["spec"], "rabbitmqClusterReference": {"name": "eventbus"}}} for o in TOPOLOGY]
    harness.write("topology.yaml", "".join(yaml_doc(o) for o in topology))
    defs = [{"name": "rabbitmq-vhost", "type": "external", "servicename": "order-topics",
             "args": {"cluster": "eventbus"}, "extensions": [
                 {"apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"]} for o in topology]}]
    harness.write("plugins.yaml", yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "plugins", "namespace": "shop", "annotations": {
            "kardinal.dev.service/plugin-definition": yaml.safe_dump(defs)}}, "spec": {"ports": [{"port": 1}]}}))
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 0, result.stderr
    assert "reaches the store outside the repository" not in result.stderr  # isolates: rabbitmq
    objects = [o for o in yamlc.safe_load_all(result.stdout) if o]
    [vhost] = [o["spec"]["name"] for o in objects if o["kind"] == "Vhost"]
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    assert set(pods) == {"orders-pr-3", "order-history-pr-3"}
    for pod in pods.values():
        env = {e["name"]: e["value"] for e in pod["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["EVENTBUS"] == url.format("s3cret").replace("%2F", vhost)  # same broker, same credentials
    [permission] = [o for o in objects if o["kind"] == "Permission"]
    assert (permission["spec"]["vhost"], permission["spec"]["user"]) == (vhost, "shop")
    copies = {o["kind"]: o for o in objects if o["kind"] in ("Queue", "Exchange", "Binding")}
    assert set(copies) == {"Queue", "Exchange", "Binding"} and {o["spec"]["vhost"] for o in copies.values()} == {vhost}
    assert copies["Queue"]["spec"]["name"] == "OrderHistory"  # the vhost separates the lane's queue
    kitchen = (harness.root / "kitchen.yaml").read_text()
    assert url.format("s3cret") in kitchen and vhost not in kitchen
    for obj in objects:
        if obj["apiVersion"].startswith("rabbitmq.com/"):
            validate_against_crd(obj)


def test_delete_removes_the_lanes_topics(harness):
    shop(harness)
    out = harness.tmp / "out"
    assert harness.cli("render", *FLOW, "--out", out).returncode == 0
    flow = out / "flows" / "pr-3"
    kinds = [yamlc.safe_load(p.read_text())["kind"] for p in flow.glob("*.yaml") if p.name != "kustomization.yaml"]
    assert kinds.count("KafkaTopic") == 2
    deleted = harness.cli("delete", "--flow", "pr-3", "--out", out)
    assert deleted.returncode == 0, deleted.stderr
    assert not flow.exists()  # pruned with the flow: the Topic Operator deletes the topics


def test_a_topic_no_dependent_names_is_said(harness):
    shop(harness, topics=(*TOPICS, "orders.refunded"))
    result = harness.cli("render", *FLOW, "--stdout")
    assert result.returncode == 0, result.stderr
    assert "topic orders.refunded is in no env value, command, args or ConfigMap of the dependents" in result.stderr
