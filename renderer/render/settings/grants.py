"""A grant belongs to an identity, not a name: the code the trusted side names for its key, never whatever a pull
request calls by that name.

A trusted source's `policy.plugins.<key>` entry (`trust.Grant`) is for (`host.resolve.Identity`):
- the code its own `digest:` names (any origin), or the git source its key names at its own `commit:`;
- else what the trusted side means by the key: a built-in's plain name is the built-in (a repository directory or
  a `plugins.sources` entry taking that name is refused by `resolve`, and `--plugin-source` code is not the
  built-in); at the trusted ref (`--trusted-ref`), a git source at the commit its `devlane.lock` pins, a
  repository plugin by its digest there, and for an instance's servicename or a step's name the plugins its
  definition or step names there;
- else (the trusted side names no code: a policy file without a trusted ref granting a plugin that is no
  built-in) only the operator's own `--plugin-source` code outside the repository: the operator chose that code
  and granted it, and nothing of the pull request's is either.
A call gets the grants of its plugin's name and its instance's (or step's) whose identity its code has, as far as
the head's entry for that key keeps them (`trust.confine`). A grant the code lacks the identity of is withheld
with a warning naming the plugin, the trusted identity and what the head resolved (an error under strict) — as
Argo CD binds a project's trust to a source repository, not to an Application's name.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import operator
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ...core.source import GitRefSource
from ...errors import DevlaneError, Problem, Where
from ...host.choose import Choice
from ...host.resolve import Identity, PluginSource, describe_source, git_location, plugin_digest, trusted_identity
from ...host.supply.lock import LOCK_FILE, Lock, parse_lock
from .repo_config import CONFIG_FILE, PluginAllow
from .trust import POLICY_ENV, Grant, Trusted

Definitions = Callable[[], dict[str, tuple[str, ...]]]  # per instance, the plugins its definition names at the ref


class Grants:
    """The trusted grants of one command, bound to identities (worked out once per key, lazily), and what each plugin
    call gets of them. `for_render` gives one render its own record of what was withheld."""

    def __init__(self, trusted: Trusted, caps: dict[str, PluginAllow], repo_root: Path, strict: bool = False,
                 definitions: Definitions | None = None):
        self.trusted = trusted
        self.caps = caps  # per key, what the head's .devlane.yaml keeps of the trusted grants (`trust.confine`)
        self.repo_root = Path(repo_root).resolve()
        self.strict = strict
        self._definitions = definitions  # read only when an instance's or step's key needs them
        # shared by every render's view (`for_render`): worked out once per command
        self._cache: dict[tuple[str, str], tuple[Identity, ...]] = {}
        self._digests: dict[Path, str] = {}
        self._read: dict[str, object] = {}  # the trusted ref's "lock" and "instances"
        self.withheld: list[Problem] = []
        self._said = 0
        self._seen: set[tuple[str, PluginSource]] = set()

    def for_render(self) -> Grants:
        """This command's grants with a record of their own (the identities and digests stay shared)."""
        view = copy.copy(self)
        view.withheld, view._said, view._seen = [], 0, set()
        return view

    # -- what a call gets ----------------------------------------------------------------------------------

    def allowed(self, plugin: str, instance: str, src: PluginSource) -> PluginAllow:
        """What a call of the code `src` (plugin `plugin`, as instance or step `instance`) is granted: the grants for
        either name whose identity the code has, as far as the head's entry for that name keeps them."""
        out = PluginAllow()
        for key in dict.fromkeys((plugin, instance)):
            grants = self.trusted.grants.get(key, ())
            got = [g.allow for g in grants if self._bound(key, g, src)]
            if got:
                out = out | (self.caps.get(key, PluginAllow()) & functools.reduce(operator.or_, got))
            elif grants:
                self._withhold(key, plugin, instance, src, grants)
        return out

    def review(self, calls: Iterable[tuple[str, Choice]]) -> list[Problem]:
        """What is withheld from the calls known before any plugin's output is used ((instance, choice) pairs)."""
        for instance, choice in calls:
            self.allowed(choice.name, instance, choice.source)
        return self.said()

    def said(self) -> list[Problem]:
        """What was withheld since the last call (each render says each once)."""
        out = self.withheld[self._said:]
        self._said = len(self.withheld)
        return out

    @contextlib.contextmanager
    def explaining(self) -> Iterator[None]:
        """An error (a plugin's output refused) after a grant was withheld says why the grant did not apply."""
        try:
            yield
        except DevlaneError as exc:
            if not self.withheld:
                raise
            raise exc.with_problems([*self.withheld, *exc.problems]) from None  # the cause first

    # -- identities ----------------------------------------------------------------------------------------

    def _bound(self, key: str, grant: Grant, src: PluginSource) -> bool:
        """Whether `grant` (for `key`) is for the code `src`."""
        pin = grant.pin
        if pin.digest or pin.commit:  # the entry names its code itself: every pin must hold
            return ((not pin.digest or self._digest(src.path) == pin.digest)
                    and (not pin.commit or any(self._has(i, src) for i in self._at_commit(key, pin.commit, grant))))
        named = self._named(key)
        if any(self._has(i, src) for i in named):
            return True
        defined = self._defined(key)  # read only now: most grants are for a plugin's own name
        if any(self._has(i, src) for i in defined):
            return True
        return not named and not defined and src.origin == "flag" and not src.path.is_relative_to(self.repo_root)

    def _has(self, identity: Identity, src: PluginSource) -> bool:
        return identity.matches(src, self._digest)

    def _digest(self, path: Path) -> str:
        if path not in self._digests:
            self._digests[path] = plugin_digest(path)
        return self._digests[path]

    def _named(self, key: str) -> tuple[Identity, ...]:
        """What the trusted side means by `key` as a plugin's name, or as a pipeline step's (its plugin)."""
        if ("named", key) not in self._cache:
            steps = [s.plugin for s in self.trusted.ref_config.pipeline if s.name == key]
            self._cache["named", key] = self._identified([key, *steps])
        return self._cache["named", key]

    def _defined(self, key: str) -> tuple[Identity, ...]:
        """The plugins the trusted ref's definition of instance `key` names (its plugin and implementations)."""
        if ("defined", key) not in self._cache:
            self._cache["defined", key] = self._identified(self._instances().get(key, ()))
        return self._cache["defined", key]

    def _instances(self) -> dict[str, tuple[str, ...]]:
        if self._definitions is None or not isinstance(self.trusted.ref, GitRefSource):
            return {}
        if "instances" not in self._read:
            self._read["instances"] = self._definitions()
        return self._read["instances"]  # type: ignore[return-value]

    def _identified(self, names: Iterable[str]) -> tuple[Identity, ...]:
        ref = self.trusted.ref if isinstance(self.trusted.ref, GitRefSource) else None
        out: dict[Identity, None] = {}
        for name in names:
            try:
                identity = trusted_identity(name, ref, self.trusted.ref_config.plugin_sources, self._trusted_lock())
            except DevlaneError:  # a trusted entry that names no usable source names no code
                identity = None
            if identity is not None:
                out[identity] = None
        return tuple(out)

    def _trusted_lock(self) -> Lock:
        if "lock" not in self._read:
            ref = self.trusted.ref
            try:
                self._read["lock"] = parse_lock(ref.read(LOCK_FILE) if ref is not None and ref.exists(LOCK_FILE)
                                                else None)
            except DevlaneError:  # a broken lock at the trusted ref pins nothing
                self._read["lock"] = Lock()
        return self._read["lock"]  # type: ignore[return-value]

    def _at_commit(self, key: str, commit: str, grant: Grant) -> tuple[Identity, ...]:
        """A `commit:` pin: the git source(s) the key names (itself, or its step's or instance's plugin) at it."""
        names = [key, *(s.plugin for s in self.trusted.ref_config.pipeline if s.name == key),
                 *self._instances().get(key, ())]
        by = f"the commit {grant.source} names"
        found = {Identity("git", loc[0], commit, loc[1], by, any_url=True): None for name in names
                 if (loc := git_location(name, self.trusted.ref_config.plugin_sources)) is not None}
        return tuple(found) or (Identity("git", "", commit, given_by=f"{by}, but {key} is no git source",
                                         any_url=True),)

    # -- what is said ----------------------------------------------------------------------------------------

    def _meant(self, key: str, grant: Grant) -> str:
        pin = grant.pin
        if pin.digest or pin.commit:
            pinned = [*([f"the code with digest {pin.digest} (the grant's digest)"] if pin.digest else []),
                      *([" or ".join(map(str, self._at_commit(key, pin.commit, grant)))] if pin.commit else [])]
            return " and ".join(pinned)
        named = (*self._named(key), *self._defined(key))
        if named:
            return " or ".join(map(str, named))
        where = ("at the trusted ref " + str(getattr(self.trusted.ref, "ref", ""))) if self.trusted.ref is not None \
            else "(no --trusted-ref is given)"
        return (f"no code the trusted side names ({key} is no built-in's name, and names no git source pinned, "
                f"repository plugin, step or instance {where}), so only the operator's --plugin-source code outside "
                "the repository")

    def _withhold(self, key: str, plugin: str, instance: str, src: PluginSource, grants: tuple[Grant, ...]) -> None:
        if (key, src) in self._seen:
            return
        self._seen.add((key, src))
        meant = "; ".join(f"{self._meant(key, g)} (granted by {g.source})" for g in grants)
        pin = f"commit: {src.commit}" if src.origin == "git" else f"digest: {self._digest(src.path)}"
        self.withheld.append(Problem(
            f"policy.plugins.{key} is not applied to plugin {plugin}: the grant is for {meant}, and {plugin} "
            f"here is {describe_source(src, self._digest)}",
            Where(plugin=instance),
            f"a grant follows the code the trusted side names, not a name; if this code is to have it, grant it in the "
            f"operator's policy file (--policy, ${POLICY_ENV}): policy: {{plugins: {{\"{key}\": {{..., {pin}}}}}}}, or "
            f"let the change reach the trusted base (--trusted-ref) so that its {CONFIG_FILE} and {LOCK_FILE} "
            "name it", severity="error" if self.strict else "warning", code="grant-identity"))
