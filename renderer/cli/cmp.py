"""`devlane cmp generate | params`: the Argo CD Config Management Plugin commands (see `views/cmp.py`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import add_no_cache, say, show


def cmd_generate(args: argparse.Namespace) -> int:
    from ..views import cmp

    stream, warnings = cmp.generate(Path.cwd(), log=say, cache=args.cache)
    show(warnings, args.debug)
    sys.stdout.write(stream)
    return 0


def cmd_params(args: argparse.Namespace) -> int:
    from ..views import cmp

    print(json.dumps(cmp.announcements(Path.cwd()), indent=2))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register `cmp` on the top-level subparsers. Both commands run in the Application's path."""
    parser = sub.add_parser("cmp", help="Argo CD Config Management Plugin commands (run by the cmp-server)")
    cmds = parser.add_subparsers(dest="cmp_command", required=True, metavar="SUBCOMMAND")
    gen = cmds.add_parser("generate", help="print the flow's manifests for the Application (env set by Argo CD)")
    gen.add_argument("--debug", action="store_true", help="show tracebacks")
    add_no_cache(gen)
    gen.set_defaults(handler=cmd_generate)
    params = cmds.add_parser("params", help="print the dynamic parameter announcement (JSON)")
    params.add_argument("--debug", action="store_true", help="show tracebacks")
    params.set_defaults(handler=cmd_params)
