"""`devlane status`, `devlane verify --server` and `devlane gc --cluster`: the live commands, which ask a cluster
(the kubeconfig as kubectl finds it: `--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`, `--context`). Everything
else devlane does stays offline."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import durations
from ..errors import DevlaneError, Problem, UsageError, Where
from .common import add_lanes, lanes_ref, repo_path, say, show
from .output import add_output, machine

if TYPE_CHECKING:
    from .. import api
    from ..live.kube import KubeOptions
    from ..live.status import StatusReport

DEFAULT_WAIT = 300.0  # seconds `status --wait` waits without --timeout
MAX_WAIT = 7 * 24 * 3600.0


def parse_duration(text: str, flag: str = "--timeout") -> float:
    """Seconds from a duration as kubectl takes one (Go's grammar: `90s`, `5m`, `1h30m`, `1.5m`, `500ms`), or a
    plain number of seconds (core.durations, one grammar with --ttl); at most a week."""
    try:
        nanoseconds = durations.parse_seconds(text)
    except durations.DurationError as exc:
        raise UsageError(f"{flag} {text!r} is not a duration ({exc}): give seconds (300), or a duration as "
                         "kubectl takes them (90s, 5m, 1h30m)") from None
    if nanoseconds < 0:
        raise UsageError(f"{flag} {text!r} is negative")
    if nanoseconds > MAX_WAIT * durations.SECOND:
        raise UsageError(f"{flag} {text!r} is longer than a week")
    return nanoseconds / durations.SECOND


def add_kube(p: argparse.ArgumentParser, namespace: bool = True) -> None:
    """kubectl's flags for the cluster to ask."""
    g = p.add_argument_group("cluster")
    g.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
    g.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current-context)")
    if namespace:
        g.add_argument("-n", "--namespace", metavar="NS",
                       help="namespace of the rendered objects that name none (default: the context's, else default)")


def _kube(args: argparse.Namespace) -> KubeOptions:
    from ..live.kube import KubeOptions

    return KubeOptions(args.kubeconfig, args.context, getattr(args, "namespace", None))


def _options(args: argparse.Namespace) -> api.Options:
    from .. import api

    return api.Options(repo=repo_path(args), ref=args.ref, cache=args.cache)


def _add_flow(p: argparse.ArgumentParser) -> None:
    """REPO and the rendered flow the command looks at."""
    p.add_argument("repo", nargs="?", default=".", help="repository directory (default: .)")
    p.add_argument("--flow", dest="flow_id", metavar="ID", required=True, help="the rendered flow")
    p.add_argument("--out", type=Path, metavar="DIR", help="output root the flow was rendered to (default: the "
                                                           "configured output)")
    p.add_argument("--ref", help="read the rendered flow from this git ref (a lanes branch) instead of the work tree")
    p.add_argument("--no-cache", dest="cache", action="store_false", help=argparse.SUPPRESS)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    add_output(p)


@contextlib.contextmanager
def _lane_dir(args: argparse.Namespace) -> Iterator[Path | None]:
    """Where the rendered flow is read: `--out`, or the lanes branch's tip fetched into a temporary directory."""
    lanes = lanes_ref(args)
    if lanes is None:
        yield args.out
        return
    from ..lanes.branch import Checkout

    with Checkout(lanes) as checkout:
        yield checkout.tree


def cmd_status(args: argparse.Namespace) -> int:
    from .. import api

    if args.wait_timeout is not None and not args.wait:
        raise UsageError("--timeout is how long --wait waits: pass --wait too")
    timeout = DEFAULT_WAIT if args.wait_timeout is None else parse_duration(args.wait_timeout)
    last: list[str] = []

    def on_poll(report: StatusReport) -> None:
        """A line when what the lane waits for changes (the first object it waits for, and why)."""
        pending = report.pending()
        lines = [o.line() for o in pending]
        if lines != last and pending:
            last[:] = lines
            say(f"waiting for {len(pending)} of {len(report.objects)} objects ({report.waited:.0f} s): "
                f"{pending[0].shown()} {pending[0].state}: {pending[0].message}")

    with _lane_dir(args) as out:
        report = api.status(_options(args), args.flow_id, _kube(args), out, args.wait, timeout, on_poll)
    if not machine(args, "StatusReport", report.as_dict()):
        print(report.summary())
        for o in report.objects:
            print(f"  {o.line()}")
    if report.ready:
        return 0
    bad = [o for o in report.objects if o.state not in ("ready", "skipped")]
    why = "; ".join(f"{o.shown()} {o.state}" for o in bad[:5])
    more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
    hint = None if report.failed else ("wait for it: --wait [--timeout D]" if not args.wait else
                                       "wait longer (--timeout D), or see why with kubectl describe")
    raise DevlaneError(Problem(f"flow {args.flow_id} is {report.state}" +
                               (f" after {report.waited:.0f} s" if report.timed_out else "") + f": {why}{more}",
                               hint=hint, code="status"))


def cmd_verify(args: argparse.Namespace) -> int:
    from .. import api

    if not args.server:
        raise UsageError(Problem("verify checks a rendered flow against a live cluster: pass --server (a server-side "
                                 "dry run)", hint="offline checks are `devlane render --validate strict` and "
                                                  "`devlane lint`"))
    with _lane_dir(args) as out:
        report = api.verify_server(_options(args), args.flow_id, _kube(args), out, args.field_manager)
    show([Problem(f"not checked: {v.message}", Where(file=v.file, object=f"{v.kind}/{v.name}"),
                  severity="warning", code="verify") for v in report.of("unchecked")])
    refused = report.of("refused")
    if not machine(args, "VerifyReport", report.as_dict()):
        for v in refused:
            print(v.line())
        print(report.summary())
    if refused:
        raise DevlaneError(Problem(f"the cluster at {report.server} would refuse {_n(len(refused), 'object')} of "
                                   f"flow {args.flow_id}",
                                   hint="fix what each line above says before the GitOps engine applies the flow",
                                   code="verify"))
    return 0


def gc_cluster(args: argparse.Namespace, keep: list[str] | None) -> int:
    """`devlane gc --cluster`: called by `gc` (renderer/cli/provision.py) with the keep list it read."""
    from .. import api

    if keep is None:
        raise UsageError("gc --cluster needs the flows to keep (--keep FLOW..., --keep-file FILE): every other lane "
                         "in the cluster is an orphan")
    if args.expired:
        raise UsageError("--expired reads the rendered flows' expiry; with --cluster pass the flows to keep "
                         "(--keep, --keep-file), and run `devlane gc --expired` for the rendered flows")
    if args.yes and args.dry_run:
        raise UsageError("--yes deletes and --dry-run does not: pass one (gc --cluster lists without --yes)")
    report = api.gc_cluster(_kube(args), keep, args.yes)
    machine(args, "ClusterGcReport", report.as_dict())
    show(report.warnings, args.debug)
    for items in report.doomed.values():
        for item in items:
            if report.dry_run:
                say(f"would delete {item.shown()} (lane {item.flow_id})")
            elif item in report.deleted:
                say(f"deleted {item.shown()} (lane {item.flow_id})")
            elif item in report.gone:
                say(f"already gone: {item.shown()} (lane {item.flow_id})")
    count = sum(len(items) for items in report.doomed.values())
    lanes = f"{_n(len(report.doomed), 'orphan lane')} ({', '.join(report.doomed)})"
    owned = f"; {_n(report.owned, 'object')} they own go with them" if report.owned else ""
    if not report.doomed:
        say(f"no orphan lane in the cluster at {report.server}")
    elif report.dry_run:
        say(f"{_n(count, 'object')} of {lanes} in the cluster at {report.server}{owned}; nothing deleted: run again "
            "with --yes to delete them")
    else:
        say(f"deleted {_n(len(report.deleted), 'object')} of {lanes}{owned}")
    if report.terminating:
        say(f"{_n(report.terminating, 'lane object')} already being deleted")
    if report.kept:
        say(f"kept {_n(len(report.kept), 'lane')}: " + ", ".join(f"{f} ({_n(n, 'object')})"
                                                                 for f, n in report.kept.items()))
    show([p for p in report.failed if p.severity == "warning"], args.debug)
    errors = [p for p in report.failed if p.severity == "error"]
    if errors:
        raise DevlaneError(errors)
    return 0


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def add_parsers(sub: argparse._SubParsersAction) -> None:
    status = sub.add_parser("status", help="live: the rendered lane's objects in the cluster and their readiness",
                            description="Each object of the rendered flow, looked up in the cluster: Deployments and "
                                        "StatefulSets available, Jobs complete, missing ones named. Exit 0 when the "
                                        "lane is ready, 1 when it is not (an object failed, is missing, or --wait "
                                        "timed out).")
    _add_flow(status)
    status.add_argument("--wait", action="store_true", help="poll until the lane is ready or an object fails")
    status.add_argument("--timeout", dest="wait_timeout", metavar="D",
                        help=f"how long --wait waits: 300, 90s, 5m, 1h30m (default: {DEFAULT_WAIT:.0f} s)")
    add_kube(status)
    add_lanes(status, push=False)
    status.set_defaults(handler=cmd_status)
    verify = sub.add_parser("verify", help="live: a server-side dry run of the rendered flow against the cluster",
                            description="Each object of the rendered flow, sent to the cluster as a server-side "
                                        "apply with dryRun=All: one line per object the cluster would refuse, and "
                                        "why. Exit 1 if any.")
    _add_flow(verify)
    verify.add_argument("--server", action="store_true", help="dry-run against the live cluster (required)")
    verify.add_argument("--field-manager", metavar="NAME",
                        help="field manager of the dry-run applies (default: devlane; argocd-controller to see what "
                             "Argo CD would)")
    add_kube(verify)
    add_lanes(verify, push=False)
    verify.set_defaults(handler=cmd_verify)
