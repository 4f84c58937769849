"""`devlane provision`, `devlane delete` and `devlane gc`: CI on PR open and close (plugins with side effects), and
the sweep that ends every lane whose pull request is gone or whose time is up."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import DevlaneError, Problem, UsageError
from .common import (
    add_common,
    add_lanes,
    add_plugin_source,
    add_weak_sandbox,
    flow_input,
    lanes_ref,
    options,
    say,
    say_targets,
    seconds,
    show,
)
from .live import add_kube, gc_cluster
from .output import add_output, machine, problems


def cmd_provision(args: argparse.Namespace) -> int:
    from .. import api

    flow = flow_input(args)
    lanes = lanes_ref(args, (args.base,) if args.base else ())
    if lanes is None:
        result, paths = api.provision(options(args), flow)
        where = ""
    else:
        lane = api.provision_to_lanes(options(args), flow, lanes, say)
        result, paths, where = lane.result, lane.paths, f" on {lanes.where}"
    say_targets(result.targets, args.debug)
    show(result.messages, args.debug)
    for path in paths:
        say(f"recorded {path}{where}")
    if not paths:
        say(f"flow {result.plan.flow_id} uses no External plugin; nothing to provision")
    machine(args, "ProvisionReport", {"flow": result.plan.flow_id, "recorded": [str(p) for p in paths],
                                      **problems(result.messages)})
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from .. import api
    from ..render.plan.flow_spec import validate_flow_id

    validate_flow_id(args.flow_id)
    lanes = lanes_ref(args)
    if lanes is None:
        result = api.delete(options(args), args.flow_id, args.out)
        where = str(result.flow_dir.parent)
    else:
        result = api.delete_from_lanes(options(args), args.flow_id, lanes, say)
        where = lanes.where
    machine(args, "DeleteReport", {"flow": args.flow_id, "gone": result.gone, "deleted": list(result.deleted),
                                   "removed": [str(p) for p in result.removed], **problems(result.messages)})
    if result.gone:
        say(f"flow {args.flow_id}: no lane in {where}; nothing to delete")
        return 0
    show(result.messages, args.debug)
    for instance in result.deleted:
        say(f"delete_flow done: {instance}")
    for path in result.removed:
        say(f"removed {path}" + (f" from {where}" if lanes is not None else ""))
    return 0


def cmd_gc(args: argparse.Namespace) -> int:
    from .. import api
    from ..render.settings.lifecycle import parse_time

    keep = None
    if args.keep is not None or args.keep_file is not None:
        keep = [*(args.keep or []), *(_keep_file(args.keep_file) if args.keep_file else [])]
    if args.cluster:
        return gc_cluster(args, keep)
    if args.yes:
        raise UsageError("--yes confirms the deletions of `gc --cluster`; the rendered flows' gc needs none "
                         "(--dry-run lists what it would remove)")
    now = parse_time(args.now, "--now") if args.now else None
    lanes = lanes_ref(args)
    result = api.gc(options(args), keep, args.expired, now, args.out, args.dry_run, lanes, say)
    machine(args, "GcReport", {"dryRun": result.dry_run, "doomed": dict(result.doomed),
                               "removed": [d.flow_id for d in result.removed], "kept": list(result.kept),
                               "failed": {f: [p.as_dict() for p in ps] for f, ps in result.failed.items()}})
    for flow_id, why in result.doomed.items():
        if result.dry_run:
            say(f"would remove flow {flow_id}: {why}")
    for done in result.removed:
        show(done.messages, args.debug)
        plugins = f" (delete_flow done: {', '.join(done.deleted)})" if done.deleted else ""
        say(f"removed flow {done.flow_id}: {result.doomed[done.flow_id]}{plugins}")
    if not result.doomed and not result.kept:
        say(f"no rendered flow in {result.lanes or result.flows}")
        return 0
    say(f"kept {len(result.kept)} flow{'s' if len(result.kept) != 1 else ''}" +
        (f": {', '.join(result.kept)}" if result.kept else ""))
    unreadable = [p for f, problems in result.unreadable.items() for p in [
        *problems, Problem(f"kept flow {f}: its expiry cannot be read, so --expired cannot tell whether it is over",
                           hint=f"re-render it, or remove it with `devlane delete --flow {f}`", code="expiry-kept")]]
    if result.failed or unreadable:  # each failure, then which flow it kept; the other flows went on
        raise DevlaneError([*unreadable, *(p for f, problems in result.failed.items() for p in [
            *(q for q in problems if q.code != "delete-kept"),
            Problem(f"kept flow {f}: its plugins' delete_flow failed; run `devlane gc` again once fixed",
                    code="delete-kept")])])
    return 0


def _keep_file(path: Path) -> list[str]:
    """One flow id a line (blank lines and `#` comments skipped), each checked, naming the line when it is none."""
    from ..render.plan.flow_spec import validate_flow_id

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--keep-file {path}: cannot read it ({exc})") from None
    out = []
    for number, line in enumerate(lines, 1):
        flow_id = line.split("#", 1)[0].strip()
        if not flow_id:
            continue
        try:
            validate_flow_id(flow_id)
        except DevlaneError as exc:
            raise UsageError(f"--keep-file {path} line {number}: {exc.problems[0].message}") from None
        out.append(flow_id)
    return out


def add_parsers(sub: argparse._SubParsersAction) -> None:
    provision = sub.add_parser("provision", help="run External plugins for real and record their results (CI)")
    add_common(provision)
    add_lanes(provision)
    add_output(provision)
    provision.set_defaults(handler=cmd_provision)
    delete = sub.add_parser("delete", help="call each plugin's delete_flow, then remove the rendered flow")
    add_common(delete, flow=False)
    add_output(delete)
    delete.add_argument("--flow", dest="flow_id", metavar="ID", required=True, help="the flow to delete")
    delete.add_argument("--out", type=Path, metavar="DIR", help="output root the flow was rendered to")
    add_plugin_source(delete)
    delete.add_argument("--plugin-timeout", type=seconds, metavar="DURATION")
    add_weak_sandbox(delete)
    add_lanes(delete)
    delete.set_defaults(handler=cmd_delete)
    gc = sub.add_parser("gc", help="remove every rendered flow not kept, or past its expiry (plugins' delete_flow, "
                                   "then the files)")
    add_common(gc, flow=False)
    add_output(gc)
    gc.add_argument("--keep", nargs="+", action="extend", metavar="FLOW",
                    help="flows to keep (the open pull requests'); every other rendered flow is removed")
    gc.add_argument("--keep-file", type=Path, metavar="FILE", help="flows to keep, one id a line (# comments)")
    gc.add_argument("--expired", action="store_true",
                    help="remove flows whose flow.metadata expiry (render --ttl) is at or before --now")
    gc.add_argument("--now", metavar="TIME", help="RFC 3339 time --expired compares with (default: now)")
    gc.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    gc.add_argument("--out", type=Path, metavar="DIR", help="output root (default: the configured output)")
    add_plugin_source(gc)
    gc.add_argument("--plugin-timeout", type=seconds, metavar="DURATION")
    add_weak_sandbox(gc)
    gc.add_argument("--cluster", action="store_true",
                    help="live: the lanes in the cluster (by devlane's labels) whose flow is not kept, listed; "
                         "deleted with --yes")
    gc.add_argument("--yes", action="store_true", help="with --cluster: delete them")
    add_kube(gc, namespace=False)
    add_lanes(gc)
    gc.set_defaults(handler=cmd_gc)
