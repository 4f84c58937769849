"""`devlane render`: render a flow as files Argo CD or Flux apply (or one stream on stdout)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DevlaneError, Problem, UsageError
from ..views.validate import DEFAULT_KUBE_VERSION
from .common import add_common, add_lanes, flow_input, lanes_ref, options, say, say_targets, show
from .output import add_output, machine, problems

if TYPE_CHECKING:
    from .. import api
    from ..lanes.branch import LanesRef


def cmd_render(args: argparse.Namespace) -> int:
    from ..render.plan.targets import NoServiceChanged

    if args.stdout and args.output != "text":
        raise UsageError("--stdout prints the rendered objects and -o prints the render's report: pass one")
    flow = flow_input(args)  # a bad flow is refused before anything is read
    lanes = lanes_ref(args, (args.base,) if args.base else ())
    try:
        return _render(args, flow, lanes)
    except NoServiceChanged as exc:  # no lane: the one an earlier push of the pull request made goes
        if args.stdout or not exc.flow_id:
            raise
        removed = _remove_earlier(args, exc.flow_id, lanes)
        say(exc.problems[0].message + ("; removed the lane of an earlier push" if removed else ""))
        _json_out(args, {"flow": exc.flow_id, "lanesBranch": lanes.branch if lanes else None,
                         "action": "removed" if removed else "absent", "commit": None, "attempts": 0})
        return 0


def _remove_earlier(args: argparse.Namespace, flow_id: str, lanes: LanesRef | None) -> bool:
    """Delete the flow's lane if an earlier push made one (its plugins' delete_flow first); whether it did."""
    from .. import api

    if lanes is not None:
        return not api.delete_from_lanes(options(args), flow_id, lanes, say).gone
    return not api.delete(options(args), flow_id, args.out).gone


def _render(args: argparse.Namespace, flow: api.FlowInput, lanes: LanesRef | None) -> int:
    from .. import api

    if lanes is not None:
        lane = api.render_to_lanes(options(args), flow, lanes, lambda result: _check(args, result), say)
        done = lane.published
        state = f"committed {done.commit[:12]}" if done.action == "written" else "unchanged" + (
            f" at {done.commit[:12]}" if done.commit else "")
        say(f"rendered flow {lane.result.plan.flow_id}: {len(lane.result.main.files)} objects in "
            f"{', '.join(p.as_posix() for p in lane.paths)} on {lanes.where}: {state}")
        _json_out(args, {"flow": lane.result.plan.flow_id, "lanesBranch": lanes.branch, "action": done.action,
                         "commit": done.commit, "attempts": done.attempts})
        return 0
    if args.stdout:
        result = api.render(options(args), flow)
        _check(args, result)
        if result.mesh:
            show([Problem(f"routing istio: the VirtualServices of {', '.join(result.mesh.metadata['files'])} are "
                          "shared by every flow, so they are not in this stream", severity="warning",
                          hint="render into an output directory (--out DIR): its flows/_mesh/ lists every flow")])
        sys.stdout.write(result.stream())
        return 0
    with api.rendering(options(args), args.out) as run:
        result = run.render(flow)
        _check(args, result)  # before anything is written
        paths = run.write(result)
    for rendered, path in zip(result.flows, paths, strict=False):
        say(f"rendered flow {rendered.flow_id}: {len(rendered.files)} objects in {path}")
    for path in paths[len(result.flows):]:
        say(f"rebuilt {path}: the VirtualServices of every flow in the output directory")
    machine(args, "RenderReport", {
        "flow": result.plan.flow_id,
        "written": [{"flow": f.flow_id, "objects": len(f.files), "path": str(p)}
                    for f, p in zip(result.flows, paths, strict=False)],
        **problems(result.messages)})
    return 0


def _json_out(args: argparse.Namespace, doc: dict) -> None:
    """`--json-out FILE`: what the render did, for the step after it (the PR comment's lane line)."""
    if args.json_out is not None:
        import json

        try:
            args.json_out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        except OSError as exc:
            raise DevlaneError(Problem(f"cannot write --json-out {args.json_out}: {exc.strerror}")) from None


def _check(args: argparse.Namespace, result: api.RenderResult) -> None:
    """Show the render's targets and warnings; with `--validate strict`, refuse it before anything is written."""
    say_targets(result.targets, args.debug)
    show(result.messages, args.debug)
    if args.validate == "strict":
        from ..views.validate import validate

        report = validate(result, args.kube_version, args.crds)
        if report.unchecked:
            show([Problem(f"no CRD for {', '.join(report.unchecked)}: not validated (unchecked)", severity="warning",
                          hint="pass --crds DIR with the CustomResourceDefinitions your cluster runs")])
        if report.problems:
            raise DevlaneError(report.problems)
        say(f"validated {report.checked} objects against Kubernetes {args.kube_version} (strict)")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    render = sub.add_parser("render", help="render a flow as files Argo CD or Flux apply")
    add_common(render)
    out = render.add_mutually_exclusive_group()
    out.add_argument("--out", type=Path, metavar="DIR", help="output root (default: <repo>/rendered)")
    out.add_argument("--stdout", action="store_true", help="print the objects as one YAML stream")
    add_output(render)
    render.add_argument("--validate", choices=["none", "strict"], default="none",
                        help="strict: validate every rendered object offline before writing (default: none)")
    render.add_argument("--kube-version", default=DEFAULT_KUBE_VERSION, metavar="X.Y",
                        help=f"Kubernetes version whose schemas --validate uses (default {DEFAULT_KUBE_VERSION})")
    render.add_argument("--crds", action="append", default=[], type=Path, metavar="DIR",
                        help="CustomResourceDefinitions to validate custom resources against (repeatable)")
    life = render.add_argument_group("lifecycle")
    life.add_argument("--ttl", metavar="DURATION",
                      help="record an expiry in flow.metadata (30m, 72h, 7d; also lifecycle.ttl): `devlane gc "
                           "--expired` removes the lane after it")
    life.add_argument("--created", metavar="TIME",
                      help="RFC 3339 time the ttl counts from (default: the rendered commit's committer time)")
    add_lanes(render)
    render.add_argument("--json-out", type=Path, metavar="FILE",
                        help="with --lanes-branch: write what was done (flow, action, commit) as JSON to FILE")
    render.set_defaults(handler=cmd_render)
