#!/usr/bin/env python3
"""Benchmark of the review surfaces and the PR loop (issue 45): `lint` cold and warm, `plan`, `preview`,
`init --dry-run` and the `diff --services auto -o markdown` of a pull request that bumps every service, on the
repositories bench_render.py generates, next to the parse floor of the same files (PyYAML's C loader, single core,
in a subprocess). Prints the times, the ratios, the output sizes of plan and preview, the growth from the smallest
to the largest size, and a verdict on the issue's points. A script, not a test: pytest never collects it.

    python tests/bench/bench_review.py                    # sizes 1000,5000,10000, median of 3
    python tests/bench/bench_review.py --quick            # N=1,000, one run each (about a minute)
    python tests/bench/bench_review.py --sizes 1000,10000 --repeat 1
    python tests/bench/bench_review.py --sizes 5000 --repeat 1 --pairs 5

At 5,000 services, `--pairs K` (default 3; 1 with --quick) also runs K rounds of the parse floor, a cold lint and a
warm lint back to back, each lint over its own round's floor: the lint verdicts take the median of those ratios, so a
machine whose speed drifts between the separate medians moves no verdict (as bench_render.py's `--pairs`).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_render as b  # the generator, the timed runs and the parse floor of bench_render

LINT_COLD_OVER_PARSE = 0.5
LINT_WARM_OVER_PARSE = 0.1
DIFF_OVER_FLOOR = 3.0  # the floor of a diff: parsing both revisions
GROWTH = 12.0  # time at 10k over time at 1k: linear (10x) with a margin
LINES_GROWTH = 1.1  # plan's and preview's length is the lane's, whatever the repository's size: the same lane
# (the generator's dependencies stay inside blocks of 50) prints as many lines at 10,000 services as at 1,000
TEMPLATE = "ghcr.io/acme/{service}:{short_sha}"


@dataclass
class Review:
    n: int
    parse: b.Run
    lint_cold: b.Run
    lint_warm: b.Run  # the cache filled by a lint of the same bytes (the stored findings)
    lint_changed: b.Run  # the cache filled, then one file changed (one env value): parses cached but one
    plan: b.Run
    plan_lines: int
    preview: b.Run
    preview_lines: int
    init: b.Run
    diff: b.Run
    paired: dict[str, list[float]] = field(default_factory=dict)  # "cold"/"warm" lint -> each pair's floor ratio

    def paired_ratio(self, name: str) -> float | None:
        found = self.paired.get(name)
        return statistics.median(found) if found else None


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "renderer.cli", *args]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args], cwd=repo, check=True,
                   capture_output=True)


def bump_every_service(repo: Path) -> None:
    """The pull request of a base-image bump: every service's image gets a new tag."""
    for path in sorted(repo.glob("svc-*.yaml")):
        text = path.read_text()
        path.write_text(text.replace("image: ghcr.io/acme/", "image: ghcr.io/acme/bumped-", 1))


def timed(work: Path, repeat: int, args: list[str], cache: Path | None, cwd: Path | None = None) -> b.Run:
    """The median of `repeat` runs; `cache` None: a fresh empty cache each run (cold)."""

    def once(_k: int) -> b.Run:
        directory = cache or Path(tempfile.mkdtemp(dir=work, prefix="cache-"))
        try:
            return b.run_timed(cli(*args), b.subprocess_env(directory), cwd=cwd)
        finally:
            if cache is None:
                shutil.rmtree(directory, ignore_errors=True)

    return b.median_run(once, repeat)


def lines(run: b.Run) -> int:
    return len(run.stdout.splitlines()) if run.ok else -1


def measure(work: Path, n: int, repeat: int, pairs: int = 0) -> Review:
    repo = work / f"repo-{n}"
    b.generate(repo, n)  # a git checkout of one commit
    target = b.flow_target(n)
    flow = ["--flow", b.FLOW_ID, "--service", f"{target}=ghcr.io/acme/{target}:{b.FLOW_ID}"]
    warm = work / f"warm-{n}"
    parse = b.parse_floor(repo, repeat)
    lint_cold = timed(work, repeat, ["lint", str(repo)], None)
    timed(work, 1, ["lint", str(repo)], warm)  # fill the warm cache
    lint_warm = timed(work, repeat, ["lint", str(repo)], warm)
    lint_changed = lint_after_one_change(repo, repeat, warm)
    paired = paired_lint(work, repo, warm, pairs) if n == b.AT else {}
    plan = timed(work, repeat, ["plan", str(repo), *flow], warm)
    preview = timed(work, repeat, ["preview", str(repo), *flow], warm)
    init = timed(work, repeat, ["init", str(repo), "--dry-run", "-o", "json"], warm)
    bump_every_service(repo)
    git(repo, "commit", "-qam", "bump every image")
    diff = timed(work, repeat, ["diff", str(repo), "--base", "HEAD~1", "--head", "HEAD", "--flow", b.FLOW_ID,
                                "--services", "auto", "--image-template", TEMPLATE, "-o", "markdown",
                                "--fail-on", "never"], warm)
    shutil.rmtree(repo, ignore_errors=True)
    shutil.rmtree(warm, ignore_errors=True)
    return Review(n, parse, lint_cold, lint_warm, lint_changed, plan, lines(plan), preview, lines(preview), init, diff,
                  paired)


def paired_lint(work: Path, repo: Path, warm: Path, pairs: int) -> dict[str, list[float]]:
    """`pairs` times in turn: the parse floor, a cold lint and a warm lint (the cache `warm` filled), each lint's time
    over the floor's just before it."""
    out: dict[str, list[float]] = {"cold": [], "warm": []}
    for _ in range(pairs):
        floor = b.parse_floor(repo, 1)
        for name, cache in (("cold", None), ("warm", warm)):
            if (r := b.ratio(timed(work, 1, ["lint", str(repo)], cache), floor)) is not None:
                out[name].append(r)
    return out if pairs else {}


def lint_after_one_change(repo: Path, repeat: int, warm: Path) -> b.Run:
    """lint after a one-file change (a new value each run), the cache filled by the lint before it; the file is
    restored afterwards."""
    changed = repo / f"{b.svc(b.CHANGED_SERVICE)}.yaml"
    original = changed.read_text()

    def once(k: int) -> b.Run:
        changed.write_text(b.one_file_change(original, k))
        return b.run_timed(cli("lint", str(repo)), b.subprocess_env(warm))

    try:
        return b.median_run(once, repeat)
    finally:
        changed.write_text(original)


def report(rows: list[Review]) -> str:
    out = ["review surfaces (s, median of --repeat; each a CLI process, interpreter start-up included):"]
    head = ["N", "parse s", "lint cold", "lint warm", "lint 1 file", "plan", "plan lines", "preview", "preview lines",
            "init", "diff bump-all"]
    out.append(b.table([[str(r.n), r.parse.cell(), r.lint_cold.cell(), r.lint_warm.cell(), r.lint_changed.cell(),
                         r.plan.cell(),
                         str(r.plan_lines), r.preview.cell(), str(r.preview_lines), r.init.cell(), r.diff.cell()]
                        for r in rows], head))
    out.append("")
    out.append("ratios to the parse floor (diff: to parsing both revisions):")
    head = ["N", "lint cold/parse", "lint warm/parse", "lint 1 file/parse", "plan/parse", "preview/parse", "init/parse",
            "diff/2 parses"]
    out.append(b.table([[str(r.n), b.fmt_ratio(r.lint_cold, r.parse), b.fmt_ratio(r.lint_warm, r.parse),
                         b.fmt_ratio(r.lint_changed, r.parse),
                         b.fmt_ratio(r.plan, r.parse), b.fmt_ratio(r.preview, r.parse), b.fmt_ratio(r.init, r.parse),
                         _over_two(r.diff, r.parse)] for r in rows], head))
    if any(r.paired for r in rows):
        out.append("")
        out.append("paired lint ratios to the parse floor (each pair run back to back: the floor, then lint; median, "
                   "min and max over --pairs):")
        head = ["N", "pairs", "cold/parse", "cold min", "cold max", "warm/parse", "warm min", "warm max"]
        out.append(b.table([[str(r.n), str(len(r.paired.get("cold", []))), *b.spread(r.paired.get("cold", [])),
                             *b.spread(r.paired.get("warm", []))] for r in rows if r.paired], head))
    out.append("")
    out += b.verdict_lines(verdict(rows))
    return "\n".join(out)


def _over_two(num: b.Run, parse: b.Run) -> str:
    if num.seconds is None or parse.seconds is None:
        return "n/a"
    return f"{num.seconds / (2 * parse.seconds):.2f}x"


def verdict(rows: list[Review]) -> list[b.Check]:
    checks: list[b.Check] = []
    at = next((r for r in rows if r.n == b.AT), None)
    label = f"at {b.AT:,}"
    if at is None:
        checks.append(b.Check(f"lint and diff ratios {label}", None, f"add {b.AT} to --sizes"))
    else:
        for name, run, limit in (("cold", at.lint_cold, LINT_COLD_OVER_PARSE),
                                 ("warm", at.lint_warm, LINT_WARM_OVER_PARSE)):
            paired = at.paired_ratio(name)
            if paired is None:
                checks.append(b.ratio_check(f"lint {name} <= {limit:g}x parse {label}", run, at.parse, limit))
            else:
                checks.append(b.ratio_check(f"lint {name} <= {limit:g}x parse {label} (median of "
                                            f"{len(at.paired[name])} pairs)", paired, 1.0, limit))
    top = rows[-1]
    if top.diff.seconds is not None and top.parse.seconds is not None:
        r = top.diff.seconds / (2 * top.parse.seconds)
        checks.append(b.Check(f"diff of a bump-all PR <= {DIFF_OVER_FLOOR:g}x both parses at {top.n:,}",
                              r <= DIFF_OVER_FLOOR, f"{r:.2f}x"))
    base = rows[0]
    label = f"plan and preview as long at {top.n:,} as at {base.n:,} (bounded by the lane, not the repository)"
    if top.n > base.n:
        grew = max(top.plan_lines / max(base.plan_lines, 1), top.preview_lines / max(base.preview_lines, 1))
        checks.append(b.Check(label, grew <= LINES_GROWTH, f"plan {base.plan_lines} -> {top.plan_lines}, preview "
                                                           f"{base.preview_lines} -> {top.preview_lines} lines"))
    else:
        checks.append(b.Check(label, None, "give two sizes"))
    if top.n > base.n:
        for name in ("lint_cold", "plan", "preview", "init", "diff"):
            high, low = getattr(top, name), getattr(base, name)
            if high.seconds is None or low.seconds is None:
                checks.append(b.Check(f"{name} linear {base.n:,} -> {top.n:,}", None, "not measured"))
                continue
            growth = high.seconds / low.seconds
            limit = GROWTH * (top.n / base.n) / 10
            checks.append(b.Check(f"{name} linear {base.n:,} -> {top.n:,} (time ratio <= {limit:g})",
                                  growth <= limit, f"{growth:.2f}"))
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="N=1,000, one run each")
    parser.add_argument("--pairs", type=int, metavar="K",
                        help=f"rounds of parse floor, cold lint and warm lint back to back at {b.AT:,} (default 3)")
    args = parser.parse_args(argv)
    sizes = [1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeat = 1 if args.quick else args.repeat
    pairs = args.pairs if args.pairs is not None else (1 if args.quick else 3)
    b.compile_renderer()
    print(f"devlane review bench: {b.source_revision()}; {b.load_average()}")
    with tempfile.TemporaryDirectory(prefix="devlane-review-bench-") as tmp:
        rows = [measure(Path(tmp), n, repeat, pairs) for n in sizes]
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
