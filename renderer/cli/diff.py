"""`devlane diff [REPO] --base REF --head REF [flow options] [-o text|json|markdown]`.

Exit codes: 0 done (changes or not), 1 the flow does not render at head, a plugin refuses a change
(`validate_change`), or with `--fail-on changes` any difference; 2 usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DevlaneError, UsageError
from .common import add_common, add_lanes, flow_input, lanes_ref, options, say, say_targets
from .output import add_output, dumps, machine
from .output import report as machine_report

if TYPE_CHECKING:
    from ..views import diff


def _text(report: diff.Report) -> str:
    if not report.lane:
        return "\n".join(report.notes) + "\n"
    counts = report.counts()
    out = [f"flow {report.flow_id}: {counts['added']} added, {counts['changed']} changed, "
           f"{counts['removed']} removed ({report.base} → {report.head})"]
    out += [f"  note: {n}" for n in report.notes]
    for c in report.changes:
        out.append(f"  {c.status:<8} {c.label}  ({c.file})")
    for i in report.images:
        out.append(f"  image    {i['object']} {i['container']}: {i['base'] or '(none)'} → {i['head'] or '(none)'}")
    return "\n".join(out) + "\n" + "".join(c.diff for c in report.changes)


@contextlib.contextmanager
def _records(args: argparse.Namespace) -> Iterator[Path | None]:
    """Where the provision records are read: the lanes branch's tip (fetched into a temporary directory), else the
    repository's `.devlane/state/`."""
    lanes = lanes_ref(args, (args.base,))
    if lanes is None:
        yield None
        return
    from ..lanes.branch import Checkout

    with Checkout(lanes) as checkout:
        yield checkout.tree


def cmd_diff(args: argparse.Namespace) -> int:
    from ..views import diff, markdown

    if not args.base:
        raise UsageError("devlane diff needs --base REF (and --head REF, default HEAD)")
    flow = flow_input(args)
    try:
        with _records(args) as state_root:  # External plugins' provision records: the lanes branch's
            report = diff.run(replace(options(args), state_root=state_root), flow, args.base, args.head)
    except DevlaneError as exc:
        if args.output != "markdown" or isinstance(exc, UsageError):
            raise
        # the comment says the render failed and why (the sticky comment is replaced, never left green); the job fails
        flow_id = getattr(flow, "id", None) or getattr(getattr(flow, "request", None), "flow_id", None) or "flow"
        sys.stdout.write(markdown.failure(flow_id, args.base, args.head, exc.problems, args.artifact_url))
        raise
    say_targets(report.targets, args.debug)
    if args.debug and report.base_beside:
        say("the base rendered in a forked process beside the head's render")
    if args.json_out:
        args.json_out.write_text(dumps(machine_report("DiffReport", report.as_dict()), "json"))
    if machine(args, "DiffReport", report.as_dict()):
        pass
    elif args.output == "markdown":
        sys.stdout.write(markdown.render_markdown(report, report.entries, report.edges, args.artifact_url))
    else:
        sys.stdout.write(_text(report))
    for p in report.problems:
        print(f"devlane: error: {p.format()}", file=sys.stderr)
    if args.fail_on == "never":
        return 0
    if report.problems:
        return 1
    return 1 if args.fail_on == "changes" and report.changes else 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("diff", help="render a flow at base and head (no checkout) and compare the objects")
    add_common(parser)
    parser.add_argument("--head", default="HEAD", metavar="REF", help="the pull request's head (default HEAD)")
    add_output(parser, "markdown")
    parser.add_argument("--json-out", type=Path, metavar="FILE", help="also write the JSON report to FILE")
    parser.add_argument("--artifact-url", metavar="URL", help="where the full report is, for an over-long comment")
    parser.add_argument("--fail-on", choices=["problems", "changes", "never"], default="problems",
                        help="exit 1 when a plugin refuses a change (default), also on any difference, "
                             "or never (a head that does not render always fails)")
    add_lanes(parser, push=False)
    parser.set_defaults(handler=cmd_diff)
