#!/usr/bin/env python3
"""What a resident process would give the warm render (issue 45's 0.08x of the parse floor): the same warm render
after a one-file change, (a) as the CLI runs it today, a process per command, and (b) forked from a process that
imported devlane and probed the sandbox once, as a preloading server would. Each round runs the parse floor, then (a),
then (b), back to back; the ratios are each render over its own round's floor. A script, not a test: pytest never
collects it, and nothing in devlane serves requests this way.

    python tests/bench/bench_preload.py                  # 5,000 services, 5 rounds
    python tests/bench/bench_preload.py --size 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_render as b  # the generator, the timed runs and the parse floor of bench_render


def forked(argv: list[str]) -> float:
    """Wall seconds of `renderer.cli.main(argv)` in a child forked from this (preloaded) process; its output dropped."""
    from renderer import cli

    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os._exit(cli.main(argv))
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise SystemExit(f"the forked render failed (status {status})")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    b.compile_renderer()
    sys.path.insert(0, str(b.ROOT))
    from renderer import api, cli  # noqa: F401 - the preloading: what a resident process holds before a request
    from renderer.host import confine

    confine.confinement()  # the sandbox probe, once
    print(f"devlane preload bench: {b.source_revision()}; {b.load_average()}", flush=True)
    ratios: dict[str, list[float]] = {"process per command": [], "forked from a preloaded process": []}
    with tempfile.TemporaryDirectory(prefix="devlane-preload-bench-") as tmp:
        repo, cache = Path(tmp) / "repo", Path(tmp) / "cache"
        b.generate(repo, args.size)
        target = b.flow_target(args.size)
        flow = (b.FLOW_ID, target, f"ghcr.io/acme/{target}:{b.FLOW_ID}")
        changed = repo / f"{b.svc(b.CHANGED_SERVICE)}.yaml"
        original = changed.read_text()
        os.environ[b.CACHE_ENV] = str(cache)
        if not b.run_timed(b.render_cmd(repo, *flow, Path(tmp) / "fill"), b.subprocess_env(cache)).ok:
            raise SystemExit("the render that fills the cache failed")
        for k in range(args.rounds):
            floor = b.parse_floor(repo, 1)
            changed.write_text(b.one_file_change(original, 2 * k))
            per_command = b.run_timed(b.render_cmd(repo, *flow, Path(tmp) / f"a{k}"), b.subprocess_env(cache))
            changed.write_text(b.one_file_change(original, 2 * k + 1))
            preloaded = forked(b.render_cmd(repo, *flow, Path(tmp) / f"b{k}")[3:])
            for name, run in (("process per command", per_command), ("forked from a preloaded process", preloaded)):
                if (r := b.ratio(run, floor)) is not None:
                    ratios[name].append(r)
    print(f"warm render after a one-file change at {args.size:,} services, over the parse floor of its round "
          f"(median, min, max of {args.rounds}):")
    for name, found in ratios.items():
        print(f"  {name:32} {statistics.median(found):.2f}x  {min(found):.2f}x  {max(found):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
