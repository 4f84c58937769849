"""`core.conforms`, the quick yes that spares most renders importing jsonschema: every answer it gives
(valid or invalid) is jsonschema's own, on devlane's schemas, the built-ins' `argsSchema`s and a schema of
the keywords whose semantics are easy to get wrong; documents it accepts produce no schema problem."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from support import EXAMPLE, ROOT, yamlc

from renderer.core.conforms import conforms, verdict
from renderer.core.schemas import schema_problems

SHIPPED = {p.name: json.loads(p.read_text()) for p in sorted((ROOT / "schemas").glob("*.json"))}
ARGS = {p.parent.name: yamlc.safe_load(p.read_text())["spec"]["argsSchema"]
        for p in sorted((ROOT / "plugins").glob("*/plugin.yaml")) if "argsSchema" in p.read_text()}
TRICKY: dict[str, Any] = {
    "$defs": {"port": {"type": "integer", "minimum": 1, "maximum": 65535}},
    "type": "object",
    "properties": {
        "flag": {"enum": [True, "yes", 1, None]},
        "one": {"oneOf": [{"type": "integer"}, {"type": "number", "exclusiveMinimum": 0}]},
        "port": {"$ref": "#/$defs/port"},
        "mode": {"const": 0},
        "names": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                  "uniqueItems": True, "minItems": 1},
    },
    "propertyNames": {"minLength": 2},
    "additionalProperties": {"type": ["string", "null"]},
    "if": {"required": ["mode"]}, "then": {"required": ["port"]}, "else": {"not": {"required": ["port"]}},
}
SCHEMAS = {**SHIPPED, **{f"argsSchema of {n}": s for n, s in ARGS.items()}, "tricky": TRICKY}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 70000), st.floats(allow_nan=False),
                    st.sampled_from([0.0, 1.0, 2.5, -1.0]), st.text(max_size=8),
                    st.sampled_from(["", "a", "yes", "pr-7", "none", "gateway-api", "istio", "suffix", "v1"]))
keys = st.one_of(st.text(max_size=6), st.sampled_from(["flag", "one", "port", "mode", "names", "kind", "spec",
                                                       "apiVersion", "metadata", "name", "routing", "x"]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner,
                                                                                                  max_size=5),
                           max_leaves=20)


def _corpus() -> list[tuple[str, Any]]:
    """(schema name, a document that should be valid) from the checkout: configs, Flow files, plugin.yaml."""
    out = []
    for path in sorted(ROOT.rglob(".devlane.yaml")):
        out.append(("devlane-config.schema.json", yamlc.safe_load(path.read_text())))
    for path in sorted((EXAMPLE / "flows").glob("*.yaml")):
        out.append(("flow.schema.json", yamlc.safe_load(path.read_text())))
    for path in sorted(ROOT.glob("plugins/*/plugin.yaml")):
        out.append(("plugin.schema.json", yamlc.safe_load(path.read_text())))
    for name in ARGS:  # the built-ins' golden cases
        for path in sorted((ROOT / "plugins" / name / "testdata").glob("*/args.yaml")):
            out.append((f"argsSchema of {name}", yamlc.safe_load(path.read_text())))
    return out


CORPUS = _corpus()


VALIDATORS = {id(s): Draft202012Validator(s) for s in [*SCHEMAS.values()]}


def _valid(instance: Any, schema: dict) -> bool:
    return not any(VALIDATORS[id(schema)].iter_errors(instance))


def _paths(doc: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*path, i))
    return out


def _replaced(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[head] = _replaced(doc[head], rest, value)
    return copy


def test_the_checkouts_documents_get_jsonschemas_answer_and_valid_ones_need_no_jsonschema():
    assert len(ARGS) >= 10 and len(CORPUS) >= 50
    for name, doc in CORPUS:
        valid = _valid(doc, SCHEMAS[name])
        assert valid or name.startswith("argsSchema"), name  # some golden cases are bad args on purpose
        assert verdict(doc, SCHEMAS[name]) is valid, f"{name}: {json.dumps(doc)[:200]}"
        assert conforms(doc, SCHEMAS[name]) is valid


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(SCHEMAS)), json_values)
def test_any_answer_is_jsonschemas(name, instance):
    got = verdict(instance, SCHEMAS[name])
    assert got is None or got == _valid(instance, SCHEMAS[name])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_changed_field_of_a_real_document_gets_jsonschemas_answer(data):
    name, doc = data.draw(st.sampled_from(CORPUS))
    path = data.draw(st.sampled_from(_paths(doc)))
    changed = _replaced(doc, path, data.draw(json_values))
    got = verdict(changed, SCHEMAS[name])
    assert got is None or got == _valid(changed, SCHEMAS[name])


@pytest.mark.parametrize(("instance", "expected"), [
    ({"flag": 1}, True), ({"flag": True}, True), ({"flag": False}, False), ({"flag": 1.0}, True),
    ({"one": 3}, False), ({"one": 2.5}, True), ({"one": -2.0}, True),  # 3 is an integer *and* a positive number
    ({"mode": 0, "port": 80}, True), ({"mode": 0.0, "port": 80.0}, True), ({"mode": False, "port": 80}, False),
    ({"mode": 0}, False), ({"mode": 0, "port": 0}, False), ({"port": 80}, False), ({"names": ["ab", "ab"]}, False),
    ({"names": ["ab", "ABC"]}, False), ({"names": ["abcdef"]}, False), ({"names": []}, False), ({"x": None}, False),
    ({"xy": None, "yz": "a"}, True), ({"xy": 1}, False),
])
def test_the_keywords_that_are_easy_to_get_wrong(instance, expected):
    assert _valid(instance, TRICKY) is expected
    assert verdict(instance, TRICKY) is expected


def test_what_it_does_not_know_goes_to_jsonschema():
    assert verdict("a", {"format": "email"}) is None
    assert verdict({"a": 1}, {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": False}) is None
    assert verdict("a", {"$ref": "#/$defs/missing"}) is None
    assert verdict("a", {"type": "strin"}) is None
    assert verdict(["a"], {"items": {"$id": "other", "type": "string"}}) is None


def test_a_valid_config_needs_no_jsonschema_and_a_bad_one_is_still_explained(monkeypatch):
    schema = "devlane-config.schema.json"
    good = next(doc for name, doc in CORPUS if name == schema)
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # importing it now fails
    assert schema_problems(good, schema, ".devlane.yaml") == []
    monkeypatch.undo()
    problems = schema_problems({**good, "routing": "carrier-pigeon"}, schema, ".devlane.yaml")
    assert [p.message for p in problems] == ["routing: 'carrier-pigeon' is not one of ['none', 'gateway-api', 'istio']"]
