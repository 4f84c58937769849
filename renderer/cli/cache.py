"""`devlane cache stats | clear`: the parse and build cache under `$DEVLANE_CACHE` (see `core/cache.py`)."""

from __future__ import annotations

import argparse
import time

from .output import add_output, machine


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GiB"  # pragma: no cover - the loop returns


def _age(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def cmd_stats(args: argparse.Namespace) -> int:
    from ..core.cache import SIZE_ENV, Cache, default_root

    cache = Cache(default_root())
    found = cache.stats()
    if machine(args, "CacheStats", found):
        return 0
    print(f"cache directory: {found['directory']}")
    print(f"entries: {found['entries']:,} ({_size(found['bytes'])}) of a {_size(found['limit'])} bound "
          f"(${SIZE_ENV} sets it)")
    for kind, row in found["kinds"].items():
        what = {"yaml": "parsed YAML files", "build": "built inputs", "model": "repository model(s)",
                "files": "file index(es)"}.get(kind.partition("-")[0], "entries")
        print(f"  {kind}: {row['entries']:,} {what}, {_size(row['bytes'])}")
    if found["entries"]:
        print(f"least recently used: {_age(found['oldest'])}; most recently used: {_age(found['newest'])}")
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    from ..core.cache import Cache, default_root

    cache = Cache(default_root())
    count, size = cache.clear()
    print(f"removed {count:,} entries ({_size(size)}) from {cache.root}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("cache", help="show or empty the parse and build cache ($DEVLANE_CACHE)")
    cmds = parser.add_subparsers(dest="cache_command", required=True, metavar="SUBCOMMAND")
    stats = cmds.add_parser("stats", help="where the cache is, its entries and size")
    add_output(stats)
    stats.add_argument("--debug", action="store_true", help="show tracebacks")
    stats.set_defaults(handler=cmd_stats)
    clear = cmds.add_parser("clear", help="delete every entry (safe while renders run: they re-parse)")
    clear.add_argument("--debug", action="store_true", help="show tracebacks")
    clear.set_defaults(handler=cmd_clear)
