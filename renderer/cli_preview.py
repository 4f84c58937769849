"""`devlane preview [REPO] --flow ... [--html FILE]`: the flow in a terminal, or as one offline HTML page."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def cmd_preview(args: argparse.Namespace) -> int:
    from . import api
    from .cli import _flow, _options
    from .preview import build_view, console, print_terminal, render_html

    view = build_view(_options(args), api.resolve_flow(_flow(args)))
    if args.html is not None:
        args.html.write_text(render_html(view), encoding="utf-8")
        print(f"devlane: wrote {args.html}", file=sys.stderr)
        return 0
    print_terminal(view, console())
    return 0


def add_parsers(sub: argparse._SubParsersAction, common: Callable[..., None]) -> None:
    """Register `preview`; `common` adds REPO and the flow options."""
    parser = sub.add_parser("preview", help="show the flow: services, dev vs baseline and why, plugins, entry URLs")
    common(parser)
    parser.add_argument("--html", type=Path, metavar="FILE", help="write one self-contained HTML page instead")
    parser.set_defaults(handler=cmd_preview)
