"""Property tests (hypothesis) of `renderer.core`: dev names (`names.suffixed`), service references in env
values, command lines and ConfigMap files (`references.find_in_value` / `find_in_args` / `find_in_data` / `apply`)
and gitignore-like globs (`globs.compile_glob`, `globs.excluded`)."""

from __future__ import annotations

import re
import string
from itertools import pairwise

import pathspec
from hypothesis import given
from hypothesis import strategies as st

from renderer.core.globs import compile_glob, dir_excluded, excluded, matches
from renderer.core.names import suffixed
from renderer.core.references import Target, Targets, apply, find_in_args, find_in_data, find_in_value

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


@given(st.lists(st.text(string.ascii_lowercase, min_size=50, max_size=70), min_size=2, max_size=5, unique=True),
       flow_id)
def test_shortened_names_do_not_collide(bases, flow):
    assert len({suffixed(b, flow) for b in bases}) == len(bases)


# --- references -------------------------------------------------------------------------------

SERVICES = Targets(
    [Target("shop/orders", "orders", "shop", frozenset({"http"})), Target("shop/orders-db", "orders-db", "shop")]
)
NEW = {"shop/orders": "orders-pr-1", "shop/orders-db": "orders-db-pr-1"}
NAMES = ["orders", "orders-db"]
ref_forms = st.sampled_from(
    ["{s}", "{s}:8080", "{s}:http", "http://{s}:8080/api", "{s}.shop", "{s}.shop.svc.cluster.local:5432",
     "postgres://orders:orders@{s}:5432/orders", "{s}/path", "https://user@{s}.shop.svc/x?y=1", "1@{s}:9093",
     "jdbc:postgresql://{s}:5432/orders", "mongodb://u:p@{s}:27017,{s}:27018/orders", "amqp://orders@{s}"]
)  # fmt: skip
NOISE = ["orders-dbx", "xorders", "orders.example.com", "orders:orders", "/orders", "plain", "1.2.3.4", "orders:99999"]
noise = st.sampled_from(NOISE)
service = st.sampled_from(NAMES)
# Anything at all: the finders must never fail, and every span they return sits on a target's label.
anything = st.text(alphabet=st.sampled_from(list("orders-db:/@.,;= \n\"'-_x0123456789hsvcHOST${}#[]")), max_size=80)


def rewrite(text: str, refs) -> str:
    return apply(text, refs, NEW)


def assert_spans_on_labels(text: str, refs) -> None:
    assert all(text[r.start : r.end] == r.target.name for r in refs)
    assert all(a.end <= b.start for a, b in pairwise(refs))  # sorted, no overlap


@given(st.lists(st.one_of(st.tuples(ref_forms, service), noise), max_size=4), st.sampled_from([",", " ", ";"]))
def test_rewriting_a_value_moves_every_reference_and_nothing_else(parts, sep):
    value = sep.join(p[0].format(s=p[1]) if isinstance(p, tuple) else p for p in parts)
    refs = find_in_value(value, SERVICES, "UPSTREAM_HOSTS")
    assert_spans_on_labels(value, refs)
    out = rewrite(value, refs)
    assert find_in_value(out, SERVICES, "UPSTREAM_HOSTS") == []  # no reference to an old name is left
    assert rewrite(out, find_in_value(out, SERVICES, "UPSTREAM_HOSTS")) == out  # idempotent
    for original, new in zip(value.split(sep), out.split(sep), strict=True):
        if original in NOISE:
            assert new == original
        if "@" in original and "://" in original:
            assert new.split("@")[0] == original.split("@")[0]  # user info is never touched
        assert new.replace("-pr-1", "") == original  # only labels grew a suffix


@given(anything, st.sampled_from(["", "DB_HOST", "POSTGRES_DB", "JAVA_OPTS", "IMAGE", "ORDERS", "Host"]))
def test_any_value_is_read_without_failing_and_spans_sit_on_labels(value, key):
    refs = find_in_value(value, SERVICES, key)
    assert_spans_on_labels(value, refs)
    out = rewrite(value, refs)
    assert find_in_value(out, SERVICES, key) == []


@given(st.sampled_from(["POSTGRES_DB", "DB_NAME", "APP_NAME", "SERVICE_NAME", "KAFKA_TOPIC", "CACHE_DRIVER", ""]))
def test_bare_values_of_non_host_keys_are_not_references(key):
    assert find_in_value("orders", SERVICES, key) == []
    assert find_in_value("orders:8080", SERVICES, key) != []  # an explicit port is a host anyway


@given(st.sampled_from(["DB_PASSWORD", "POSTGRES_USER", "IMAGE", "SIDECAR_IMAGE", "API_TOKEN", "MESSAGE"]))
def test_credentials_images_and_messages_hold_no_reference(key):
    for value in ("orders", "orders:8080", "orders.shop.svc", "http://orders:8080"):
        assert find_in_value(value, SERVICES, key) == []


@given(st.sampled_from(["DB_HOST", "CARTSERVICEHOST", "ORDERS", "UPSTREAM", "API_URL", "redisHost", "Server"]))
def test_bare_values_of_host_like_keys_are_references(key):
    assert [r.target.name for r in find_in_value("orders", SERVICES, key)] == ["orders"]


# Command lines: (elements, whether the service in them is a reference)
arg_forms = st.sampled_from([
    (["--backend-url=http://{s}:9898"], True), (["--host", "{s}"], True), (["-h", "{s}"], True),
    (["--slaveof", "{s}", "6379"], True), (["nc", "-z", "{s}", "5672"], True),
    (["sh", "-c", "until nc -z {s} 5672; do sleep 1; done"], True), (["--db-host={s}"], True),
    (["--name", "{s}"], False), (["--user={s}"], False), (["--image", "{s}:7"], False),
    (["sh", "-c", "echo waiting for {s}:5432"], False), (["--topic", "{s}", "--partitions", "3"], False),
])  # fmt: skip


@given(st.lists(st.tuples(arg_forms, service), min_size=1, max_size=4))
def test_rewriting_args_moves_every_reference_and_nothing_else(forms):
    argv, expected = [], []
    for (elements, is_ref), s in forms:
        argv += [e.format(s=s) for e in elements]
        expected += [e.format(s=f"{s}-pr-1" if is_ref else s) for e in elements]
    refs = find_in_args(argv, SERVICES)
    for element, element_refs in zip(argv, refs, strict=True):
        assert_spans_on_labels(element, element_refs)
    out = [rewrite(a, r) for a, r in zip(argv, refs, strict=True)]
    assert out == expected
    assert find_in_args(out, SERVICES) == [[] for _ in out]  # idempotent: nothing left to rewrite


@given(st.lists(anything, max_size=5))
def test_any_command_line_is_read_without_failing(argv):
    refs = find_in_args(argv, SERVICES)
    assert len(refs) == len(argv)
    out = [rewrite(a, r) for a, r in zip(argv, refs, strict=True)]
    for element, element_refs in zip(argv, refs, strict=True):
        assert_spans_on_labels(element, element_refs)
    assert find_in_args(out, SERVICES) == [[] for _ in out]


# ConfigMap files: (line template per format, whether the service in it is a reference)
line_forms = st.sampled_from([
    ("host", "{s}", True), ("url", "http://{s}:8080/api", True), ("db.address", "{s}:5432", True),
    ("username", "{s}", False), ("name", "{s}", False), ("image", "{s}:7", False), ("path", "/var/lib/{s}", False),
    ("database", "{s}", False), ("message", "cannot reach {s}:5432", False),
])  # fmt: skip
file_formats = st.sampled_from([
    ("app.yaml", "{k}: {v}"), ("app.properties", "{k}={v}"), ("app.env", "{k}={v}"), ("app.ini", "{k} = {v}"),
    ("app.json", '"{k}": "{v}",'),
])  # fmt: skip


@given(file_formats, st.lists(st.tuples(line_forms, service), min_size=1, max_size=6))
def test_rewriting_a_config_file_moves_every_reference_and_nothing_else(fmt, lines):
    filename, template = fmt
    before, after = [], []
    for (k, v, is_ref), s in lines:
        before.append(template.format(k=k, v=v.format(s=s)))
        after.append(template.format(k=k, v=v.format(s=f"{s}-pr-1" if is_ref else s)))
    content, expected = "\n".join(before) + "\n", "\n".join(after) + "\n"
    if filename.endswith(".json"):
        content, expected = "{\n" + content + "}\n", "{\n" + expected + "}\n"
    refs = find_in_data(filename, content, SERVICES)
    assert_spans_on_labels(content, refs)
    out = rewrite(content, refs)
    assert out == expected
    assert find_in_data(filename, out, SERVICES) == []


@given(st.sampled_from(["app.yaml", "nginx.conf", "run.sh", "a.json", "notes.txt", "DB_HOST", "app.properties"]),
       st.lists(anything, max_size=6))  # fmt: skip
def test_any_file_is_read_without_failing(filename, lines):
    content = "\n".join(lines)
    refs = find_in_data(filename, content, SERVICES)
    assert_spans_on_labels(content, refs)
    assert find_in_data(filename, rewrite(content, refs), SERVICES) == []


# --- globs ------------------------------------------------------------------------------------


@given(st.lists(label, min_size=1, max_size=4))
def test_double_star_globs_match_any_depth(parts):
    path = "/".join(parts) + ".yaml"
    assert compile_glob("**/*.yaml").match(path)
    assert not compile_glob("**/*.yaml").match(path + ".bak")
    assert bool(compile_glob(f"{parts[0]}/**").match(path)) == (len(parts) > 1)
    assert matches(path, ["**/*.yaml"]) and not matches(path + ".bak", ("**/*.yaml",))


_word = st.sampled_from(["a", "b", "x.yaml", "rendered", ".devlane.yaml", "*", "**", "*.yaml", "?.yaml", "a*", "."])
ignore_line = st.builds(lambda neg, lead, words, slash: ("!" if neg else "") + lead + "/".join(words) + slash,
                        st.booleans(), st.sampled_from(["", "/", "./", "**/"]), st.lists(_word, min_size=1, max_size=3),
                        st.sampled_from(["", "/", "/**"]))
plain_path = st.lists(st.sampled_from(["a", "b", "x.yaml", "rendered", ".devlane.yaml", "c.yaml", "ab"]),
                      min_size=1, max_size=4).map("/".join)


@given(st.lists(ignore_line, max_size=5), plain_path)
def test_exclude_lines_read_as_pathspec_reads_them(lines, path):
    """The joined regex (no negation) and pathspec (with one) decide as pathspec's GitIgnoreSpec does, line by line."""
    spec = pathspec.GitIgnoreSpec.from_lines("/" + p[2:] if p.startswith("./") else p for p in lines)
    assert excluded(path, lines) == bool(lines and spec.match_file(path))
    assert dir_excluded(path, lines) == bool(lines and spec.match_file(path + "/"))
