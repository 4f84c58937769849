"""Plain trees straight from libyaml's composer (`yamltree`) against PyYAML's loader: for any text, the same
documents (types included: `True == 1` in Python, so values are compared with their types), the same
exactness flag and the same errors; on real files, it builds nearly every document itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import ROOT, SHARED

from renderer.core import yamlio, yamltree
from renderer.errors import DevlaneError


def typed(value: Any) -> Any:
    """`value` with every leaf's type beside it, keys in their order (equal only when both are identical)."""
    if isinstance(value, dict):
        return ("map", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(v) for v in value])
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(repr(v) for v in value))
    return (type(value).__name__, repr(value))


def outcome(data: bytes) -> Any:
    try:
        docs, exact = yamlio.parse_stream(data, "t.yaml")
    except DevlaneError as exc:
        return ("error", str(exc))
    except Exception as exc:  # whatever PyYAML raises, both paths must raise it alike
        return ("raised", type(exc).__name__, str(exc))
    return typed(docs), exact


def pyyaml_outcome(data: bytes) -> Any:
    """`outcome` with `yamltree` declining every stream, as before it existed."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(yamltree, "documents", lambda data: None)
        return outcome(data)


# What `yamltree` builds itself, and what it must hand to PyYAML's (three of four draws are plain,
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


@settings(max_examples=80, deadline=None)
@given(st.lists(node, min_size=1, max_size=3))
@example([(("a", "1"), ("b", "yes"), ("a", "2"))])  # a repeated key: PyYAML's path, which refuses it
@example([(("a", "[1, 0x1F, .inf, ~, 'x']"), ("<<", "{k: v}"))])  # a merge
@example([(("a", "on"), ("b", "1_000"), ("c", "!!str 5"), ("d", "-1.5"))])  # YAML 1.1 scalars, built here
def test_any_document_is_built_as_pyyaml_builds_it(docs):
    text = "".join(f"---{block(d, 2)}" for d in docs).encode()
    assert outcome(text) == pyyaml_outcome(text), text.decode()


@settings(max_examples=120, deadline=None)
@given(st.text(st.sampled_from(list("ab:-[]{},&*!<=~ \n'\"01.")), max_size=60))
def test_any_text_is_built_as_pyyaml_builds_it(text):
    data = text.encode()
    assert outcome(data) == pyyaml_outcome(data), text


def test_a_manifest_is_built_without_pyyaml_s_constructor(monkeypatch):
    """The feature itself: a plain manifest never reaches PyYAML's loader (each scalar typed afresh: the memo of
    plain scalars may hold them from other tests)."""
    monkeypatch.setattr(yamltree, "_known", {})
    calls: list[str] = []
    original = yamlio._Loader.get_data

    def spy(self):
        calls.append(self.file)
        return original(self)

    monkeypatch.setattr(yamlio._Loader, "get_data", spy)
    manifest = sorted((ROOT / "examples" / "bookshop").rglob("*.yaml"))
    assert manifest
    for path in manifest:
        yamlio.parse_stream(path.read_bytes(), str(path))
    assert calls == []
    yamlio.parse_stream(b"a: &x {b: 1}\nc: *x\n", "t.yaml")  # an anchor: PyYAML's path, which shares the object
    assert calls


def _corpus() -> list[Path]:
    roots = [ROOT / "examples", ROOT / "tests", SHARED]
    return sorted(p for r in roots if r.is_dir() for p in r.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


@pytest.mark.e2e  # some 500 files, each parsed twice
def test_every_corpus_file_is_built_as_pyyaml_builds_it():
    files = _corpus()
    if not any(SHARED in p.parents for p in files):
        pytest.skip("../shared is absent")
    differ = [str(p) for p in files if outcome(p.read_bytes()) != pyyaml_outcome(p.read_bytes())]
    assert differ == []
