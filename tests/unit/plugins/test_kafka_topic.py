"""kafka-topic's names: a lane topic fits Kafka's 249 characters and stays unique per flow; a name is renamed only
as a whole token, never inside a longer topic name (`_common.rename_names`, which nats-stream shares); in a config
file, only where it is a value, never a key, a host or a path."""

from __future__ import annotations

from hypothesis import assume, given
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
    [spec], _, _ = rename_names([{"containers": [{"name": "c", "env": [{"name": "T", "value": value}]}]}], renames)
    got = spec["containers"][0]["env"][0]["value"]
    whole = template in ("{}", "{},@", "--topic={}", "@ {} @")  # `@` is no name: it cannot be renamed too
    assert got == (template.format(f"{name}-lane") if whole else value), (template, name, got)


FILE_LINES = {  # a line of a config file -> whether the name in it is a value (renamed)
    "topic: {}": True, "topic={}": True, '{{"t": "{}"}}': True, "- {}": True, "topics: a,{}": True, "t: '{}'": True,
    "{}: 3": False, "{}=3": False, '{{"{}": 1}}': False,  # keys
    "url: http://{}:8080": False, "h: {}:9092": False, "u: amqp://u@{}": False, "p: /api/{}": False,  # hosts, paths
    "t: {}-dlq": False, "t: v2.{}": False,  # other names
}


@given(topic, st.sampled_from(sorted(FILE_LINES)))
def test_in_a_config_file_a_name_is_renamed_only_as_a_value(name, template):
    assume(name not in template.replace("{}", ""))  # `a` in `topics: a,{}` would be a second occurrence
    text = template.format(name)
    _, [configs], seen = rename_names([{"containers": []}], {name: f"{name}-lane"}, [{"app": {"f.yml": text}}])
    renamed = FILE_LINES[template]
    assert configs["app"]["f.yml"] == (template.format(f"{name}-lane") if renamed else text), (template, name)
    assert (name in seen) == renamed
