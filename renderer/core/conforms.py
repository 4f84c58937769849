"""A quick yes for a document that is valid: the JSON Schema (draft 2020-12) keywords that devlane's own
schemas and plain plugin `argsSchema`s use, checked without importing `jsonschema`.

Importing `jsonschema` (with `referencing`, `attrs` and its format checkers) adds tens of milliseconds
to every start-up, and nearly every render validates a `.devlane.yaml`, a `plugin.yaml` or plugin args
that are fine. So `conforms` answers only "certainly valid"; for anything else (a violation, or a
keyword, `$ref` or value it does not know) the caller asks `jsonschema`, which names each violation.
A wrong yes would let a bad document through, so every keyword here is either checked exactly as
`jsonschema` checks it or makes the answer "not sure".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

# True: valid; False: invalid; None: not sure. Both answers must be exact, since `oneOf` and `if` turn a
# wrong "invalid" of one branch into a wrong "valid" of the whole.
Verdict = bool | None
_JSON = (dict, list, str, bool, int, float, type(None))  # what YAML and JSON documents hold
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples",
                          "deprecated", "readOnly", "writeOnly"})
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def conforms(instance: Any, schema: Any) -> bool:
    """True only when `instance` is certainly valid against `schema` (its `$ref`s resolved in `schema` itself)."""
    return verdict(instance, schema) is True


def verdict(instance: Any, schema: Any) -> Verdict:
    """Valid (True), invalid (False), or not sure (None): then only jsonschema can tell."""
    if not isinstance(schema, dict):
        return None
    try:
        return _check(instance, schema, schema)
    except Exception:  # a malformed schema or a surprise: jsonschema decides, and says what is wrong
        return None


def _all(verdicts: list[Verdict]) -> Verdict:
    """Every keyword of a schema applies: one certain failure fails it, else one doubt makes it a doubt."""
    return False if False in verdicts else (None if None in verdicts else True)


def _equal(a: Any, b: Any) -> Verdict:
    """JSON equality (`True` is not `1`, `1` is `1.0`) for scalars; containers are left to jsonschema."""
    if a is b:
        return True
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return None
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return None


@cache
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _check(value: Any, schema: Any, root: dict) -> Verdict:
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict) or ("$id" in schema and schema is not root):  # `$id`: refs move base
        return None
    # every keyword, as jsonschema does: one it cannot evaluate (a `$ref` to nothing) is an error there
    return _all([_KEYWORDS[key](value, arg, schema, root) if key in _KEYWORDS else None
                 for key, arg in schema.items()
                 if key not in _ANNOTATIONS and not key.startswith("x-")])  # `x-*`: extensions, ignored by both


def _type(value: Any, arg: Any, _schema: dict, _root: dict) -> Verdict:
    names = arg if isinstance(arg, list) else [arg]
    if not isinstance(value, _JSON) or not all(isinstance(n, str) and n in _TYPES for n in names):
        return None
    return any(_TYPES[n](value) for n in names)


def _properties(value: Any, arg: Any, _schema: dict, root: dict) -> Verdict:
    if not isinstance(value, dict):
        return True
    return _all([_check(value[k], sub, root) for k, sub in arg.items() if k in value])


def _additional(value: Any, arg: Any, schema: dict, root: dict) -> Verdict:
    if not isinstance(value, dict):
        return True
    if "patternProperties" in schema:
        return None
    known = schema.get("properties") or {}
    return _all([_check(v, arg, root) for k, v in value.items() if k not in known])


def _property_names(value: Any, arg: Any, _schema: dict, root: dict) -> Verdict:
    return _all([_check(k, arg, root) for k in value]) if isinstance(value, dict) else True


def _required(value: Any, arg: Any, _schema: dict, _root: dict) -> Verdict:
    return all(k in value for k in arg) if isinstance(value, dict) else True


def _items(value: Any, arg: Any, schema: dict, root: dict) -> Verdict:
    if not isinstance(value, list):
        return True
    if "prefixItems" in schema or isinstance(arg, list):
        return None
    return _all([_check(v, arg, root) for v in value])


def _unique(value: Any, arg: Any, _schema: dict, _root: dict) -> Verdict:
    if not arg or not isinstance(value, list):
        return True
    if not all(isinstance(v, str) for v in value):
        return None
    return len(set(value)) == len(value)


def _const(value: Any, arg: Any, _schema: dict, _root: dict) -> Verdict:
    return _equal(value, arg)


def _enum(value: Any, arg: Any, _schema: dict, _root: dict) -> Verdict:
    return _any([_equal(value, option) for option in arg])


def _any(verdicts: list[Verdict]) -> Verdict:
    return True if True in verdicts else (None if None in verdicts else False)


def _not(verdict: Verdict) -> Verdict:
    return None if verdict is None else not verdict


def _one_of(value: Any, arg: Any, _schema: dict, root: dict) -> Verdict:
    verdicts = [_check(value, sub, root) for sub in arg]
    return None if None in verdicts else verdicts.count(True) == 1


def _if(value: Any, arg: Any, schema: dict, root: dict) -> Verdict:
    verdict = _check(value, arg, root)
    if verdict is None:
        return None
    branch = schema.get("then" if verdict else "else", True)
    return _check(value, branch, root)


def _ref(value: Any, arg: Any, _schema: dict, root: dict) -> Verdict:
    if not isinstance(arg, str) or not arg.startswith("#/$defs/") or "~" in arg or "%" in arg:
        return None
    return _check(value, root["$defs"][arg[len("#/$defs/"):]], root)  # none there: jsonschema says so


def _string(test: Callable[[str, Any], bool]) -> Callable[[Any, Any, dict, dict], Verdict]:
    """A keyword that constrains strings only (others pass it)."""
    return lambda value, arg, _schema, _root: test(value, arg) if isinstance(value, str) else True


def _number(test: Callable[[float, Any], bool]) -> Callable[[Any, Any, dict, dict], Verdict]:
    """A keyword that constrains numbers only (others, booleans too, pass it)."""
    def check(value: Any, arg: Any, _schema: dict, _root: dict) -> Verdict:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return True
        return test(value, arg) if isinstance(arg, int | float) and not isinstance(arg, bool) else None
    return check


_KEYWORDS: dict[str, Callable[[Any, Any, dict, dict], Verdict]] = {
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "propertyNames": _property_names,
    "required": _required,
    "items": _items,
    "uniqueItems": _unique,
    "minItems": lambda v, n, _s, _r: len(v) >= n if isinstance(v, list) else True,
    "maxItems": lambda v, n, _s, _r: len(v) <= n if isinstance(v, list) else True,
    "const": _const,
    "enum": _enum,
    "oneOf": _one_of,
    "anyOf": lambda v, subs, _s, root: _any([_check(v, sub, root) for sub in subs]),
    "not": lambda v, sub, _s, root: _not(_check(v, sub, root)),
    "allOf": lambda v, subs, _s, root: _all([_check(v, sub, root) for sub in subs]),
    "if": _if,
    "then": lambda *_: True,  # applied by `if` (alone, they do nothing)
    "else": lambda *_: True,
    "$ref": _ref,
    "minLength": _string(lambda s, n: len(s) >= n),
    "maxLength": _string(lambda s, n: len(s) <= n),
    "pattern": _string(lambda s, p: _pattern(p).search(s) is not None),
    "minimum": _number(lambda x, n: x >= n),
    "maximum": _number(lambda x, n: x <= n),
    "exclusiveMinimum": _number(lambda x, n: x > n),
    "exclusiveMaximum": _number(lambda x, n: x < n),
}
