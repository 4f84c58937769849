"""One command's context, built once from `Options`: the opened source, `.devlane.yaml` as the operator's policy
confines it, every stage's settings, the plugin host, the cache and the stored model, and the repository once
a command loads it (its first stage).

Like kustomize's `KustTarget`, everything a command's stages share goes in here once, so no stage
receives the command-line options; display flags (`--debug`, output formats) never get this far.
"""

from __future__ import annotations

import functools
import gc
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .core import anchored, deadline
from .core.cache import open_cache
from .core.fence import operator_dirs
from .core.source import Source, open_source
from .errors import DevlaneError, Problem, Where, as_errors
from .render.inputs import load
from .render.inputs.load import Loaded
from .render.model.topology import build_model
from .render.settings import trust
from .render.settings.grants import Grants
from .render.settings.render_settings import RenderSettings, render_settings
from .render.settings.repo_config import Isolation, Routing, read_config
from .render.stored.memo import ModelMemo

if TYPE_CHECKING:  # the plugin host loads with the first command that runs or resolves a plugin (`Session.host`)
    from .host.choose import RunMode
    from .host.plugin_host import PluginHost


@dataclass(frozen=True)
class Options:
    """Where to read from and how to run plugins; flow-independent."""

    repo: Path = Path(".")
    ref: str | None = None
    routing: Routing | None = None
    isolation: Isolation | None = None  # --isolation, over .devlane.yaml `isolation`
    plugin_sources: dict[str, str] = field(default_factory=dict)
    plugin_timeout: float | None = None  # per plugin call (--plugin-timeout)
    timeout: float | None = None  # the whole command (--timeout)
    timeout_by: str = deadline.TIMEOUT_FLAG  # what set `timeout`, for its message (the CMP: ARGOCD_EXEC_TIMEOUT)
    jobs: int | None = None
    strict: bool = False  # --strict: unwired edges and Secret-held addresses are errors
    top: Path | None = None  # the whole repository, when `repo` is a directory inside it that git cannot tell
    cache: bool = True  # reuse parses and builds from $DEVLANE_CACHE (--no-cache: off)
    allow_weak_sandbox: bool = False  # --allow-weak-sandbox: the operator lets unpinned plugins run with layers missing
    allow_paths: tuple[str, ...] = ()  # --allow-path: directories beside the repository its inputs may name
    policy_file: str | None = None  # --policy: the operator's relaxations (default $DEVLANE_POLICY)
    trusted_ref: str | None = None  # --trusted-ref: the ref whose .devlane.yaml may relax what the head's cannot
    ttl: str | None = None  # --ttl: the lane's time to live (30m, 72h, 7d), over lifecycle.ttl
    created: str | None = None  # --created: RFC 3339 time the ttl counts from (default: the commit's time)
    state_root: Path | None = None  # where `.devlane/state/` (provision records) lives: the repository, or a lanes
    # branch's checkout (`renderer.lanes`)


_retained: list[Session] = []
_retaining = False


def retain_until_exit() -> None:
    """Keep every closed session's objects alive, for a process that ends right after its command (the CLI
    then exits with `os._exit`): freeing a repository's million objects one by one costs 0.05-0.1 s at
    5,000 services, and nobody needs the memory back."""
    global _retaining
    _retaining = True


def _instances_at(source: Source | None, allowed: tuple[str, ...],
                  until: float | None) -> dict[str, tuple[str, ...]]:
    """Per instance, the plugins its definition names (its plugin, then its implementations) in the repository at
    `source` (the trusted ref): what a grant keyed by an instance is for. Read once, when such a grant is used."""
    if source is None:
        return {}
    try:
        loaded = load.read(source, collect=True, allowed=allowed, deadline=until)
    except DevlaneError:  # a trusted ref that does not load names no instance
        return {}
    model = build_model(loaded.documents, loaded.config.namespace)
    return {name: tuple(str(c["name"]) for c in pdef.candidates) for name, pdef in model.plugin_defs.items()}


def _end_git(source: Source) -> None:
    """The git processes a `--ref` source keeps running (GitPython's `cat-file --batch`) end with the command (a
    read of a result afterwards starts them again, for as long as it needs)."""
    repo = getattr(source, "repo", None)
    if repo is not None:
        repo.close()


EXPLAINING = frozenset({"skipped-inputs"})  # warnings a failed command still shows: why the repository looks empty


class Session:
    """Use as a context manager: `close()` stops every plugin the command started."""

    def __init__(self, options: Options, mode: RunMode = "render", collect: bool = False):
        self.started = time.monotonic()  # the --timeout budget covers the whole command
        self.options = options
        self.root = Path(options.repo)
        self.flows: frozenset[str] = frozenset()  # the flows beside this one in the output directory, once it is open
        anchored.reached_in_place(self.root)  # not through a link of the checkout that leads out of it
        # The cyclic garbage collector is paused for the command: a repository's objects are about a million
        # acyclic containers, and each full collection would walk them all (a third of a warm render's time).
        self._collecting = gc.isenabled()
        gc.disable()
        # --timeout bounds every stage from here on, the ones in this process too (`core.deadline`)
        self._deadline = deadline.Deadline(options.timeout, self.started, options.timeout_by) \
            if options.timeout is not None else None
        if self._deadline is not None:
            self._deadline.enter()
        try:
            self._open(options, mode, collect)
        except BaseException as exc:
            self._restore_gc()
            self._end_deadline(exc)
            raise

    def _open(self, options: Options, mode: RunMode, collect: bool) -> None:
        if not collect:  # a command that may run plugins (lint and inspection run none): probe the sandbox meanwhile
            from .host.confine import probe_soon

            probe_soon()
        self.collect = collect
        self.mode = mode
        self.source = open_source(self.root, options.ref)
        self.cache = open_cache(options.cache)
        self.memo = ModelMemo(self.cache) if self.cache is not None else None  # the early cutoff
        self.allowed = operator_dirs(options.allow_paths)
        self.deadline = self.started + options.timeout if options.timeout is not None else None
        self.config_file = read_config(self.source, collect)
        trusted = trust.read_trusted(options.policy_file, open_source(self.root, options.trusted_ref)
                                     if options.trusted_ref else None)
        strict = options.strict or self.config_file.config.strict
        self.config, self.ignored = trust.confine(self.config_file.config, trusted, strict)
        self.grants = Grants(trusted, self.config.plugin_policy, self.root, strict,
                             functools.partial(_instances_at, trusted.ref, self.allowed, self.deadline))
        self.state_root = options.state_root or self.root
        self._loaded: Loaded | None = None
        self.said: list[Problem] = list(self.ignored)  # besides the loaded files' problems

    @functools.cached_property
    def host(self) -> PluginHost:
        """The plugin host, made when a stage first runs or resolves a plugin: lint reads its stored findings
        without loading the host's modules (`renderer.linting`)."""
        from .host.budget import Budget
        from .host.confine import Limits, SandboxPolicy
        from .host.plugin_host import PluginHost

        options = self.options
        budget = Budget(options.plugin_timeout, self.config.plugin_timeout, options.timeout, self.started,
                        options.timeout_by)
        return PluginHost(self.root.resolve(), options.plugin_sources, self.config.plugin_sources, self.source,
                          self.mode, budget, options.jobs,
                          SandboxPolicy(Limits().merged(self.config.plugin_limits), self.config.require_sandbox,
                                        options.allow_weak_sandbox), self.allowed,
                          records=open_source(options.state_root, None) if options.state_root else self.source,
                          cache=self.cache)

    def load(self) -> Loaded:
        """The repository's inputs, read once per command (the first stage of every command that reads them)."""
        if self._loaded is None:
            deadline.stage("loading the repository")
            self._loaded = load.read(self.source, self.collect, self.options.top, self.cache, self.allowed,
                                     self.deadline, self.memo, self.config_file)
            if self.cache is not None and self.cache.counters.writes:
                self.cache.evict()
            if self.cache is not None:  # shown with --debug
                self.said.append(Problem(self.cache.counters.summary(), Where(file=str(self.cache.root)),
                                         severity="info", code="cache"))
        return self._loaded

    def loading_problems(self) -> list[Problem]:
        """What loading found, what the trusted policy took out of the config, and the cache's counters."""
        return [*self.load().problems, *self.said]

    @property
    def loaded(self) -> Loaded:
        return self.load()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, _type: object, exc: BaseException | None, _tb: object) -> None:
        ended = self._deadline_ends()  # first: no alarm interrupts stopping the plugins
        try:
            if "host" in self.__dict__:  # made (`host`)
                self.host.close()
            _end_git(self.source)
            if self.grants.trusted.ref is not None:  # the trusted ref's git processes too
                _end_git(self.grants.trusted.ref)
            if self.memo is not None:
                self.memo.wait()
        finally:
            self._restore_gc()
            if _retaining:
                _retained.append(self)
        if isinstance(exc, deadline.TimedOut) and ended:
            raise exc.error() from exc

    def _deadline_ends(self) -> bool:
        """This session's deadline out of force; whether no other is left (this was the command's outermost)."""
        deadline_, self._deadline = self._deadline, None
        return deadline_.leave() if deadline_ is not None else deadline.current() is None

    def _end_deadline(self, exc: BaseException) -> None:
        """A session that did not open: its deadline out of force, and a timeout said as the command's error."""
        if self._deadline_ends() and isinstance(exc, deadline.TimedOut):
            raise exc.error() from exc

    def _restore_gc(self) -> None:
        """The collector back on. In a process that retains its sessions, what exists now is moved out of the
        collector's sight first (`gc.freeze`): the first collection after `enable` would otherwise walk every
        object the command made, once per generation (0.1 s of a warm render at 5,000 services)."""
        if self._collecting:
            if _retaining:
                gc.freeze()
            gc.enable()

    @functools.cached_property
    def settings(self) -> RenderSettings:
        """Every stage's settings, built once (a routing mode the isolation mode cannot work with raises here)."""
        return render_settings(self.config, self.options.routing, self.options.isolation, self.options.strict,
                               self.options.ttl, self.options.created)

    def stop_on_errors(self, problems: list[Problem]) -> None:
        """Stop on any error in `problems` (on any warning too, under `policy.warningsAsErrors`)."""
        if self.config.warnings_as_errors and any(p.severity == "warning" for p in problems):
            raise DevlaneError(as_errors([p for p in problems if p.severity != "info"]))
        errors = [p for p in problems if p.severity == "error"]
        if errors:  # with the warnings that say why objects the errors look for were not read
            raise DevlaneError([p for p in problems if p.severity == "warning" and p.code in EXPLAINING] + errors)
