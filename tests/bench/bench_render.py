"""Benchmark: `devlane render` of a one-service flow against plain YAML parsing and `kubectl kustomize`.

Not a test: pytest collects only test_*.py. Run from anywhere:

    python tests/bench/bench_render.py [--sizes 100,1000,2000,5000] [--repeat 3] [--profile]

For each size N it generates a synthetic repository of N services in a temporary directory and
times, as the median of --repeat runs (wall clock):

1. `devlane render` as a subprocess (`python -m renderer.cli render ... --out DIR`, writing included);
2. the same render in-process through the library API (`renderer.api.render`, nothing written);
3. PyYAML C-loader parse of the same files in-process (reading the files included);
4. the same parse as a subprocess (`python -c`), so interpreter start-up counts as in (1);
5. `kubectl kustomize DIR` of the same files ("n/a" when kubectl is not on PATH).

Goal (SPEC): a one-service flow on a 1,000-service repo renders within 2x the time PyYAML's C
loader needs just to parse the same files, and the render grows linearly up to 5,000 services.
See tests/bench/README.md for how to read the output.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

NAMESPACE = "bench"
BLOCK = 50  # every BLOCK-th service is a stateful DB; dependencies stay inside a block of BLOCK services
FLOW_ID = "pr-1"
GOAL_RATIO = 2.0  # render within 2x the parse time at 1,000 services
LINEAR_TOLERANCE = 1.25  # per-service cost at the largest N may be at most this much above the one at 1,000

PLUGIN_MAIN = '''\
"""Synthetic stateful seed plugin used by the devlane benchmark."""


def create_flow(service_specs, pod_specs, flow_uuid, seed="x"):
    for spec in pod_specs:
        containers = spec.get("containers") or []
        if containers:
            containers[0].setdefault("env", []).append({"name": "SEED", "value": f"{seed}-{flow_uuid}"})
    return {"pod_specs": pod_specs, "config_map": {}}


def delete_flow(config_map, flow_uuid):
    return None
'''

PARSE_SCRIPT = textwrap.dedent(
    """\
    import pathlib, sys, yaml
    docs = 0
    for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.yaml")):
        docs += sum(1 for _ in yaml.load_all(p.read_bytes(), Loader=yaml.CSafeLoader))
    print(docs)
    """
)


# ---------------------------------------------------------------------------------------------
# Synthetic repository


def svc(i: int) -> str:
    return f"svc-{i:04d}"


def is_db(i: int) -> bool:
    return i % BLOCK == 0


def dependencies(i: int, n: int) -> list[int]:
    """1-3 higher-numbered services of the same block (no cycles); a block's head also calls the next head.

    Keeping edges inside a block bounds what a flow reaches, so a one-service flow has the same size
    at every N: the render's cost should grow only with the repository, never with the flow.
    """
    if is_db(i):
        return []
    rng = random.Random(i)  # per service, so the repo at N is a prefix of the repo at any larger N
    block_end = min((i - 1) // BLOCK * BLOCK + BLOCK, n)
    candidates = list(range(i + 1, min(i + 10, block_end) + 1))
    deps: list[int] = []
    head_next = i + BLOCK
    if (i - 1) % BLOCK == 0 and head_next <= n:
        deps.append(head_next)
    want = max(1, rng.randint(1, 3) - len(deps))  # a head calls its own block too (the ingress reaches block 0)
    if candidates:
        deps += rng.sample(candidates, min(want, len(candidates)))
    # the service right before a DB always uses it, so the flow target below is a DB client
    if block_end % BLOCK == 0 and i == block_end - 1 and block_end not in deps:
        deps = [*deps[:2], block_end]
    return sorted(deps)


def _labels(name: str, indent: int) -> str:
    pad = " " * indent
    return f"{pad}app: {name}\n{pad}app.kubernetes.io/name: {name}\n{pad}app.kubernetes.io/part-of: bench\n"


def _env_for(deps: list[int]) -> str:
    lines = []
    for d in deps:
        name = svc(d)
        var = name.upper().replace("-", "_")
        if is_db(d):
            lines += [
                f"            - name: {var}_DATABASE_URL",
                f"              value: postgres://app:app@{name}:5432/app",
                f"            - name: {var}_DATABASE_HOST",
                f"              value: {name}",
            ]
        else:
            lines += [
                f"            - name: {var}_URL",
                f"              value: http://{name}:8080",
                f"            - name: {var}_HOST",
                f"              value: {name}",
            ]
    return "".join(line + "\n" for line in lines)


def dependency_annotation(deps: list[int]) -> str:
    return ",".join(f"{svc(d)}:{'tcp' if is_db(d) else 'http'}" for d in deps)


def deployment_doc(i: int, deps: list[int]) -> str:
    name = svc(i)
    return (
        f"""\
# {name}: synthetic HTTP service
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {NAMESPACE}
  labels:
{_labels(name, 4)}spec:
  replicas: 2
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
{_labels(name, 8)}    spec:
      containers:
        - name: app
          image: ghcr.io/acme/{name}:1.{i % 7}.{i % 13}
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
          env:
            - name: PORT
              value: "8080"
            - name: LOG_LEVEL
              value: info
            - name: SERVICE_NAME
              value: {name}
"""
        + _env_for(deps)
        + f"""\
          readinessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 5
          livenessProbe:
            httpGet:
              path: /livez
              port: http
            initialDelaySeconds: 10
            periodSeconds: 10
          resources:
            requests:
              cpu: 50m
              memory: 64Mi
            limits:
              memory: 128Mi
        - name: metrics
          image: prom/statsd-exporter:v0.27.1
          args:
            - --statsd.listen-udp=:9125
            - --web.listen-address=:9102
          ports:
            - name: metrics
              containerPort: 9102
              protocol: TCP
          resources:
            requests:
              cpu: 10m
              memory: 16Mi
            limits:
              memory: 32Mi
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {NAMESPACE}
  labels:
{_labels(name, 4)}"""
        + (f'  annotations:\n    kardinal.dev.service/dependencies: "{dependency_annotation(deps)}"\n' if deps else "")
        + f"""\
spec:
  type: ClusterIP
  selector:
    app: {name}
  ports:
    - name: http
      port: {80 if i == 1 else 8080}
      targetPort: http
      protocol: TCP
      appProtocol: HTTP
"""
    )


def database_doc(i: int) -> str:
    name = svc(i)
    return f"""\
# {name}: synthetic Postgres, stateful (StatefulSet), seeded per flow by seed-{name}
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {name}
  namespace: {NAMESPACE}
  labels:
{_labels(name, 4)}spec:
  serviceName: {name}
  replicas: 1
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
{_labels(name, 8)}    spec:
      containers:
        - name: postgres
          image: postgres:16
          ports:
            - name: tcp
              containerPort: 5432
              protocol: TCP
          env:
            - name: POSTGRES_DB
              value: app
            - name: POSTGRES_USER
              value: app
            - name: POSTGRES_PASSWORD
              value: app
          readinessProbe:
            exec:
              command: ["pg_isready", "-U", "app", "-d", "app"]
            periodSeconds: 5
          resources:
            requests:
              cpu: 100m
              memory: 256Mi
            limits:
              memory: 512Mi
          volumeMounts:
            - name: data
              mountPath: /var/lib/postgresql/data
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {NAMESPACE}
  labels:
{_labels(name, 4)}  annotations:
    kardinal.dev.service/plugins: "seed-{name}"
spec:
  clusterIP: None
  selector:
    app: {name}
  ports:
    - name: tcp
      port: 5432
      targetPort: tcp
      protocol: TCP
---
apiVersion: v1
kind: Service
metadata:
  name: seed-{name}
  namespace: {NAMESPACE}
  annotations:
    kardinal.dev.service/plugin-definition: |
      - name: ./plugins/seed
        type: stateful
        servicename: seed-{name}
        args:
          seed: "{name}"
"""


NAMESPACE_DOC = f"""\
apiVersion: v1
kind: Namespace
metadata:
  name: {NAMESPACE}
"""

INGRESS_DOC = f"""\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  namespace: {NAMESPACE}
  annotations:
    kardinal.dev.service/ingress: "true"
spec:
  ingressClassName: nginx
  rules:
    - host: shop.example.com
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: {svc(1)}
                port:
                  number: 80
"""


def generate(repo: Path, n: int, isolation: str = "suffix", routing: str = "none") -> None:
    """Write a repository of `n` services (plus namespace, ingress, kustomization and the plugin) into `repo`."""
    (repo / "plugins" / "seed").mkdir(parents=True)
    (repo / "plugins" / "seed" / "main.py").write_text(PLUGIN_MAIN)
    files = ["namespace.yaml", "ingress.yaml"]
    (repo / "namespace.yaml").write_text(NAMESPACE_DOC)
    (repo / "ingress.yaml").write_text(INGRESS_DOC)
    for i in range(1, n + 1):
        text = database_doc(i) if is_db(i) else deployment_doc(i, dependencies(i, n))
        (repo / f"{svc(i)}.yaml").write_text(text)
        files.append(f"{svc(i)}.yaml")
    # the kustomization (for the kubectl kustomize column) sits in the root; `inputs:` keeps devlane reading the
    # files as plain YAML, which is what this benchmark measures (bench_overlay.py measures the built input)
    kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
    kustomization += "".join(f"  - {f}\n" for f in files)
    (repo / "kustomization.yaml").write_text(kustomization)
    mesh = "mesh: {gateway: gateways/public}\n" if routing != "none" else ""  # the Ingress entry's route on a mesh
    (repo / ".devlane.yaml").write_text(f"inputs: [{{path: '**/*.yaml'}}]\nisolation: {isolation}\n"
                                        f"routing: {routing}\n{mesh}")


def flow_target(n: int) -> str:
    """A DB client deep in the first block: its flow gets a dev copy of the first DB and a plugin run."""
    if n >= BLOCK:
        return svc(BLOCK - 1)
    return svc(max(1, n // 2))


# ---------------------------------------------------------------------------------------------
# Measurements


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-4000:]}")
    return proc


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def yaml_files(repo: Path) -> list[Path]:
    return sorted(repo.rglob("*.yaml"))


def parse_in_process(repo: Path) -> int:
    import yaml

    docs = 0
    for p in yaml_files(repo):
        docs += sum(1 for _ in yaml.load_all(p.read_bytes(), Loader=yaml.CSafeLoader))
    return docs


@dataclass
class Row:
    n: int
    files: int
    docs: int
    flow: str
    cli: float
    api: float
    parse: float
    parse_sub: float
    kustomize: float | None
    profile: str = field(default="", repr=False)


def measure(n: int, repeat: int, work: Path, kubectl: str | None, profile: bool, isolation: str = "suffix",
            routing: str = "none") -> Row:
    from renderer import api
    from renderer.render.flow import build_flow

    repo = work / f"n{n}" / "repo"
    generate(repo, n, isolation, routing)
    target = flow_target(n)
    image = f"ghcr.io/acme/{target}:{FLOW_ID}"
    options = api.Options(repo=repo)

    def render_api():
        return api.render(options, build_flow(FLOW_ID, {target: image}, []))

    result = render_api()  # warm-up (imports, caches) and a description of the flow
    dev = result.plan.dev_services()
    flow = (
        f"target {target}: {len(dev)} dev services, {len(result.plan.instances)} plugin run(s), "
        f"{sum(len(f.files) for f in result.flows)} objects"
    )
    docs = parse_in_process(repo)
    files = len(yaml_files(repo))

    outs = iter(range(10**6))
    cli_cmd = [
        sys.executable,
        "-m",
        "renderer.cli",
        "render",
        str(repo),
        "--flow",
        FLOW_ID,
        "--service",
        f"{target}={image}",
    ]
    env = subprocess_env()

    def render_cli():
        out = work / f"n{n}" / f"out-{next(outs)}"
        run([*cli_cmd, "--out", str(out)], env=env)

    def parse_sub():
        proc = run([sys.executable, "-c", PARSE_SCRIPT, str(repo)], env=env)
        if int(proc.stdout) != docs:
            raise SystemExit(f"parse subprocess counted {proc.stdout.strip()} documents, expected {docs}")

    def kustomize():
        run([kubectl, "kustomize", str(repo)], cwd=work)

    row = Row(
        n=n,
        files=files,
        docs=docs,
        flow=flow,
        cli=median_time(render_cli, repeat),
        api=median_time(render_api, repeat),
        parse=median_time(lambda: parse_in_process(repo), repeat),
        parse_sub=median_time(parse_sub, repeat),
        kustomize=median_time(kustomize, repeat) if kubectl else None,
    )
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        render_api()
        prof.disable()
        row.profile = profile_report(prof, n)
    shutil.rmtree(work / f"n{n}", ignore_errors=True)
    return row


def profile_report(prof: cProfile.Profile, n: int) -> str:
    """Top entries by cumulative and own time, the split parse/rest, and devlane's own hot spots."""
    buf = io.StringIO()
    raw = pstats.Stats(prof, stream=buf)
    total = raw.total_tt  # type: ignore[attr-defined]
    parse = sum(
        ct
        for (file, _, func), (_, _, _, ct, _) in raw.stats.items()  # type: ignore[attr-defined]
        if func == "load_all" and file.replace(os.sep, "/").endswith("yaml/__init__.py")
    )
    buf.write(
        f"--- cProfile of one in-process render at N={n}: {total:.2f} s profiled, of which yaml.load_all "
        f"{parse:.2f} s ({parse / total:.0%}) and everything else {total - parse:.2f} s (profiling inflates "
        "Python-heavy code, so compare shares, not seconds)\n"
    )
    buf.write("--- top 25 by cumulative time\n")
    stats = pstats.Stats(prof, stream=buf).strip_dirs()
    stats.sort_stats("cumulative").print_stats(25)
    buf.write("--- top 25 by own (internal) time\n")
    stats.sort_stats("tottime").print_stats(25)
    buf.write("--- top 25 devlane functions (renderer/) by cumulative time: the stages and what they cost\n")
    raw.sort_stats("cumulative").print_stats(r"[/\\]renderer[/\\]", 25)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Report


def fmt(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds:.3f}"


def table(rows: list[list[str]], head: list[str]) -> str:
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def report(rows: list[Row]) -> str:
    out = []
    head = [
        "N",
        "files",
        "docs",
        "render CLI s",
        "render API s",
        "parse in-proc s",
        "parse subproc s",
        "kustomize s",
        "API/parse",
        "CLI/parse-sub",
    ]
    body = [
        [
            str(r.n),
            str(r.files),
            str(r.docs),
            fmt(r.cli),
            fmt(r.api),
            fmt(r.parse),
            fmt(r.parse_sub),
            fmt(r.kustomize),
            f"{r.api / r.parse:.2f}x",
            f"{r.cli / r.parse_sub:.2f}x",
        ]
        for r in rows
    ]
    out.append(table(body, head))
    out.append("")
    out += [f"flow at N={r.n}: {r.flow}" for r in rows]
    out.append("")
    head = ["N", "render API s/1k svc", "parse s/1k svc", "marginal render API s/1k svc", "marginal parse s/1k svc"]
    body = []
    prev: Row | None = None
    for r in rows:
        marginal = marginal_parse = "-"
        if prev is not None:
            marginal = f"{(r.api - prev.api) / (r.n - prev.n) * 1000:.3f}"
            marginal_parse = f"{(r.parse - prev.parse) / (r.n - prev.n) * 1000:.3f}"
        body.append([str(r.n), f"{r.api / r.n * 1000:.3f}", f"{r.parse / r.n * 1000:.3f}", marginal, marginal_parse])
        prev = r
    out.append(table(body, head))
    out.append("")
    out.append(verdict(rows))
    return "\n".join(out)


def verdict(rows: list[Row]) -> str:
    by_n = {r.n: r for r in rows}
    parts = []
    if 1000 in by_n:
        r = by_n[1000]
        ratio = r.api / r.parse
        ok = ratio <= GOAL_RATIO
        parts.append(
            f"2x goal at 1,000: {'PASS' if ok else 'FAIL'} (render API {ratio:.2f}x parse; "
            f"CLI {r.cli / r.parse_sub:.2f}x parse subprocess)"
        )
    else:
        parts.append("2x goal at 1,000: not measured (add 1000 to --sizes)")
    base = by_n.get(1000) or rows[0]
    top = rows[-1]
    if top.n > base.n:
        growth = (top.api / top.n) / (base.api / base.n)
        ok = growth <= LINEAR_TOLERANCE
        parts.append(
            f"linear to {top.n:,}: {'PASS' if ok else 'FAIL'} (cost per service at {top.n:,} is {growth:.2f}x "
            f"that at {base.n:,}; limit {LINEAR_TOLERANCE}x)"
        )
    else:
        parts.append("linearity: not measured (give sizes above 1,000)")
    return "verdict: " + "; ".join(parts)


def source_revision() -> str:
    """The checkout's commit, and a digest of uncommitted changes under renderer/ (best effort)."""
    try:
        head = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
        diff = run(["git", "-C", str(ROOT), "diff", "HEAD", "--", "renderer"]).stdout
    except (OSError, SystemExit):
        return "(not a git checkout)"
    return f"{head} + uncommitted renderer changes {hashlib.sha256(diff.encode()).hexdigest()[:8]}" if diff else head


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,2000,5000", help="comma-separated service counts")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is reported")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the in-process render at the largest size and print the top entries",
    )
    parser.add_argument(
        "--no-kustomize", action="store_true", help="skip kubectl kustomize (it is slow on large repositories)"
    )
    parser.add_argument("--isolation", choices=["suffix", "namespace"], default="suffix",
                        help="the isolation mode of the rendered flow (namespace: every other Service is aliased)")
    parser.add_argument("--routing", choices=["none", "gateway-api", "istio"], default="none",
                        help="the routing mode (a mesh copies what changed and routes it by the flow header)")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not sizes or min(sizes) < 1 or args.repeat < 1:
        parser.error("--sizes needs positive integers and --repeat at least 1")

    sys.path.insert(0, str(ROOT))  # the checkout's renderer, as the subprocesses use it (PYTHONPATH)
    import yaml

    if not getattr(yaml, "__with_libyaml__", False):
        print("warning: PyYAML has no libyaml here; the C loader baseline is unavailable", file=sys.stderr)
    kubectl = None if args.no_kustomize else shutil.which("kubectl")
    revision = source_revision()
    print(
        f"devlane {revision}; python {sys.version.split()[0]}, PyYAML {yaml.__version__} "
        f"(libyaml {yaml.__with_libyaml__}), kubectl {'at ' + kubectl if kubectl else 'not used'}; "
        f"median of {args.repeat} run(s)",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="devlane-bench-") as tmp:
        for n in sizes:
            print(f"... N={n}", file=sys.stderr, flush=True)
            rows.append(measure(n, args.repeat, Path(tmp), kubectl, args.profile and n == sizes[-1], args.isolation,
                                args.routing))
    print(report(rows))
    if source_revision() != revision:
        print(f"warning: the renderer changed during the run ({revision} -> {source_revision()}); rerun")
    if rows[-1].profile:
        print()
        print(rows[-1].profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
