"""Choosing the implementation of each plugin use, before any plugin runs.

A use (a plugin definition's instance, or a pipeline step) names a plugin and, optionally,
fallback `implementations` in preference order; the first whose source is available and allowed
is used. An External plugin is allowed during render only when `devlane provision` recorded its
result for the flow, which render then replays. The choice and the reason go to `flow.metadata`
and `plan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from ..core.source import Source
from ..errors import DevlaneError, Where, fail
from .manifest import Manifest, SideEffects
from .resolve import PluginSource, Resolver
from .state import Record, read_record

# preview: `diff`, the pull request's comment: like render, but an External plugin that was never provisioned for the
# flow (a fork's pull request; the base) is shown as such instead of failing, and a record made for other inputs
# (the base's revision) is replayed
RunMode = Literal["render", "provision", "delete", "preview"]


@dataclass(frozen=True)
class Candidate:
    name: str
    args: dict[str, str]


@dataclass(frozen=True)
class PluginUse:
    """One use of a plugin: an instance, its candidates in preference order, what its definition says."""

    instance: str
    candidates: tuple[Candidate, ...]
    side_effects: SideEffects | None = None  # "External" on the definition overrides the plugin's own manifest
    where: Where = field(default_factory=Where)


@dataclass(frozen=True)
class Choice:
    """The implementation used for one plugin use, and why."""

    name: str
    source: PluginSource
    manifest: Manifest
    args: dict[str, str]
    external: bool
    reason: str
    skipped: tuple[dict, ...] = ()  # {name, reason} of preferred alternatives
    record: Record | None = None  # render: the provision record replayed for an External plugin

    def as_dict(self) -> dict:
        return {"name": self.name, "runtime": self.manifest.runtime, "external": self.external,
                "reason": self.reason, "skipped": list(self.skipped)}


def choose(resolver: Resolver, use: PluginUse, flow_id: str, mode: RunMode, repo: Source | None) -> Choice:
    """The first candidate (the plugin, then its implementations) that is available and allowed."""
    skipped: list[dict] = []
    errors: list[DevlaneError] = []
    for i, cand in enumerate(use.candidates):
        try:
            src, manifest = resolver.get(cand.name)
        except DevlaneError as exc:
            if any(p.code == "plugin-shadows-builtin" for p in exc.problems):
                raise exc.with_problems([replace(p, where=replace(use.where, plugin=use.instance))
                                         for p in exc.problems]) from None  # a wrong repository, not a missing plugin
            errors.append(exc)
            skipped.append({"name": cand.name, "reason": "not available: " + exc.problems[0].message})
            continue
        external = (use.side_effects == "External" and i == 0) or manifest.side_effects == "External"
        reason = "preferred" if i == 0 else f"fallback #{i}"
        record = None
        if external and mode == "preview":
            record = read_record(repo, flow_id, use.instance) if repo is not None else None
            reason += ("; External, replaying the result recorded by devlane provision" if record is not None else
                       "; External, never provisioned for this flow: its changes are not in this preview")
        elif external and mode == "render":
            record = read_record(repo, flow_id, use.instance) if repo is not None else None
            if record is None:
                skipped.append({"name": cand.name, "reason": "External: never runs during render, and "
                                "devlane provision recorded no result for this flow"})
                continue
            reason += "; External, replaying the result recorded by devlane provision"
        elif external:
            reason += "; External, run for real by devlane provision"
        return Choice(cand.name, src, manifest, dict(cand.args), external, reason, tuple(skipped), record)
    where = replace(use.where, plugin=use.instance)
    if len(use.candidates) == 1 and errors:
        raise errors[0].with_problems([replace(p, where=where) for p in errors[0].problems])
    if len(use.candidates) == 1:
        raise fail(f"plugin {use.candidates[0].name} is External (it changes something outside the rendered "
                   "manifests), so it never runs during render, and no provision record exists for this flow", where,
                   f"run `devlane provision --flow {flow_id}` first (CI on PR open), or add a non-External "
                   "implementation under `implementations`", code="plugin-external")
    tried = "; ".join(f"{s['name']}: {s['reason']}" for s in skipped)
    raise fail(f"no implementation of {use.instance} is available and allowed ({tried})", where,
               "make one of them available (devlane plugins lock/fetch, --plugin-source) or run devlane provision",
               code="plugin-no-implementation")
