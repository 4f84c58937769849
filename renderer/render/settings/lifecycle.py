"""Lifecycle settings: a lane's time to live, its sleep schedule and quota, the price table and the budget, read from
`.devlane.yaml` (`lifecycle`, `footprint.prices`, `policy.budget`) and the command line (`--ttl`, `--created`).

Why a module of its own: durations, RFC 3339 times and budgets are parsed once here, so the stages get typed
values and every mistake names its setting. Times are never read from the clock here: an expiry is computed from a
given time or the rendered commit's, so the same input renders the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from ...core import durations, quantity
from ...errors import DevlaneError, Problem, UsageError, Where

LAST = datetime.max.replace(tzinfo=UTC, microsecond=0)  # the latest time an expiry can be (RFC 3339 has 4-digit years)


def parse_duration(text: str, setting: str = "--ttl") -> timedelta:
    """A positive duration in Go's grammar plus days (`30m`, `72h`, `1h30m`, `7d`: core.durations)."""
    try:
        return durations.as_timedelta(durations.parse_positive(text))
    except durations.DurationError as exc:
        raise UsageError(f"{setting} {text!r} is not a duration ({exc}): give a positive duration as Argo CD "
                         f"and Flux write them ({durations.EXAMPLES})") from None


def parse_time(text: str, setting: str) -> datetime:
    """An RFC 3339 time with its offset (`2026-11-27T18:00:00Z`), in UTC: in range there (years 1 to 9999), so that
    nothing computed from it later overflows unseen."""
    try:
        value = datetime.fromisoformat(str(text).strip())
    except (ValueError, TypeError, UnicodeError):
        value = None
    if value is None or value.tzinfo is None:
        raise UsageError(f"{setting} {text!r} is not an RFC 3339 time with an offset (2026-11-27T18:00:00Z)")
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise UsageError(f"{setting} {text!r} is out of range: in UTC it falls before 0001-01-01T00:00:00Z or after "
                         f"{rfc3339(LAST)}") from None


def expires(created: datetime, ttl: timedelta) -> datetime | None:
    """`created + ttl`, None when that is past `LAST` (no RFC 3339 time names it)."""
    try:
        ends = created.astimezone(UTC) + ttl
    except OverflowError:
        return None
    return ends if ends <= LAST else None


def rfc3339(value: datetime) -> str:
    """UTC, whole seconds, `Z`: one spelling per instant, so the output is byte-stable (four-digit years: strftime
    writes year 5 as `5`)."""
    return value.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


@dataclass(frozen=True)
class Prices:
    """`footprint.prices`: per vCPU-hour, per GiB-hour of memory, per GiB-month of storage, per custom resource
    kind per day, all in one currency."""

    cpu_hour: Decimal = Decimal(0)
    memory_gib_hour: Decimal = Decimal(0)
    storage_gib_month: Decimal = Decimal(0)
    resources: dict[str, Decimal] = field(default_factory=dict)  # group/Kind or Kind -> per day
    currency: str = "USD"


@dataclass(frozen=True)
class Budget:
    """`policy.budget`: None is no limit. CPU in millicores, memory and storage in bytes."""

    dev_copies: int | None = None
    cpu: int | None = None
    memory: int | None = None
    storage: int | None = None
    resources: dict[str, int] = field(default_factory=dict)
    cost_per_day: Decimal | None = None
    lanes: int | None = None

    def tightest(self, other: Budget) -> Budget:
        """Each limit at the lower of the two (a limit only one sets, as set)."""
        def low(a: Any, b: Any) -> Any:
            return b if a is None else a if b is None else min(a, b)

        kinds = {k: low(self.resources.get(k), other.resources.get(k)) for k in {*self.resources, *other.resources}}
        return Budget(low(self.dev_copies, other.dev_copies), low(self.cpu, other.cpu), low(self.memory, other.memory),
                      low(self.storage, other.storage), kinds, low(self.cost_per_day, other.cost_per_day),
                      low(self.lanes, other.lanes))

    @property
    def empty(self) -> bool:
        return self == Budget()


def budget_of(raw: dict | None) -> Budget:
    """`policy.budget` as checked by the config schema (quantities already match the grammar)."""
    raw = raw or {}

    def amount(key: str, unit: Any) -> int | None:
        if raw.get(key) is None:
            return None
        try:
            return unit(quantity.parse(raw[key]))
        except ValueError as exc:
            raise DevlaneError(Problem(f"policy.budget.{key}: {exc}", Where(file=".devlane.yaml"),
                                       "give a quantity such as 4, 500m, 8Gi", code="schema")) from None

    return Budget(raw.get("devCopies"), amount("cpu", quantity.millicores), amount("memory", quantity.whole),
                  amount("storage", quantity.whole), {str(k): int(v) for k, v in (raw.get("resources") or {}).items()},
                  None if raw.get("costPerDay") is None else Decimal(str(raw["costPerDay"])), raw.get("lanes"))


def prices_of(raw: dict | None) -> Prices | None:
    """`footprint.prices`, or None when the config has no price table."""
    if not raw:
        return None
    return Prices(Decimal(str(raw.get("cpuHour", 0))), Decimal(str(raw.get("memoryGiBHour", 0))),
                  Decimal(str(raw.get("storageGiBMonth", 0))),
                  {str(k): Decimal(str(v)) for k, v in (raw.get("resources") or {}).items()},
                  str(raw.get("currency", "USD")))


@dataclass(frozen=True)
class LifecycleSettings:
    ttl: str | None = None  # `--ttl` over `lifecycle.ttl`, as written (30m, 72h, 7d)
    created: datetime | None = None  # `--created`; else the rendered commit's committer time
    sleep: dict | None = None  # `lifecycle.sleep`: {down, up, timeZone?, image?}
    quota: dict | None = None  # `lifecycle.quota`: LimitRange defaults; the quota itself comes from the budget
    prices: Prices | None = None
    budget: Budget = field(default_factory=Budget)
    ttl_given: bool = False  # the ttl is the command line's (`--ttl`), not `.devlane.yaml`'s

    def __post_init__(self) -> None:
        """A `--created` whose expiry no RFC 3339 time names is the command line's mistake, found before any work."""
        if self.ttl and self.created is not None and expires(self.created, parse_duration(self.ttl)) is None:
            raise self.past_last(self.created)

    def past_last(self, created: datetime) -> DevlaneError:
        """`created` plus the ttl is past the last time an expiry can name: the command line's mistake (exit 2) when
        it gave the ttl or the time, else `.devlane.yaml`'s `lifecycle.ttl` (exit 1)."""
        ttl = f"--ttl {self.ttl}" if self.ttl_given else f"the ttl {self.ttl} (lifecycle.ttl)"
        since = f"--created {rfc3339(self.created)}" if self.created else f"the commit's time {rfc3339(created)}"
        why = f"{since} plus {ttl} is after {rfc3339(LAST)}, the last time an expiry can name"
        if self.ttl_given or self.created is not None:
            return UsageError(Problem(why, hint="pass an earlier --created, or a shorter ttl"))
        return DevlaneError(Problem(f"lifecycle.ttl: {why}", Where(file=".devlane.yaml"), "set a shorter "
                                    "lifecycle.ttl, or render a commit whose committer time is earlier", code="ttl"))
