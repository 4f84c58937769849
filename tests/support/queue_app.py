"""The app of tests/e2e/test_builtin_queues.py: orders and order-history publish and consume on a shared Kafka
cluster, a shared RabbitMQ broker and shared NATS servers, and orders reads a MongoDB; kitchen, another consumer,
is not in the flow. Every built-in beyond Kardinal's table is used once."""

from __future__ import annotations

import yaml

from .builders import yaml_doc

NS = "shop"
TOPIC, GROUP, SUBJECT, DURABLE = "orders.created", "order-history", "orders.placed", "history"
AMQP = "amqp://shop:s3cret@eventbus.messaging.svc:5672/%2F"
BOOTSTRAP, NATS = "events-kafka-bootstrap.kafka.svc:9092", "nats://nats.messaging.svc:4222"
LANE_PLUGINS = "order-topics,event-bus,order-stream"


def _workload(name: str, env: dict[str, str], image: str = "", kind: str = "Deployment", config: str = "") -> dict:
    container = {"name": name, "image": image or f"example.com/{name}:1",
                 "env": [{"name": k, "value": v} for k, v in env.items()]}
    spec: dict = {"containers": [container]}
    if config:  # the app's settings in a mounted application.yml
        container["volumeMounts"] = [{"name": "config", "mountPath": "/config"}]
        spec["volumes"] = [{"name": "config", "configMap": {"name": config}}]
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": name}}, **({"serviceName": name} if kind == "StatefulSet"
                                                                     else {}),
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


# order-history and kitchen (not in the flow) read their topic, group, subjects and broker URL from one file
CONSUMER_YML = f"""spring:
  kafka:
    bootstrap-servers: {BOOTSTRAP}
    consumer:
      group-id: {GROUP}
  rabbitmq:
    addresses: {AMQP}
app:
  topics: {TOPIC}
  subjects: {SUBJECT}
  durable: {DURABLE}
"""


def _service(name: str, port: dict, annotations: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS,
                                                                 "annotations": annotations},
            "spec": {"selector": {"app": name}, "ports": [port]}}


INSTANCES = ("order-topics", "event-bus", "order-stream", "catalog-seed")


def queue_shop(harness, rename: dict[str, str] | None = None, topic: str = TOPIC) -> None:
    """Write the app. `rename`: other names for the plugin instances, as a user may choose them; `topic`: the
    topic orders publishes (and kitchen and order-history read)."""
    new = {i: (rename or {}).get(i, i) for i in INSTANCES}
    lane_plugins = ",".join(new[i] for i in INSTANCES[:3])
    clients = {"KAFKA_BOOTSTRAP_SERVERS": BOOTSTRAP, "EVENTBUS": AMQP, "NATS_URL": NATS}
    objects = [
        _workload("orders", {**clients, "ORDERS_TOPIC": topic, "PLACED_SUBJECT": SUBJECT,
                             "MONGO_URL": "mongodb://catalog-db:27017/catalog"}),
        _service("orders", {"name": "http", "port": 80}, {"kardinal.dev.service/plugins": lane_plugins,
                                                          "kardinal.dev.service/dependencies": "catalog-db:mongo"}),
        _workload("order-history", {"NATS_URL": NATS}, config="consumers"),
        _service("order-history", {"name": "http", "port": 80}, {"kardinal.dev.service/plugins": lane_plugins}),
        _workload("kitchen", {"NATS_URL": NATS}, config="consumers"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "consumers", "namespace": NS},
         "data": {"application.yml": CONSUMER_YML.replace(TOPIC, topic)}},
        _service("kitchen", {"name": "http", "port": 80}, {"kardinal.dev.service/plugins": lane_plugins}),
        _workload("catalog-db", {}, "mongo:7.0", "StatefulSet"),
        _service("catalog-db", {"name": "mongo", "port": 27017}, {"kardinal.dev.service/stateful": "true",
                                                                 "kardinal.dev.service/plugins": new["catalog-seed"]}),
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "catalog-db", "namespace": NS},
         "stringData": {"password": "never-rendered-4d1"}},
        {"apiVersion": "rabbitmq.com/v1beta1", "kind": "Queue", "metadata": {"name": "history", "namespace": NS},
         "spec": {"name": "OrderHistory", "durable": True, "rabbitmqClusterReference": {"name": "eventbus"}}},
        {"apiVersion": "rabbitmq.com/v1beta1", "kind": "Queue", "metadata": {"name": "audit", "namespace": NS},
         "spec": {"name": "Audit", "rabbitmqClusterReference": {"name": "another-broker"}}},
    ]
    defs = [
        {"name": "kafka-topic", "type": "external", "servicename": new["order-topics"],
         "args": {"cluster": "events", "topics": topic, "groups": GROUP, "partitions": "1", "user": "true"}},
        {"name": "rabbitmq-vhost", "type": "external", "servicename": new["event-bus"],
         "args": {"cluster": "eventbus"}},
        {"name": "nats-stream", "type": "external", "servicename": new["order-stream"],
         "args": {"stream": "ORDERS", "subjects": SUBJECT, "consumers": DURABLE, "max_age": "24h"}},
        {"name": "mongodb-seed", "type": "stateful", "servicename": new["catalog-seed"],
         "args": {"db_name": "catalog", "seed_script": "db.items.insertOne({sku: 'demo'});",
                  "db_user": "root", "db_password_secret": "catalog-db"}},
    ]
    objects.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "plugins", "namespace": NS,
                    "annotations": {"kardinal.dev.service/plugin-definition": yaml.safe_dump(defs)}},
                    "spec": {"ports": [{"port": 1}]}})
    harness.write("app.yaml", "".join(yaml_doc(o) for o in objects))


