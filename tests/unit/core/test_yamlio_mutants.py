"""What the YAML loader and emitter (`renderer/core/yamlio.py`) must do beyond `test_yamlio_guards.py` (issue 41,
surviving mutants): refusals worded exactly and naming their line, merges whose anchored mappings are nested deeper
than their use (so the explicit stack, not the document order, flattens them), PyYAML's `deep` contract, literal
blocks only where libyaml can write them, no folding below a megabyte line, the direct layout's fallbacks (non-JSON
values, -0.0, keys past 128 characters) and its memos (each scalar's text asked of PyYAML once, within a bound).
"""

from __future__ import annotations

import re

import pytest
from unit.core.test_yamlio_guards import refused

from renderer.core import yamlio
from renderer.core.yamlio import dump, parse_documents
from renderer.errors import DevlaneError

MEGA = 1_000_000  # the emitter's line width


# -- refusals: exact words, the line they name -------------------------------------------------------------------


@pytest.mark.parametrize(("text", "message", "line"), [
    ("ok: 1\nb: !!map [x]\n", "invalid YAML: expected a mapping node, but found sequence", 2),
    ("ok: 1\n? [1]\n: 2\n", "a mapping key is a list or mapping, which cannot be a key", 2),
    ("ok: 1\na: {<<: 1}\n", "a merge key (<<) takes a mapping or a list of mappings", 2),
    ("ok: 1\na: &a {x: 1, <<: *a}\n", "a merge key (<<) merges a mapping into itself", 2),
    ("a: 1\na: 2\n", "duplicate key 'a' in a mapping (first on line 1)", 2),
])  # fmt: skip
def test_a_refusal_says_exactly_what_is_wrong_and_where(text, message, line):
    problem = refused(text, re.escape(message)).problems[0]
    assert (problem.message, problem.where.line) == (message, line)


def test_a_repeated_key_s_hint_is_the_fix():
    hint = refused("a: 1\na: 2\n", "duplicate key").problems[0].hint
    assert hint == "remove one of them: kubectl refuses duplicate keys too"


# -- merges flattened before the document reaches their anchors -----------------------------------------------------


def test_merges_of_mappings_nested_deeper_than_their_use_are_flattened():
    """`r` is built before `z`, `q` and `s` (PyYAML builds nested mappings later): `_flatten` meets them all at once,
    `z` twice (under `s` and under `q`)."""
    text = b"deep: {x: {z: &z {k: 1}, q: &q {<<: *z, j: 2}, s: &s {<<: [*z, *q], m: 3}}}\nr: {<<: *s, n: 4}\n"
    assert parse_documents(text, "f.yaml")[0]["r"] == {"k": 1, "j": 2, "m": 3, "n": 4}


@pytest.mark.parametrize(("text", "match"), [
    ("a: &a {x: 1, b: &b {<<: [*a]}, <<: [*b]}\n", "merges a mapping into itself"),  # a cycle through lists
    ("d: {q: &q {<<: 1}}\nr: {<<: *q}\n", r"a merge key \(<<\) takes a mapping"),  # met first inside a merge
    ("d: {q: &q {<<: [x]}}\nr: {<<: *q}\n", r"a merge key \(<<\) takes a mapping"),
])  # fmt: skip
def test_a_bad_merge_met_inside_another_merge_is_refused(text, match):
    refused(text, match)


# -- PyYAML's `deep` contract ---------------------------------------------------------------------------------------


def constructed(text: bytes, deep: bool):
    loader = yamlio._Loader(text)
    loader.file, loader._flat = "f.yaml", {}
    try:
        return loader.construct_mapping(loader.get_single_node(), deep=deep)
    finally:
        loader.dispose()


def test_a_deep_construction_builds_the_whole_mapping_now():
    """PyYAML's constructors call `construct_mapping(node, deep=True)` for a mapping they need complete at once."""
    assert constructed(b"a: {b: [1]}\n", deep=True) == {"a": {"b": [1]}}
    assert constructed(b"a: {b: [1]}\n", deep=False) == {"a": {}}  # filled later, by the document's generators
    with pytest.raises(DevlaneError, match="duplicate key 'a'"):  # the key is built (and checked) before it is used
        constructed(b"? {a: 1, a: 2}\n: x\n", deep=True)


# -- the emitter ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "text"), [
    ("x\ny\n", "k: |\n  x\n  y\n"),
    (" a\nb\n", "k: |2\n   a\n  b\n"),  # leading blanks are not trailing ones
    ("aX\nb\n", "k: |\n  aX\n  b\n"),
    ("a\xa0\nb\n", "k: |\n  a\xa0\n  b\n"),  # only blanks and tabs keep a line from a literal block
    ("a\nb ", "k: 'a\n\n  b '\n"),  # a trailing blank: libyaml refuses the literal block, the quoting rule decides
])  # fmt: skip
def test_multi_line_text_is_a_literal_block_unless_a_line_ends_in_a_blank(value, text):
    assert dump({"k": value}) == text


@pytest.mark.parametrize(("obj", "text"), [
    ({"a": "word " * 30 + "x"}, "a: " + "word " * 30 + "x\n"),
    ({"a": "x" * (MEGA - 3) + " y"}, "a: " + "x" * (MEGA - 3) + " y\n"),  # the space at column 1,000,000
    ({"a": "x" * (MEGA - 2) + " y"}, "a: " + "x" * (MEGA - 2) + "\n  y\n"),  # past it: folded
    ({"o": {"a": "x" * (MEGA - 2) + " y"}}, "o:\n  a: " + "x" * (MEGA - 2) + "\n    y\n"),  # PyYAML's indentation
])  # fmt: skip
def test_a_line_is_folded_only_past_a_million_columns(obj, text):
    assert dump(obj) == text


@pytest.mark.parametrize(("obj", "text"), [
    ({"a": {1, 2}}, "a: !!set\n  1: null\n  2: null\n"),
    ({"a": [{1, 2}]}, "a:\n- !!set\n  1: null\n  2: null\n"),
    ({"a": 0.0, "b": -0.0, "c": [-0.0, 0.0]}, "a: 0.0\nb: -0.0\nc:\n- -0.0\n- 0.0\n"),  # equal, each written as it is
    ({"k" * 128: 1}, "k" * 128 + ": 1\n"),
    ({"k" * 129: 1}, "? " + "k" * 129 + "\n: 1\n"),  # past 128 characters a key is no simple key
])  # fmt: skip
def test_what_the_direct_layout_does_not_write_is_written_by_pyyaml(obj, text):
    assert dump(obj) == text


@pytest.fixture
def fresh_memos(monkeypatch):
    memos = {name: {} for name in ("_STRS", "_VALUES", "_KEYS")}
    for name, memo in memos.items():
        monkeypatch.setattr(yamlio, name, memo)
    calls: list = []
    pyyaml_dump = yamlio._pyyaml_dump
    monkeypatch.setattr(yamlio, "_pyyaml_dump", lambda obj: calls.append(obj) or pyyaml_dump(obj))
    return memos, calls


def test_each_scalar_s_text_is_asked_of_pyyaml_once(fresh_memos):
    """The direct layout exists because PyYAML's representer is slow: it asks PyYAML for each distinct scalar or
    key it cannot write itself once, never for the whole object, and remembers each text under its own scalar."""
    memos, calls = fresh_memos
    obj = {"a b": "c d", "list": [1, "x y", "plain", {"m": 2.5}], "p": "word"}
    text = "a b: c d\nlist:\n- 1\n- x y\n- plain\n- m: 2.5\np: word\n"
    assert dump(obj) == text
    assert calls == [{"a b": 0}, {"k": "c d"}, {"k": 1}, {"k": "x y"}, {"k": 2.5}]
    assert memos == {
        "_STRS": {"c d": "c d", "x y": "x y", "plain": "plain", "word": "word"},
        "_VALUES": {(int, 1): "1", (float, "2.5"): "2.5"},
        "_KEYS": {"a b": "a b", "list": "list", "m": "m", "p": "p"},
    }
    calls.clear()
    assert dump(obj) == text and calls == []


def test_the_memos_stay_within_their_bound(fresh_memos, monkeypatch):
    memos, _ = fresh_memos
    monkeypatch.setattr(yamlio, "_MEMO_LIMIT", 2)
    assert dump({f"k{i}": [f"v{i}", i] for i in range(5)}) == "".join(f"k{i}:\n- v{i}\n- {i}\n" for i in range(5))
    assert [len(memo) for memo in memos.values()] == [2, 2, 2]
