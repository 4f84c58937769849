"""Flows whose size is the graph's, not the repository's (`tests/bench/shapes.py`): a wide flow (every caller of
a TCP store gets a dev copy) and a deep one (a dependency chain, every service on it dev). What each dev pod
reaches is read from the rendered objects: the host in its env, resolved as DNS would in its namespace, must be
a Service that selects the dev pods it should reach. The big sizes (10,000 deep) are end-to-end tests."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from bench.shapes import chain_services, flow_for_chain, flow_for_wide, generate_chain, generate_wide, wide_store

from renderer import api
from renderer.core.k8s import LabelIndex, map_matches, pod_template
from renderer.render.plan.flow_spec import build_flow

pytestmark = pytest.mark.e2e  # renders of graphs hundreds of services wide and deep: the whole suite's tier

WIDE = 120
DEEP = 150
FRAMES = 100  # the stack a render may use above its caller: far less than a chain of DEEP services


def _env(workload: dict) -> dict[str, str]:
    container = pod_template(workload)["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container.get("env") or []}


class Rendered:
    """A flow's rendered objects by kind and (namespace, name), and where a pod's address leads."""

    def __init__(self, result):
        self.by_kind: dict[str, dict[tuple[str | None, str], dict]] = {}
        for o in result.main.objects:
            self.by_kind.setdefault(o["kind"], {})[(o["metadata"].get("namespace"), o["metadata"]["name"])] = o
        self.pods = LabelIndex()
        for kind in ("Deployment", "StatefulSet"):
            for w in self.by_kind.get(kind, {}).values():
                self.pods.add(w["metadata"].get("namespace"), pod_template(w)["metadata"]["labels"], w)

    def reached(self, caller: dict, variable: str) -> dict:
        """The workload whose pods the host in the caller's `variable` reaches: the Service of that name in the
        caller's namespace (never an alias to the baseline), and the one rendered workload it selects."""
        namespace = caller["metadata"].get("namespace")
        service = self.by_kind["Service"][(namespace, _env(caller)[variable])]
        assert service["spec"].get("type") != "ExternalName", f"{variable} of {caller['metadata']['name']} is an alias"
        selector = service["spec"]["selector"]
        selected = [w for w in self.pods.candidates(namespace, selector)
                    if map_matches(selector, pod_template(w)["metadata"]["labels"])]
        assert len(selected) == 1, f"{service['metadata']['name']} selects {len(selected)} rendered workloads"
        return selected[0]


def _warm(harness) -> None:
    """A first render in a throwaway repository, so that the modules a render imports lazily are in place."""
    repo = harness.tmp / "warm"
    repo.mkdir()
    generate_chain(repo, 2)
    flow_id, target, image = flow_for_chain(2)
    api.render(api.Options(repo=repo), build_flow(flow_id, {target: image}, []))


@contextmanager
def _shallow_stack(frames: int) -> Iterator[None]:
    """A recursion limit `frames` above the caller's stack: a walk that recursed once per service of a long chain
    would hit it."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.parametrize("isolation", ["suffix", "namespace"])
def test_every_caller_of_a_tcp_store_gets_a_dev_copy_that_reaches_the_dev_store(harness, isolation):
    generate_wide(harness.root, WIDE, isolation=isolation, plugin=False)
    flow_id, target, image = flow_for_wide(WIDE)
    result = harness.render(flow_id, {target: image})
    assert not result.warnings
    out = Rendered(result)
    callers = out.by_kind["Deployment"]
    assert sorted(name for _, name in callers) == sorted(
        f"svc-{i:04d}-{flow_id}" if isolation == "suffix" else f"svc-{i:04d}" for i in range(1, WIDE + 1))
    (store,) = out.by_kind["StatefulSet"].values()
    assert store["metadata"]["labels"]["devlane.dev/flow"] == flow_id  # the dev store, not the baseline's
    variable = wide_store().upper().replace("-", "_") + "_DATABASE_HOST"
    for caller in callers.values():
        assert out.reached(caller, variable) is store
        host = _env(caller)[variable]
        assert _env(caller)[variable.replace("_HOST", "_URL")] == f"postgres://app:app@{host}:5432/app"
    (mine,) = [w for (_, name), w in callers.items() if name in (target, f"{target}-{flow_id}")]
    assert pod_template(mine)["spec"]["containers"][0]["image"] == image


def test_a_deep_chain_renders_every_hop_dev_without_a_deep_stack(harness):
    generate_chain(harness.root, DEEP)
    flow_id, target, image = flow_for_chain(DEEP)
    _warm(harness)
    with _shallow_stack(FRAMES):
        result = harness.render(flow_id, {target: image})
    names = chain_services(DEEP)
    assert sorted(result.plan.dev_services()) == sorted(names)
    out = Rendered(result)
    by_name = {name.removesuffix(f"-{flow_id}"): w for (_, name), w in out.by_kind["Deployment"].items()}
    assert sorted(by_name) == sorted(names)
    for caller, callee in itertools.pairwise(names):
        assert out.reached(by_name[caller], callee.upper().replace("-", "_") + "_HOST") is by_name[callee]
    (ingress,) = out.by_kind["Ingress"].values()
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"]
    service = out.by_kind["Service"][(ingress["metadata"].get("namespace"), backend)]
    assert map_matches(service["spec"]["selector"], pod_template(by_name[names[0]])["metadata"]["labels"])


def test_a_deep_chain_on_a_mesh_is_proved_hop_by_hop_without_a_deep_stack(harness):
    generate_chain(harness.root, DEEP, routing="gateway-api")
    flow_id, target, image = flow_for_chain(DEEP)
    _warm(harness)
    with _shallow_stack(FRAMES):
        result = harness.render(flow_id, {target: image})  # the routing proof walks all DEEP hops from the entry
    assert result.plan.dev_services() == [target]  # HTTP all the way: the mesh routes the far end by the header
    # and every service before it must forward the header, which nothing in the chain shows (issue 44)
    [hops] = [w for w in result.warnings if w.code == "header-propagation"]  # one problem for them all
    assert [w for w in result.warnings if w.code != "header-propagation"] == []
    assert f"header routing: {chain_services(DEEP).index(target):,} services pass the lane's requests on" in \
        hops.message


@pytest.mark.e2e  # 10,000 services: tens of seconds in-process
@pytest.mark.parametrize("routing", ["none", "gateway-api"])
def test_a_10000_deep_chain_renders(harness, routing):
    n = 10_000
    generate_chain(harness.root, n, routing=routing)
    flow_id, target, image = flow_for_chain(n)
    result = harness.render(flow_id, {target: image})
    names = chain_services(n)
    if routing == "gateway-api":  # the routing proof walked the chain: every hop reaches what it should
        assert result.plan.dev_services() == [target]
        return
    assert len(result.plan.dev_services()) == n
    by_name = {name.removesuffix(f"-{flow_id}"): w for (_, name), w in Rendered(result).by_kind["Deployment"].items()}
    for caller, callee in itertools.pairwise(names):
        assert _env(by_name[caller])[callee.upper().replace("-", "_") + "_HOST"] == f"{callee}-{flow_id}"


def test_a_cycle_renders_every_member_dev_without_routing(harness):
    """A chain whose far end calls its head (a cycle of DEEP services), routing none: the lane's requests leave the
    dev far end and come back to it through every other member, so each gets a dev copy, wired from the rendered
    env to the next member's dev pods, the far end's to the head's."""
    generate_chain(harness.root, DEEP, cycle=True)
    flow_id, target, image = flow_for_chain(DEEP)
    with _shallow_stack(FRAMES):
        result = harness.render(flow_id, {target: image})
    names = chain_services(DEEP)
    assert sorted(result.plan.dev_services()) == sorted(names)
    assert f"in cycle {names[0]} -> {names[1]}" in "; ".join(result.plan.decisions[names[7]].reasons)
    out = Rendered(result)
    by_name = {name.removesuffix(f"-{flow_id}"): w for (_, name), w in out.by_kind["Deployment"].items()}
    for caller, callee in [*itertools.pairwise(names), (names[-1], names[0])]:
        assert out.reached(by_name[caller], callee.upper().replace("-", "_") + "_HOST") is by_name[callee]


@pytest.mark.e2e  # 10,000 services: tens of seconds in-process
def test_a_10000_long_cycle_on_a_mesh_renders_only_the_target(harness):
    """HTTP all the way round: the mesh brings the lane's requests back to the dev far end by the header, so no
    other member needs a copy (the routing proof walks the cycle from the entry and holds), and the plan says so."""
    n = 10_000
    generate_chain(harness.root, n, cycle=True, routing="gateway-api")
    flow_id, target, image = flow_for_chain(n)
    result = harness.render(flow_id, {target: image})
    names = chain_services(n)
    assert result.plan.dev_services() == [target]
    [hops] = result.warnings  # every member passes the lane's requests on: one problem counts them
    assert hops.code == "header-propagation" and f"header routing: {n:,} services pass" in hops.message
    [why] = result.plan.decisions[names[0]].reasons
    assert why.startswith(f"in cycle {names[0]} -> {names[1]}") and f"({n:,} services)" in why
    assert why.endswith(f"with dev {target}: stays baseline, the mesh routes its calls to it by the flow header")


