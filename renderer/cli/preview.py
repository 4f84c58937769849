"""`devlane preview [REPO] --flow ... [--html FILE]`: the flow in a terminal, or as one offline HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_common, flow_input, options, say, show


def cmd_preview(args: argparse.Namespace) -> int:
    from .. import api
    from ..views.preview import build_view, console, print_terminal, render_html

    flow = flow_input(args)
    result = api.render(options(args), flow)
    show(result.messages, args.debug)
    view = build_view(result)
    if args.html is not None:
        args.html.write_text(render_html(view), encoding="utf-8")
        say(f"wrote {args.html}")
        return 0
    print_terminal(view, console())
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("preview", help="show the flow: services, dev vs baseline and why, plugins, entry URLs")
    add_common(parser)
    parser.add_argument("--html", type=Path, metavar="FILE", help="write one self-contained HTML page instead")
    parser.set_defaults(handler=cmd_preview)
