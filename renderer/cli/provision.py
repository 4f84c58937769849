"""`devlane provision` and `devlane delete`: CI on PR open and close, for plugins with side effects."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_common, add_plugin_source, add_weak_sandbox, flow_input, options, say, say_targets, show


def cmd_provision(args: argparse.Namespace) -> int:
    from .. import api

    flow = flow_input(args)
    result, paths = api.provision(options(args), flow)
    say_targets(result.targets)
    show(result.messages, args.debug)
    for path in paths:
        say(f"recorded {path}")
    if not paths:
        say(f"flow {result.plan.flow_id} uses no External plugin; nothing to provision")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from .. import api
    from ..render.plan.flow_spec import validate_flow_id

    validate_flow_id(args.flow_id)
    result = api.delete(options(args), args.flow_id, args.out)
    show(result.messages, args.debug)
    for instance in result.deleted:
        say(f"delete_flow done: {instance}")
    for path in result.removed:
        say(f"removed {path}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    provision = sub.add_parser("provision", help="run External plugins for real and record their results (CI)")
    add_common(provision)
    provision.set_defaults(handler=cmd_provision)
    delete = sub.add_parser("delete", help="call each plugin's delete_flow, then remove the rendered flow")
    add_common(delete, flow=False)
    delete.add_argument("--flow", dest="flow_id", metavar="ID", required=True, help="the flow to delete")
    delete.add_argument("--out", type=Path, metavar="DIR", help="output root the flow was rendered to")
    add_plugin_source(delete)
    delete.add_argument("--plugin-timeout", type=float, metavar="SECONDS")
    add_weak_sandbox(delete)
    delete.set_defaults(handler=cmd_delete)
