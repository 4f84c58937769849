"""`devlane plugins ...`: each subcommand group lives in its own module and registers here.

A subcommand sets `handler` (a function of the parsed args returning the exit code) with
`parser.set_defaults(handler=...)`; `cli.main` calls it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from . import cli_author, cli_inspect, cli_sources


def add_parsers(sub: argparse._SubParsersAction, common: Callable[..., None]) -> None:
    """Register every `devlane plugins` subcommand. `common(parser, flow=False)` adds REPO/--ref/--debug."""
    cli_sources.add_parsers(sub, common)
    cli_inspect.add_parsers(sub, common)
    cli_author.add_parsers(sub, common)
