"""Render of a one-service flow on a kustomize overlay of N services, side by side with `kubectl kustomize`
of the same overlay: devlane's own share (its render minus the time inside the build) against the parse
floor (PyYAML's C loader parsing the built objects). In process, so the build's time is measured where it
is spent rather than subtracted from a noisy total. Each render gets an empty cache directory of its own
(DEVLANE_CACHE, never the user's), so the build runs every time. A script, not a test (see README.md)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_render import CACHE_ENV, FLOW_ID, ROOT, flow_target, generate, median_time, run

OVERLAY = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../base]
labels:
  - pairs: {env: dev}
patches:
  - target: {kind: Deployment, name: svc-0001}
    patch: |
      - op: add
        path: /spec/replicas
        value: 2
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1000, help="services in the base")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is reported")
    args = parser.parse_args(argv)
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("kubectl is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="devlane-bench-") as tmp:
        repo = Path(tmp) / "repo"
        generate(repo / "base", args.size)
        (repo / "base" / ".devlane.yaml").unlink()
        (repo / "overlays" / "dev").mkdir(parents=True)
        (repo / "overlays" / "dev" / "kustomization.yaml").write_text(OVERLAY)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        overlay = repo / "overlays" / "dev"
        target = flow_target(args.size)
        sys.path.insert(0, str(ROOT))
        from renderer import api
        from renderer.render.inputs import kustomize_helm as builder
        from renderer.render.plan.flow_spec import build_flow

        inside = [0.0]
        real_build = builder.build

        def timed_build(*a, **k):
            start = time.perf_counter()
            try:
                return real_build(*a, **k)
            finally:
                inside[0] += time.perf_counter() - start

        builder.build = timed_build
        options = api.Options(repo=overlay, plugin_sources={"./plugins/seed": str(repo / "base" / "plugins" / "seed")})
        flow = build_flow(FLOW_ID, {target: f"ghcr.io/acme/{target}:{FLOW_ID}"}, [])
        built = run([kubectl, "kustomize", str(overlay)]).stdout.encode()
        docs = sum(1 for _ in yaml.load_all(built, Loader=yaml.CSafeLoader))
        os.environ[CACHE_ENV] = str(Path(tmp) / "cache-warm-up")  # never the user's cache
        api.render(options, flow)  # warm-up
        totals, owns = [], []
        for i in range(args.repeat):
            os.environ[CACHE_ENV] = str(Path(tmp) / f"cache-{i}")  # an empty cache: the build runs every time
            inside[0] = 0.0
            start = time.perf_counter()
            api.render(options, flow)
            totals.append(time.perf_counter() - start)
            owns.append(totals[-1] - inside[0])
        total, own = sorted(totals)[len(totals) // 2], sorted(owns)[len(owns) // 2]
        build = median_time(lambda: run([kubectl, "kustomize", str(overlay)]), 1)
        parse = median_time(lambda: list(yaml.load_all(built, Loader=yaml.CSafeLoader)), args.repeat)
    print(f"devlane at {ROOT}; N={args.size} services, {docs} built objects; median of {args.repeat}")
    print(f"kubectl kustomize overlay, outside devlane (one run): {build:.3f} s")
    print(f"devlane render (in process, one-service flow, build included): {total:.3f} s")
    print(f"devlane's own share (render minus the time inside the build): {own:.3f} s")
    print(f"parse floor (C loader on the built objects, in process): {parse:.3f} s")
    print(f"own share / parse floor: {own / parse:.2f}x ({'PASS' if own <= 2 * parse else 'FAIL'}: the goal is 2x)")
    return 0


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"({time.perf_counter() - start:.0f} s in all)", file=sys.stderr)
    sys.exit(code)
