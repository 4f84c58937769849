"""Built-ins never trip devlane's own policy (issue 44, point 6): for any plugin instance names and flow id a user
may choose (names that begin with a repository object's, the longest a flow id may be), the app that uses all
eleven built-ins renders, every object of the lane is named for the flow (computed from the rendered files), and
the output policy refuses nothing. Once, kafka-topic's `orders-topic` instance was refused as another flow's copy of
the repository's topic."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from support.catalogue_app import DEFINITIONS

pytestmark = pytest.mark.e2e

LABEL = st.from_regex(r"[a-z]([a-z0-9-]{0,18}[a-z0-9])?", fullmatch=True)
REPOSITORY = ["api", "web", "orders-db", "ledger-db", "cache", "neon", "events"]  # names of the app's objects
INSTANCE = st.one_of(LABEL, st.builds(lambda a, b: f"{a}-{b}", st.sampled_from(REPOSITORY), LABEL))
# each example is a render (about a third of a second): no shrinking, whose minutes a failure would spend; the
# failing example is reported as drawn
RENDERS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck),
                   phases=[Phase.explicit, Phase.reuse, Phase.generate])
FLOW = st.one_of(st.from_regex(r"pr-[1-9][0-9]{0,5}", fullmatch=True),
                 st.from_regex(r"[a-z]([a-z0-9-]{0,38}[a-z0-9])?", fullmatch=True))


@RENDERS
@given(names=st.lists(INSTANCE, min_size=len(DEFINITIONS), max_size=len(DEFINITIONS), unique=True), flow=FLOW)
def test_any_instance_names_and_flow_id_render_every_builtin(tmp_path_factory, names, flow):
    from _pytest.monkeypatch import MonkeyPatch
    from support import Harness
    from support.catalogue_app import catalogue_app

    if set(names) & {*REPOSITORY, "api", "web"}:  # an instance named as another Service of the app: not a choice
        names = [f"{n}-x" for n in names]
    # a baseline Service named as the flow's copy of another (`api-pr-1` beside `api`) is the user's collision,
    # which devlane refuses for what it is: not a name a built-in chose
    assume(not any(n.endswith(f"-{flow}") for n in names))
    patch = MonkeyPatch()
    try:
        harness = Harness(tmp_path_factory.mktemp("names"), patch)
        catalogue_app(harness, dict(zip(DEFINITIONS, names, strict=True)))
        out = harness.tmp / "out"
        done = harness.cli("render", "--flow", flow, "--service", "api=example.com/api:2", "--out", out)
    finally:
        patch.undo()
    assert done.returncode == 0, (names, flow, done.stderr)
    assert "output policy" not in done.stderr
    for path in sorted((out / "flows" / flow).glob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if isinstance(obj, dict) and "metadata" in obj:
                assert obj["metadata"]["name"].endswith(f"-{flow}") or re.fullmatch(r"devlane-.*", obj["metadata"][
                    "name"]), (path.name, obj["metadata"]["name"])


QUEUE_REPOSITORY = ["orders", "order-history", "kitchen", "catalog-db", "history", "audit", "consumers"]
TOPIC_NAME = st.builds(lambda a, b: f"{a}-{b}", st.sampled_from(["orders", "history"]), LABEL)


@RENDERS
@given(names=st.lists(st.one_of(LABEL, st.builds(lambda a, b: f"{a}-{b}", st.sampled_from(QUEUE_REPOSITORY), LABEL)),
                      min_size=4, max_size=4, unique=True), topic=TOPIC_NAME, flow=FLOW)
def test_any_instance_and_topic_names_render_every_queue_builtin(tmp_path_factory, names, topic, flow):
    """With the repository's own KafkaTopic `orders` and Queue `history` beside the lane's (the issue's case: a
    topic `orders-topic` made KafkaTopic/orders-orders-topic-<flow>)."""
    from _pytest.monkeypatch import MonkeyPatch
    from support import Harness
    from support.queue_app import INSTANCES, queue_shop

    names = [f"{n}-x" if n in QUEUE_REPOSITORY else n for n in names]
    assume(not any(n.endswith(f"-{flow}") for n in names))
    patch = MonkeyPatch()
    try:
        harness = Harness(tmp_path_factory.mktemp("queues"), patch)
        queue_shop(harness, dict(zip(INSTANCES, names, strict=True)), topic=topic)
        harness.append("app.yaml", yaml.safe_dump({
            "apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaTopic",
            "metadata": {"name": "orders", "namespace": "shop", "labels": {"strimzi.io/cluster": "events"}},
            "spec": {"topicName": "orders", "partitions": 1}}))
        out = harness.tmp / "out"
        done = harness.cli("render", "--flow", flow, "--service", "orders=example.com/orders:2", "--out", out)
    finally:
        patch.undo()
    assert done.returncode == 0, (names, topic, flow, done.stderr)
    assert "output policy" not in done.stderr
    kinds = set()
    for path in sorted((out / "flows" / flow).glob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if isinstance(obj, dict) and "metadata" in obj:
                kinds.add(obj["kind"])
                assert obj["metadata"]["name"].endswith(f"-{flow}"), (path.name, obj["metadata"]["name"])
    assert {"KafkaTopic", "Vhost", "Stream"} <= kinds
