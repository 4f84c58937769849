"""`devlane lint`: every problem in the repository at once."""

from __future__ import annotations

import argparse

from ..errors import tally
from . import output
from .common import add_common, add_modes, options
from .output import machine


def cmd_lint(args: argparse.Namespace) -> int:
    from ..linting import lint  # not the API: an unchanged repository's lint loads no render pipeline

    problems = lint(options(args))
    errors = [p for p in problems if p.severity == "error"]
    if not machine(args, "LintReport", output.problems(problems, notes=True)):
        for p in problems:
            print(f"{p.severity}: {p.format()}")
        print(tally(problems))
    return 1 if errors else 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    lint = sub.add_parser("lint", help="report every problem in the repository at once")
    add_common(lint, flow=False)
    add_modes(lint)
    output.add_output(lint)
    lint.set_defaults(handler=cmd_lint)
