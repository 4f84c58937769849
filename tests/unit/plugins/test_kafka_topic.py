"""kafka-topic's names: a lane topic fits Kafka's 249 characters and stays unique per flow; a name is renamed only
as a whole token, never inside a longer topic name (`_common.rename_names`, which nats-stream shares)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from support.kardinal import import_builtin

from plugins._common import rename_names

KAFKA = import_builtin("kafka-topic")
topic = st.from_regex(r"[a-zA-Z0-9._-]{1,60}", fullmatch=True).filter(lambda t: t not in (".", ".."))


@given(st.text("abc.-_", min_size=1, max_size=300), st.sampled_from(["t-pr-1", "t-pr-2", "x" * 80 + "-pr-9"]))
def test_a_lane_topic_fits_kafka_and_keeps_the_flow(name, flow_uuid):
    lane = KAFKA.lane_name(name, flow_uuid)
    assert len(lane) <= 249 and lane.endswith(flow_uuid[-60:]) and KAFKA.TOPIC.match(lane)
    assert lane != KAFKA.lane_name(name, flow_uuid + "x")


@given(topic, st.sampled_from(["{}", "{}-dlq", "v2.{}", "x{}", "{},@", "--topic={}", "@ {} @"]))
def test_a_name_is_renamed_only_as_a_whole_token(name, template):
    value = template.format(name)
    renames = {name: f"{name}-lane"}
    [spec], _ = rename_names([{"containers": [{"name": "c", "env": [{"name": "T", "value": value}]}]}], renames)
    got = spec["containers"][0]["env"][0]["value"]
    whole = template in ("{}", "{},@", "--topic={}", "@ {} @")  # `@` is no name: it cannot be renamed too
    assert got == (template.format(f"{name}-lane") if whole else value), (template, name, got)
