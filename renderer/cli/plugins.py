"""`devlane plugins ...`: inspect (list, describe), supply (lock, fetch, prepare) and author (new, test)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..protocol.krm import RUNTIMES
from .common import Progress, add_common, add_plugin_source, add_weak_sandbox, repeat_pairs, repo_path, say, show
from .output import add_output, machine

if TYPE_CHECKING:
    from .. import api


def _options(args: argparse.Namespace) -> api.Options:
    from .. import api

    sources = repeat_pairs(getattr(args, "plugin_source", []), "--plugin-source")
    return api.Options(repo=repo_path(args), ref=args.ref, plugin_sources=sources, cache=args.cache,
                       allow_paths=tuple(args.allow_path or ()), policy_file=args.policy, trusted_ref=args.trusted_ref)


def _show(args: argparse.Namespace, kind: str, data: Any, as_text: Callable[[Any], str]) -> int:
    if not machine(args, kind, data if isinstance(data, dict) else {"plugins": data}):
        print(as_text(data).rstrip("\n"))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from ..views.inspect import catalogue, catalogue_text, collect, list_text

    if args.builtin:
        return _show(args, "PluginCatalogue", catalogue(), catalogue_text)
    return _show(args, "PluginList", [i.summary() for i in collect(_options(args)).plugins], list_text)


def cmd_describe(args: argparse.Namespace) -> int:
    from ..views.inspect import collect, describe_dict, describe_text, find

    return _show(args, "PluginDescription", describe_dict(find(collect(_options(args), builtin=args.name), args.name)),
                 describe_text)


def cmd_lock(args: argparse.Namespace) -> int:
    from .. import api
    from ..host.supply.lock import LOCK_FILE

    root = Path(args.repo).resolve()
    report = api.lock(_options(args), args.update, args.update_all, say)
    if report is None:
        say(f"no git plugin sources in {root}; {LOCK_FILE} is not needed")
        return 0
    state = f"wrote {root / LOCK_FILE}" if report.changed else f"{LOCK_FILE} is up to date"
    say(f"{state}: {len(report.lock.entries)} plugin(s) pinned ({len(report.pinned)} new, {len(report.moved)} "
        f"moved, {len(report.kept)} kept, {len(report.dropped)} dropped)")
    if report.pinned or report.moved:
        say("next: `devlane plugins fetch` (and `devlane plugins prepare` for plugins with a requirements.txt)")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from .. import api
    from ..host.supply import plugin_cache
    from ..host.supply.lock import LOCK_FILE

    report = api.fetch(_options(args), say)
    if report is None:
        say(f"no git plugins pinned in {LOCK_FILE}; nothing to fetch")
        return 0
    say(f"{len(report.fetched)} plugin(s) fetched, {len(report.cached)} already cached, in {plugin_cache.cache_root()}")
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    from .. import api
    from ..host.supply.venvs import prepare

    started = time.monotonic()
    targets, warnings = api.prepare_targets(_options(args))
    show(warnings)
    pip_args = (["--no-index"] if args.no_index else []) + [a for d in args.find_links for a in ("--find-links", d)]
    report = prepare(targets, pip_args, Progress())
    say(report.summary(len(targets), time.monotonic() - started))
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from ..authoring.scaffold import scaffold

    dest = scaffold(args.name, args.runtime, Path(args.dir))
    print(f"created {args.runtime} plugin {args.name} in {dest}")
    for f in sorted(p for p in dest.rglob("*") if p.is_file()):
        print(f"  {f.relative_to(dest).as_posix()}")
    print(f"next: devlane plugins test {dest}")
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    from ..authoring.golden import run_cases

    run = run_cases(Path(args.dir), update=args.update, only=args.case or None, allow_weak=args.allow_weak_sandbox)
    for case in run.cases:
        print(f"{case.status} {case.name}")
        if case.detail:
            print("".join(f"    {line}\n" for line in case.detail.rstrip("\n").splitlines()), end="")
    parts = [f"{run.count('ok')} passed", f"{run.count('FAIL')} failed"]
    parts += [f"{run.count('updated')} updated"] if run.count("updated") else []
    print(f"{', '.join(parts)} ({run.plugin}, runtime {run.runtime})")
    return 1 if run.count("FAIL") else 0


def _repo_command(sub: argparse._SubParsersAction, name: str, handler: Callable[[argparse.Namespace], int],
                  help: str, description: str | None = None, plugin_arg: bool = False) -> argparse.ArgumentParser:
    """A `plugins` subcommand that works on a repository ([NAME] REPO, --ref, --debug)."""
    parser = sub.add_parser(name, help=help, description=description)
    if plugin_arg:
        parser.add_argument("name", metavar="NAME",
                            help="plugin name as in the plugin definitions, or an instance servicename")
    add_common(parser, flow=False)
    parser.set_defaults(handler=handler)
    return parser


def add_parsers(sub: argparse._SubParsersAction) -> None:
    plugins = sub.add_parser("plugins", help="lock, fetch, prepare, inspect, scaffold and test plugins")
    sub = plugins.add_subparsers(dest="plugins_command", required=True, metavar="SUBCOMMAND")
    lock = _repo_command(sub, "lock", cmd_lock, "pin every git plugin source to a commit in devlane.lock",
                         "Resolve each git plugin source (plugins.sources git entries, and plugin names such as "
                         "github.com/org/repo) to a commit and write devlane.lock. Entries whose URL and ref did not "
                         "change keep their commit; new commits upstream are picked up only with --update.")
    lock.add_argument("--update", action="append", default=[], metavar="NAME",
                      help="move this plugin to the newest commit of its ref (repeatable)")
    lock.add_argument("--update-all", action="store_true", help="move every plugin to the newest commit of its ref")
    _repo_command(sub, "fetch", cmd_fetch, "put the locked plugin commits into the cache ($DEVLANE_CACHE)",
                  "Export the commit devlane.lock pins for each git plugin into $DEVLANE_CACHE/plugins/<commit> "
                  "(default cache: ~/.cache/devlane). Already cached commits are kept.")
    prep = _repo_command(sub, "prepare", cmd_prepare,
                         "build the virtualenvs of plugins with a requirements.txt (pip runs only here)",
                         "Build one virtualenv per distinct requirements.txt among the plugins the repository uses "
                         "(git plugins must be fetched first). Render never runs pip.")
    add_plugin_source(prep, "use the plugin in PATH for plugin NAME (as render does)")
    prep.add_argument("--no-index", action="store_true", help="pass --no-index to pip (offline installs)")
    prep.add_argument("--find-links", action="append", default=[], metavar="DIR_OR_URL",
                      help="pass --find-links to pip (repeatable)")
    shown = _repo_command(sub, "list", cmd_list, "show each plugin in use: source, runtime, capabilities, side effects")
    described = _repo_command(sub, "describe", cmd_describe,
                              "everything about one plugin: manifest, args schema, uses, sandbox", plugin_arg=True)
    for parser in (shown, described):
        add_output(parser)
        add_plugin_source(parser, "resolve plugin NAME to PATH, as render would")
    shown.add_argument("--builtin", action="store_true",
                       help="list devlane's built-in plugins (usable by name in any repository) instead; REPO is "
                            "not read")
    n = sub.add_parser("new", help="scaffold a working plugin: plugin.yaml, args schema, implementation, tests")
    n.add_argument("name", metavar="NAME", help="plugin name (DNS-style: lowercase, digits, '-', '.')")
    n.add_argument("--runtime", choices=list(RUNTIMES), default="kardinal-python",
                   help="kardinal-python (main.py), exec (an executable), grpc (a plugin server)")
    n.add_argument("--dir", default=".", metavar="DIR", help="create DIR/NAME (default: ./NAME)")
    n.add_argument("--debug", action="store_true", help="show tracebacks")
    n.set_defaults(handler=cmd_new)
    t = sub.add_parser("test", help="run a plugin's golden cases (testdata/<case>/) and diff the output")
    t.add_argument("dir", metavar="DIR", help="the plugin directory")
    t.add_argument("--update", action="store_true", help="rewrite expected.yaml with the current output")
    t.add_argument("--case", action="append", default=[], metavar="CASE", help="run only this case (repeatable)")
    t.add_argument("--debug", action="store_true", help="show tracebacks and plugin stderr")
    add_weak_sandbox(t)
    t.set_defaults(handler=cmd_test)
