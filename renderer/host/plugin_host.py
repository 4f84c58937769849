"""The plugin host of one command: it resolves and chooses plugins, starts each runtime once, checks
args before any call, runs the calls within the budget, replays or records External plugins, keeps
secrets out of every message, and stops everything it started on `close()`.

It knows invocations, sources and manifests; never the model or the plan (`renderer.render` turns
those into `PluginUse`s and `Invocation`s).
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ..core import tempdirs
from ..core.cache import Cache
from ..core.k8s import pod_spec
from ..core.source import Source
from ..errors import DevlaneError, Problem, Where, fail
from .budget import Budget, default_jobs
from .choose import Choice, PluginUse, RunMode, choose
from .confine import SandboxPolicy, confinement
from .invoke import Invocation, Outcome, request_document
from .manifest import SideEffects, args_problems
from .resolve import Resolver, plugin_digest
from .reuse import Outcomes, outcome_key
from .runtimes import Runtime, make_runtime
from .sandbox import NETWORK_HINT, network_hint, scrub, secret_values
from .state import FlowState, Record, input_hash


@dataclass(frozen=True)
class Created:
    """A CreateFlow's outcome, how it came about, and the provision record to write (provision mode)."""

    outcome: Outcome
    status: Literal["ok", "replayed", "provisioned", "not provisioned", "replayed (recorded for other inputs)"]
    record: Record | None = None


def _scrubbed(p: Problem, secrets: list[str]) -> Problem:
    if not secrets:
        return p
    return replace(p, message=scrub(p.message, secrets), hint=scrub(p.hint, secrets) if p.hint else p.hint)


def sanitize(exc: DevlaneError, secrets: list[str], network_allowed: bool = False) -> DevlaneError:
    """Secrets from args never reach logs or errors; a failed network attempt gets the External hint."""
    problems = [_scrubbed(p, secrets) for p in exc.problems]
    if not network_allowed:
        sandboxed = confinement().enforced
        problems = [replace(p, hint=NETWORK_HINT) if network_hint(p.message, sandboxed) else p for p in problems]
    return exc.with_problems(problems)


class PluginHost:
    """Plugins for one command (render, provision or delete); use as a context manager."""

    def __init__(self, repo_root: Path, flag_sources: dict[str, str], config_sources: dict[str, dict],
                 source: Source | None, mode: RunMode = "render", budget: Budget | None = None,
                 jobs: int | None = None, sandbox: SandboxPolicy | None = None, allowed: tuple[str, ...] = (),
                 records: Source | None = None, cache: Cache | None = None):
        self._scratch = Path(tempdirs.make("plugins"))
        self.resolver = Resolver(repo_root, flag_sources, config_sources, source, self._scratch, allowed=allowed)
        self.source = source
        self.records = records or source  # where provision records are read: the repository, or the lanes branch
        self.mode: RunMode = mode
        self.budget = budget or Budget()
        self.jobs = jobs or default_jobs()
        self.sandbox = sandbox or SandboxPolicy()
        self._runtimes: dict[str, Runtime] = {}
        self._lock = threading.Lock()
        self.outcomes = Outcomes(cache) if cache is not None else None  # reused CreateFlow answers
        self._digests: dict[Path, str] = {}  # each plugin directory's content digest, read once per command

    def __enter__(self) -> PluginHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for rt in self._runtimes.values():
            rt.close()
        self._runtimes.clear()
        tempdirs.removed(self._scratch)

    # -- choosing and starting ----------------------------------------------------------------------

    def choose(self, use: PluginUse, flow_id: str) -> Choice:
        return choose(self.resolver, use, flow_id, self.mode, self.records)

    def runtime(self, choice: Choice) -> Runtime:
        with self._lock:
            if choice.name not in self._runtimes:
                network = choice.external and self.mode in ("provision", "delete")
                self._runtimes[choice.name] = make_runtime(choice.source, choice.manifest, network, self.sandbox)
            return self._runtimes[choice.name]

    def timeout(self, choice: Choice, instance: str) -> float:
        return self.budget.for_call(choice.manifest, Where(plugin=instance))

    # -- calls ---------------------------------------------------------------------------------------

    def prepare_args(self, inv: Invocation, choice: Choice) -> Invocation:
        """argsSchema before any call, then default_args and validate_args."""
        where = Where(plugin=inv.instance)
        problems = args_problems(choice.manifest, inv.args, where)
        if problems:
            raise DevlaneError(problems)
        rt = self.runtime(choice)
        if choice.manifest.has("DefaultArgs"):
            args = rt.default_args(replace(inv, operation="DefaultArgs"), self.timeout(choice, inv.instance))
            inv = replace(inv, args=args)
            problems = args_problems(choice.manifest, inv.args, where)
        if choice.manifest.has("ValidateArgs"):
            problems += rt.validate_args(replace(inv, operation="ValidateArgs"), self.timeout(choice, inv.instance))
        if problems:
            raise DevlaneError(problems)
        return inv

    def create(self, inv: Invocation, choice: Choice) -> Created:
        """One CreateFlow: secrets scrubbed from every message, network failures explained."""
        secrets = secret_values(inv.args, choice.manifest.args_schema)
        try:
            created = self._create(inv, choice)
        except DevlaneError as exc:
            raise sanitize(exc, secrets, network_allowed=choice.external and self.mode in ("provision", "delete")) \
                from None
        messages = [_scrubbed(p, secrets) for p in created.outcome.messages]
        return replace(created, outcome=replace(created.outcome, messages=messages))

    def _create(self, inv: Invocation, choice: Choice) -> Created:
        if not choice.external:
            return Created(self._create_flow(inv, choice), "ok")
        inv = self.prepare_args(inv, choice)
        key = input_hash(choice.name, self._digest(choice.source.path), request_document(inv, 0))
        if self.mode == "preview":  # never run: what provision recorded, or the pods as they are
            rec = choice.record
            if rec is None:
                return Created(Outcome([pod_spec(w) for w in inv.workloads], {}), "not provisioned")
            return Created(copy.deepcopy(rec.outcome), "replayed" if rec.input_hash == key else
                           "replayed (recorded for other inputs)")
        if self.mode == "render":
            rec = choice.record
            if rec is None or rec.input_hash != key:
                raise fail(f"the inputs of External plugin {choice.name} changed since `devlane provision` recorded "
                           "its result", Where(plugin=inv.instance),
                           f"re-provision: devlane provision --flow {inv.flow_id} (CI does this on PR update)",
                           code="plugin-reprovision")
            return Created(copy.deepcopy(rec.outcome), "replayed")
        outcome = self.runtime(choice).create_flow(inv, self.timeout(choice, inv.instance))
        record = Record(choice.name, inv.instance, inv.flow_id, key,
                        Outcome(outcome.pod_specs, outcome.config_map, outcome.resources, configs=outcome.configs))
        return Created(outcome, "provisioned", record)

    def _digest(self, path: Path) -> str:
        with self._lock:  # calls run on the pool's threads
            if path not in self._digests:
                self._digests[path] = plugin_digest(path)
            return self._digests[path]

    def _create_flow(self, inv: Invocation, choice: Choice) -> Outcome:
        """A pure plugin's CreateFlow: the stored outcome of the same call when there is one (`reuse`), else run."""
        rt = self.runtime(choice)
        key = outcome_key(rt, choice, inv, self._digest) if self.outcomes is not None else None
        if key is not None and self.outcomes is not None:
            rt.confined(rt.label(inv.operation), Where(plugin=inv.instance))  # this run's sandbox policy still holds
            stored = self.outcomes.get(key)
            if stored is not None:
                return stored
        inv = self.prepare_args(inv, choice)
        outcome = rt.create_flow(inv, self.timeout(choice, inv.instance))
        if key is not None and self.outcomes is not None:
            self.outcomes.put(key, outcome)
        return outcome

    def delete(self, state: FlowState, flow_id: str, args: dict, side_effects: SideEffects | None,
               secret_args: dict) -> list[Problem]:
        """`delete_flow` of one stored plugin state, with the exact stored config_map."""
        try:
            src, manifest = self.resolver.get(state.plugin)
            choice = Choice(state.plugin, src, manifest, dict(args),
                            manifest.side_effects == "External" or side_effects == "External", "delete")
            inv = Invocation("DeleteFlow", state.instance, flow_id, state.plugin, args=dict(args),
                             state=state.config_map)
            return self.runtime(choice).delete_flow(inv, self.timeout(choice, state.instance))
        except DevlaneError as exc:
            raise sanitize(exc, secret_values(secret_args, None), network_allowed=True) from None

    def validate_change(self, instance: str, plugin: str, old_args: dict, new_args: dict) -> list[Problem]:
        """A plugin's verdict on changing its args for a live flow (`devlane diff`); [] when it has no opinion."""
        src, manifest = self.resolver.get(plugin)
        if not manifest.has("ValidateChange"):
            return []
        choice = Choice(plugin, src, manifest, dict(new_args), False, "diff")
        inv = Invocation("ValidateChange", instance, "diff", plugin, args=dict(new_args), old_args=dict(old_args))
        return self.runtime(choice).validate_change(inv, self.timeout(choice, instance))
