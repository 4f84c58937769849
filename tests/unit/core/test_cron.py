"""CronJob schedules and time zones as the API server checks them (issue 44, point 8), one case per rule of
robfig/cron's standard parser and of the API server's zone check. The server's own verdicts, over hundreds of
schedules: tests/cluster/test_schedules.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.core import cron


@pytest.mark.parametrize("schedule", [
    "0 20 * * 1-5", "*/5 * * * *", "5/15 * * * *", "0 0 1 jan,Dec sun", "0 0 * * MON-FRI", "0 0 ? * ?", "59 23 31 12 6",
    "0 0 1 1 0", "+5 * * * *", "1,,2 * * * *", "*-3 * * * *", "0 9-17/2 * * *", "0 0 * * *  ", "0\t0 * * *",
    "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@every 1h30m", "@every 500ms",
])
def test_what_the_server_accepts(schedule):
    assert cron.schedule_problem(schedule) is None


@pytest.mark.parametrize(("schedule", "why"), [
    ("", "is empty"),
    ("60 * * * *", "'60' in its minute field: 60 is above 59"),
    ("0 24 * * *", "'24' in its hour field: 24 is above 23"),
    ("0 0 0 * *", "'0' in its day of month field: 0 is below 1"),
    ("0 0 32 * *", "32 is above 31"),
    ("0 0 * 0 *", "'0' in its month field: 0 is below 1"),
    ("0 0 * 13 *", "13 is above 12"),
    ("0 0 * * 7", "'7' in its day of week field: 7 is above 6"),
    ("5-1 * * * *", "the range starts (5) after it ends (1)"),
    ("*/0 * * * *", "a step of 0"),
    ("1/2/3 * * * *", "too many slashes"),
    ("1-2-3 * * * *", "too many hyphens"),
    ("-1 * * * *", "'' is not a number"),
    ("L * * * *", "'L' is not a number"),
    ("0 0 * foo *", "'foo' is not a number or a name"),
    ("0 0 * * 1#2", "'1#2' is not a number or a name"),
    ("*/x * * * *", "the step 'x' is not a number"),
    ("\u0661 * * * *", "is not a number"),  # an Arabic-Indic digit: Go's Atoi takes ASCII only
    ("0 0 * *", "has 4 fields"),
    ("0 0 * * * *", "has 6 fields"),
    ("@reboot", "is not a descriptor"),
    ("@every 1d", "an @every duration that is not one"),
    ("CRON_TZ=UTC 0 0 * * *", "has TZ or CRON_TZ in it"),
    ("TZ=UTC 0 0 * * *", "has TZ or CRON_TZ in it"),
])
def test_what_the_server_refuses_and_why(schedule, why):
    problem = cron.schedule_problem(schedule)
    assert problem is not None and why in problem


@pytest.mark.parametrize(("zone", "why"), [
    ("Europe/Berlin", None), ("UTC", None), ("US/Eastern", None), ("Etc/GMT+5", None),
    ("America/Argentina/Buenos_Aires", None),
    ("", "is empty"), ("Mars/Olympus", "not a time zone of the IANA database"),
    ("europe/berlin", "not a time zone of the IANA database"),  # exact case, on any file system
    ("Local", "the controller's own zone"), ("LOCAL", "the controller's own zone"),
    ("../etc", "not an IANA time zone name"), ("-Europe/Berlin", "not an IANA time zone name"),
    ("Europe//Berlin", "not an IANA time zone name"), ("A_Very_Long_Zone/X", "not an IANA time zone name"),
    ("Europe/Berlin ", "not an IANA time zone name"),
])
def test_time_zones(zone, why):
    problem = cron.time_zone_problem(zone)
    assert (problem is None) if why is None else (problem is not None and why in problem)


@given(st.text(max_size=30))
def test_any_text_is_a_schedule_or_a_reason(text):
    problem = cron.schedule_problem(text)
    assert problem is None or problem.startswith(("is ", "has "))
