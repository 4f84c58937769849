"""One duration grammar (issue 44, point 8): Go's `time.ParseDuration`, plus `d`, read by `--ttl`,
`lifecycle.ttl`, `status --timeout`, `render --timeout`/`--plugin-timeout` and the CMP's ARGOCD_EXEC_TIMEOUT.
Against Go's own parser: tests/e2e/test_go_grammars.py."""

from __future__ import annotations

import argparse
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.cli.common import seconds
from renderer.cli.live import parse_duration as status_timeout
from renderer.core import durations
from renderer.errors import DevlaneError, UsageError
from renderer.render.settings.lifecycle import parse_duration as ttl
from renderer.views.cmp import go_duration

S = durations.SECOND
UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": S, "m": 60 * S, "h": 3600 * S,
         "d": 86400 * S}


@pytest.mark.parametrize(("text", "nanoseconds"), [
    ("0", 0), ("-0", 0), ("+0", 0), ("90s", 90 * S), ("1h30m", 5400 * S), ("1.5h", 5400 * S), ("500ms", S // 2),
    (".5s", S // 2), ("1.s", S), ("2m0.5s", 120 * S + S // 2), ("-1.5h", -5400 * S), ("1h1h", 7200 * S),
    ("7d", 7 * 86400 * S), ("1µs", 1000), ("1μs", 1000), ("1us", 1000), ("1ns", 1), ("0.0000000001s", 0),
    ("1.0000000019s", S + 1), (" 5m ", 300 * S), ("9223372036854775807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)), ("2562047h47m16.854775807s", (1 << 63) - 1),
])
def test_go_durations_and_days(text, nanoseconds):
    assert durations.parse(text) == nanoseconds


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"), ("-", "no number after the sign"), ("300", "a number without a unit: '300'"),
    ("1m30", "a number without a unit: '30'"), (".s", "'.s' where a number was expected"),
    ("1e3s", "unknown unit 'e'"), ("5 m", "unknown unit ' m'"), ("1h-5m", "unknown unit 'h-'"),
    ("1d", None), ("5x", "unknown unit 'x'"), ("s", "'s' where a number was expected"),
    ("9223372036854775808ns", "out of range"), ("2562048h", "out of range"), ("\u0661s", "where a number was expected"),
])
def test_what_go_refuses_is_refused_with_the_reason(text, why):
    if why is None:  # `d` is devlane's one extension: refused where Go's own grammar is asked for (@every)
        assert durations.parse(text) == 86400 * S
        with pytest.raises(durations.DurationError, match="unknown unit 'd'"):
            durations.parse(text, days=False)
        return
    with pytest.raises(durations.DurationError, match=why.replace(".", r"\.").replace("(", r"\(")):
        durations.parse(text)


@given(st.lists(st.tuples(st.integers(0, 10**4), st.integers(0, 999), st.sampled_from(sorted(UNITS))), min_size=1,
                max_size=5), st.sampled_from(["", "+", "-"]))
def test_a_duration_is_the_sum_of_its_parts(parts, sign):
    text = sign + "".join(f"{whole}.{fraction:03d}{unit}" for whole, fraction, unit in parts)
    total = sum(whole * UNITS[unit] + fraction * UNITS[unit] // 1000 for whole, fraction, unit in parts)
    assert durations.parse(text) == (-total if sign == "-" else total)


@given(st.text(max_size=16))
def test_any_text_is_a_duration_or_a_reason(text):
    try:
        value = durations.parse(text)
    except durations.DurationError as exc:
        assert str(exc)
    else:
        assert -(1 << 63) <= value < 1 << 63


def test_every_reader_takes_the_same_grammar_within_its_own_bounds():
    for text in ("90s", "1h30m", "1.5m", "500ms"):
        value = durations.parse(text)
        assert ttl(text) == timedelta(microseconds=value // 1000)
        assert seconds(text) == status_timeout(text) == go_duration(text) == value / S
    assert ttl("7d") == timedelta(days=7) and seconds("7d") == 7 * 86400  # days, everywhere
    assert seconds("300") == status_timeout("300") == 300  # a bare number is seconds on the command line only
    with pytest.raises(UsageError, match="--ttl '300' is not a duration"):
        ttl("300")
    with pytest.raises(DevlaneError, match="ARGOCD_EXEC_TIMEOUT='300' is not a duration"):
        go_duration("300")
    for nonpositive in ("0", "-5s"):
        with pytest.raises(UsageError, match="not positive"):
            ttl(nonpositive)
        with pytest.raises(argparse.ArgumentTypeError, match="not positive"):
            seconds(nonpositive)
    with pytest.raises(UsageError, match="negative"):
        status_timeout("-5s")
    assert status_timeout("0") == 0  # `status --timeout 0`: look once


@pytest.mark.parametrize("flag", ["--timeout", "--plugin-timeout"])
@pytest.mark.parametrize(("value", "said"), [("nan", "'nan' is not a positive duration"),
                                             ("inf", "'inf' is not a positive duration"),
                                             ("1e400", "'1e400' is not a positive duration"),
                                             ("-5", "'-5' is not a positive duration")])
def test_a_render_budget_that_is_no_duration_is_a_usage_error_not_a_crash(capsys, flag, value, said):
    """`render --timeout nan` once ended in "internal error: ValueError", `1e400` in an OverflowError."""
    from renderer.cli import main
    with pytest.raises(SystemExit) as stop:
        main(["render", "/nonexistent", "--flow", "pr-1", "--service", "a=a:1", f"{flag}={value}"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: {said}" in err and "internal error" not in err
