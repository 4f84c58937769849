"""`yamlio.dump` writes PyYAML's block layout directly (PyYAML's representer costs about 0.5 ms an object, and a
wide flow dumps 10,000): its text must be exactly what PyYAML writes, for any JSON-like object, and objects it
does not lay out itself (multi-line strings, odd keys, other types) must still come out as PyYAML writes them."""

from __future__ import annotations

import yaml
from hypothesis import given
from hypothesis import strategies as st

from renderer.core import yamlio
from renderer.core.yamlio import canonical, dump


def pyyaml(obj: object) -> str:
    """The reference: PyYAML itself, with the options devlane's output uses."""
    if isinstance(obj, dict):
        obj = canonical(obj)
    return yaml.dump(obj, Dumper=yamlio._Dumper_, sort_keys=False, default_flow_style=False, allow_unicode=True,
                     width=1_000_000, indent=2)


# Strings YAML treats specially: indicators, implicit types (of PyYAML, YAML 1.2 and go-yaml: `yamlscalars`), spaces,
# quotes, unicode, control characters.
TRICKY = ["", " ", "a b", " lead", "trail ", "x: y", "x:y", "#c", "a #c", "a# c", "- d", "-d", "-", "?", "? x", ":",
          "8080", "0x1F", "1e3", "1_000", ".5", "+1", "-0", "true", "False", "yes", "NO", "on", "~", "null", "Null",
          "2024-01-02", "2024-01-02T03:04:05Z", "<<", "=", "'q'", '"d"', "it's", "{a}", "[b]", "a,b", "*x", "&y",
          "!t", "|", ">", "%p", "@at", "`bt", "---", "...", "--- x", "é", "日本", "\t", "a\tb", "\x00", "\x7f",
          "\u2028x", "line\nbreak", "line\n", "trailing \nspace", "\r", "ok", "postgres://u:p@db:5432/x", "${VAR}",
          "a" * 200, "y", "n", "Yes", "ON", "a:b", "a:", "a::b", "a:b:c", "http://x", "a=b", "a@b", "a+b", "A_1.2-3",
          "k" * 129, "ß", "a.b/c", "0o17", "-.5", "5e12345", "09", "1__0", "2024-1-2", "0b-1", ".inf", "Y", "N"]
scalars = st.one_of(st.sampled_from(TRICKY), st.text(max_size=12), st.integers(), st.booleans(), st.none(),
                    st.floats(allow_nan=False), st.sampled_from([0.0, -0.0, 1, 1.0, True, 0, False]))
keys = st.one_of(st.sampled_from(TRICKY), st.text(max_size=10))
objects = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(keys, inner, max_size=4)), max_leaves=25)


@given(st.dictionaries(keys, objects, max_size=6))
def test_the_direct_layout_is_pyyamls(obj):
    assert dump(obj) == pyyaml(obj)


@given(objects)
def test_any_value_dumps_as_pyyaml_does(obj):
    assert dump(obj) == pyyaml(obj)


def test_a_kubernetes_object_is_laid_out_directly_and_exactly():
    deployment = {"metadata": {"name": "orders", "labels": {"app": "orders"}, "annotations": {}},
                  "kind": "Deployment", "apiVersion": "apps/v1",
                  "spec": {"replicas": 1, "template": {"spec": {"containers": [
                      {"name": "app", "image": "ghcr.io/acme/orders:1", "args": ["--port", "8080"],
                       "env": [{"name": "DB", "value": "postgres://app@db:5432/app"}, {"name": "N", "value": "8080"}],
                       "ports": [{"containerPort": 8080}], "resources": {}}], "volumes": []}}}}
    text = dump(deployment)
    assert text == pyyaml(deployment)
    assert text.startswith("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: orders\n")
    assert "      - name: app\n        image: ghcr.io/acme/orders:1\n        args:\n        - --port\n" in text
    assert "value: '8080'" in text and "annotations: {}" in text and "volumes: []" in text


def test_the_direct_layout_is_used(monkeypatch):
    """Without it every object would go through PyYAML; the direct path must not call it for plain objects."""
    calls = []
    real = yamlio._pyyaml_dump
    monkeypatch.setattr(yamlio, "_pyyaml_dump", lambda obj: calls.append(obj) or real(obj))
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unique-name-for-this-test-4711"},
           "data": {"k": "v", "port": "9999-unique"}}
    assert dump(obj) == real(obj)
    assert calls and all(len(c) == 1 for c in calls)  # one scalar or key at a time, never the whole object
    calls.clear()
    assert dump(obj) == real(obj)
    assert calls == []  # each distinct scalar's text is taken from PyYAML once
