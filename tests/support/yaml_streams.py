"""YAML streams for the parsers' differential tests (`yamltree`, `yamlfast` against PyYAML's loader): documents
drawn from plain scalars and the scalars, keys and collections that must take PyYAML's path, written in block style,
and a way to compare results with their types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from renderer.core import yamlfast, yamlio, yamltree
from renderer.errors import DevlaneError

from . import ROOT, SHARED


def typed(value: Any) -> Any:
    """`value` with every leaf's type beside it, keys in their order (equal only when both are identical)."""
    if isinstance(value, dict):
        return ("map", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(v) for v in value])
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(repr(v) for v in value))
    return (type(value).__name__, repr(value))


# What the fast paths build themselves, and what they must hand to PyYAML's (three of four draws are plain,
# so most documents are plain throughout and the repeated key "a" is often the only thing amiss).
PLAIN = ["a", "yes", "No", "on", "OFF", "true", "False", "~", "null", "", "0", "-1", "+12", "017", "0o17", "0x1F",
         "0b101", "1_000", "1:30", "190:20:30", "1.5", "-1_0.5", "1e3", "6.8523015e+5", ".inf", "-.Inf", ".NaN",
         "'quoted'", '"dq \\u00e9"', "!!str 5", "!!int '7'", "!!float 1", "!!bool 'yes'", "!!null ''", "|\n  text\n",
         ">-\n  folded\n", "[1, two]", "{k: v}", "[]", "{}", "!!seq []", "!!map {}"]
OTHER = ["2001-12-14", "2001-12-14t21:59:43.10-05:00", "!!int x", "!!bool maybe", "!!binary aGk=",
         "!!timestamp 2020-01-01", "!custom x", "=", "<<", "*a", "&a v", "&a {x: 1}", "!!set {a, b}", "!!omap [a: 1]",
         "!!pairs [a: 1]", "!!str [a]", "!!map x", "{a: 1, a: 2}"]
PLAIN_KEYS = ["a", "a", "b", "c", "'q'", '"a"', "!!str 3", "? a"]
OTHER_KEYS = ["1", "true", "null", "~", "=", "<<", "[k]", "{k: v}", "1.5", "*a", "&a a", "!!int 3"]

plain, other = st.sampled_from(PLAIN), st.sampled_from(OTHER)
scalar = st.one_of(plain, plain, plain, other)
key = st.one_of(*[st.sampled_from(PLAIN_KEYS)] * 3, st.sampled_from(OTHER_KEYS))


def block(value: Any, indent: int) -> str:
    pad = " " * indent
    if isinstance(value, list):
        if not value:
            return " []\n"
        return "\n" + "".join(f"{pad}-{block(v, indent + 2)}" for v in value)
    if isinstance(value, tuple):  # a mapping as (key, value) pairs: keys may repeat
        if not value:
            return " {}\n"
        return "\n" + "".join(f"{pad}{k}:{block(v, indent + 2)}" for k, v in value)
    text = value.replace("\n", "\n" + pad)
    return f" {text}\n"


node = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(st.tuples(key, inner), max_size=4).map(tuple),
    max_leaves=20,
)


def stream(docs: list[Any]) -> bytes:
    """Generated documents as one stream, each after a `---`."""
    return "".join(f"---{block(d, 2)}" for d in docs).encode()


def outcome(data: bytes, fast: bool = True, tree: bool = True) -> Any:
    """What `yamlio.parse_stream` makes of `data`, typed, or the error it raises; `fast`, `tree`: whether `yamlfast`
    and `yamltree` read what they can (off: they decline every stream, as before they existed)."""
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            patch.setattr(yamlfast, "documents", lambda data: None)
        if not tree:
            patch.setattr(yamltree, "documents", lambda data: None)
        try:
            docs, exact = yamlio.parse_stream(data, "t.yaml")
        except DevlaneError as exc:
            return ("error", str(exc))
        except Exception as exc:  # whatever PyYAML raises, every path must raise it alike
            return ("raised", type(exc).__name__, str(exc))
        return typed(docs), exact


def pyyaml_outcome(data: bytes) -> Any:
    """`outcome` through PyYAML's loader alone."""
    return outcome(data, fast=False, tree=False)


def corpus() -> list[Path]:
    """Every YAML file of the examples, the tests and ../shared."""
    roots = [ROOT / "examples", ROOT / "tests", SHARED]
    return sorted(p for r in roots if r.is_dir() for p in r.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
