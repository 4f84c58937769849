"""Durations in Go's grammar (`time.ParseDuration`), the one devlane reads everywhere: `--ttl`, `lifecycle.ttl`,
`status --timeout` and the CMP's `ARGOCD_EXEC_TIMEOUT`.

Why Go's: Argo CD, Flux and kubectl write and read durations with it (`90s`, `1h30m`, `1.5h`, `500ms`), so a value
that works in an Application or a Kustomization works here too, and one devlane accepts works there. One extension:
`d` (24 hours), for lane lifetimes (`7d`); Go has no unit longer than an hour. Values are exact integers of
nanoseconds, bounded as Go bounds them (an int64), so two spellings of one duration compare equal.
"""

from __future__ import annotations

from datetime import timedelta

NANOSECOND = 1
MICROSECOND = 1_000
SECOND = 1_000_000_000
HOUR = 3600 * SECOND
UNITS = {"ns": NANOSECOND, "us": MICROSECOND, "\u00b5s": MICROSECOND, "\u03bcs": MICROSECOND,
         "ms": 1_000_000, "s": SECOND, "m": 60 * SECOND, "h": HOUR, "d": 24 * HOUR}
MAX = (1 << 63) - 1  # Go's time.Duration is an int64 of nanoseconds
EXAMPLES = "90s, 30m, 1h30m, 1.5h, 7d"


_LIMIT = 1 << 63  # Go's bound while it sums (a negative duration may reach it)


class DurationError(ValueError):
    """Why a text is not a duration (a noun phrase: callers say `X is not a duration (WHY)`)."""


def parse(text: str, days: bool = True) -> int:
    """Nanoseconds in `text`: an optional sign, then one or more decimal numbers each with a unit (ns, us, µs, ms, s,
    m, h, and d unless not `days`: Go's own grammar); `0` alone is zero. Raises DurationError where Go's
    `time.ParseDuration` fails (and on `d`, where `days` allows it)."""
    s = str(text).strip()
    negative = s[:1] == "-"
    if s[:1] in ("-", "+"):
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError("empty" if not str(text).strip() else "no number after the sign")
    total, i = 0, 0
    while i < len(s):
        start = i
        while i < len(s) and "0" <= s[i] <= "9":
            i += 1
        whole = s[start:i]
        fraction = ""
        if i < len(s) and s[i] == ".":
            i += 1
            begin = i
            while i < len(s) and "0" <= s[i] <= "9":
                i += 1
            fraction = s[begin:i]
        if not whole and not fraction:
            raise DurationError(f"{s[start:start + 10]!r} where a number was expected")
        begin = i
        while i < len(s) and s[i] != "." and not "0" <= s[i] <= "9":
            i += 1
        unit = s[begin:i]
        if not unit:
            raise DurationError(f"a number without a unit: {s[start:i]!r}")
        if unit not in UNITS or (unit == "d" and not days):
            raise DurationError(f"unknown unit {unit!r}; the units are ns, us, ms, s, m, h" + (", d" if days else ""))
        scale = UNITS[unit]
        value = int(whole or 0)
        if value > _LIMIT // scale:
            raise _out_of_range()
        value *= scale
        if fraction:
            value += _fraction(fraction, scale)  # float arithmetic, as Go's: the same nanosecond in every case
        total += value
        if value > _LIMIT or total > _LIMIT:
            raise _out_of_range()
    if not negative and total > MAX:
        raise _out_of_range()
    return -total if negative else total


def _out_of_range() -> DurationError:
    return DurationError("out of range: at most about 106,751 days")


def _fraction(digits: str, unit: int) -> int:
    """Go's `leadingFraction` and its use: the digits as an integer until it would overflow, then ignored, scaled by
    a float64, truncated."""
    number, scale = 0, 1.0
    for c in digits:
        if number > MAX // 10:
            break
        grown = number * 10 + ord(c) - 48
        if grown > _LIMIT:
            break
        number, scale = grown, scale * 10
    return int(float(number) * (float(unit) / scale))


def parse_positive(text: str) -> int:
    """`parse`, refusing zero and negative durations (a lifetime, a timeout)."""
    value = parse(text)
    if value <= 0:
        raise DurationError("not positive")
    return value


def as_timedelta(nanoseconds: int) -> timedelta:
    """The duration as a timedelta (microseconds: what a timedelta holds; the rest is dropped, as RFC 3339 times
    written by devlane are whole seconds anyway)."""
    return timedelta(microseconds=nanoseconds // MICROSECOND)


def parse_seconds(text: str) -> int:
    """`parse`, also taking a bare number as seconds (`300`, `2.5`): what devlane's timeout flags always took, and
    what `kubectl --request-timeout` takes for zero. Nanoseconds."""
    s = str(text).strip()
    if s and all("0" <= c <= "9" or c == "." for c in s) and s.count(".") <= 1 and s != ".":
        return parse(s + "s")
    return parse(s)


def parse_positive_seconds(text: str) -> int:
    """`parse_seconds`, refusing zero and negative durations."""
    value = parse_seconds(text)
    if value <= 0:
        raise DurationError("not positive")
    return value
