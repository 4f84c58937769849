"""The YAML bounds (`renderer.core.yamlbounds`) and the strict loader (`renderer.core.yamlio`): the pre-scan's
bound on nesting holds for any text libyaml reads (so no document deeper than the limit reaches the C
composer unchecked), errors name the line, and duplicate keys, merges and aliases behave."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.core import yamlbounds
from renderer.core.yamlbounds import MAX_DEPTH, MAX_NODES
from renderer.core.yamlio import parse_documents
from renderer.errors import DevlaneError

TOKENS = [" ", "  ", "    ", "- ", "-", "? ", ": ", ":", "[", "]", "{", "}", ", ", "a", "b: ", "k: ", "\n", "\r",
          "\r\n", "\n---\n", "---", "\n...\n", "# c", "'", '"', "&x ", "*x", "!!str ", "|\n", ">-\n", "\t",
          "\ufeff", "\u0085", "\u2028", "<<: "]


def _depth_reached(data: bytes) -> int:
    """The deepest nesting libyaml's parser reaches in `data` before its first error (if any)."""
    depth = deepest = 0
    try:
        for event in yaml.parse(data, Loader=yaml.CSafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                deepest = max(deepest, depth)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        pass
    return deepest


def _bound(data: bytes) -> int:
    """The module's bound, computed the long way: two levels per column of the longest line prefix of
    spaces and indicators, two per bracket of the document with the most."""
    text = (b"\n" + data).translate(yamlbounds._PREFIXES)
    prefix = max(len(m.group(1)) for m in re.finditer(rb"\n( *)", text))
    brackets = max(doc.count(b"[") + doc.count(b"{") for doc in yamlbounds._DOCUMENT_START.split(data))
    return 2 * prefix + 2 + 2 * brackets


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=80).map("".join))
def test_the_prescan_bound_holds_for_any_text(text):
    data = text.encode()
    assert _depth_reached(data) <= _bound(data)


@pytest.mark.parametrize("text", [
    "x: " + "[" * 300 + "]" * 300,  # flow
    "".join(" " * i + "- \n" for i in range(300)),  # block, one column per level
    "- " * 300 + "x",  # compact sequences on one line
    "".join(" " * i + f"k{i}:\n" for i in range(300)),  # block mappings
    "\ufeff" + "- " * 300,  # behind a byte order mark
    "".join(" " * i + "- \r" for i in range(300)),  # old Mac line breaks
])
def test_documents_deeper_than_the_limit_are_refused_with_their_line(text):
    with pytest.raises(DevlaneError, match=f"deeper than {MAX_DEPTH} levels") as err:
        parse_documents(text.encode(), "deep.yaml")
    assert err.value.problems[0].where.file == "deep.yaml" and err.value.problems[0].where.line


def test_the_limit_itself_parses():
    data = ("x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)).encode()
    assert parse_documents(data, "ok.yaml")


def test_too_many_nodes_are_refused(monkeypatch):
    monkeypatch.setattr(yamlbounds, "MAX_NODES", 1000)
    monkeypatch.setattr(yamlbounds, "_MAX_FAST_BYTES", 100)
    with pytest.raises(DevlaneError, match="more than 1,000 nodes"):
        parse_documents(("x: [" + "1, " * 2000 + "]").encode(), "big.yaml")


def test_duplicate_keys_name_both_lines():
    with pytest.raises(DevlaneError) as err:
        parse_documents(b"a: 1\nb:\n  c: 1\n  c: 2\n", "dup.yaml")
    problem = err.value.problems[0]
    assert (problem.where.file, problem.where.line) == ("dup.yaml", 4)
    assert "duplicate key 'c'" in problem.message and "line 3" in problem.message


def test_duplicate_keys_are_refused_in_plain_text_mode_too():
    with pytest.raises(DevlaneError, match="duplicate key 'name'"):
        parse_documents(b"- name: a\n  name: b\n", "annotation", plain=True)


def test_merge_keys_merge_once_without_recursion():
    chain = "".join(f"a{i}: &a{i} {{<<: *a{i - 1}, k{i}: {i}}}\n" for i in range(1, 400)).replace("{<<: *a0, ", "{")
    doc = parse_documents(chain.encode(), "merge.yaml")[0]
    assert doc["a399"]["k1"] == 1 and len(doc["a399"]) == 399
    first_wins = parse_documents(b"a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc: {<<: [*a, *b], y: 3}\n", "m.yaml")[0]
    assert first_wins["c"] == {"x": 1, "y": 3}


@pytest.mark.parametrize(("text", "message"), [
    ("a: &a {<<: *a}\n", "merges a mapping into itself"),
    ("a: &a [*a]\n", "contains it"),
    ("\ufeff&a [x, *a]\n", "contains it"),  # an anchor right behind a byte order mark
    ("a: &a {x: *a}\n", "contains it"),
    ("a: {<<: 1}\n", "takes a mapping"),
    ("? [1]\n: 2\n", "cannot be a key"),
])
def test_recursive_and_malformed_aliases_and_merges_are_refused(text, message):
    with pytest.raises(DevlaneError, match=message):
        parse_documents(text.encode(), "x.yaml")


def test_alias_expansion_is_bounded_in_nodes_and_depth():
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdef", "bcdefg", strict=True):
        bomb.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 10)}]")
    with pytest.raises(DevlaneError, match=f"past {MAX_NODES:,} nodes"):
        parse_documents("\n".join(bomb).encode(), "bomb.yaml")
    chain = ["a0: &a0 [x]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, MAX_DEPTH + 5)]
    with pytest.raises(DevlaneError, match="aliases nest the document deeper"):
        parse_documents("\n".join(chain).encode(), "chain.yaml")


def test_utf16_with_a_byte_order_mark_is_read():
    assert parse_documents("a: [1, 2]\n".encode("utf-16"), "u.yaml") == [{"a": [1, 2]}]
