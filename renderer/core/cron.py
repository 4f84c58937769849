"""CronJob schedules and time zones, checked as the API server checks them, so a lane's sleep CronJobs are never
refused at apply time (`lifecycle.sleep` in `.devlane.yaml`).

Why not a cron library: the API server parses `spec.schedule` with robfig/cron v3's standard parser, which is
narrower than Vixie cron and than Python's cron libraries (no `L`, `W`, `#`, no 7 for Sunday, exactly five
fields, no `TZ=` prefix in a CronJob), so accepting what they accept would let through schedules the server
refuses. The rules here are that parser's (`cron.ParseStandard`) and the API server's own checks
(`pkg/apis/batch/validation`); the time zones are the IANA database's (the `tzdata` package, the same data the API
server embeds), never the host's, so every machine renders the same verdict.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from . import durations

_MONTHS = {name: i + 1 for i, name in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                                  "nov", "dec"))}
_DAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# name, lowest, highest, names: the five fields of a standard schedule, in order
FIELDS = (("minute", 0, 59, None), ("hour", 0, 23, None), ("day of month", 1, 31, None),
          ("month", 1, 12, _MONTHS), ("day of week", 0, 6, _DAYS))
DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}\Z")  # the API server's validTimeZoneCharacters
_GO_INT = re.compile(r"[+-]?[0-9]+\Z")  # strconv.Atoi


def schedule_problem(schedule: str) -> str | None:
    """Why the API server would refuse `schedule` as a CronJob's `spec.schedule`, or None."""
    if "TZ" in schedule:
        return "has TZ or CRON_TZ in it; a CronJob takes its time zone from timeZone (lifecycle.sleep.timeZone)"
    if not schedule:
        return "is empty"
    if schedule.startswith("@"):
        return _descriptor_problem(schedule)
    fields = schedule.split()
    if len(fields) != len(FIELDS):
        return f"has {len(fields)} fields; a schedule has five: minute hour day-of-month month day-of-week"
    for text, (name, low, high, names) in zip(fields, FIELDS, strict=True):
        for item in (piece for piece in text.split(",") if piece):  # Go's FieldsFunc drops empty pieces
            problem = _range_problem(item, low, high, names)
            if problem:
                return f"has {item!r} in its {name} field: {problem}"
    return None


def _descriptor_problem(schedule: str) -> str | None:
    if schedule in DESCRIPTORS:
        return None
    if schedule.startswith("@every "):
        try:
            durations.parse(schedule[len("@every "):], days=False)
        except durations.DurationError as exc:
            return f"has an @every duration that is not one ({exc})"
        return None
    return f"is not a descriptor the API server knows ({', '.join(DESCRIPTORS)}, @every DURATION)"


def _range_problem(item: str, low: int, high: int, names: dict[str, int] | None) -> str | None:
    """robfig/cron's getRange: `*` or `?`, `N`, `N-M`, each with an optional `/STEP`."""
    range_text, *steps = item.split("/")
    if len(steps) > 1:
        return "too many slashes"
    bounds = range_text.split("-")
    if bounds[0] in ("*", "?"):  # what follows a `*-` is ignored, as robfig/cron ignores it
        start, end = low, high
    else:
        if len(bounds) > 2:
            return "too many hyphens"
        values = [_number(b, names) for b in bounds]
        if None in values:
            bad = bounds[values.index(None)]
            return f"{bad!r} is not a number" + (" or a name" if names else "")
        start, end = values[0], values[-1]
    if steps:
        step = _number(steps[0], None)
        if step is None:
            return f"the step {steps[0]!r} is not a number"
        if len(bounds) == 1:
            end = high  # `N/STEP` is `N-max/STEP`
        if step == 0:
            return "a step of 0"
    if start < low:
        return f"{start} is below {low}"
    if end > high:
        return f"{end} is above {high}"
    if start > end:
        return f"the range starts ({start}) after it ends ({end})"
    return None


def _number(text: str, names: dict[str, int] | None) -> int | None:
    """strconv.Atoi of a non-negative number (ASCII digits, an optional sign), or a month or day name."""
    if names and text.lower() in names:
        return names[text.lower()]
    if not _GO_INT.match(text) or int(text) < 0 or int(text) >= 1 << 63:
        return None
    return int(text)


def time_zone_problem(zone: str) -> str | None:
    """Why the API server would refuse `zone` as a CronJob's `spec.timeZone` (an IANA name it can load), or None."""
    if not zone:
        return "is empty"
    parts = zone.split("/")
    if any(p in (".", "..") or p.startswith("-") or not _ZONE_PART.match(p) for p in parts):
        return "is not an IANA time zone name (Area/Location, e.g. Europe/Berlin)"
    if zone.lower() == "local":
        return "is the controller's own zone; name an explicit IANA time zone (e.g. Europe/Berlin, UTC)"
    if zone not in _zones():
        return "is not a time zone of the IANA database (e.g. Europe/Berlin, America/New_York, UTC)"
    return None


@cache
def _zones() -> frozenset[str]:
    """Every zone name of the IANA database as the `tzdata` package lists them (exact case, on any file system)."""
    try:
        return frozenset(resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split())
    except (ModuleNotFoundError, OSError) as exc:  # a broken install: say so rather than refuse every zone
        raise RuntimeError(f"the tzdata package is missing or broken ({exc}): pip install tzdata") from exc
