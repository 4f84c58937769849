"""`devlane init [REPO] [--write | --config | --dry-run]`: infer Kardinal's annotations for a repository."""

from __future__ import annotations

import argparse

from .common import add_common, options
from .output import add_output, machine


def cmd_init(args: argparse.Namespace) -> int:
    from ..authoring import init, init_report

    result = init.run(options(args), args.mode)
    if not machine(args, "InitReport", result.as_dict()):
        print(init_report.text(result), end="")
    return 1 if any(p.severity == "error" for p in result.lint) else 0  # as `devlane lint`: a render would fail


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="infer dependencies, stateful and external services and entries; annotate them")
    add_common(p, flow=False)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", dest="mode", action="store_const", const="dry-run",
                      help="print the diff and what was inferred; change nothing (default)")
    mode.add_argument("--write", dest="mode", action="store_const", const="write",
                      help="annotate the manifests where the objects live (built objects: in .devlane.yaml)")
    mode.add_argument("--config", dest="mode", action="store_const", const="config",
                      help="write everything into .devlane.yaml (services:, plugins:), leaving the inputs untouched")
    add_output(p)
    p.set_defaults(handler=cmd_init, mode="dry-run")
