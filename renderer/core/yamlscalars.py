"""Which strings some YAML reader would read as something else if they were written plain.

devlane's YAML is read by PyYAML (YAML 1.1), by YAML 1.2 core-schema readers, and above all by Go: kubectl, the
API machinery and Argo CD read files with go-yaml v2 through sigs.k8s.io/yaml, and kustomize (kyaml) and Flux
with go-yaml v3. Their implicit types differ. go-yaml reads `y` as true (v2), reads `0o17` as 15 and `0x_1F` as 31
through Go's strconv once it has dropped every `_`, and reads `09` as the float 9; YAML 1.2 reads `5e12345` as a
float. So a string may be written plain only when none of them types it. `retyped` holds for exactly the union
of their implicit resolvers: PyYAML's own resolver, the YAML 1.2 core schema, and go-yaml's `resolve()` (v2.4.4
and v3.0.4, which differ only in v3 dropping v2's y/yes/on... words and adding a `0o` branch), ported below. The
emitters (`yamlio.dump`, and `SafeDumper` for `init`'s edits and devlane.lock) single-quote every string it holds
for, as PyYAML quotes the strings its own resolver types.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

import yaml
from yaml.nodes import ScalarNode

_STR = "tag:yaml.org,2002:str"
_PYYAML = yaml.resolver.Resolver()
# PyYAML looks a plain scalar's resolvers up by its first character: these are the characters it has any for.
_PYYAML_FIRST = frozenset(k for k in yaml.resolver.Resolver.yaml_implicit_resolvers if k)

# Every word some reader types: go-yaml v2's resolve map (v3's is a subset: no y/n/yes/no/on/off), which also holds
# PyYAML's booleans and nulls and YAML 1.2 core's words, and the empty scalar (null everywhere).
WORDS = frozenset({
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
    "on", "On", "ON", "off", "Off", "OFF", "", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN",
    ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<",
})
# go-yaml's resolveTable: after a sign, a digit or a dot it tries numbers and timestamps; after anything else it
# only looks the word up. YAML 1.2 core's numbers start with these too.
_NUMERIC = frozenset("+-.0123456789")
# The YAML 1.2 core schema's ints and floats (its words are in WORDS). `5e12345` is a float there, out of range.
_CORE_12 = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                      r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
# go-yaml's yamlStyleFloat, which guards strconv.ParseFloat after a sign or digit.
_GO_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
# What strconv.ParseFloat accepts of a scalar that starts with a dot (go-yaml hands it over as it is, `_` and
# all): digits, `_` only between two digits, an optional exponent.
_GO_DOT_FLOAT = re.compile(r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?")
# The layouts go-yaml's parseTimestamp tries with time.Parse: "2006-1-2T15:4:5.999999999Z07:00" (T or t),
# "2006-1-2 15:4:5.999999999" (a layout's space matches one or more) and "2006-1-2"; time.Parse takes a comma for
# the fraction's dot too. The ranges are checked in `_go_timestamp`.
_GO_TIME = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
                      r"(?:[Tt]([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[.,][0-9]+)?(?:Z|[-+]([0-9]{2}):([0-9]{2}))"
                      r"| +([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[.,][0-9]+)?)?")
_DIGITS = {2: frozenset("01"), 8: frozenset("01234567"), 10: frozenset("0123456789"),
           16: frozenset("0123456789abcdefABCDEF")}
_PREFIX = {"b": 2, "B": 2, "o": 8, "O": 8, "x": 16, "X": 16}
_U64 = 1 << 64


def retyped(text: str) -> bool:
    """Whether PyYAML, a YAML 1.2 core reader, go-yaml v2 or v3 could read `text`, written as a plain scalar, as
    anything but this string: a number, a boolean, null, a timestamp, a merge key (`<<`) or a value key (`=`)."""
    return _beyond_pyyaml(text) or (text[0] in _PYYAML_FIRST and _pyyaml_types(text))


def _beyond_pyyaml_uncached(text: str) -> bool:
    """`retyped`, short of asking PyYAML's own resolver: its emitter quotes what that types by itself (in the style
    `quote_style` would give), so the representers ask only this."""
    if text in WORDS:
        return True
    return text[0] in _NUMERIC and (_CORE_12.fullmatch(text) is not None or _go_types(text))


# cached without a decorator, since mutation testing (mutmut) leaves decorated functions unmutated
_beyond_pyyaml = lru_cache(maxsize=1 << 16)(_beyond_pyyaml_uncached)


def _pyyaml_types(text: str) -> bool:
    return _PYYAML.resolve(ScalarNode, text, (True, False)) != _STR


def _go_types(text: str) -> bool:
    """go-yaml's resolve() of a plain scalar starting with a sign, a digit or a dot gives anything but `!!str`."""
    if text[0] == ".":
        return _GO_DOT_FLOAT.fullmatch(text) is not None and _finite(text.replace("_", ""))
    if _go_timestamp(text):
        return True
    plain = text.replace("_", "")
    if _go_int(plain, 0):
        return True
    if _GO_FLOAT.fullmatch(plain) and _finite(plain):
        return True
    for prefix, base in (("0b", 2), ("0o", 8)):  # strconv with an explicit base takes a sign: `0b-1` is -1
        if plain.startswith(prefix) and _go_int(plain[2:], base):
            return True
        if plain.startswith("-" + prefix) and _go_int("-" + plain[3:], base):
            return True
    return False


def _finite(number: str) -> bool:
    """strconv.ParseFloat does not fail with ErrRange (both round correctly; an underflow is 0, no error)."""
    return not math.isinf(float(number))


def _go_int(text: str, base: int) -> bool:
    """strconv.ParseInt(text, base, 64) or strconv.ParseUint(text, base, 64) succeeds (`text` has no `_`)."""
    sign = text[0] if text[:1] in ("+", "-") else ""
    value = _go_uint(text[len(sign):], base)
    if value is None:
        return False
    return value <= 1 << 63 if sign == "-" else value < (1 << 63 if sign == "+" else _U64)


def _go_uint(text: str, base: int) -> int | None:
    """strconv.ParseUint's digits without its range check: base 0 reads a 0b/0o/0x prefix, or a leading 0 as
    octal (`0` alone is zero); no sign."""
    if not text:
        return None
    if base == 0:
        base = 10
        if text[0] == "0":
            if len(text) >= 3 and text[1] in _PREFIX:
                base, text = _PREFIX[text[1]], text[2:]
            else:
                base, text = 8, text[1:]
                if not text:
                    return 0
    if not _DIGITS[base].issuperset(text):
        return None
    if base == 10 and len(text) > 20:  # past 2**64, and past what int() parses in decimal without a limit
        return _U64
    return int(text, base)


def _go_timestamp(text: str) -> bool:
    """go-yaml's parseTimestamp: one of its layouts matches and time.Parse's ranges hold."""
    match = _GO_TIME.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(g) for g in match.group(1, 2, 3))
    hms = match.group(4, 5, 6) if match.group(4) is not None else match.group(9, 10, 11)
    hour, minute, second = (int(g) if g is not None else 0 for g in hms)
    zone_hour, zone_minute = (int(g) if g is not None else 0 for g in match.group(7, 8))
    return (1 <= month <= 12 and 1 <= day <= _days_in(month, year) and hour < 24 and minute < 60 and second < 60
            and zone_hour <= 24 and zone_minute <= 60)


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def quote_style(value: str) -> str | None:
    """The style a representer gives `value`: single quotes when some reader would retype it plain (the emitter
    falls back to double quotes where single ones cannot carry it), else the emitter's own choice (which quotes
    what PyYAML's resolver types, the same way)."""
    return "'" if _beyond_pyyaml(value) else None


class SafeDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting every string `retyped` holds for (`init`'s new scalars)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar(_STR, value, style=quote_style(value))


SafeDumper.add_representer(str, _represent_str)
