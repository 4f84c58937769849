"""Property tests (hypothesis) of `renderer.render`: the dependency parser (model), label isolation of dev
copies (clone), template substitution (flow), the planner (Kardinal's rules, determinism) and flow hosts
(routing)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from renderer.render.checks import route_proof
from renderer.render.copies import clone
from renderer.render.copies.clone import isolate_labels
from renderer.render.inputs.document import Document
from renderer.render.model.annotations import parse_dependency_item
from renderer.render.model.port_protocols import routed_by_header
from renderer.render.model.topology import build_model
from renderer.render.plan.flow_spec import build_flow, substitute
from renderer.render.plan.planner import make_plan
from renderer.render.routing import mesh
from renderer.render.routing.entries import flow_host, route_entries
from renderer.render.settings.isolation import Lane
from renderer.render.settings.render_settings import CopySettings, RouteSettings

label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?", fullmatch=True)
flow_id = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?", fullmatch=True)


# --- dependencies -----------------------------------------------------------------------------


@given(label, label, st.sampled_from(["", " ", "  "]))
def test_dependency_items_round_trip(svc, port, pad):
    assert parse_dependency_item(f"{pad}{svc}:{port}{pad}") == (svc, port)


@given(st.text(alphabet="abc:- ", max_size=12))
def test_dependency_parser_never_crashes_and_only_accepts_one_colon(item):
    parsed = parse_dependency_item(item)
    if parsed is not None:
        assert item.strip().count(":") == 1 and all(parsed)


# --- label isolation --------------------------------------------------------------------------


@given(
    st.dictionaries(label, label, min_size=1, max_size=5),
    st.lists(st.dictionaries(label, label, min_size=1, max_size=3), min_size=1, max_size=5),
    flow_id,
)
def test_no_baseline_selector_matches_an_isolated_pod(pod_labels, selectors, flow):
    keys = {k for s in selectors for k in s}
    dev = isolate_labels(pod_labels, keys, flow)
    for sel in selectors:
        assert not all(dev.get(k) == v for k, v in sel.items())
    assert dev["devlane.dev/flow"] == flow


# --- templates --------------------------------------------------------------------------------


@given(st.text(alphabet=st.characters(blacklist_characters="$"), max_size=40))
def test_substitute_leaves_text_without_placeholders_alone(text):
    assert substitute(text, {"a": "b"}) == text


@given(st.from_regex(r"\w{1,8}", fullmatch=True), st.text(alphabet="xyz0-", max_size=6), st.text("abc", max_size=5))
def test_substitute_uses_args_then_defaults_then_empty(var, default, value):
    assert substitute(f"<${{{var}:-{default}}}>", {var: value}) == f"<{value}>"
    assert substitute(f"<${{{var}:-{default}}}>", {}) == f"<{default}>"
    assert substitute(f"<${{{var}}}>", {}) == "<>"


# --- the planner ------------------------------------------------------------------------------


def _repo(n: int, edges: list[tuple[int, int]], stateful: set[int], http: set[int]) -> list[Document]:
    docs: list[Document] = []
    for i in range(n):
        name = f"s{i}"
        deps = ",".join(f"s{j}:p" for a, j in edges if a == i)
        ann = {"kardinal.dev.service/dependencies": deps} if deps else {}
        if i in stateful:
            ann["kardinal.dev.service/stateful"] = "true"
        port = {"name": "p", "port": 80, **({"appProtocol": "HTTP"} if i in http else {})}
        docs.append(Document({"apiVersion": "v1", "kind": "Service",
                              "metadata": {"name": name, "annotations": ann},
                              "spec": {"selector": {"app": name}, "ports": [port]}}, f"{name}.yaml", 0))  # fmt: skip
        docs.append(Document({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                              "spec": {"selector": {"matchLabels": {"app": name}},
                                       "template": {"metadata": {"labels": {"app": name}},
                                                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
                             f"{name}.yaml", 1))  # fmt: skip
    return docs


@st.composite
def topologies(draw):
    n = draw(st.integers(2, 9))
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]  # a < b: no cycles
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=14))
    stateful = set(draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n)))
    http = set(draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n)))
    targets = draw(st.lists(st.integers(0, n - 1), unique=True, min_size=1, max_size=2))
    return n, edges, stateful, http, targets


def _reachable(edges, start):
    seen, stack = set(), [start]
    while stack:
        for a, b in edges:
            if a == stack[-1] and b not in seen:
                seen.add(b)
                stack.append(b)
                break
        else:
            stack.pop()
    return seen


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(topologies(), st.randoms())
def test_plan_follows_kardinal_rules_and_is_deterministic(topo, rnd: random.Random):
    n, edges, stateful, http, targets = topo
    docs = _repo(n, edges, stateful, http)
    flow = build_flow("pr-1", {f"s{t}": "new" for t in targets}, [])
    model = build_model(docs)
    assert model.problems == []
    plan = make_plan(model, flow, "istio-like")[0]  # no routing expansion
    dev = {int(s[1:]) for s in plan.dev_services()}
    must = set(targets)
    for t in targets:
        for s in _reachable(edges, t) & stateful:
            must.add(s)
            if s not in http:
                must |= {a for a, b in edges if b == s}
    assert dev == must
    shuffled = list(docs)
    rnd.shuffle(shuffled)
    again = make_plan(build_model(shuffled), flow, "istio-like")[0]
    assert again.as_dict() == plan.as_dict()  # document order never changes the plan
    routed = make_plan(build_model(docs), flow, "none")[0]
    assert dev <= {int(s[1:]) for s in routed.dev_services()}


ENTRY = Document({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                  "metadata": {"name": "entry", "annotations": {"kardinal.dev.service/route": "true"}},
                  "spec": {"parentRefs": [{"name": "public"}], "hostnames": ["app.example.com"],
                           "rules": [{"backendRefs": [{"name": "s0", "port": 80}]}]}}, "entry.yaml", 0)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(topologies())
def test_on_a_mesh_the_routing_proof_holds_and_needs_no_more_copies_than_none(topo):
    """Every topology (HTTP and TCP services, stateful or not) behind an entry to s0: the routes each mesh mode
    renders pass the static proof, and a mesh flow never copies more than routing `none` would."""
    n, edges, stateful, http, targets = topo
    model = build_model([*_repo(n, edges, stateful, http), ENTRY])
    flow = build_flow("pr-1", {f"s{t}": "new" for t in targets}, [])
    none = set(make_plan(model, flow, "none")[0].dev_services())
    for routing in ("gateway-api", "istio"):
        plan = make_plan(model, flow, routing)[0]
        assert set(plan.dev_services()) <= none
        by_header = frozenset(k for k in plan.dev_services() if routed_by_header(model, k))
        dev = clone.make(model, plan, CopySettings(Lane(), 1, False), by_header)[0]
        entries = route_entries(model, dev, "pr-1", RouteSettings(routing, "example.com", "devlane-flow", None))[0]
        shared = mesh.virtual_services({"pr-1": entries.mesh}) if routing == "istio" else []
        objects = [*(s.obj for s in dev.services), *entries.objects, *shared]
        assert route_proof.prove(model, dev, objects, "pr-1").violations == []


# --- flow hosts -------------------------------------------------------------------------------


@given(flow_id, st.lists(label, min_size=1, max_size=5))
def test_flow_hosts_follow_kardinal(flow, labels):
    host = ".".join(labels)
    got = flow_host(host, flow, None)
    expected_domain = ".".join(labels[1:]) if len(labels) >= 3 else host
    assert got == f"{flow}.{expected_domain}"
    assert flow_host(f"*.{host}", flow, None) == f"{flow}.{host}"
    assert flow_host(host, flow, "preview.example.com") == f"{flow}.preview.example.com"
