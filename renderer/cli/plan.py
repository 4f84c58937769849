"""`devlane plan`: which services get a dev version and why; which plugin implementation runs."""

from __future__ import annotations

import argparse

from .common import add_common, flow_input, options, say_targets, show
from .output import add_output, machine


def cmd_plan(args: argparse.Namespace) -> int:
    from .. import api
    from ..render.checks import footprint, reach
    from ..views.preview import alias_of

    flow = flow_input(args)
    report = api.plan(options(args), flow)
    say_targets(report.targets, args.debug)
    show(report.warnings, args.debug)
    if machine(args, "PlanReport", report.as_dict()):
        return 0
    the_plan, choices = report.plan, report.choices
    mine = report.copies.get(the_plan.routing)
    others = [f"routing {mode} would need {n}" for mode, n in sorted(report.copies.items()) if mode != the_plan.routing]
    copies = f": {mine} dev copies" + (f"; {'; '.join(others)}" if others else "") if mine is not None else ""
    print(f"flow {the_plan.flow_id} (routing {the_plan.routing}){copies}")
    near = report.neighbours
    shown = sorted(the_plan.decisions) if args.all else sorted({*the_plan.lane(), *near})
    rows = [the_plan.decisions[n] for n in shown if n in the_plan.decisions]
    width = max([len(d.name) for d in rows] + [7])
    print(f"  {'SERVICE':<{width}}  {'VERSION':<9}  WHY")
    for d in rows:
        label = d.version + (" (ext)" if d.kind == "external" else "")
        why = near[d.name].why(d.reasons) if d.name in near and d.version == "baseline" else "; ".join(d.reasons)
        print(f"  {d.name:<{width}}  {label:<9}  {why}")
    rest = len(the_plan.decisions) - len(rows)
    if rest:
        print(f"  ... and {rest} other baseline service{'s' if rest != 1 else ''} the lane does not touch "
              "(--all lists them)")
    if the_plan.instances:
        print("plugins, in run order:")
        for i, inst in enumerate(the_plan.instances, 1):
            print(f"  {i}. {inst.servicename} ({inst.flow_uuid}) for {', '.join(inst.dependents)}")
            choice = choices.get(inst.servicename)
            if choice:
                print(f"     uses {choice.name} ({choice.manifest.runtime}): {choice.reason}")
                for skipped in choice.skipped:
                    print(f"     skipped {skipped['name']}: {skipped['reason']}")
    lane = report.isolation
    if lane:
        print("isolation namespace: " + ", ".join(f"{b} -> {f}" for b, f in lane["namespaces"].items()))
        aliases = lane["aliases"] if args.all else [a for a in lane["aliases"] if alias_of(a) in near]
        print(f"  {len(lane['aliases'])} alias(es) to the baseline" + (":" if aliases else ""))
        for alias in aliases:
            print(f"    {alias}")
        if len(aliases) < len(lane["aliases"]):
            print(f"    ... and {len(lane['aliases']) - len(aliases)} more, of services the lane does not touch "
                  "(--all lists them)")
        if lane["needs"]:
            print("  the lane still needs:")
            for need in lane["needs"]:
                print(f"    {need}")
    if report.reach:
        print("reach beyond the lane (state the dev pods can still use; `render --strict` refuses all but shared):")
        for r in report.reach:
            print(f"  {reach.line(r.as_dict())}")
            print(f"    fix: {r.fix}")
    else:
        print("reach beyond the lane: none (no baseline store, registry or outside store in the dev pods' addresses)")
    if report.footprint is not None:
        print("footprint of the dev copies (before plugins; `render` counts what they add):")
        for what, value in footprint.summary(report.footprint):
            print(f"  {what}: {value}")
    proof = report.proof
    if proof:
        header = f"{proof['header']} {proof['member']}"
        verdict = "holds" if not proof["violations"] else f"fails ({len(proof['violations'])})"
        print(f"routing proof {verdict}: {proof['paths']} hops checked on the dependency paths from the entry, with "
              f"and without {header}")
        if not proof["violations"]:
            print("  with it, every hop reaches the dev version where the flow has one; without it, the baseline")
        for violation in proof["violations"]:
            print(f"  {violation}")
        print(f"  routes: {', '.join(proof['routes']) or 'none'}")
    if report.steps:
        print("pipeline steps (.devlane.yaml), in order:")
        for step in report.steps:
            choice = step["choice"]
            print(f"  {step['stage']:<11}  {step['name']}: {choice['name']} ({choice['runtime']}, {step['behavior']})")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    plan = sub.add_parser("plan", help="explain which services get a dev version, and why")
    add_common(plan)
    add_output(plan)
    plan.add_argument("--all", action="store_true",
                      help="list every baseline service (and alias), not only those one hop from the lane")
    plan.set_defaults(handler=cmd_plan)
