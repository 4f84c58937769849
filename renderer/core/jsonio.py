"""`json.dumps(value, indent=2, sort_keys=True)`, byte for byte, without the standard library's pure-Python
encoder: with `indent` set, `json` gives up its C encoder and walks the value through chained generators,
and a flow's metadata lists every service of the repository (0.8 MB at 5,000 services, a tenth of a warm
render). Strings still go through the C escaper; anything this writer does not know (a non-string key, a
type JSON needs `default` for, a cycle) goes to `json.dumps` whole, so the result or the error is its own.
"""

from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

_INDENT = "  "


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The C encoder, made once: `json.dumps` builds an encoder and its C half on every call, which costs more than
# encoding the small values the stored model writes (some fifteen thousand at 5,000 services). No markers: the
# values are trees (a cycle ends in RecursionError, as deep nesting does).
_C_COMPACT = c_make_encoder(None, _not_json, encode_basestring_ascii, None, ":", ",", False, False, True) \
    if c_make_encoder is not None else None
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def dumps_compact(value: Any) -> str:
    """Exactly `json.dumps(value, separators=(",", ":"))`; what it refuses (a set, a cycle, nesting too deep)
    raises TypeError or ValueError."""
    try:
        if _C_COMPACT is None:  # pragma: no cover - an interpreter without json's C accelerator
            return _COMPACT.encode(value)
        return "".join(_C_COMPACT(value, 0))
    except RecursionError:
        raise ValueError("a cycle, or nesting too deep for JSON") from None


class _Unusual(Exception):
    """A value outside this writer's exact subset."""


def dumps_pretty(value: Any) -> str:
    """Exactly `json.dumps(value, indent=2, sort_keys=True)`."""
    out: list[str] = []
    try:
        _write(value, out, "\n")
    except (_Unusual, RecursionError):
        return json.dumps(value, indent=2, sort_keys=True)
    return "".join(out)


def _write(value: Any, out: list[str], newline: str) -> None:
    kind = type(value)
    if kind is str:
        out.append(encode_basestring_ascii(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        for key in value:
            if type(key) is not str:
                raise _Unusual
        inner = newline + _INDENT
        opener = "{" + inner
        for key in sorted(value):
            out.append(opener + encode_basestring_ascii(key) + ": ")
            _write(value[key], out, inner)
            opener = "," + inner
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            out.append("[]")
            return
        inner = newline + _INDENT
        opener = "[" + inner
        for item in value:
            out.append(opener)
            _write(item, out, inner)
            opener = "," + inner
        out.append(newline + "]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float and value == value and value not in (float("inf"), float("-inf")):
        out.append(float.__repr__(value))
    else:  # NaN and the infinities, subclasses, anything `default` would be asked about
        raise _Unusual
