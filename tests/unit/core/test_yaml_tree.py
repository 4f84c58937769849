"""Plain trees straight from libyaml's composer (`yamltree`, `yamlfast` off) against PyYAML's loader: for any
text, the same documents (types included: `True == 1` in Python, so values are compared with their types), the
same exactness flag and the same errors; on real files, it builds nearly every document itself."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import ROOT, SHARED, yaml_streams
from support.yaml_streams import corpus, node, pyyaml_outcome, stream

from renderer.core import yamlfast, yamlio, yamltree


def outcome(data: bytes) -> Any:
    """`yamlio.parse_stream` with `yamltree` in front of PyYAML's loader (`yamlfast` off)."""
    return yaml_streams.outcome(data, fast=False)


@settings(max_examples=80, deadline=None)
@given(st.lists(node, min_size=1, max_size=3))
@example([(("a", "1"), ("b", "yes"), ("a", "2"))])  # a repeated key: PyYAML's path, which refuses it
@example([(("a", "[1, 0x1F, .inf, ~, 'x']"), ("<<", "{k: v}"))])  # a merge
@example([(("a", "on"), ("b", "1_000"), ("c", "!!str 5"), ("d", "-1.5"))])  # YAML 1.1 scalars, built here
def test_any_document_is_built_as_pyyaml_builds_it(docs):
    text = stream(docs)
    assert outcome(text) == pyyaml_outcome(text), text.decode()


@settings(max_examples=120, deadline=None)
@given(st.text(st.sampled_from(list("ab:-[]{},&*!<=~ \n'\"01.")), max_size=60))
def test_any_text_is_built_as_pyyaml_builds_it(text):
    data = text.encode()
    assert outcome(data) == pyyaml_outcome(data), text


def test_a_manifest_is_built_without_pyyaml_s_constructor(monkeypatch):
    """The feature itself: a plain manifest never reaches PyYAML's loader (each scalar typed afresh: the memo of
    plain scalars may hold them from other tests; `yamlfast`, which reads them first, off)."""
    monkeypatch.setattr(yamlfast, "documents", lambda data: None)
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


@pytest.mark.e2e  # some 500 files, each parsed twice
def test_every_corpus_file_is_built_as_pyyaml_builds_it():
    files = corpus()
    if not any(SHARED in p.parents for p in files):
        pytest.skip("../shared is absent")
    differ = [str(p) for p in files if outcome(p.read_bytes()) != pyyaml_outcome(p.read_bytes())]
    assert differ == []
