"""The settings a render's stages read, one record per stage, built once per command from `.devlane.yaml` (as
the operator's policy confines it) and the command line, which wins. No stage reads the config or the options:
each gets its record, so what a stage may depend on is in its signature.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args

from ...core import cron
from ...errors import DevlaneError, Problem, fail
from .isolation import Lane
from .lifecycle import LifecycleSettings, budget_of, parse_duration, parse_time, prices_of
from .repo_config import Isolation, PipelineStep, PluginAllow, RepoConfig, Routing

MODES: tuple[str, ...] = get_args(Routing)


@dataclass(frozen=True)
class CopySettings:
    """How dev copies are made: where they live and what they are called, and their replicas."""

    lane: Lane
    replicas: int | str  # a number, or "keep" (the baseline's)
    strict: bool  # unwired edges and Secret-held addresses are errors
    dapr: str = "none"  # `dapr.isolation`: app-id gives a lane's Dapr apps their own app-ids and Components


@dataclass(frozen=True)
class RouteSettings:
    """How requests reach the dev copies: the routing mode and what its entries and mesh rules need."""

    mode: Routing
    domain: str | None  # the flow hosts' domain (`<flowId>.<domain>`), else derived from each entry's host
    baggage_key: str  # the baggage member that carries the flow id on a mesh
    mesh_gateway: str | None  # `ns/name` of the Gateway an Ingress entry's flow route attaches to


@dataclass(frozen=True)
class PluginSettings:
    """The `.devlane.yaml` pipeline steps, and what the output policy lets each plugin do beyond the default."""

    pipeline: list[PipelineStep]
    policy: dict[str, PluginAllow]


@dataclass(frozen=True)
class RenderSettings:
    namespace: str | None  # the default namespace (the Argo CD / Flux destination's)
    copies: CopySettings
    routes: RouteSettings
    plugins: PluginSettings
    strict: bool
    warnings_as_errors: bool
    shared_stores: frozenset[str] = frozenset()  # outside stores every lane may use on purpose (`sharedStores`)
    lifecycle: LifecycleSettings = field(default_factory=LifecycleSettings)


def check_mode(mode: str, isolation: str = "suffix") -> Routing:
    """The routing mode, refused when unknown or when it cannot work with the isolation mode."""
    if mode not in MODES:
        raise fail(f"unknown routing mode {mode!r}", hint=f"use one of: {', '.join(MODES)}", code="routing")
    if mode != "none" and isolation == "namespace":
        raise fail(f"routing {mode} cannot be combined with isolation namespace: a flow namespace is reached by DNS "
                   "alone and holds a copy of every service on the path, so there is nothing for the mesh to route",
                   hint="use --isolation namespace with --routing none, or a mesh with --isolation suffix",
                   code="routing")
    return mode  # type: ignore[return-value]


def lane_of(config: RepoConfig, isolation: Isolation | None = None) -> Lane:
    """The isolation mode (`--isolation` over the config's) and its settings."""
    return Lane(isolation or config.isolation, config.namespace_template, config.cluster_domain,
                config.secrets_mirror)


def render_settings(config: RepoConfig, routing: Routing | None = None, isolation: Isolation | None = None,
                    strict: bool = False, ttl: str | None = None, created: str | None = None) -> RenderSettings:
    """Every stage's settings: the command line's `--routing`, `--isolation`, `--strict`, `--ttl` and `--created`
    over the config."""
    lane = lane_of(config, isolation)
    strict = strict or config.strict
    return RenderSettings(
        config.namespace,
        CopySettings(lane, config.replicas, strict, config.dapr_isolation),
        RouteSettings(check_mode(routing or config.routing, lane.isolation), config.domain, config.baggage_key,
                      config.mesh_gateway),
        PluginSettings(config.pipeline, config.plugin_policy),
        strict, config.warnings_as_errors, frozenset(config.shared_stores), lifecycle_settings(config, ttl, created))


def lifecycle_settings(config: RepoConfig, ttl: str | None = None, created: str | None = None) -> LifecycleSettings:
    """`--ttl` over `lifecycle.ttl` (checked here, so a bad one fails before any work), `--created`, the sleep
    schedule, the quota, the prices, and the budget: the head's tightened by every trusted source's."""
    given = bool(ttl)
    ttl = ttl or config.lifecycle.get("ttl")
    if ttl:
        parse_duration(ttl, "--ttl" if given else "lifecycle.ttl")
    sleep = config.lifecycle.get("sleep")
    if sleep:
        _check_sleep(sleep, config)
    quota = config.lifecycle.get("quota")
    for trusted in config.trusted_lifecycles:  # a pull request can shorten a lane's life, never lengthen it
        if trusted.get("ttl") and (not ttl or parse_duration(trusted["ttl"]) < parse_duration(ttl)):
            ttl, given = trusted["ttl"], False
        quota = quota if quota is not None else trusted.get("quota")
    budget = budget_of(config.budget)
    for trusted in config.trusted_budgets:
        budget = budget.tightest(budget_of(trusted))
    return LifecycleSettings(ttl, parse_time(created, "--created") if created else None, sleep, quota,
                             prices_of(config.prices), budget, ttl_given=given)


def _check_sleep(sleep: dict, config: RepoConfig) -> None:
    """The sleep CronJobs' schedules and time zone as the API server checks them (core.cron): a mistake fails the
    render, naming the key, instead of a lane whose CronJobs the cluster refuses."""
    problems = [Problem(f"lifecycle.sleep.{key}: {sleep[key]!r} {why}", config.where("lifecycle", "sleep", key), hint,
                        code="schema")
                for key, check, hint in (
                    ("down", cron.schedule_problem, "a five-field cron schedule, e.g. \"0 20 * * 1-5\""),
                    ("up", cron.schedule_problem, "a five-field cron schedule, e.g. \"0 7 * * 1-5\""),
                    ("timeZone", cron.time_zone_problem, "an IANA time zone, e.g. Europe/Berlin"))
                if key in sleep and (why := check(str(sleep[key])))]
    if problems:
        raise DevlaneError(problems)
