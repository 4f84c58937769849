"""Trusted and untrusted configuration: a pull request may tighten devlane's safety settings, never relax them.

The rendered repository's `.devlane.yaml` comes from the pull request. The settings that relax safety (what one
plugin's output may hold beyond the output policy, `policy.plugins`; plugin resource limits above the defaults,
`plugins.limits`) are taken only from a trusted source:
- the operator's policy file (`--policy FILE` or `$DEVLANE_POLICY`, outside the pull request's reach by being
  named by whoever runs devlane), a `.devlane.yaml`-shaped document of which only those settings count;
- the `.devlane.yaml` at a trusted ref (`--trusted-ref REF`, e.g. the pull request's base in CI).
The head's own values apply only where they are at least as tight: an entry of `policy.plugins` is kept as far
as a trusted entry for the same name grants it, a limit only up to the trusted one (else the default); and a grant
applies only to the code the trusted side names for its key (`grants`), never to whatever the head calls so. What the
head asked beyond that is ignored with a warning naming the setting (an error under `--strict`). A budget
(`policy.budget`) of a trusted source always applies: the head's can only add limits or lower them; so do its
`footprint.prices` (which price that budget: the head's count only when no trusted source sets any), its
`lifecycle.ttl` (the shortest applies) and its `lifecycle.quota` (when the head sets none).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...core.files import read_user_file
from ...core.source import Source
from ...errors import Problem, Where
from ...host.confine import Limits
from .repo_config import CONFIG_FILE, GrantPin, PluginAllow, RepoConfig, parse_config

POLICY_ENV = "DEVLANE_POLICY"


@dataclass(frozen=True)
class Grant:
    """One trusted source's `policy.plugins.<key>` entry: what it allows, who grants it (for messages), and the
    code it is for when the entry says so itself (`commit`, `digest`)."""

    allow: PluginAllow
    source: str
    pin: GrantPin = field(default_factory=GrantPin)


@dataclass(frozen=True)
class Trusted:
    """The relaxations trusted sources grant, and where they come from (for messages)."""

    grants: dict[str, tuple[Grant, ...]] = field(default_factory=dict)  # policy.plugins, per key and source
    limits: dict[str, int] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    budgets: tuple[dict, ...] = ()  # policy.budget of each trusted source: each always applies
    prices: dict | None = None  # footprint.prices of the first trusted source that sets them: they price the budget
    lifecycles: tuple[dict, ...] = ()  # lifecycle of each trusted source: the shortest ttl, a quota the head lacks
    ref: Source | None = None  # the repository at --trusted-ref: the code its grants are for (`grants`)
    ref_config: RepoConfig = field(default_factory=RepoConfig)  # its .devlane.yaml: plugins.sources and pipeline steps

    @property
    def plugin_policy(self) -> dict[str, PluginAllow]:
        """Per key, what any trusted source grants (the most the head's entry for that key may keep)."""
        out: dict[str, PluginAllow] = {}
        for key, grants in self.grants.items():
            for grant in grants:
                out[key] = out[key] | grant.allow if key in out else grant.allow
        return out

    def merged(self, config: RepoConfig, source: str) -> Trusted:
        grants = dict(self.grants)
        for name, allow in config.plugin_policy.items():
            grants[name] = (*grants.get(name, ()), Grant(allow, source, config.plugin_pins.get(name, GrantPin())))
        limits = {**self.limits, **{k: max(int(v), self.limits.get(k, 0)) for k, v in config.plugin_limits.items()}}
        budgets = (*self.budgets, config.budget) if config.budget else self.budgets
        lifecycles = (*self.lifecycles, config.lifecycle) if config.lifecycle else self.lifecycles
        return replace(self, grants=grants, limits=limits, sources=(*self.sources, source), budgets=budgets,
                       prices=self.prices or config.prices, lifecycles=lifecycles)


def read_trusted(policy_file: Path | str | None, trusted: Source | None) -> Trusted:
    """What the operator's policy file (default `$DEVLANE_POLICY`) and the configuration at the trusted ref
    (`trusted`, the repository at `--trusted-ref`) grant."""
    out = Trusted(ref=trusted)
    policy_file = policy_file or os.environ.get(POLICY_ENV) or None
    if policy_file:
        out = out.merged(parse_config(read_user_file(policy_file), str(policy_file)), f"the policy file {policy_file}")
    if trusted is not None and trusted.exists(CONFIG_FILE):
        where = f"{CONFIG_FILE} at the trusted ref {getattr(trusted, 'ref', '')}".rstrip()
        config = parse_config(trusted.read(CONFIG_FILE), where)
        out = replace(out.merged(config, where), ref_config=config)
    return out


def confine(head: RepoConfig, trusted: Trusted, strict: bool) -> tuple[RepoConfig, list[Problem]]:
    """`head` with every relaxation no trusted source grants taken out, and one problem per setting taken out
    (a warning; an error when `strict`)."""
    problems: list[Problem] = []
    severity = "error" if strict else "warning"
    source = " or ".join(trusted.sources) if trusted.sources else "no trusted source is given"

    def refuse(setting: str, what: str) -> None:
        problems.append(Problem(
            f"{setting} {what} relaxes devlane's safety, which only a trusted source may do ({source}); ignored",
            Where(file=CONFIG_FILE),
            "a pull request may only tighten: grant it in the operator's policy file (--policy FILE, "
            f"${POLICY_ENV}) or in {CONFIG_FILE} at the trusted base (--trusted-ref REF)",
            severity=severity, code="untrusted-relaxation"))

    policy: dict[str, PluginAllow] = {}
    granted_by_key = trusted.plugin_policy
    for name, asked in head.plugin_policy.items():
        granted = granted_by_key.get(name, PluginAllow())
        kept = asked & granted
        extra = [*(f"allow {a}" for a in sorted(asked.allow - kept.allow)),
                 *(f"kinds {k}" for k in asked.kinds if k not in kept.kinds),
                 *(f"namespaces {n}" for n in asked.namespaces if n not in kept.namespaces)]
        if extra:
            refuse(f"policy.plugins.{name}", f"({', '.join(extra)})")
        policy[name] = kept
    policy = {**{n: a for n, a in granted_by_key.items() if n not in policy}, **policy}
    defaults = Limits().as_dict()
    limits: dict[str, int] = {}
    for key, value in head.plugin_limits.items():
        cap = trusted.limits.get(key, defaults.get(key, int(value)))
        if int(value) > cap:
            refuse(f"plugins.limits.{key}", f"({value}, above {cap})")
        limits[key] = min(int(value), cap)
    limits = {**{k: v for k, v in trusted.limits.items() if k not in limits}, **limits}
    return replace(head, plugin_policy=policy, plugin_limits=limits, trusted_budgets=trusted.budgets,
                   prices=trusted.prices or head.prices, trusted_lifecycles=trusted.lifecycles), problems
