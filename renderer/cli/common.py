"""What every command shares: the REPO/flow argument groups, argv -> `Options` / flow, and printing.

Display decisions (what goes to stderr, `--debug` showing plugin stderr) are made here and
nowhere below the CLI.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..core import durations
from ..errors import DevlaneError, Problem, UsageError

if TYPE_CHECKING:
    from .. import api
    from ..lanes.branch import LanesRef
    from ..render.plan.targets import Change
    from ..session import Options


def add_common(p: argparse.ArgumentParser, flow: bool = True) -> None:
    """REPO, --ref and --debug; with `flow`, the flow and plugin options of every rendering command."""
    p.add_argument("repo", nargs="?", default=".", help="repository directory (default: .)")
    p.add_argument("--ref", help="render this git ref (branch, tag, commit) without checking it out")
    p.add_argument("--debug", action="store_true", help="show tracebacks and plugin stderr")
    add_no_cache(p)
    add_allow_path(p)
    p.add_argument("--policy", metavar="FILE",
                   help="the operator's policy file: the only place, with --trusted-ref, that may relax "
                        "policy.plugins and plugins.limits (default: $DEVLANE_POLICY)")
    p.add_argument("--trusted-ref", metavar="REF",
                   help="a ref (the pull request's base) whose .devlane.yaml may relax what the rendered one cannot")
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
    add_modes(g)
    g.add_argument("--strict", action="store_true", default=None,
                   help="fail when isolation cannot be verified: an unwired dev->dev edge, an address in a Secret "
                        "(also policy.strict in .devlane.yaml)")
    g.add_argument("--plugin-source", action="append", default=[], metavar="NAME=PATH",
                   help="use the plugin in PATH for plugin NAME")
    g.add_argument("--plugin-timeout", type=seconds, metavar="DURATION",
                   help="per plugin call (60, 90s, 2m); overrides plugin.yaml timeoutSeconds (default 60 s)")
    add_weak_sandbox(g)
    g.add_argument("--services", choices=["auto"],
                   help="auto: target the services changed between --base and the rendered ref (git)")
    g.add_argument("--base", metavar="REF", help="the pull request's base (for --services auto, and diff)")
    g.add_argument("--image-template", metavar="T",
                   help="image of each auto target, e.g. 'ghcr.io/acme/{service}:{short_sha}' "
                        "(fields: service, sha, short_sha, pr, branch)")
    g.add_argument("--pr", metavar="N", help="pull request number for {pr} (default: $DEVLANE_PR or $GITHUB_REF)")
    g.add_argument("--timeout", type=seconds, metavar="DURATION",
                   help="budget for the whole render (300, 90s, 5m; default: none)")
    g.add_argument("--jobs", type=int, metavar="N", help="plugin instances run at once (default: CPUs, at most 8)")


def seconds(text: str) -> float:
    """A command-line budget: a Go duration (`90s`, `5m`, `1h30m`) or a bare number of seconds, positive; one
    grammar with `--ttl` and the CMP's ARGOCD_EXEC_TIMEOUT (core.durations). argparse turns the error into a usage
    error naming the flag."""
    try:
        return durations.parse_positive_seconds(text) / durations.SECOND
    except durations.DurationError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive duration ({exc}): give seconds (300) or a "
                                         "duration (90s, 5m, 1h30m)") from None


def add_lanes(p: argparse.ArgumentParser, push: bool = True) -> None:
    """Where the lanes live beyond one job: a branch of the remote (the operator's choice; .devlane.yaml cannot).
    Without `push`, the command only reads the lane there."""
    g = p.add_argument_group("lanes branch")
    g.add_argument("--lanes-branch", metavar="BRANCH",
                   help=("commit to (or remove from) this branch of --remote, which Argo CD or Flux reads, instead of "
                         "an output directory: flows/<id>/ and the provision records under .devlane/state/<id>/"
                         if push else "read the lane and its provision records from this branch of --remote instead "
                         "of the work tree"))
    g.add_argument("--remote", default="origin", metavar="NAME|URL", help="the remote of --lanes-branch (default: "
                   "origin)")
    if push:
        g.add_argument("--push-attempts", type=int, default=5, metavar="N",
                       help="pushes tried when other jobs move the lanes branch meanwhile (default 5, at most 20)")


def lanes_ref(args: argparse.Namespace, refused: tuple[str, ...] = ()) -> LanesRef | None:
    """The lanes branch the command line names (checked: never a code branch), or None."""
    if not getattr(args, "lanes_branch", None):
        return None
    from ..lanes.branch import LanesRef, check

    if getattr(args, "out", None) is not None or getattr(args, "stdout", False):
        raise UsageError("--lanes-branch writes to the lanes branch: drop --out / --stdout")
    if getattr(args, "ref", None):
        raise UsageError("--lanes-branch works from a checkout of the pull request's head: drop --ref")
    ref = LanesRef(Path(args.repo), args.lanes_branch, args.remote, getattr(args, "push_attempts", 5))
    if not Path(args.repo).is_dir():
        raise UsageError(f"repository directory {args.repo} does not exist")
    check(ref, refused)
    return ref


def add_no_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", dest="cache", action="store_false",
                   help="parse and build everything afresh, neither reading nor writing $DEVLANE_CACHE")


def add_modes(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--routing and --isolation, over `.devlane.yaml`: every rendering command, and `lint`, which checks them."""
    p.add_argument("--routing", choices=["none", "gateway-api", "istio"], help="routing backend (default: none)")
    p.add_argument("--isolation", choices=["suffix", "namespace"],
                   help="suffix: dev copies named <name>-<flow> beside the baseline (default); namespace: the same "
                        "names in a flow namespace, other services aliased there")


def add_allow_path(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The operator's list of directories beside the repository that its inputs may name (a monorepo's bases)."""
    p.add_argument("--allow-path", action="append", default=[], metavar="DIR",
                   help="let kustomize bases, Helm values and plugin sources name DIR beside the repository "
                        "(repeatable; also $DEVLANE_ALLOW_PATHS; .devlane.yaml cannot)")


def add_weak_sandbox(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The operator's opt-out of the secure default for unpinned plugins (also $DEVLANE_ALLOW_WEAK_SANDBOX=1)."""
    p.add_argument("--allow-weak-sandbox", action="store_true",
                   help="run plugins from the repository or a local directory even when a sandbox layer is missing "
                        "here (default: refuse; also $DEVLANE_ALLOW_WEAK_SANDBOX=1; .devlane.yaml cannot set it)")


def add_plugin_source(p: argparse.ArgumentParser, help: str = "use the plugin in PATH for plugin NAME") -> None:
    p.add_argument("--plugin-source", action="append", default=[], metavar="NAME=PATH", help=help)


def repeat_pairs(values: list[str], flag: str) -> dict[str, str]:
    """`--flag NAME=VALUE` given several times -> {NAME: VALUE}; a malformed one is a usage error."""
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key or not value:
            raise UsageError(f"{flag} {v!r}: expected NAME=PATH")
        out[key] = value
    return out


def parse_service_args(values: list[str]) -> dict[str, str]:
    from ..core.images import image_problem, shown

    out: dict[str, str] = {}
    for v in values:
        name, sep, image = v.partition("=")
        if not sep or not name.strip() or not image.strip():
            raise UsageError(f"--service {shown(v)}: expected NAME=IMAGE")
        problem = image_problem(image.strip())
        if problem:
            raise UsageError(f"--service {name.strip()}=...: the image {shown(image.strip())} {problem}")
        out[name.strip()] = image.strip()
    return out


def parse_env_args(values: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for v in values:
        svc, sep, rest = v.partition(":")
        key, sep2, value = rest.partition("=")
        if not sep or not sep2 or not svc.strip() or not key.strip():
            raise UsageError(f"--env {v!r}: expected NAME:KEY=VALUE")
        out.append((svc.strip(), key.strip(), value))
    return out


def parse_template_args(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--template-arg {v!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


@contextlib.contextmanager
def as_usage_error() -> Iterator[None]:
    """A value given on the command line that the library refuses is a usage error (exit 2), not bad input."""
    try:
        yield
    except UsageError:
        raise
    except DevlaneError as exc:
        raise UsageError(exc.problems) from None


def repo_path(args: argparse.Namespace) -> Path:
    """The repository path the command line names; one that does not exist is a usage error (exit 2), unless the
    command reads it at a git ref (`--ref`, `diff`), where the work tree need not hold it."""
    repo = Path(args.repo)
    if getattr(args, "ref", None) is None and getattr(args, "command", None) != "diff" and not repo.exists():
        raise UsageError(Problem(f"repository directory {args.repo} does not exist",
                                 hint="pass the path of your manifests repository (default: the current directory)"))
    return repo


def options(args: argparse.Namespace) -> Options:
    from ..session import Options

    repo = repo_path(args)

    return Options(repo=repo, ref=args.ref, routing=getattr(args, "routing", None),
                       isolation=getattr(args, "isolation", None),
                       plugin_sources=repeat_pairs(getattr(args, "plugin_source", []), "--plugin-source"),
                       plugin_timeout=getattr(args, "plugin_timeout", None), timeout=getattr(args, "timeout", None),
                       jobs=getattr(args, "jobs", None), strict=bool(getattr(args, "strict", False)),
                       cache=getattr(args, "cache", True),
                       allow_weak_sandbox=bool(getattr(args, "allow_weak_sandbox", False)),
                       allow_paths=tuple(getattr(args, "allow_path", []) or ()),
                       policy_file=getattr(args, "policy", None), trusted_ref=getattr(args, "trusted_ref", None),
                       ttl=getattr(args, "ttl", None), created=getattr(args, "created", None))


def flow_input(args: argparse.Namespace) -> api.FlowInput:
    """The flow the command line asks for, as data: with `--services auto`, what the library resolves once the
    repository is loaded (the base, the image template), else the flow itself."""
    from .. import api
    from ..render.plan.flow_spec import FlowRequest, validate_flow_id
    from ..render.plan.targets import AutoFlow

    if args.flow_id is None and args.flow_file is None:
        raise UsageError("a flow is required: pass --flow ID --service NAME=IMAGE, or --flow-file FILE")
    if args.flow_id is not None:
        with as_usage_error():
            validate_flow_id(args.flow_id)  # refused before anything is read or written
    request = FlowRequest(flow_id=args.flow_id, images=parse_service_args(args.service), env=parse_env_args(args.env),
                          flow_file=args.flow_file, template=args.template,
                          template_args=parse_template_args(args.template_arg),
                          template_args_file=args.template_args)
    if getattr(args, "services", None) != "auto":
        if args.flow_file is None and not request.images and not request.env:
            raise UsageError("the flow changes no service: pass --service NAME=IMAGE (or --flow-file FILE, or "
                             "--services auto)")
        return api.resolve(request)
    if not args.base or not args.image_template:
        raise UsageError("--services auto needs --base REF and --image-template T")
    return AutoFlow(request, args.base, args.image_template, args.pr)


SAID_TARGETS = 20  # a base-image bump targets every service: past this many, stderr says how many more


def say_targets(targets: list[Change], every: bool = False) -> None:
    """`--services auto`: each service it targets, and why: the first `SAID_TARGETS` of them, then a count by origin
    (`every`, --debug: each one)."""
    from ..render.plan.targets import COMMITTED, GIVEN, TEMPLATE

    origins = {TEMPLATE: "built by CI", COMMITTED: "committed, not built by CI", GIVEN: "given"}
    shown = len(targets) if every else SAID_TARGETS
    for change in targets[:shown]:
        if change.target:
            say(f"target {change.service}: {change.reason} (image {change.image}, {origins[change.origin]})")
        else:
            say(f"not a target: {change.service}: {change.reason}")
    rest = targets[shown:]
    if rest:
        counts: dict[str, int] = {}
        for change in rest:
            what = f"image {origins[change.origin]}" if change.target else "not targets"
            counts[what] = counts.get(what, 0) + 1
        said = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
        say(f"... and {len(rest)} more changed services ({said}); --debug lists each")


def say(line: str) -> None:
    print(f"devlane: {line}", file=sys.stderr, flush=True)


def show(problems: list[Problem], debug: bool = False) -> None:
    """Warnings always; `info` messages (a plugin's stderr, args it ignored) only with --debug."""
    for p in problems:
        if p.severity == "warning" or (debug and p.severity == "info"):
            print(f"devlane: {p.severity}: {p.format()}", file=sys.stderr)


class Progress:
    """One status line per step on `stream`: a live spinner with elapsed time on a terminal,
    plain start and end lines otherwise (CI logs)."""

    SPIN = "|/-\\"

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        try:
            self.live = self.stream.isatty() and os.environ.get("TERM") != "dumb"
        except (AttributeError, ValueError):
            self.live = False
        self._label = ""
        self._detail = ""
        self._started = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._mutex = threading.Lock()

    def _write(self, text: str) -> None:
        with self._mutex:
            self.stream.write(text)
            self.stream.flush()

    def begin(self, label: str) -> None:
        self._label, self._detail, self._started = label, "", time.monotonic()
        if not self.live:
            self._write(f"{label}\n")
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def detail(self, line: str) -> None:
        self._detail = line.strip()

    def _spin(self) -> None:
        i = 0
        width = max(40, shutil.get_terminal_size((100, 20)).columns - 1)
        while not self._stop.wait(0.1):
            elapsed = time.monotonic() - self._started
            text = f"{self._label} {self.SPIN[i % 4]} {elapsed:4.0f}s {self._detail}"
            self._write("\r\x1b[2K" + text[:width])
            i += 1

    def end(self, line: str) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self._write("\r\x1b[2K")
        self._write(f"{line}\n")

    def elapsed(self) -> float:
        return time.monotonic() - self._started
