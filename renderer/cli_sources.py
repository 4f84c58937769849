"""`devlane plugins lock | fetch | prepare`: pin git plugin sources, fill the cache, build virtualenvs.

- ``lock [--update NAME]... [--update-all]``: resolve every git plugin source the repository uses
  to a commit and write ``devlane.lock``; unchanged entries keep their pin.
- ``fetch``: export every locked commit into the cache (``$DEVLANE_CACHE``, default ``~/.cache/devlane``).
- ``prepare``: build one virtualenv per requirements hash (the only place pip runs).

Render then needs only the lock and the cache. Log lines go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .cli_args import repeat_pairs
from .errors import DevlaneError, Problem, Where


def _say(line: str) -> None:
    print(f"devlane: {line}", file=sys.stderr, flush=True)


def add_parsers(sub: argparse._SubParsersAction, common: Callable[..., None]) -> None:
    lock = sub.add_parser(
        "lock",
        help="pin every git plugin source to a commit in devlane.lock",
        description="Resolve each git plugin source (plugins.sources git entries, and plugin names such as "
        "github.com/org/repo) to a commit and write devlane.lock. Entries whose URL and ref did not change keep "
        "their commit; new commits upstream are picked up only with --update.",
    )
    common(lock, flow=False)
    lock.add_argument("--update", action="append", default=[], metavar="NAME",
                      help="move this plugin to the newest commit of its ref (repeatable)")  # fmt: skip
    lock.add_argument("--update-all", action="store_true", help="move every plugin to the newest commit of its ref")
    lock.set_defaults(handler=cmd_lock)

    fetch = sub.add_parser(
        "fetch",
        help="put the locked plugin commits into the cache ($DEVLANE_CACHE)",
        description="Export the commit devlane.lock pins for each git plugin into $DEVLANE_CACHE/plugins/<commit> "
        "(default cache: ~/.cache/devlane). Already cached commits are kept.",
    )
    common(fetch, flow=False)
    fetch.set_defaults(handler=cmd_fetch)

    prepare = sub.add_parser(
        "prepare",
        help="build the virtualenvs of plugins with a requirements.txt (pip runs only here)",
        description="Build one virtualenv per distinct requirements.txt among the plugins the repository uses "
        "(git plugins must be fetched first). Render never runs pip.",
    )
    common(prepare, flow=False)
    prepare.add_argument("--plugin-source", action="append", default=[], metavar="NAME=PATH",
                         help="use the plugin in PATH for plugin NAME (as render does)")  # fmt: skip
    prepare.add_argument("--no-index", action="store_true", help="pass --no-index to pip (offline installs)")
    prepare.add_argument("--find-links", action="append", default=[], metavar="DIR_OR_URL",
                         help="pass --find-links to pip (repeatable)")  # fmt: skip
    prepare.set_defaults(handler=cmd_prepare)


# --------------------------------------------------------------------------------------------------


def _load(args: argparse.Namespace, allow_ref: bool = True):
    """The repository's model, config and lock; a broken config or unreadable manifest stops here
    (a plugin definition that was not read must not lose its pin)."""
    from . import api
    from .config import parse_config
    from .lock import LOCK_FILE, parse_lock

    if args.ref and not allow_ref:
        raise DevlaneError(Problem("`devlane plugins lock` writes devlane.lock in the working tree, so it takes no "
                                   "--ref", hint="check the ref out, or drop --ref"), exit_code=2)  # fmt: skip
    repo = api.open_repo(api.Options(repo=Path(args.repo), ref=args.ref), collect=True)
    parse_config(repo.config_bytes)  # raises the config's problems
    repo.loaded.diagnostics.raise_if_errors()
    data = repo.source.read(LOCK_FILE) if repo.source.exists(LOCK_FILE) else None
    return repo, parse_lock(data)


def _specs(repo):
    from .lock import git_specs, used_plugin_names

    names = used_plugin_names(repo.model.plugin_defs.values(), repo.config.plugin_sources)
    return names, git_specs(Path(repo.options.repo).resolve(), names, repo.config.plugin_sources)


def cmd_lock(args: argparse.Namespace) -> int:
    from .lock import LOCK_FILE, lock_plugins

    repo, old = _load(args, allow_ref=False)
    _, specs = _specs(repo)
    root = Path(args.repo).resolve()
    if not specs and not old.present:
        _say(f"no git plugin sources in {root}; {LOCK_FILE} is not needed")
        return 0
    report = lock_plugins(root, specs, args.update, args.update_all, log=_say)
    state = f"wrote {root / LOCK_FILE}" if report.changed else f"{LOCK_FILE} is up to date"
    _say(f"{state}: {len(report.lock.entries)} plugin(s) pinned ({len(report.pinned)} new, {len(report.moved)} "
         f"moved, {len(report.kept)} kept, {len(report.dropped)} dropped)")  # fmt: skip
    if report.pinned or report.moved:
        _say("next: `devlane plugins fetch` (and `devlane plugins prepare` for plugins with a requirements.txt)")
    return 0


def _stale(specs, lock) -> list[Problem]:
    from .lock import LOCK_FILE

    out = []
    for name, spec in sorted(specs.items()):
        entry = lock.entries.get(name)
        if entry is None:
            out.append(Problem(f"plugin {name!r} ({spec.url} @ {spec.ref}) is not pinned in {LOCK_FILE}",
                               Where(plugin=name, file=LOCK_FILE), "run `devlane plugins lock`, then fetch again",
                               code="plugin-not-pinned"))  # fmt: skip
        elif (entry.url, entry.ref) != (spec.url, spec.ref):
            out.append(Problem(f"{LOCK_FILE} pins plugin {name!r} to {entry.url} @ {entry.ref}, but "
                               f"{spec.given_by} now says {spec.url} @ {spec.ref}", Where(plugin=name, file=LOCK_FILE),
                               "run `devlane plugins lock`, then fetch again", code="plugin-lock-stale"))  # fmt: skip
    return out


def cmd_fetch(args: argparse.Namespace) -> int:
    from . import cache
    from .lock import LOCK_FILE, fetch_plugins

    repo, lock = _load(args)
    _, specs = _specs(repo)
    problems = _stale(specs, lock)
    if problems:
        raise DevlaneError(problems)
    if not lock.entries:
        _say(f"no git plugins pinned in {LOCK_FILE}; nothing to fetch")
        return 0
    report = fetch_plugins(lock, log=_say)
    _say(f"{len(report.fetched)} plugin(s) fetched, {len(report.cached)} already cached, in {cache.cache_root()}")
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    from .sources import resolve_plugin_source
    from .venvs import prepare, target_for

    started = time.monotonic()
    repo, lock = _load(args)
    names, _ = _specs(repo)
    flags = repeat_pairs(args.plugin_source, "--plugin-source")
    primary = set(repo.config.plugin_sources) | {p.name for p in repo.model.plugin_defs.values()}
    root = Path(args.repo).resolve()
    targets, problems = [], []
    for name in names:
        try:
            src = resolve_plugin_source(name, root, flags, repo.config.plugin_sources, lock=lock)
        except DevlaneError as exc:
            if name in primary:
                problems += exc.problems
            else:  # an `implementations` fallback that is not available: render skips it too
                for p in exc.problems:
                    print(f"devlane: warning: fallback not prepared: {p.format()}", file=sys.stderr)
            continue
        if src.origin != "builtin":  # built-ins run inside devlane
            targets.append(target_for(name, src.path))
    if problems:
        raise DevlaneError(problems)
    pip_args = (["--no-index"] if args.no_index else []) + [a for d in args.find_links for a in ("--find-links", d)]
    report = prepare(targets, pip_args)
    _say(report.summary(len(targets), time.monotonic() - started))
    return 0
