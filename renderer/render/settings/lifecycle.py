"""Lifecycle settings: a lane's time to live, its sleep schedule and quota, the price table and the budget, read from
`.devlane.yaml` (`lifecycle`, `footprint.prices`, `policy.budget`) and the command line (`--ttl`, `--created`).

Why a module of its own: durations, RFC 3339 times and budgets are parsed once here, so the stages get typed
values and every mistake names its setting. Times are never read from the clock here: an expiry is computed from a
given time or the rendered commit's, so the same input renders the same bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from ...core import quantity
from ...errors import DevlaneError, Problem, UsageError, Where

_DURATION = re.compile(r"([1-9][0-9]{0,5})(m|h|d)\Z")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def parse_duration(text: str, setting: str = "--ttl") -> timedelta:
    """`30m`, `72h`, `7d` (minutes, hours, days)."""
    found = _DURATION.match(str(text).strip())
    if found is None:
        raise UsageError(f"{setting} {text!r} is not a duration: a whole number of minutes, hours or days "
                         "(30m, 72h, 7d)")
    return timedelta(**{_UNITS[found.group(2)]: int(found.group(1))})


def parse_time(text: str, setting: str) -> datetime:
    """An RFC 3339 time with its offset (`2026-11-27T18:00:00Z`), in UTC."""
    try:
        value = datetime.fromisoformat(str(text).strip())
    except ValueError:
        value = None
    if value is None or value.tzinfo is None:
        raise UsageError(f"{setting} {text!r} is not an RFC 3339 time with an offset (2026-11-27T18:00:00Z)")
    return value.astimezone(UTC)


def rfc3339(value: datetime) -> str:
    """UTC, whole seconds, `Z`: one spelling per instant, so the output is byte-stable."""
    return value.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


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
