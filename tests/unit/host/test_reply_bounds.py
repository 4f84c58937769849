"""Plugin replies parsed within limits (`renderer.host.reply_bounds`, read by `ReplyReader.parse`): depth and
alias expansion bounded before the YAML composer runs, duplicate keys refused in JSON and YAML, field, object
and object-count limits, a deep plugin state, malformed shapes that are errors, not crashes, and provision
records (recorded replies) read within the same limits."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.core.source import WorktreeSource
from renderer.errors import DevlaneError, PluginError
from renderer.host.invoke import Invocation, Outcome, ReplyReader, outcome_from_reply
from renderer.host.reply_bounds import (
    MAX_DEPTH,
    MAX_FIELD_BYTES,
    MAX_NEW_OBJECTS,
    MAX_OBJECT_BYTES,
    ReplyLimit,
    load_reply,
)
from renderer.host.state import Record, read_record, record_path, write_records
from renderer.protocol.krm import ID, STATE, STATE_KEY

HEAD = '{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": '


def reader() -> ReplyReader:
    return ReplyReader(Invocation("CreateFlow", "seed", "pr-1", "./seed"), "CreateFlow of seed")


def parse_error(data: bytes | str) -> str:
    with pytest.raises(PluginError) as info:
        reader().parse(data.encode() if isinstance(data, str) else data)
    (problem,) = info.value.problems
    assert problem.where.plugin == "seed" and problem.hint
    return problem.message


def nested(depth: int, flow: bool = True) -> str:
    return "[" * depth + "]" * depth if flow else "- " * depth + "x\n"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 10_000, 100_000])
@pytest.mark.parametrize("form", ["json", "yaml-block", "yaml-flow-unclosed"])
def test_deep_replies_are_one_clear_error(form, depth):
    text = {"json": nested(depth), "yaml-block": nested(depth, flow=False),
            "yaml-flow-unclosed": "x: " + "[" * depth}[form]
    said = ("is nested more than 200 levels deep" if form == "json" else
            "is refused: YAML nesting is deeper than 200 levels")
    assert f"CreateFlow of seed: the reply {said}" in parse_error(text)


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, MAX_DEPTH + 40), flow=st.booleans())
def test_depth_is_refused_exactly_past_the_limit(depth, flow):
    text = nested(depth, flow)
    if depth <= MAX_DEPTH:
        load_reply(text.encode())
    else:
        with pytest.raises(ReplyLimit):
            load_reply(text.encode())


def test_an_alias_bomb_is_refused_from_the_events_quickly():
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 12))
    start = time.thread_time()  # CPU time: a loaded machine stretches wall time
    assert "YAML aliases expand the document past 1,000,000 nodes" in parse_error(bomb)
    assert time.thread_time() - start < 2
    big = "s: &s " + "y" * 1_000_000 + "\nl: [" + ", ".join(["*s"] * 70) + "]\n"  # few nodes, many bytes
    assert "through YAML aliases" in parse_error(big)


def test_a_few_aliases_are_fine():
    doc = load_reply(b"kind: ResourceList\nbase: &b {a: 1}\nitems: [{metadata: {name: x}, spec: *b}]\n")
    assert doc["items"][0]["spec"] == {"a": 1}


@pytest.mark.parametrize("text", ['{"kind": "ResourceList", "items": [], "items": []}',
                                  "kind: ResourceList\nitems: []\nitems: []\n",
                                  "kind: ResourceList\nitems: [{a: 1, 'a': 2}]\n"])
def test_duplicate_keys_are_refused(text):
    assert "repeats the key" in parse_error(text) or "is refused: duplicate key 'items'" in parse_error(text) or (
        "is refused: duplicate key 'a'" in parse_error(text))


def test_keys_that_only_look_alike_are_not_duplicates():
    load_reply(b"{2: a, '2': b, true: c, 'true': d, <<: {x: 1}}")


def test_an_oversized_field_names_its_path_and_a_large_but_legal_one_passes():
    big = "x" * (MAX_FIELD_BYTES + 1)
    text = HEAD + json.dumps([{"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": big}}]) + "}"
    assert f"the reply has a field of {MAX_FIELD_BYTES + 1:,} bytes at items[0].data.k" in parse_error(text)
    key = HEAD + json.dumps([{"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {big: "v"}}]) + "}"
    assert "at items[0].data" in parse_error(key)
    reader().parse((HEAD + json.dumps([{"data": {"k": "é" * (MAX_FIELD_BYTES // 2)}}]) + "}").encode())


def test_object_size_and_count_limits():
    half = "x" * (MAX_FIELD_BYTES // 2 + 1)
    fat = {"kind": "ConfigMap", "metadata": {"name": "fat"}, "data": {"a": half, "b": half, "c": half}}
    assert "items[0] (ConfigMap/fat) is" in parse_error(HEAD + json.dumps([fat]) + "}")
    assert 3 * len(half) > MAX_OBJECT_BYTES
    many = [{"kind": "ConfigMap", "metadata": {"name": f"c{i}"}} for i in range(MAX_NEW_OBJECTS + 1)]
    assert f"the reply adds {MAX_NEW_OBJECTS + 1:,} objects" in parse_error(HEAD + json.dumps(many) + "}")
    sent = [{"kind": "ConfigMap", "metadata": {"name": f"c{i}", "annotations": {ID: str(i)}}}
            for i in range(MAX_NEW_OBJECTS + 1)]
    reader().parse((HEAD + json.dumps(sent) + "}").encode())  # objects sent back are not additions


def test_a_deep_plugin_state_is_a_clear_error():
    state = {"kind": "ConfigMap", "metadata": {"name": "s", "annotations": {STATE: "true"}},
             "data": {STATE_KEY: nested(5000)}}
    r = reader()
    with pytest.raises(PluginError) as info:
        r.state([state])
    assert "data.config_map.json is nested more than 200 levels deep" in info.value.problems[0].message


@pytest.mark.parametrize("item", [
    {"kind": "Deployment", "metadata": {"annotations": {ID: "0"}}, "spec": [1, 2]},
    {"kind": "Deployment", "metadata": {"annotations": {ID: "0"}}, "spec": {"template": {"spec": {
        "containers": ["not an object"]}}}},
    {"kind": "Deployment", "metadata": "x"},
    {"kind": "Deployment", "metadata": {"annotations": ["x"]}},
])  # fmt: skip
def test_malformed_workloads_in_a_reply_are_errors_not_crashes(item):
    workload = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api-pr-1"},
                "spec": {"template": {"spec": {"containers": [{"name": "m"}]}}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api-pr-1"}}
    inv = Invocation("CreateFlow", "seed", "pr-1", "./seed", dependents=["api"], workloads=[workload],
                     services=[service])
    r = ReplyReader(inv, "CreateFlow of seed")
    doc = r.parse((HEAD + json.dumps([item]) + "}").encode())
    with pytest.raises(PluginError):
        outcome_from_reply(inv, doc, r)


@pytest.mark.parametrize(("result", "expected"), [
    ({"podSpecs": [[1]], "configMap": {}}, "(ValueError: recorded pod spec has no spec.template.spec.containers)"),
    ({"podSpecs": [], "configMap": {}, "resources": [{"kind": "Job"}]},
     "(ValueError: recorded resources[0] has no apiVersion)"),
    ({"podSpecs": [], "configMap": json.loads(nested(300))}, "provision record is nested more than 200 levels deep"),
    ({"podSpecs": [], "configMap": {}, "configs": [{"dependent": "a", "name": "cfg", "data": {"k": 1}}]},
     "(ValueError: recorded configs[0] is not {dependent, name, data} of strings)"),
])  # fmt: skip
def test_a_provision_record_is_a_recorded_reply_read_within_the_same_limits(tmp_path, result, expected):
    path = tmp_path / record_path("pr-1", "seed")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"plugin": "./seed", "instance": "seed", "flowId": "pr-1", "inputHash": "x",
                                "result": result}))
    with pytest.raises(DevlaneError) as info:
        read_record(WorktreeSource(tmp_path), "pr-1", "seed")
    assert expected in info.value.problems[0].message


def test_a_provision_record_keeps_the_configmap_edits(tmp_path):
    edit = {"dependent": "a", "name": "cfg", "data": {"app.yml": "topic: orders-pr-1\n"}}
    write_records(tmp_path, "pr-1", [Record("./bus", "bus", "pr-1", "h", Outcome([], {}, [], configs=[edit]))])
    assert read_record(WorktreeSource(tmp_path), "pr-1", "bus").outcome.configs == [edit]
