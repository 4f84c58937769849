"""`jsonio.dumps_pretty` is `json.dumps(value, indent=2, sort_keys=True)` byte for byte (a flow's metadata is
written with it): on any JSON-like value, on tuples, floats and unicode, and, through json itself, on what it
does not lay out (non-string keys, NaN, unknown types, cycles: the same text or the same error)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.core.jsonio import dumps_compact, dumps_pretty

scalars = st.one_of(st.text(max_size=8), st.integers(), st.booleans(), st.none(), st.floats(),
                    st.sampled_from(["é", "\u2028", "\x00", '"q"', "\\", "日本", "\ud800", -0.0, 1e300, 2**70]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                      max_leaves=30)


@given(values)
def test_it_is_json_dumps_with_indent_and_sorted_keys(value):
    assert dumps_pretty(value) == json.dumps(value, indent=2, sort_keys=True)


@pytest.mark.parametrize("value", [{}, [], {"b": {}, "a": []}, {1: "x"}, {"n": float("nan")},
                                   [float("-inf")], {"x": True}, [1.5, 0, False]])
def test_edge_values_match(value):
    assert dumps_pretty(value) == json.dumps(value, indent=2, sort_keys=True)


def test_what_json_refuses_is_refused_alike():
    loop: list = []
    loop.append(loop)
    for bad in ({"s": {1, 2}}, {"a": 1, 2: "b"}, {None: 1, "a": 2}, loop):
        with pytest.raises((TypeError, ValueError)) as ours:
            dumps_pretty(bad)
        with pytest.raises(type(ours.value)):
            json.dumps(bad, indent=2, sort_keys=True)


@given(values)
def test_compact_is_json_dumps_with_compact_separators(value):
    assert dumps_compact(value) == json.dumps(value, separators=(",", ":"))


def test_what_compact_refuses_is_a_type_or_value_error():
    loop: list = []
    loop.append(loop)
    for bad in ({"s": {1, 2}}, loop, [b"bytes"]):
        with pytest.raises((TypeError, ValueError)):
            dumps_compact(bad)
