"""`devlane lint`: every problem in the repository at once."""

from __future__ import annotations

import argparse
import json

from ..errors import tally
from .common import add_common, add_modes, options


def cmd_lint(args: argparse.Namespace) -> int:
    from .. import api

    problems = api.lint(options(args))
    errors = [p for p in problems if p.severity == "error"]
    if args.output == "json":
        print(json.dumps([p.as_dict() for p in problems], indent=2, sort_keys=True))
    else:
        for p in problems:
            print(f"{p.severity}: {p.format()}")
        print(tally(problems))
    return 1 if errors else 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    lint = sub.add_parser("lint", help="report every problem in the repository at once")
    add_common(lint, flow=False)
    add_modes(lint)
    lint.add_argument("-o", "--output", choices=["text", "json"], default="text")
    lint.set_defaults(handler=cmd_lint)
