"""Command line: a thin layer over `renderer.api`.

Exit codes: 0 success, 1 render or validation error, 2 usage error. User errors print one clear
message each and no traceback unless `--debug`.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from . import __version__, api, cli_cmp, cli_diff, cli_plugins, cli_preview
from .cli_args import repeat_pairs
from .errors import DevlaneError, Problem
from .flow import parse_env_args, parse_service_args, parse_template_args, validate_flow_id
from .validate import DEFAULT_KUBE_VERSION


def _common(p: argparse.ArgumentParser, flow: bool = True) -> None:
    p.add_argument("repo", nargs="?", default=".", help="repository directory (default: .)")
    p.add_argument("--ref", help="render this git ref (branch, tag, commit) without checking it out")
    p.add_argument("--debug", action="store_true", help="show tracebacks and plugin stderr")
    if not flow:
        return
    g = p.add_argument_group("flow")
    g.add_argument("--flow", dest="flow_id", metavar="ID", help="flow id: DNS-1123 label, at most 40 characters")
    g.add_argument("--service", action="append", default=[], metavar="NAME=IMAGE", help="target and its image")
    g.add_argument("--env", action="append", default=[], metavar="NAME:KEY=VALUE", help="env override")
    g.add_argument("--flow-file", type=Path, metavar="FILE", help="a kind: Flow file")
    g.add_argument("--template", type=Path, metavar="FILE", help="Kardinal template (Services with annotations)")
    g.add_argument("--template-arg", action="append", default=[], metavar="KEY=VALUE")
    g.add_argument("--template-args", type=Path, metavar="FILE", help="YAML/JSON file of template arguments")
    g.add_argument("--routing", choices=["none", "gateway-api", "istio"], help="routing backend (default: none)")
    g.add_argument("--plugin-source", action="append", default=[], metavar="NAME=PATH",
                   help="use the plugin in PATH for plugin NAME")  # fmt: skip
    g.add_argument("--plugin-timeout", type=float, metavar="SECONDS",
                   help="per plugin call; overrides plugin.yaml timeoutSeconds (default 60)")  # fmt: skip
    g.add_argument("--services", choices=["auto"],
                   help="auto: target the services changed between --base and the rendered ref (git)")
    g.add_argument("--base", metavar="REF", help="the pull request's base (for --services auto, and diff)")
    g.add_argument("--image-template", metavar="T",
                   help="image of each auto target, e.g. 'ghcr.io/acme/{service}:{short_sha}' "
                        "(fields: service, sha, short_sha, pr, branch)")  # fmt: skip
    g.add_argument("--pr", metavar="N", help="pull request number for {pr} (default: $DEVLANE_PR or $GITHUB_REF)")
    g.add_argument("--timeout", type=float, metavar="SECONDS", help="budget for the whole render (default: none)")
    g.add_argument("--jobs", type=int, metavar="N", help="plugin instances run at once (default: CPUs, at most 8)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="devlane",
        description="Render per-pull-request dev lanes from Kardinal-annotated Kubernetes manifests, offline.",
    )
    parser.add_argument("--version", action="version", version=f"devlane {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    render = sub.add_parser("render", help="render a flow as files Argo CD or Flux apply")
    _common(render)
    out = render.add_mutually_exclusive_group()
    out.add_argument("--out", type=Path, metavar="DIR", help="output root (default: <repo>/rendered)")
    out.add_argument("--stdout", action="store_true", help="print the objects as one YAML stream")
    render.add_argument("--validate", choices=["none", "strict"], default="none",
                        help="strict: validate every rendered object offline before writing (default: none)")
    render.add_argument("--kube-version", default=DEFAULT_KUBE_VERSION, metavar="X.Y",
                        help=f"Kubernetes version whose schemas --validate uses (default {DEFAULT_KUBE_VERSION})")
    render.add_argument("--crds", action="append", default=[], type=Path, metavar="DIR",
                        help="CustomResourceDefinitions to validate custom resources against (repeatable)")
    plan = sub.add_parser("plan", help="explain which services get a dev version, and why")
    _common(plan)
    plan.add_argument("-o", "--output", choices=["text", "json"], default="text")
    lint = sub.add_parser("lint", help="report every problem in the repository at once")
    _common(lint, flow=False)
    lint.add_argument("-o", "--output", choices=["text", "json"], default="text")
    provision = sub.add_parser("provision", help="run External plugins for real and record their results (CI)")
    _common(provision)
    delete = sub.add_parser("delete", help="call each plugin's delete_flow, then remove the rendered flow")
    _common(delete, flow=False)
    delete.add_argument("--flow", dest="flow_id", metavar="ID", required=True, help="the flow to delete")
    delete.add_argument("--out", type=Path, metavar="DIR", help="output root the flow was rendered to")
    delete.add_argument("--plugin-source", action="append", default=[], metavar="NAME=PATH")
    delete.add_argument("--plugin-timeout", type=float, metavar="SECONDS")
    cli_cmp.add_parsers(sub, _common)
    cli_diff.add_parsers(sub, _common)
    cli_preview.add_parsers(sub, _common)
    plugins = sub.add_parser("plugins", help="lock, fetch, prepare, inspect, scaffold and test plugins")
    plugins_sub = plugins.add_subparsers(dest="plugins_command", required=True, metavar="SUBCOMMAND")
    cli_plugins.add_parsers(plugins_sub, _common)
    return parser


def _options(args: argparse.Namespace) -> api.Options:
    return api.Options(
        repo=Path(args.repo),
        ref=args.ref,
        routing=getattr(args, "routing", None),
        plugin_sources=repeat_pairs(getattr(args, "plugin_source", []), "--plugin-source"),
        plugin_timeout=getattr(args, "plugin_timeout", None),
        timeout=getattr(args, "timeout", None),
        jobs=getattr(args, "jobs", None),
        debug=args.debug,
    )


def _flow(args: argparse.Namespace) -> api.FlowRequest:
    if args.flow_id is None and args.flow_file is None:
        raise DevlaneError("a flow is required: pass --flow ID --service NAME=IMAGE, or --flow-file FILE", 2)
    if args.flow_id is not None:
        validate_flow_id(args.flow_id)  # refused before anything is read or written
    images = parse_service_args(args.service)
    if getattr(args, "services", None) == "auto":
        images = {**_auto_targets(args), **images}  # explicit --service flags win
    return api.FlowRequest(
        flow_id=args.flow_id,
        images=images,
        env=parse_env_args(args.env),
        flow_file=args.flow_file,
        template=args.template,
        template_args=parse_template_args(args.template_arg),
        template_args_file=args.template_args,
    )


def _auto_targets(args: argparse.Namespace) -> dict[str, str]:
    """`--services auto`: the services changed between --base and the rendered ref, with templated images."""
    from .changes import changed_services, image_for, template_fields

    if not args.base or not args.image_template:
        raise DevlaneError("--services auto needs --base REF and --image-template T", exit_code=2)
    repo = Path(args.repo)
    changes = changed_services(repo, args.base, args.ref)
    if not changes:
        raise DevlaneError(Problem(f"--services auto: no service changed between {args.base} and {args.ref or 'HEAD'}",
                                   hint="a flow must change at least one service; pass --service NAME=IMAGE"))
    fields = template_fields(repo, args.ref, args.pr)
    for c in changes:
        print(f"devlane: target {c.service}: {c.reason}", file=sys.stderr)
    return {c.service: image_for(args.image_template, c.service, fields) for c in changes}


def _warn(problems: list[Problem]) -> None:
    for p in problems:
        print(f"devlane: warning: {p.format()}", file=sys.stderr)


def cmd_render(args: argparse.Namespace) -> int:
    request = _flow(args)
    options = _options(args)
    flow = api.resolve_flow(request)
    result = api.render(options, flow)
    _warn(result.warnings)
    if args.validate == "strict":
        report = api.validate(options, result, args.kube_version, args.crds)
        if report.unchecked:
            _warn([Problem(f"no CRD for {', '.join(report.unchecked)}: not validated (unchecked)",
                           hint="pass --crds DIR with the CustomResourceDefinitions your cluster runs")])
        if report.problems:
            raise DevlaneError(report.problems)
        print(f"devlane: validated {report.checked} objects against Kubernetes {args.kube_version} (strict)",
              file=sys.stderr)  # fmt: skip
    if args.stdout:
        sys.stdout.write(result.stream())
        return 0
    paths = api.write(result, api.output_dir(options, args.out))
    for rendered, path in zip(result.flows, paths, strict=True):
        print(f"devlane: rendered flow {rendered.flow_id}: {len(rendered.files)} objects in {path}", file=sys.stderr)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    flow = api.resolve_flow(_flow(args))
    the_plan, warnings = api.plan(_options(args), flow)
    _warn(warnings)
    if args.output == "json":
        print(json.dumps(the_plan.as_dict(), indent=2, sort_keys=True))
        return 0
    print(f"flow {the_plan.flow_id} (routing {the_plan.routing})")
    rows = [the_plan.decisions[n] for n in sorted(the_plan.decisions)]
    width = max([len(d.name) for d in rows] + [7])
    print(f"  {'SERVICE':<{width}}  {'VERSION':<9}  WHY")
    for d in rows:
        label = d.version + (" (ext)" if d.kind == "external" else "")
        print(f"  {d.name:<{width}}  {label:<9}  {'; '.join(d.reasons)}")
    if the_plan.instances:
        print("plugins, in run order:")
        for i, inst in enumerate(the_plan.instances, 1):
            print(f"  {i}. {inst.servicename} ({inst.flow_uuid}) for {', '.join(inst.dependents)}")
            choice = the_plan.choices.get(inst.servicename)
            if choice:
                print(f"     uses {choice['name']} ({choice['runtime']}): {choice['reason']}")
                for skipped in choice["skipped"]:
                    print(f"     skipped {skipped['name']}: {skipped['reason']}")
    if the_plan.steps:
        print("pipeline steps (.devlane.yaml), in order:")
        for step in the_plan.steps:
            choice = step["choice"]
            print(f"  {step['stage']:<11}  {step['name']}: {choice['name']} ({choice['runtime']}, {step['behavior']})")
    return 0


def cmd_provision(args: argparse.Namespace) -> int:
    flow = api.resolve_flow(_flow(args))
    result, paths = api.provision(_options(args), flow)
    _warn(result.warnings)
    for path in paths:
        print(f"devlane: recorded {path}", file=sys.stderr)
    if not paths:
        print(f"devlane: flow {flow.id} uses no External plugin; nothing to provision", file=sys.stderr)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    validate_flow_id(args.flow_id)
    result = api.delete(_options(args), args.flow_id, args.out)
    _warn(result.messages)
    for instance in result.deleted:
        print(f"devlane: delete_flow done: {instance}", file=sys.stderr)
    for path in result.removed:
        print(f"devlane: removed {path}", file=sys.stderr)
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    problems = api.lint(_options(args))
    errors = [p for p in problems if p.severity == "error"]
    if args.output == "json":
        print(json.dumps([p.as_dict() for p in problems], indent=2, sort_keys=True))
    else:
        for p in problems:
            print(f"{p.severity}: {p.format()}")
        print(f"{len(errors)} error(s), {len(problems) - len(errors)} warning(s)")
    return 1 if errors else 0


COMMANDS = {"render": cmd_render, "plan": cmd_plan, "lint": cmd_lint, "provision": cmd_provision,
            "delete": cmd_delete}


def _dispatch(args: argparse.Namespace) -> int:
    """Subcommand groups register their handler as `args.handler`; top-level commands use COMMANDS."""
    handler = getattr(args, "handler", None)
    return handler(args) if handler is not None else COMMANDS[args.command](args)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        return _dispatch(args)
    except DevlaneError as exc:
        if debug:
            traceback.print_exc()
        for p in exc.problems:
            print(f"devlane: error: {p.format()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug in devlane, not a user error
        if debug:
            raise
        print(f"devlane: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
              file=sys.stderr)  # fmt: skip
        return 1


if __name__ == "__main__":
    sys.exit(main())
