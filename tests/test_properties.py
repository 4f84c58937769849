"""Property tests (hypothesis) for the parsers, names, reference rewriting and the planner."""

from __future__ import annotations

import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from renderer.clone import isolate_labels
from renderer.errors import Diagnostics
from renderer.flow import build_flow, substitute
from renderer.load import Document, compile_glob
from renderer.model import build_model, parse_dependency_item
from renderer.names import suffixed
from renderer.plan import make_plan
from renderer.references import Target, find_references, rewrite

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


# --- names ------------------------------------------------------------------------------------


@given(st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,120}[a-z0-9])?", fullmatch=True), flow_id)
def test_dev_names_fit_63_and_keep_the_flow_suffix(base, flow):
    name = suffixed(base, flow)
    assert (len(name) <= 63 and name.endswith(f"-{flow}")) or name == flow
    assert re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", name)
    if len(base) + len(flow) + 1 <= 63:
        assert name == f"{base}-{flow}"
    assert suffixed(base, flow) == name  # deterministic


@given(st.lists(st.from_regex(r"[a-z]{50,70}", fullmatch=True), min_size=2, max_size=5, unique=True), flow_id)
def test_shortened_names_do_not_collide(bases, flow):
    assert len({suffixed(b, flow) for b in bases}) == len(bases)


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


# --- references -------------------------------------------------------------------------------

SERVICES = {"orders": Target("shop", frozenset({"http"})), "orders-db": Target("shop", frozenset({"tcp"}))}
NEW = {"orders": "orders-pr-1", "orders-db": "orders-db-pr-1"}
ref_forms = st.sampled_from(
    ["{s}", "{s}:8080", "{s}:http", "http://{s}:8080/api", "{s}.shop", "{s}.shop.svc.cluster.local:5432",
     "postgres://orders:orders@{s}:5432/orders", "{s}/path", "https://user@{s}.shop.svc/x?y=1"]
)  # fmt: skip
noise = st.sampled_from(["orders-dbx", "xorders", "orders.example.com", "orders:orders", "/orders", "plain", "1.2.3.4"])


@given(st.lists(st.one_of(st.tuples(ref_forms, st.sampled_from(sorted(SERVICES))), noise), max_size=4),
       st.sampled_from([",", " ", ";"]))  # fmt: skip
def test_rewrite_moves_every_reference_and_nothing_else(parts, sep):
    value = sep.join(p[0].format(s=p[1]) if isinstance(p, tuple) else p for p in parts)
    out = rewrite("UPSTREAM_HOSTS", value, SERVICES, NEW)
    assert find_references("UPSTREAM_HOSTS", out, SERVICES) == []
    assert rewrite("UPSTREAM_HOSTS", out, SERVICES, NEW) == out  # idempotent
    for original, new in zip(value.split(sep), out.split(sep), strict=True):
        if original in ("orders-dbx", "xorders", "orders.example.com", "orders:orders", "/orders", "plain"):
            assert new == original
        if "@" in original:
            assert new.split("@")[0] == original.split("@")[0]  # user info is never touched


@given(st.sampled_from(["POSTGRES_DB", "DB_NAME", "APP_USER", "SERVICE_NAME", "KAFKA_TOPIC"]))
def test_bare_values_of_non_host_variables_are_not_references(name):
    assert find_references(name, "orders", SERVICES) == []
    assert find_references(name, "orders:8080", SERVICES) != []  # an explicit port is a host anyway


@given(st.sampled_from(["DB_HOST", "CARTSERVICEHOST", "REDIS", "ORDERS", "UPSTREAM", "API_URL"]))
def test_bare_values_of_host_like_variables_are_references(name):
    assert [r.service for r in find_references(name, "orders", SERVICES)] == ["orders"]


# --- templates --------------------------------------------------------------------------------


@given(st.text(alphabet=st.characters(blacklist_characters="$"), max_size=40))
def test_substitute_leaves_text_without_placeholders_alone(text):
    assert substitute(text, {"a": "b"}) == text


@given(st.from_regex(r"\w{1,8}", fullmatch=True), st.text(alphabet="xyz0-", max_size=6), st.text("abc", max_size=5))
def test_substitute_uses_args_then_defaults_then_empty(var, default, value):
    assert substitute(f"<${{{var}:-{default}}}>", {var: value}) == f"<{value}>"
    assert substitute(f"<${{{var}:-{default}}}>", {}) == f"<{default}>"
    assert substitute(f"<${{{var}}}>", {}) == "<>"


# --- globs ------------------------------------------------------------------------------------


@given(st.lists(label, min_size=1, max_size=4))
def test_double_star_globs_match_any_depth(parts):
    path = "/".join(parts) + ".yaml"
    assert compile_glob("**/*.yaml").match(path)
    assert not compile_glob("**/*.yaml").match(path + ".bak")
    assert bool(compile_glob(f"{parts[0]}/**").match(path)) == (len(parts) > 1)


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
    plan = make_plan(build_model(docs), flow, "istio-like", Diagnostics())  # no routing expansion
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
    again = make_plan(build_model(shuffled), flow, "istio-like", Diagnostics())
    assert again.as_dict() == plan.as_dict()  # document order never changes the plan
    routed = make_plan(build_model(docs), flow, "none", Diagnostics())
    assert dev <= {int(s[1:]) for s in routed.dev_services()}


@given(flow_id, st.lists(label, min_size=1, max_size=5))
def test_flow_hosts_follow_kardinal(flow, labels):
    from renderer.routing import flow_host

    host = ".".join(labels)
    got = flow_host(host, flow, None)
    expected_domain = ".".join(labels[1:]) if len(labels) >= 3 else host
    assert got == f"{flow}.{expected_domain}"
    assert flow_host(f"*.{host}", flow, None) == f"{flow}.{host}"
    assert flow_host(host, flow, "preview.example.com") == f"{flow}.preview.example.com"
