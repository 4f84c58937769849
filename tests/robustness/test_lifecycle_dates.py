"""gc and lifecycle dates (issue 40, point 7): no date ends in an internal error.

- The flags: `--now`, `--created` and `--ttl` that are malformed or out of range (a time that falls before year 1 or
  after 9999 once in UTC, an expiry past 9999, a ttl longer than Go's durations hold, about 106,751 days) are
  usage errors, exit 2, naming the flag.
- `.devlane.yaml`'s `lifecycle.ttl` that overflows from the commit's time is a config error, exit 1, naming the
  file and the key.
- A lane whose `lifecycle.expires` is malformed or out of range is kept and named (its flow.metadata file), and gc
  goes on with the others and fails at the end (exit 1), as kubectl goes on past one object it cannot act on.

The parsers are property-tested in-process over the whole datetime range with every offset; the commands run
through the CLI (in-process for the many examples, real processes where the exit code is the point).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import Harness, app_yaml

from renderer.errors import DevlaneError, UsageError
from renderer.render.output.lifecycle import expiry
from renderer.render.settings.lifecycle import LAST, LifecycleSettings, parse_duration, parse_time, rfc3339

OFFSETS = st.integers(-(24 * 60 - 1), 24 * 60 - 1)  # minutes: every offset an RFC 3339 time can carry
TIMES = st.datetimes(min_value=datetime.min, max_value=datetime.max)  # naive: a wall-clock time, any year
TTLS = st.one_of(*(st.integers(1, most).map(lambda n, unit=unit: f"{n}{unit}")  # up to Go's int64 nanoseconds
                   for unit, most in (("m", 153_722_867), ("h", 2_562_047), ("d", 106_751))))
UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def spelled(wall: datetime, minutes: int) -> str:
    """`wall` with the offset `minutes` east of UTC, as RFC 3339 writes it (`Z` for zero)."""
    sign, whole = "+-"[minutes < 0], abs(minutes)
    zone = "Z" if minutes == 0 else f"{sign}{whole // 60:02d}:{whole % 60:02d}"
    return wall.replace(microsecond=0).isoformat() + zone


def in_utc(wall: datetime, minutes: int) -> datetime | None:
    """The instant `wall` at offset `minutes` names, in UTC; None when that is outside years 1 to 9999."""
    lowest, highest = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
    naive = wall.replace(microsecond=0)
    # compare before adding, so the oracle never overflows the way the code under test must not
    if minutes > 0 and naive - datetime.min < timedelta(minutes=minutes):
        return None
    if minutes < 0 and datetime.max - naive < timedelta(minutes=-minutes):
        return None
    value = (naive - timedelta(minutes=minutes)).replace(tzinfo=UTC)
    return value if lowest <= value <= highest else None


# --------------------------------------------------------------------------------------------------
# the parsers, in-process


@given(wall=TIMES, minutes=OFFSETS)
def test_any_time_at_any_offset_is_that_instant_in_utc_or_out_of_range(wall, minutes):
    text = spelled(wall, minutes)
    want = in_utc(wall, minutes)
    if want is None:
        with pytest.raises(UsageError, match=r"^--now .* is out of range"):
            parse_time(text, "--now")
    else:
        got = parse_time(text, "--now")
        assert got == want and got.tzinfo == UTC
        assert parse_time(rfc3339(got), "--now") == got  # what devlane writes, it reads back (four-digit years)


@given(text=st.text(max_size=40))
def test_any_text_is_a_time_or_a_usage_error_naming_the_flag(text):
    try:
        value = parse_time(text, "--created")
    except UsageError as exc:
        assert exc.problems[0].message.startswith("--created ")
    else:
        assert value.tzinfo == UTC


@given(text=st.one_of(st.text(max_size=12), TTLS, st.integers(0, 10**12).map(lambda n: f"{n}d")))
def test_any_ttl_text_is_a_duration_or_a_usage_error_naming_the_flag(text):
    try:
        value = parse_duration(text, "--ttl")
    except UsageError as exc:
        assert exc.problems[0].message.startswith("--ttl ") and "is not a duration (" in exc.problems[0].message
    else:
        assert timedelta(0) <= value <= timedelta(days=106_752)


@given(wall=TIMES, ttl=TTLS)
def test_created_plus_any_ttl_is_an_expiry_or_a_usage_error_naming_both_flags(wall, ttl):
    created = wall.replace(microsecond=0, tzinfo=UTC)
    try:
        life = LifecycleSettings(ttl, created, ttl_given=True)
    except UsageError as exc:
        message = exc.problems[0].message
        assert f"--created {rfc3339(created)} plus --ttl {ttl} is after 9999-12-31T23:59:59Z" in message
        assert LAST - created < parse_duration(ttl)
        return
    ends, problems = expiry(life, None)
    assert problems == [] and ends is not None
    assert parse_time(ends["expires"], "expires") == created + parse_duration(ttl)
    assert ends["created"] == rfc3339(created) and len(ends["expires"]) == len("9999-12-31T23:59:59Z")


@given(wall=TIMES, ttl=TTLS, given_ttl=st.booleans())
def test_the_commits_time_plus_a_ttl_that_overflows_names_where_the_ttl_came_from(wall, ttl, given_ttl):
    """No --created: the commit's time counts. `--ttl` past the end is the command line's error (exit 2); the
    repository's `lifecycle.ttl` past it is a config error naming `.devlane.yaml` (exit 1)."""
    committed = wall.replace(microsecond=0, tzinfo=UTC)
    life = LifecycleSettings(ttl, None, ttl_given=given_ttl)
    try:
        ends, _ = expiry(life, committed)
    except DevlaneError as exc:
        problem = exc.problems[0]
        assert LAST - committed < parse_duration(ttl)
        if given_ttl:
            assert isinstance(exc, UsageError) and f"plus --ttl {ttl} is after" in problem.message
        else:
            assert not isinstance(exc, UsageError)
            assert problem.where.file == ".devlane.yaml" and problem.message.startswith("lifecycle.ttl: ")
        return
    assert ends is not None and parse_time(ends["expires"], "expires") == committed + parse_duration(ttl)


# --------------------------------------------------------------------------------------------------
# the commands


def lanes(harness: Harness) -> Path:
    """pr-1 and pr-2 expired in 2020, pr-3 expiring in 2031; the output's flows/ directory."""
    harness.write("app.yaml", app_yaml("api"))
    for flow, created in (("pr-1", "2020-01-01T00:00:00Z"), ("pr-2", "2020-01-02T00:00:00+05:00"),
                          ("pr-3", "2031-01-01T00:00:00Z")):
        done = harness.cli("render", "--flow", flow, "--service", "api=api:2", "--ttl", "1h", "--created", created)
        assert done.returncode == 0, done.stderr
    return harness.root / "rendered" / "flows"


def lane_with_expiry(harness: Harness, flows: Path, flow: str, expires: object) -> Path:
    """A lane like the others whose flow.metadata says `lifecycle.expires: <expires>` (as a hand edit, or another
    tool, may leave it)."""
    if not (flows / flow).is_dir():
        done = harness.cli("render", "--flow", flow, "--service", "api=api:2", "--ttl", "1h", "--created",
                           "2020-01-01T00:00:00Z")
        assert done.returncode == 0, done.stderr
    path = flows / flow / "flow.metadata"
    meta = json.loads(path.read_text())
    meta["lifecycle"]["expires"] = expires
    path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return path


def clean(stderr: str) -> None:
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr


@pytest.mark.e2e
def test_gc_removes_the_expired_lanes_and_keeps_and_names_each_one_whose_expiry_is_malformed(harness):
    flows = lanes(harness)
    bad = {"pr-4": "0001-01-01T00:00:00+23:59", "pr-5": "next tuesday", "pr-6": 20200101}
    files = {flow: lane_with_expiry(harness, flows, flow, text) for flow, text in bad.items()}

    dry = harness.cli("gc", "--expired", "--now", "2030-01-01T00:00:00Z", "--dry-run")
    clean(dry.stderr)
    assert dry.returncode == 1
    assert "would remove flow pr-1: expired at 2020-01-01T01:00:00Z" in dry.stderr
    assert "would remove flow pr-2: expired at 2020-01-01T20:00:00Z" in dry.stderr
    assert sorted(os.listdir(flows)) == ["pr-1", "pr-2", "pr-3", "pr-4", "pr-5", "pr-6"]

    done = harness.run("gc", "--expired", "--now", "2030-01-01T00:00:00Z")  # a real process: the exit code
    clean(done.stderr)
    assert done.returncode == 1
    assert sorted(os.listdir(flows)) == ["pr-3", "pr-4", "pr-5", "pr-6"]
    assert "removed flow pr-1: expired at" in done.stderr and "removed flow pr-2: expired at" in done.stderr
    for flow, text in bad.items():
        assert f"{files[flow]}: lifecycle.expires {str(text)!r} is " in done.stderr
        assert f"kept flow {flow}: its expiry cannot be read" in done.stderr
    assert "is out of range: in UTC it falls before 0001-01-01T00:00:00Z" in done.stderr
    assert done.stderr.count("devlane: error:") == 6  # each bad lane: its date, and that it was kept

    # a lane the keep list ends goes whatever its date says; one it keeps and whose date is bad is still named
    keep = harness.tmp / "open-prs"
    keep.write_text("pr-3\npr-5\n")
    done = harness.cli("gc", "--keep-file", str(keep), "--expired", "--now", "2030-01-01T00:00:00Z")
    clean(done.stderr)
    assert done.returncode == 1 and sorted(os.listdir(flows)) == ["pr-3", "pr-5"]
    assert "kept flow pr-5: its expiry cannot be read" in done.stderr and "kept flow pr-4" not in done.stderr

    done = harness.cli("gc", "--keep", "pr-3", "pr-5")  # without --expired, no date is read at all
    assert done.returncode == 0, done.stderr


@pytest.mark.e2e
@pytest.mark.parametrize(("argv", "flag"), [
    (["gc", "--expired", "--now", "0001-01-01T00:00:00+01:00"], "--now '0001-01-01T00:00:00+01:00' is out of range"),
    (["gc", "--expired", "--now", "9999-12-31T23:59:59-00:01"], "--now '9999-12-31T23:59:59-00:01' is out of range"),
    (["gc", "--expired", "--now", "yesterday"], "--now 'yesterday' is not an RFC 3339 time"),
    (["render", "--flow", "pr-1", "--service", "api=api:2", "--created", "9999-12-31T00:00:00Z", "--ttl", "7d"],
     "--created 9999-12-31T00:00:00Z plus --ttl 7d is after 9999-12-31T23:59:59Z"),
    (["render", "--flow", "pr-1", "--service", "api=api:2", "--created", "0001-01-01T00:00:00+23:59", "--ttl", "7d"],
     "--created '0001-01-01T00:00:00+23:59' is out of range"),
    (["render", "--flow", "pr-1", "--service", "api=api:2", "--created", "2026-01-01T00:00:00Z", "--ttl",
      "999999999d"], "--ttl '999999999d' is not a duration (out of range: at most about 106,751 days)"),
])
def test_out_of_range_flags_are_usage_errors_naming_the_flag(harness, argv, flag):
    harness.write("app.yaml", app_yaml("api"))
    done = harness.run(*argv)
    clean(done.stderr)
    assert done.returncode == 2 and flag in done.stderr, done.stderr
    assert not (harness.root / "rendered").exists()


@pytest.mark.e2e
def test_a_configured_ttl_that_overflows_from_the_commits_time_is_a_config_error(harness, monkeypatch):
    harness.write("app.yaml", app_yaml("api"))
    harness.config({"lifecycle": {"ttl": "100000d"}})
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@250246607760 +0000")  # 9899-12-31: plus 273 years is past 9999
    harness.commit("base")
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2")
    clean(done.stderr)
    assert done.returncode == 1, done.stderr
    assert ("devlane: error: .devlane.yaml: lifecycle.ttl: the commit's time 9899-12-31T18:36:00Z plus the ttl "
            "100000d (lifecycle.ttl) is after 9999-12-31T23:59:59Z") in done.stderr
    assert not (harness.root / "rendered").exists()
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--ttl", "7d")  # the flag is shorter
    assert done.returncode == 0, done.stderr


EXPIRIES = st.one_of(st.builds(spelled, TIMES, OFFSETS), st.text(max_size=30), st.integers(), st.none(),
                     st.lists(st.integers(), max_size=2))


@pytest.mark.e2e
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expires=EXPIRIES, wall=TIMES, minutes=OFFSETS)
def test_any_expiry_in_a_lane_and_any_now_end_in_0_1_or_2_never_an_internal_error(harness, expires, wall, minutes):
    flows = harness.root / "rendered" / "flows"
    if not flows.is_dir():
        lanes(harness)
    lane_with_expiry(harness, flows, "pr-4", expires)
    now = spelled(wall, minutes)
    done = harness.cli("gc", "--expired", "--now", now, "--dry-run")
    clean(done.stderr)
    if in_utc(wall, minutes) is None:
        assert done.returncode == 2 and f"--now {now!r} is out of range" in done.stderr
        return
    readable = isinstance(expires, str) and expires.strip() and _instant(expires) is not None
    assert done.returncode == (0 if readable or expires is None else 1), done.stderr
    if done.returncode == 1:
        assert f"{flows / 'pr-4' / 'flow.metadata'}: lifecycle.expires" in done.stderr
        assert "kept flow pr-4: its expiry cannot be read" in done.stderr


def _instant(text: str) -> datetime | None:
    try:
        return parse_time(text, "expires")
    except UsageError:
        return None
