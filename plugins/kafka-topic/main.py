"""kafka-topic: a lane's own Kafka topics and consumer groups on the shared cluster, as Strimzi `KafkaTopic`s (and,
when asked, a `KafkaUser` whose ACLs reach only those topics and groups). No Kafka call during render.

Define it (`type: external`) with a `servicename` that stands for the topics, and list it in the plugins of the
producers and consumers that use them. In a flow, the dependents that get a dev version (a producer the pull
request changes, a consumer downstream of it) get the lane's topic names and a consumer group of their own
wherever the names appear in their env values, `command` and `args` (every container, init containers included)
and in the ConfigMaps they read (a Spring `application.yml`: devlane gives the lane its own copy), while the
bootstrap address stays the shared cluster's. A consumer not in the flow keeps the baseline topic, so the
lane never feeds the baseline's consumers nor reads their messages. A topic name none of the dependents holds (the
app has it compiled in) is said, loudly: that dependent would still use the baseline topic.

The topics are `<topic>-<flow_uuid>` (shortened with a stable hash past Kafka's 249 characters), each a KafkaTopic
labelled `strimzi.io/cluster`; pruning the flow deletes them (the Topic Operator deletes a topic with its
resource). Kafka creates consumer groups on first use: they are names only.
"""

from __future__ import annotations

import re
from typing import Any

from plugins._common import (
    ConfigMaps,
    Json,
    Refused,
    clean_name,
    flag,
    flow_name,
    name_list,
    rename_names,
    secret_ref,
    set_env,
    stable_hash,
    unnamed,
)

APIS = ("kafka.strimzi.io/v1", "kafka.strimzi.io/v1beta2")
CLUSTER_LABEL = "strimzi.io/cluster"
MAX_TOPIC = 249  # Kafka: [a-zA-Z0-9._-], at most 249 characters
TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}\Z")
GROUP = re.compile(r"[a-zA-Z0-9._-]{1,200}\Z")
TOPIC_OPERATIONS = ["Create", "Describe", "DescribeConfigs", "Read", "Write"]
GROUP_OPERATIONS = ["Describe", "Read"]
ARGS = ("cluster", "topics", "groups", "partitions", "replicas", "retention_ms", "api_version", "user",
        "authentication", "username_env", "password_env")
FIELDS = ("env", "command", "args")


def validate_args(args: dict[str, Any]) -> list[Json]:
    """Checks beyond argsSchema (which devlane applies first): the names, the numbers, the user's env."""
    args = {k: v for k, v in args.items() if v not in (None, "")}
    out: list[Json] = []

    def bad(name: str, message: str) -> None:
        out.append({"field": name, "message": message})

    if not args.get("cluster"):
        bad("cluster", "is required: the name of the Strimzi Kafka cluster (label strimzi.io/cluster)")
    topics = name_list(args.get("topics"))
    if not topics:
        bad("topics", "is required: the topic names the dependents use, comma-separated")
    for name in topics:
        if not TOPIC.match(name) or name in (".", ".."):
            bad("topics", f"{name!r} is not a Kafka topic name ([a-zA-Z0-9._-], at most 249 characters)")
    for name in name_list(args.get("groups")):
        if not GROUP.match(name):
            bad("groups", f"{name!r} is not a consumer group id devlane can rename ([a-zA-Z0-9._-])")
    overlap = set(topics) & set(name_list(args.get("groups")))
    if overlap:
        bad("groups", f"{', '.join(sorted(overlap))} is both a topic and a group: the renames would be ambiguous")
    for name in ("partitions", "replicas"):
        text = str(args.get(name, ""))
        if text and (not text.isdigit() or not 1 <= int(text) <= 10_000):
            bad(name, f"{text!r} is not a whole number from 1 to 10000")
    text = str(args.get("retention_ms", ""))
    if text and not re.fullmatch(r"-1|[0-9]{1,15}", text):
        bad("retention_ms", f"{text!r} is not a number of milliseconds (or -1: no limit)")
    if args.get("api_version") and args["api_version"] not in APIS:
        bad("api_version", f"must be one of {', '.join(APIS)}")
    for name in ("authentication", "username_env", "password_env"):
        if args.get(name) and not flag(args.get("user"), False):
            bad(name, "applies with user: \"true\" only")
    return out


def lane_name(name: str, flow_uuid: str, limit: int = MAX_TOPIC) -> str:
    """`<name>-<flow_uuid>`, or, past `limit`, its head, a stable hash and the flow id's tail."""
    full = f"{name}-{flow_uuid}"
    if len(full) <= limit:
        return full
    tail = f"-{stable_hash(full)}-{flow_uuid}"[-(limit // 2):]
    return name[: limit - len(tail)] + tail


def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str,
                config_maps: ConfigMaps | None = None, cluster: str = "",
                topics: str = "", groups: str = "", partitions: str = "", replicas: str = "",
                retention_ms: str = "", api_version: str = "", user: str = "", authentication: str = "",
                username_env: str = "", password_env: str = "") -> Json:
    """The dependents' pod specs and the ConfigMaps they read with the lane's topic and group names (same count and
    order), the KafkaTopics (and KafkaUser), and the state."""
    api = api_version or APIS[0]
    topic_names, group_names = name_list(topics), name_list(groups)
    renames = {t: lane_name(t, flow_uuid) for t in topic_names}
    renames.update({g: lane_name(g, flow_uuid, 200) for g in group_names})
    try:
        if not cluster or not topic_names:
            raise Refused("kafka-topic needs args.cluster and args.topics", path="args")
        specs, configs, seen = rename_names(pod_specs, renames, config_maps)
        resources = [_topic(api, cluster, t, renames[t], flow_uuid, partitions, replicas, retention_ms)
                     for t in topic_names]
        state: Json = {"cluster": cluster, "topics": {t: renames[t] for t in topic_names},
                       "groups": {g: renames[g] for g in group_names}}
        if flag(user, False):
            name = flow_name("kafka", flow_uuid)
            resources.append(_user(api, cluster, name, [renames[t] for t in topic_names],
                                   [renames[g] for g in group_names], authentication or "scram-sha-512"))
            for spec in specs:
                container = (spec.get("containers") or [{}])[0]
                set_env(container, username_env or "KAFKA_USERNAME", {"value": name})
                if (authentication or "scram-sha-512") == "scram-sha-512":
                    set_env(container, password_env or "KAFKA_PASSWORD", secret_ref(name, "password"))
            state["user"] = name
    except Refused as refused:
        return refused.answer(pod_specs)
    what = {n: "topic" if n in topic_names else "consumer group" for n in renames}
    results = unnamed(renames, seen, what, {n: "topics" if n in topic_names else "groups" for n in renames})
    return {"pod_specs": specs, "config_maps": configs, "config_map": state, "resources": resources,
            "results": results}


def _topic(api: str, cluster: str, topic: str, name: str, flow_uuid: str, partitions: str, replicas: str,
           retention_ms: str) -> Json:
    meta_name = flow_name(clean_name(topic)[:40] or "topic", flow_uuid)
    spec: Json = {"topicName": name}
    if partitions:
        spec["partitions"] = int(partitions)
    if replicas:
        spec["replicas"] = int(replicas)
    if retention_ms:
        spec["config"] = {"retention.ms": int(retention_ms)}
    return {"apiVersion": api, "kind": "KafkaTopic",
            "metadata": {"name": meta_name, "labels": {CLUSTER_LABEL: cluster}}, "spec": spec}


def _user(api: str, cluster: str, name: str, topics: list[str], groups: list[str], authentication: str) -> Json:
    acls = [{"resource": {"type": "topic", "name": t, "patternType": "literal"}, "operations": TOPIC_OPERATIONS,
             "host": "*"} for t in topics]
    acls += [{"resource": {"type": "group", "name": g, "patternType": "literal"}, "operations": GROUP_OPERATIONS,
              "host": "*"} for g in groups]
    return {"apiVersion": api, "kind": "KafkaUser", "metadata": {"name": name, "labels": {CLUSTER_LABEL: cluster}},
            "spec": {"authentication": {"type": authentication},
                     "authorization": {"type": "simple", "acls": acls}}}


def delete_flow(config_map: Json, flow_uuid: str) -> None:
    """Nothing to undo here: pruning the KafkaTopics makes the Topic Operator delete the topics (and the KafkaUser
    its credentials)."""
    return None
