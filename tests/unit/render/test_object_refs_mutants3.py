"""What the broker kinds (Strimzi, NACK, the RabbitMQ topology operator) share and name, an owner reference that
gives no kind, and the fields an unmodeled kind's loose reading leaves alone (`renderer.render.plugins.object_refs`,
issue 41): each item on its own, so a changed kind, namespace, reason or skipped key fails a case here."""

from __future__ import annotations

import pytest
from support.policy_lane import NS, added, obj

from renderer.render.plugins.object_refs import loose_references, references
from renderer.render.settings.repo_config import PluginAllow

TRUSTED = PluginAllow(kinds=("example.com/Widget",))
FLOWS = "a plugin's objects reference only the flow's own (named <name>-pr-7, in its namespaces)"
RABBIT = {"name": "broker", "namespace": "messaging"}

# case -> (the object, its shared reference as (path, kind, name, namespace), the broker and what lives on it)
BROKERS: dict[str, tuple[dict, tuple[str, str, str, str | None], str, str]] = {
    **{
        f"Strimzi {kind}": (
            obj("kafka.strimzi.io/v1beta2", kind, "t-pr-7", meta={"labels": {"strimzi.io/cluster": "events"}}),
            ("metadata.labels.strimzi.io/cluster", "Kafka", "events", None),
            "Kafka cluster",
            "topics",
        )
        for kind in ("KafkaTopic", "KafkaUser")
    },
    **{
        f"NACK {kind}": (
            obj("jetstream.nats.io/v1beta2", kind, "s-pr-7", spec={"account": "events"}),
            ("spec.account", "Account", "events", None),
            "NATS account",
            "streams",
        )
        for kind in ("Stream", "Consumer")
    },
    **{
        f"RabbitMQ {kind}": (
            obj("rabbitmq.com/v1beta1", kind, "r-pr-7", spec={"rabbitmqClusterReference": RABBIT}),
            ("spec.rabbitmqClusterReference", "RabbitmqCluster", "broker", "messaging"),
            "RabbitMQ cluster",
            "vhosts",
        )
        for kind in ("Vhost", "Permission", "Queue", "Exchange", "Binding")
    },
}


@pytest.mark.parametrize("case", sorted(BROKERS))
def test_a_broker_kind_names_the_broker_it_lives_on_and_says_why_that_is_shared(case):
    """The kind, name and namespace of the broker are what the reference names; its reason names the broker and
    what of the flow's lives on it (the reason the policy accepts it unfollowed)."""
    thing, named, broker, items = BROKERS[case]
    found = [r for r in references(thing) if r.shared]
    assert [(r.path, r.kind, r.name, r.namespace) for r in found] == [named]
    assert found[0].shared.startswith(f"the {broker} every flow's {items} lives on: the operator creates")


def test_a_rabbitmq_connection_secret_lives_in_the_namespace_of_the_cluster_reference():
    """The operator reads the connection Secret in the cluster reference's namespace: one of another namespace is
    no object of the flow, whatever its name."""
    queue = obj(
        "rabbitmq.com/v1beta1",
        "Queue",
        "q-pr-7",
        spec={"name": "q", "rabbitmqClusterReference": {**RABBIT, "connectionSecret": {"name": "secret-pr-7"}}},
    )
    assert added(queue) == [
        "(rule reference): spec.rabbitmqClusterReference.connectionSecret names Secret/secret-pr-7 in namespace "
        f"messaging, which is not the flow's: {FLOWS}"
    ]


def test_an_owner_reference_without_a_kind_says_no_kind():
    """An owner reference that gives no kind names an object of any kind (""), never a made-up one."""
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={"ownerReferences": [{"name": "db"}]})
    assert [(r.path, r.kind, r.name) for r in references(cm)] == [("metadata.ownerReferences[0]", "", "db")]


REFERENCE_SHAPED = {"targetRef": {"name": "db"}, "serviceName": "db", "labels": {"target": "db"}}


@pytest.mark.parametrize("key", ["apiVersion", "kind", "metadata", "status"])
def test_an_unmodeled_kinds_identity_and_status_are_not_read_as_references(key):
    """Only the object's body is its controller's input: what its identity or status holds names nothing."""
    thing = {"apiVersion": "example.com/v1", "kind": "Widget", "spec": {}, key: REFERENCE_SHAPED}
    assert loose_references(thing) == []


def test_the_labels_and_annotations_of_a_trusted_unmodeled_kind_are_not_references():
    """A label `target: db` or an annotation `serviceName: db` is metadata, not a reference to the baseline."""
    thing = obj(
        "example.com/v1",
        "Widget",
        "w-pr-7",
        meta={"labels": {"target": "db"}, "annotations": {"serviceName": "db", "targetRef": "creds"}},
        spec={"size": 1},
    )
    assert added(thing, allow=TRUSTED) == []


def test_an_unmodeled_kinds_selector_selects_pods():
    thing = obj(
        "example.com/v1",
        "Widget",
        "w-pr-7",
        spec={"selector": {"app": "x"}, "rules": [{"podSelector": {"matchLabels": {"app": "x"}}}]},
    )
    assert [(r.path, r.kind) for r in loose_references(thing)] == [
        ("spec.selector", "Pod"),
        ("spec.rules[0].podSelector", "Pod"),
    ]


@pytest.mark.parametrize("field", ["name", "kind", "namespace", "apiVersion", "group"])
def test_a_loose_references_identity_fields_are_not_read_further(field):
    """A reference's name, kind, namespace, apiVersion and group say what it names; a mapping there is no field a
    controller follows, so it is not read as further references."""
    thing = obj(
        "example.com/v1",
        "Widget",
        "w-pr-7",
        spec={"targetRef": {"name": "x-pr-7", "namespace": NS, field: {"secretName": "creds"}}},
    )
    assert [r.path for r in loose_references(thing) if r.path.startswith(f"spec.targetRef.{field}")] == []
