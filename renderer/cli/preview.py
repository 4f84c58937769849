"""`devlane preview [REPO] --flow ... [--html FILE]`: the flow in a terminal, or as one offline HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_common, flow_input, options, say, say_targets, show
from .output import add_output, machine


def cmd_preview(args: argparse.Namespace) -> int:
    from .. import api
    from ..views.preview import build_view, console, print_terminal, render_html, view_dict

    flow = flow_input(args)
    result = api.render(options(args), flow)
    say_targets(result.targets, args.debug)
    show(result.messages, args.debug)
    view = build_view(result, args.all)
    if machine(args, "PreviewReport", view_dict(view)):
        return 0
    if args.html is not None:
        write_page(args.html, render_html(view))
        say(f"wrote {args.html}")
        return 0
    print_terminal(view, console())
    return 0


def write_page(path: Path, html: str) -> None:
    """The page, written whole or not at all; a directory that does not exist or cannot be written is one error
    naming it."""
    from ..core.files import write_atomic
    from ..errors import DevlaneError, Problem, Where

    where = Where(file=str(path))
    if not path.parent.is_dir():
        raise DevlaneError(Problem(f"--html: the directory {path.parent} does not exist", where,
                                   "create it first, or write the page elsewhere", code="output"))
    try:
        write_atomic(path, html)
    except OSError as exc:
        raise DevlaneError(Problem(f"--html: cannot write the page: {exc.strerror or exc}", where,
                                   "choose a file in a directory you can write", code="output")) from None


def add_parsers(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("preview", help="show the flow: services, dev vs baseline and why, plugins, entry URLs")
    add_common(parser)
    parser.add_argument("--html", type=Path, metavar="FILE", help="write one self-contained HTML page instead")
    add_output(parser)
    parser.add_argument("--all", action="store_true",
                        help="show every baseline service, not only those one hop from the lane")
    parser.set_defaults(handler=cmd_preview)
