"""Property tests (hypothesis) of `renderer.core`: dev names (`names.suffixed`), service references in env
values (`references.find_references` / `rewrite`) and gitignore-like globs (`globs.compile_glob`)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from renderer.core.globs import compile_glob, matches
from renderer.core.names import suffixed
from renderer.core.references import Target, find_references, rewrite

label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?", fullmatch=True)
flow_id = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?", fullmatch=True)


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


# --- globs ------------------------------------------------------------------------------------


@given(st.lists(label, min_size=1, max_size=4))
def test_double_star_globs_match_any_depth(parts):
    path = "/".join(parts) + ".yaml"
    assert compile_glob("**/*.yaml").match(path)
    assert not compile_glob("**/*.yaml").match(path + ".bak")
    assert bool(compile_glob(f"{parts[0]}/**").match(path)) == (len(parts) > 1)
    assert matches(path, ["**/*.yaml"]) and not matches(path + ".bak", ("**/*.yaml",))
