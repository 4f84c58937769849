"""Property tests (hypothesis) of `renderer.render`: the dependency parser (model), label isolation of dev
copies (clone), template substitution (flow), the planner (Kardinal's rules, determinism) and flow hosts
(routing)."""

from __future__ import annotations

import random
import re

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


def _repo(n: int, edges: list[tuple[int, int]], stateful: set[int], http: set[int],
          shared: frozenset[int] = frozenset()) -> list[Document]:
    docs: list[Document] = []
    for i in range(n):
        name = f"s{i}"
        deps = ",".join(f"s{j}:p" for a, j in edges if a == i)
        ann = {"kardinal.dev.service/dependencies": deps} if deps else {}
        if i in stateful:
            ann["kardinal.dev.service/stateful"] = "true"
        if i in shared:
            ann["kardinal.dev.service/shared"] = "true"
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
def topologies(draw, cyclic: bool = False):
    """A call graph of 2 to 9 services: without cycles (a -> b only for a < b), or with any edges (cycles,
    self-loops, nested and overlapping cycles)."""
    n = draw(st.integers(2, 9))
    pairs = [(a, b) for a in range(n) for b in range(n) if (a != b or cyclic) and (a < b or cyclic)]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=14 if not cyclic else 18))
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


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
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
    assert dev == _own_stores(must, edges, stateful)
    shuffled = list(docs)
    rnd.shuffle(shuffled)
    again = make_plan(build_model(shuffled), flow, "istio-like")[0]
    assert again.as_dict() == plan.as_dict()  # document order never changes the plan
    routed = make_plan(build_model(docs), flow, "none")[0]
    assert dev <= {int(s[1:]) for s in routed.dev_services()}


def _own_stores(dev: set[int], edges, stateful) -> set[int]:
    """Issue 44: every dev copy gets its own stores: the stateful services a dev node depends on are dev, and
    theirs in turn."""
    out, grow = set(dev), sorted(dev)
    while grow:
        node = grow.pop()
        for b in sorted({b for a, b in edges if a == node and b in stateful} - out):
            out.add(b)
            grow.append(b)
    return out


def _component(edges, node) -> set[int]:
    """The members of `node`'s cycle, from reachability alone: those it reaches that reach it back."""
    return {m for m in _reachable(edges, node) if node in _reachable(edges, m)}


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(topologies(cyclic=True), st.randoms())
def test_cyclic_graphs_plan_by_component(topo, rnd: random.Random):
    """Any call graph plans (no cycle is refused without a shared member), deterministically. On a mesh: Kardinal's
    rules, plus each caller of a TCP dev member inside its cycle (the lane's requests come back to the member
    through it, and no header routes TCP). With routing none, every member of a cycle with a dev member is dev."""
    n, edges, stateful, http, targets = topo
    docs = _repo(n, edges, stateful, http)
    flow = build_flow("pr-1", {f"s{t}": "new" for t in targets}, [])
    plan, problems = make_plan(build_model(docs), flow, "istio-like")
    assert [p for p in problems if p.severity == "error"] == []
    must = set(targets)
    for t in targets:
        for s in (_reachable(edges, t) - {t}) & stateful:
            must.add(s)
            if s not in http:
                must |= {a for a, b in edges if b == s}
    grow = [m for m in sorted(must) if m not in http]
    while grow:
        s = grow.pop()
        for a in sorted({a for a, b in edges if b == s and a in _component(edges, s)} - must):
            must.add(a)
            if a not in http:
                grow.append(a)
    must = _own_stores(must, edges, stateful)
    assert {int(s[1:]) for s in plan.dev_services()} == must
    for s in plan.dev_services():  # the plan says why: a cycle member's reasons name its cycle
        if _component(edges, int(s[1:])):
            assert any(r.startswith("in cycle ") for r in plan.decisions[s].reasons), plan.decisions[s]
    shuffled = list(docs)
    rnd.shuffle(shuffled)
    assert make_plan(build_model(shuffled), flow, "istio-like")[0].as_dict() == plan.as_dict()
    none = {int(s[1:]) for s in make_plan(build_model(docs), flow, "none")[0].dev_services()}
    assert must <= none
    for m in none:
        assert _component(edges, m) <= none


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(topologies(cyclic=True), st.sets(st.integers(0, 8), max_size=3), st.sampled_from(["none", "istio"]))
def test_a_cycle_is_refused_only_where_a_shared_member_calls_a_dev_one_no_header_routes(topo, shared, routing):
    """The one ambiguous case, computed from the plan's versions: a shared copy serves every flow, so its call to a
    dev member of its cycle that no header routes leaves the lane. The error names that edge; nothing else fails."""
    n, edges, stateful, http, targets = topo
    plan, problems = make_plan(build_model(_repo(n, edges, stateful, http, frozenset(shared))),
                               build_flow("pr-1", {f"s{t}": "new" for t in targets}, []), routing)
    version = {k: d.version for k, d in plan.decisions.items()}
    ambiguous = {(a, b) for a, b in edges if a != b and version[f"s{a}"] == "shared" and version[f"s{b}"] == "dev"
                 and a in _component(edges, b) and (routing == "none" or b not in http)}
    errors = [p for p in problems if p.severity == "error"]
    assert {p.code for p in errors} <= {"ambiguous-cycle"}
    assert {m for p in errors for m in re.findall(r"its call (s\d+) -> (s\d+)", p.message)} == \
        {(f"s{a}", f"s{b}") for a, b in ambiguous}


ENTRY = Document({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                  "metadata": {"name": "entry", "annotations": {"kardinal.dev.service/route": "true"}},
                  "spec": {"parentRefs": [{"name": "public"}], "hostnames": ["app.example.com"],
                           "rules": [{"backendRefs": [{"name": "s0", "port": 80}]}]}}, "entry.yaml", 0)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(topologies(), topologies(cyclic=True)))
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
