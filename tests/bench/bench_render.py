"""Benchmark: what `devlane render` and `devlane cmp generate` cost on large repositories, against plain YAML parsing.

Not a test: pytest collects only test_*.py. Run from anywhere:

    python tests/bench/bench_render.py [--sizes 1000,5000,10000] [--repeat 3] [--quick] [--profile]

For each size N it generates a synthetic repository of N services in a temporary directory and times,
as the median of --repeat runs (wall clock), side by side:

1. a cold CLI render (`python -m renderer.cli render ... --out DIR`, an empty cache directory), and the
   same with `--no-cache` (what filling the cache costs);
2. a warm CLI render: one render fills a cache, one service file changes (an env value), render again;
3. `cmp generate` as Argo CD runs it, cold (empty cache) and warm (the cache of another flow's run);
4. the same render in-process through the library API (`renderer.api.render`, nothing written);
5. the single-core parse floor: PyYAML's C loader over every YAML file, in-process and as a subprocess;
6. `kubectl kustomize DIR` of the same files (cut after --kustomize-timeout seconds);
7. the peak RSS of the renders;
8. a wide flow (every service a caller of one TCP store: N dev copies) on a repository from shapes.py,
   against that repository's own parse floor; and once, a --chain-deep dependency chain.

Then the ratios and a verdict on issue 15's acceptance points (at 5,000 services; RSS at 10,000) and
the SPEC's (the 2x goal at 1,000, linear growth). Every devlane process gets a cache directory of the
bench's own (DEVLANE_CACHE), never the user's. See tests/bench/README.md for how to read the output.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import hashlib
import io
import itertools
import json
import os
import pstats
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
BENCH = Path(__file__).resolve().parent

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
    commit(repo)


GIT_IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench",
                "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
                "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def commit(repo: Path) -> None:
    """Make `repo` a git checkout of one commit, as a pull request's repository is (its index then records each
    file's blob id, which a re-render reads instead of the file)."""
    env = {**os.environ, **GIT_IDENTITY}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "bench repository"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True, timeout=600)


def flow_target(n: int) -> str:
    """A DB client deep in the first block: its flow gets a dev copy of the first DB and a plugin run."""
    if n >= BLOCK:
        return svc(BLOCK - 1)
    return svc(max(1, n // 2))


# ---------------------------------------------------------------------------------------------
# Running things

CACHE_ENV = "DEVLANE_CACHE"  # devlane's cache directory; the bench always points it at a directory of its own
CHANGED_SERVICE = 42  # the service whose file the warm render changes (svc-0042, not a database)
LOG_LEVEL = "            - name: LOG_LEVEL\n              value: info\n"


def subprocess_env(cache: Path | None = None) -> dict[str, str]:
    """The environment of a subprocess: the checkout's renderer first on the path, and `cache` as devlane's cache."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    if cache is not None:
        env[CACHE_ENV] = str(cache)
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


@dataclass(frozen=True)
class Run:
    """One timed subprocess, or the median of several: seconds when it succeeded, else why not."""

    seconds: float | None = None
    rss_mib: float | None = None  # peak resident set of the process (its largest descendant's, if larger)
    cut_after: float | None = None  # the time limit it was killed at (or skipped for: a smaller size was cut)
    error: str = ""
    stdout: str = field(default="", repr=False)

    @property
    def ok(self) -> bool:
        return self.seconds is not None

    @property
    def failed(self) -> bool:
        """It ran (or was skipped for a smaller size's cut) and did not finish: a check on it fails."""
        return self.cut_after is not None or bool(self.error)

    def cell(self) -> str:
        if self.seconds is not None:
            return f"{self.seconds:.3f}"
        if self.cut_after is not None:
            return f">{self.cut_after:g}"
        return "failed" if self.error else "n/a"


NOT_RUN = Run()


# A launcher between the bench and each measured process: the kernel carries a process's peak RSS across exec, so
# a command forked straight from the bench would report at least the bench's own peak (which the in-process
# renders raise). The launcher is small, and it times the command itself, so its own start-up is not counted.
LAUNCHER = textwrap.dedent(
    """\
    import resource, subprocess, sys, time
    start = time.perf_counter()
    code = subprocess.call(sys.argv[2:])
    seconds = time.perf_counter() - start
    with open(sys.argv[1], "w") as f:
        f.write(f"{seconds!r} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
    sys.exit(code)
    """
)


def run_timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float | None = None) -> Run:
    """Wall clock and peak RSS of one subprocess; its whole process group is killed after `timeout` seconds."""
    with tempfile.TemporaryDirectory(prefix="devlane-run-") as tmp:
        stats = Path(tmp) / "stats"
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        fired = threading.Event()
        start = time.perf_counter()
        with out.open("wb") as out_file, err.open("wb") as err_file:
            proc = subprocess.Popen([sys.executable, "-S", "-c", LAUNCHER, str(stats), *cmd], stdout=out_file,
                                    stderr=err_file, env=env, cwd=cwd, start_new_session=True)

        def kill() -> None:
            fired.set()
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        try:
            proc.wait()
        except BaseException:  # Ctrl-C: the command runs in its own session and would outlive the bench
            kill()
            proc.wait()
            raise
        finally:
            if timer:
                timer.cancel()
        measured = stats.read_text().split() if stats.exists() else []
        stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
    if fired.is_set():
        return Run(cut_after=timeout)
    if proc.returncode != 0 or len(measured) != 2:
        tail = " | ".join(stderr.strip().splitlines()[-4:])
        return Run(error=f"{Path(cmd[0]).name} {' '.join(cmd[1:4])} ... exited {proc.returncode} "
                         f"after {time.perf_counter() - start:.1f} s: {tail}")
    seconds, maxrss = float(measured[0]), int(measured[1])
    return Run(seconds, maxrss / (2**20 if sys.platform == "darwin" else 2**10), stdout=stdout)  # macOS: bytes


def median_run(once: Callable[[int], Run], repeat: int) -> Run:
    """The median time (and the highest peak RSS) of `repeat` runs; the first run that fails or is cut ends it."""
    runs = []
    for k in range(repeat):
        result = once(k)
        if not result.ok:
            return result
        runs.append(result)
    rss = [r.rss_mib for r in runs if r.rss_mib is not None]
    return Run(statistics.median(r.seconds for r in runs if r.seconds is not None), max(rss, default=None),
               stdout=runs[-1].stdout)


def yaml_files(repo: Path) -> list[Path]:
    return sorted(repo.rglob("*.yaml"))


def parse_in_process(repo: Path) -> int:
    import yaml

    docs = 0
    for p in yaml_files(repo):
        docs += sum(1 for _ in yaml.load_all(p.read_bytes(), Loader=yaml.CSafeLoader))
    return docs


def parse_floor(repo: Path, repeat: int, docs: int | None = None) -> Run:
    """The single-core parse floor as a subprocess (start-up included, like the CLI renders it is compared with)."""

    def once(_k: int) -> Run:
        result = run_timed([sys.executable, "-c", PARSE_SCRIPT, str(repo)], subprocess_env())
        if result.ok and docs is not None and int(result.stdout) != docs:
            raise SystemExit(f"parse subprocess counted {result.stdout.strip()} documents, expected {docs}")
        return result

    return median_run(once, repeat)


def render_cmd(repo: Path, flow_id: str, service: str, image: str, out: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "renderer.cli", "render", str(repo), "--flow", flow_id,
            "--service", f"{service}={image}", "--out", str(out), *options]


def cmp_env(cache: Path, flow_id: str, service: str, image: str) -> dict[str, str]:
    """What Argo CD's cmp-server sets for an Application of flow `flow_id` (see renderer/views/cmp.py)."""
    return {**subprocess_env(cache), "ARGOCD_APP_NAME": f"bench-{flow_id}", "ARGOCD_APP_NAMESPACE": NAMESPACE,
            "ARGOCD_APP_PROJECT_NAME": "default", "ARGOCD_APP_REVISION": "0" * 40, "ARGOCD_APP_SOURCE_PATH": ".",
            "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/bench.git", "ARGOCD_ENV_FLOW_ID": flow_id,
            "ARGOCD_APP_PARAMETERS": json.dumps([{"name": "services", "array": [f"{service}={image}"]}]),
            "ARGOCD_EXEC_TIMEOUT": "90s"}  # fmt: skip


def files_under(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file())


def one_file_change(original: str, k: int) -> str:
    """`original` with one env value changed (a different value for each run `k`): a one-file commit."""
    changed = original.replace(LOG_LEVEL, LOG_LEVEL.replace("info", f"debug-{k}"), 1)
    if changed == original:
        raise SystemExit("the warm render's file has no LOG_LEVEL env var to change: the generator changed")
    return changed


def load_shapes() -> ModuleType | None:
    """tests/bench/shapes.py (the wide and chain repositories), or None in a checkout that has none yet."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    try:
        import shapes
    except ModuleNotFoundError as exc:
        if exc.name != "shapes":
            raise
        return None
    return shapes


# ---------------------------------------------------------------------------------------------
# Measurements


@dataclass
class Row:
    n: int
    files: int
    docs: int
    flow: str
    parse: float
    parse_sub: Run
    cold: Run
    no_cache: Run
    warm: Run
    cmp_cold: Run
    cmp_warm: Run
    api: float
    kustomize: Run
    wide_parse: Run = NOT_RUN
    wide: Run = NOT_RUN
    wide_flow: str = ""
    profile: str = field(default="", repr=False)
    paired: dict[str, list[float]] = field(default_factory=dict)  # "cold"/"warm" -> each pair's ratio to the floor

    def paired_ratio(self, name: str) -> float | None:
        """The median of the `name` render's ratios to the parse floor, each pair run back to back (`Bench.pairs`)."""
        found = self.paired.get(name)
        return statistics.median(found) if found else None

    @property
    def rss_mib(self) -> float | None:
        """The peak RSS of the CLI renders of this repository (cold, no-cache, warm and cmp generate)."""
        renders = (self.cold, self.no_cache, self.warm, self.cmp_cold, self.cmp_warm)
        return max((r.rss_mib for r in renders if r.rss_mib), default=None)


@dataclass
class Chain:
    depth: int
    run: Run
    files: int


@dataclass
class Bench:
    """The settings of one bench run, and what a smaller size taught it (a step cut there is skipped above)."""

    work: Path
    repeat: int
    kubectl: str | None
    kustomize_timeout: float
    shape_timeout: float
    isolation: str = "suffix"
    routing: str = "none"
    cut: dict[str, float] = field(default_factory=dict)
    pairs: int = 0
    _ids: Iterator[int] = field(default_factory=itertools.count)

    def fresh(self, stem: str) -> Path:
        """A new path under the work directory (not created): an empty cache directory, an output directory."""
        return self.work / f"{stem}-{next(self._ids)}"

    def render(self, repo: Path, flow: tuple[str, str, str], cache: Path, timeout: float | None = None,
               counted: list[int] | None = None, *options: str) -> Run:
        """One CLI render into a fresh output directory (deleted afterwards; `counted` gets its file count)."""
        out = self.fresh("out")
        result = run_timed(render_cmd(repo, *flow, out, *options), subprocess_env(cache), timeout=timeout)
        if result.ok and counted is not None:
            counted.append(files_under(out))
        shutil.rmtree(out, ignore_errors=True)
        return result

    def cold(self, repo: Path, flow: tuple[str, str, str], timeout: float | None = None,
             counted: list[int] | None = None, *options: str) -> Run:
        """The median render with an empty cache each time (`options`: more CLI options, such as --no-cache)."""

        def once(_k: int) -> Run:
            cache = self.fresh("cache")
            try:
                return self.render(repo, flow, cache, timeout, counted, *options)
            finally:
                shutil.rmtree(cache, ignore_errors=True)

        return median_run(once, self.repeat)

    def warm(self, repo: Path, flow: tuple[str, str, str], changed: Path) -> Run:
        """Render once to fill a cache, then (timed) change one file and render again with that cache."""
        cache = self.fresh("cache")
        fill = self.render(repo, flow, cache)
        if not fill.ok:
            return fill
        original = changed.read_text()

        def once(k: int) -> Run:
            changed.write_text(one_file_change(original, k))
            return self.render(repo, flow, cache)

        try:
            return median_run(once, self.repeat)
        finally:
            changed.write_text(original)
            shutil.rmtree(cache, ignore_errors=True)

    def cmp(self, repo: Path, flow: tuple[str, str, str], warm: bool) -> Run:
        """`cmp generate` in the repository, as Argo CD runs it; warm: with the cache of another flow's run."""

        def generate_in(cache: Path, flow: tuple[str, str, str]) -> Run:
            result = run_timed([sys.executable, "-m", "renderer.cli", "cmp", "generate"], cmp_env(cache, *flow),
                               cwd=repo)
            if result.ok and "\nkind: " not in result.stdout:
                return Run(error=f"cmp generate printed no objects: {result.stdout[:200]!r}")
            return result

        def cold_once(_k: int) -> Run:
            cache = self.fresh("cache")
            try:
                return generate_in(cache, flow)
            finally:
                shutil.rmtree(cache, ignore_errors=True)

        if not warm:
            return median_run(cold_once, self.repeat)
        cache = self.fresh("cache")
        try:
            fill = generate_in(cache, ("pr-2", *flow[1:]))  # another pull request of the same repository and commit
            return fill if not fill.ok else median_run(lambda _k: generate_in(cache, flow), self.repeat)
        finally:
            shutil.rmtree(cache, ignore_errors=True)

    def kustomize(self, repo: Path) -> Run:
        if self.kubectl is None:
            return NOT_RUN
        if "kustomize" in self.cut:  # it grows faster than linearly: cut at a smaller size, it is cut here too
            return Run(cut_after=self.cut["kustomize"], error="skipped: cut at a smaller size")
        kubectl = self.kubectl
        result = median_run(lambda _k: run_timed([kubectl, "kustomize", str(repo)], subprocess_env(), cwd=self.work,
                                                 timeout=self.kustomize_timeout), self.repeat)
        if result.cut_after is not None:
            self.cut["kustomize"] = result.cut_after
        return result

    def measure(self, n: int, profile: bool) -> Row:
        """Every measurement on the synthetic repository of `n` services."""
        from renderer import api
        from renderer.render.plan.flow_spec import build_flow

        repo = self.work / "repo"
        generate(repo, n, self.isolation, self.routing)
        target = flow_target(n)
        image = f"ghcr.io/acme/{target}:{FLOW_ID}"
        flow = (FLOW_ID, target, image)
        options = api.Options(repo=repo)

        caches: list[Path] = []

        def render_api():
            caches.append(self.fresh("cache"))  # in process too, every render starts with an empty cache
            os.environ[CACHE_ENV] = str(caches[-1])
            return api.render(options, build_flow(FLOW_ID, {target: image}, []))

        result = render_api()  # warm-up (imports, caches) and a description of the flow
        dev = result.plan.dev_services()
        described = (
            f"target {target}: {len(dev)} dev services, {len(result.plan.instances)} plugin run(s), "
            f"{sum(len(f.files) for f in result.flows)} objects"
        )
        docs = parse_in_process(repo)
        changed = repo / f"{svc(CHANGED_SERVICE if n >= CHANGED_SERVICE else 1)}.yaml"  # the warm render's edit
        row = Row(
            n=n,
            files=len(yaml_files(repo)),
            docs=docs,
            flow=described,
            parse=median_time(lambda: parse_in_process(repo), self.repeat),
            parse_sub=parse_floor(repo, self.repeat, docs),
            cold=self.cold(repo, flow),
            no_cache=self.cold(repo, flow, None, None, "--no-cache"),
            warm=self.warm(repo, flow, changed),
            cmp_cold=self.cmp(repo, flow, warm=False),
            cmp_warm=self.cmp(repo, flow, warm=True),
            api=median_time(render_api, self.repeat),
            kustomize=self.kustomize(repo),
        )
        if self.pairs:
            row.paired = self.paired(repo, flow, docs, changed)
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            render_api()
            prof.disable()
            row.profile = profile_report(prof, n)
        for path in (repo, *caches):
            shutil.rmtree(path, ignore_errors=True)
        return row

    def paired(self, repo: Path, flow: tuple[str, str, str], docs: int, changed: Path) -> dict[str, list[float]]:
        """`pairs` times in turn: the parse floor, a cold render and a warm render after a one-file change, each
        render's time over the floor's just before it. A machine whose speed drifts (other processes, a neighbour on
        the same host) moves both times of a pair alike, where separate medians of each can drift apart: the verdicts
        on the floor ratios take these when measured."""
        out: dict[str, list[float]] = {"cold": [], "warm": []}
        warm_cache = self.fresh("cache")
        if not self.render(repo, flow, warm_cache).ok:
            return {}
        original = changed.read_text()
        try:
            for k in range(self.pairs):
                floor = parse_floor(repo, 1, docs)
                cold_cache = self.fresh("cache")
                cold = self.render(repo, flow, cold_cache)
                shutil.rmtree(cold_cache, ignore_errors=True)
                changed.write_text(one_file_change(original, 1000 + k))
                warm = self.render(repo, flow, warm_cache)
                for name, run in (("cold", cold), ("warm", warm)):
                    if (r := ratio(run, floor)) is not None:
                        out[name].append(r)
        finally:
            changed.write_text(original)
            shutil.rmtree(warm_cache, ignore_errors=True)
        return out

    def measure_wide(self, row: Row, shapes: ModuleType) -> None:
        """The wide flow at `row.n` (every service a caller of one TCP store) and the parse floor of its repository."""
        repo = self.work / "wide"
        shapes.generate_wide(repo, row.n, isolation=self.isolation, routing=self.routing)
        flow = shapes.flow_for_wide(row.n)
        row.wide_parse = parse_floor(repo, self.repeat)
        if "wide" in self.cut:
            row.wide = Run(cut_after=self.cut["wide"], error="skipped: cut at a smaller size")
        else:
            counted: list[int] = []
            row.wide = self.cold(repo, flow, self.shape_timeout, counted)
            if row.wide.cut_after is not None:
                self.cut["wide"] = row.wide.cut_after
            row.wide_flow = f"flow {flow[0]} for {flow[1]}" + (f": {counted[-1]} files written" if counted else "")
        shutil.rmtree(repo)

    def measure_chain(self, depth: int, shapes: ModuleType) -> Chain:
        """One cold render of a `depth`-deep dependency chain, the flow at its far end."""
        repo = self.work / "chain"
        shapes.generate_chain(repo, depth, isolation=self.isolation, routing=self.routing)
        counted: list[int] = []
        cache = self.fresh("cache")
        result = self.render(repo, shapes.flow_for_chain(depth), cache, self.shape_timeout, counted)
        shutil.rmtree(repo)
        shutil.rmtree(cache, ignore_errors=True)
        return Chain(depth, result, counted[-1] if counted else 0)


def profile_report(prof: cProfile.Profile, n: int) -> str:
    """Top entries by cumulative and own time, the split parse/rest, and devlane's own hot spots."""
    buf = io.StringIO()
    raw = pstats.Stats(prof, stream=buf)
    total = raw.total_tt  # type: ignore[attr-defined]
    def cumulative(func_name: str, file_end: str) -> float:
        return sum(
            ct
            for (file, _, func), (_, _, _, ct, _) in raw.stats.items()  # type: ignore[attr-defined]
            if func == func_name and file.replace(os.sep, "/").endswith(file_end)
        )

    # devlane's own parse entry point (what the renderer calls per file), or PyYAML's if the renderer calls that
    parse = max(cumulative("parse_documents", "renderer/core/yamlio.py"), cumulative("load_all", "yaml/__init__.py"))
    buf.write(
        f"--- cProfile of one in-process render at N={n} (empty cache): {total:.2f} s profiled, of which parsing "
        f"(yamlio.parse_documents) {parse:.2f} s ({parse / total:.0%}) and everything else {total - parse:.2f} s "
        "(profiling inflates Python-heavy code, so compare shares, not seconds; a parse in worker processes is "
        "not seen here)\n"
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

AT = 5000  # the size the acceptance ratios are taken at
RSS_AT = 10000  # ... and the peak RSS
RSS_LIMIT_MIB = 1024.0
WARM_OVER_COLD = 0.25
WARM_OVER_PARSE = 0.5
COLD_OVER_PARSE = 1.0
WIDE_OVER_PARSE = 3.0
CMP_WARM_OVER_PARSE = 0.5
FAST_COLD_OVER_PARSE = 0.5  # issue 45, "faster than parsing, again": with every check of the hostile repository kept
FAST_WARM_OVER_PARSE = 0.08
CHAIN_DEPTH = 10000


def fmt(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds:.3f}"


def seconds(x: Run | float) -> float | None:
    return x.seconds if isinstance(x, Run) else x


def ratio(a: Run | float, b: Run | float) -> float | None:
    num, den = seconds(a), seconds(b)
    return None if num is None or not den else num / den


def fmt_ratio(a: Run | float, b: Run | float) -> str:
    r = ratio(a, b)
    return "n/a" if r is None else f"{r:.2f}x"


def mib(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def per_k(x: Run | float, n: int) -> str:
    s = seconds(x)
    return "n/a" if s is None else f"{s / n * 1000:.3f}"


def marginal(x: Run | float, prev: Run | float, n: int, prev_n: int) -> str:
    s, p = seconds(x), seconds(prev)
    return "n/a" if s is None or p is None else f"{(s - p) / (n - prev_n) * 1000:.3f}"


def table(rows: list[list[str]], head: list[str]) -> str:
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: not measured in this run
    detail: str


def ratio_check(name: str, num: Run | float, den: Run | float, limit: float) -> Check:
    r = ratio(num, den)
    if r is not None:
        return Check(name, r <= limit, f"{r:.2f}x, limit {limit:g}x")
    if any(isinstance(x, Run) and x.failed for x in (num, den)):
        return Check(name, False, "did not finish")
    return Check(name, None, "not measured")


def _floor_pick(row: Row, name: str) -> tuple[Run | float, Run | float]:
    """The `name` render ("cold" or "warm") and the parse floor: their paired ratio (over 1.0) when measured, else the
    two medians."""
    paired = row.paired_ratio(name)
    return (paired, 1.0) if paired is not None else (getattr(row, name), row.parse_sub)


def verdict(rows: list[Row], chain: Chain | None) -> list[Check]:
    """The issue's acceptance points (and the SPEC's 2x goal), each PASS, FAIL or not measured."""
    by_n = {r.n: r for r in rows}
    checks = []
    if 1000 in by_n:
        checks.append(ratio_check("2x goal at 1,000 (SPEC): render API <= 2x parse in-proc", by_n[1000].api,
                                  by_n[1000].parse, GOAL_RATIO))
    else:
        checks.append(Check("2x goal at 1,000 (SPEC)", None, "add 1000 to --sizes"))
    at = by_n.get(AT)
    points = [
        ("warm <= {:g}x cold", lambda r: (r.warm, r.cold), WARM_OVER_COLD),
        ("warm <= {:g}x parse floor", lambda r: (r.warm, r.parse_sub), WARM_OVER_PARSE),
        ("cold <= {:g}x parse floor", lambda r: (r.cold, r.parse_sub), COLD_OVER_PARSE),
        ("wide <= {:g}x its parse floor", lambda r: (r.wide, r.wide_parse), WIDE_OVER_PARSE),
        ("cmp warm <= {:g}x parse floor", lambda r: (r.cmp_warm, r.parse_sub), CMP_WARM_OVER_PARSE),
        ("faster than parsing: cold <= {:g}x parse floor", lambda r: _floor_pick(r, "cold"), FAST_COLD_OVER_PARSE,
         "cold"),
        ("faster than parsing: warm <= {:g}x parse floor", lambda r: _floor_pick(r, "warm"), FAST_WARM_OVER_PARSE,
         "warm"),
    ]
    for name, pick, limit, *paired in points:  # paired: the render whose paired ratio the check takes, if measured
        label = f"{name.format(limit)} at {AT:,}"
        if at and paired and at.paired_ratio(paired[0]) is not None:
            label += f" (median of {len(at.paired[paired[0]])} pairs)"
        checks.append(ratio_check(label, *pick(at), limit) if at else Check(label, None, f"add {AT} to --sizes"))
    label = f"peak RSS at {RSS_AT:,} < 1 GiB"
    big = by_n.get(RSS_AT)
    if big is None or big.rss_mib is None:
        checks.append(Check(label, None, f"add {RSS_AT} to --sizes" if big is None else "not measured"))
    else:
        checks.append(Check(label, big.rss_mib < RSS_LIMIT_MIB, f"{big.rss_mib:.0f} MiB"))
    base, top = by_n.get(1000) or rows[0], rows[-1]
    label = f"linear to {top.n:,}: cost per service <= {LINEAR_TOLERANCE}x that at {base.n:,}"
    if top.n <= base.n:
        checks.append(Check(label, None, "give sizes above 1,000"))
    else:
        parts: list[str] = []
        ok: bool | None = None
        for name, pick in (("cold", lambda r: r.cold), ("wide", lambda r: r.wide)):
            high, low = pick(top), pick(base)
            if high.seconds is not None and low.seconds is not None:
                growth = (high.seconds / top.n) / (low.seconds / base.n)
                parts.append(f"{name} {growth:.2f}x")
                ok = ok is not False and growth <= LINEAR_TOLERANCE
            elif high.failed or low.failed:
                parts.append(f"{name} did not finish")
                ok = False
        checks.append(Check(label, ok, ", ".join(parts) or "not measured"))
    if chain is None:
        checks.append(Check(f"{CHAIN_DEPTH:,}-deep chain renders", None, "not measured"))
    else:
        note = "" if chain.depth >= CHAIN_DEPTH else f" (measured {chain.depth:,} deep; --chain {CHAIN_DEPTH})"
        checks.append(Check(f"{chain.depth:,}-deep chain renders", chain.run.ok, chain_text(chain)[:160] + note))
    return checks


def chain_text(chain: Chain) -> str:
    r = chain.run
    if r.ok:
        return f"rendered in {r.seconds:.3f} s, {chain.files} files written, peak RSS {mib(r.rss_mib)} MiB"
    if r.cut_after is not None:
        return f"cut after {r.cut_after:g} s (--wide-timeout)"
    return f"failed: {r.error}"


def spread(values: list[float]) -> list[str]:
    """Median, min and max of ratios, as table cells."""
    if not values:
        return ["n/a"] * 3
    return [f"{statistics.median(values):.2f}x", f"{min(values):.2f}x", f"{max(values):.2f}x"]


def report(rows: list[Row], chain: Chain | None) -> str:
    out = ["times (s, median of --repeat; CLI runs and the parse subproc include interpreter start-up):"]
    head = ["N", "files", "docs", "parse in-proc s", "parse subproc s", "cold CLI s", "no-cache CLI s", "warm CLI s",
            "cmp cold s", "cmp warm s", "render API s", "kustomize s", "RSS MiB"]
    out.append(table([[str(r.n), str(r.files), str(r.docs), fmt(r.parse), r.parse_sub.cell(), r.cold.cell(),
                       r.no_cache.cell(), r.warm.cell(), r.cmp_cold.cell(), r.cmp_warm.cell(), fmt(r.api),
                       r.kustomize.cell(), mib(r.rss_mib)] for r in rows], head))
    out.append("")
    out += [f"flow at N={r.n}: {r.flow}" for r in rows]
    out.append("")
    if any(r.wide_parse is not NOT_RUN for r in rows):
        out.append("wide flow (every service a caller of one TCP store), against its own repository's parse floor:")
        head = ["N", "wide parse subproc s", "wide CLI s", "wide RSS MiB", "wide/parse"]
        out.append(table([[str(r.n), r.wide_parse.cell(), r.wide.cell(), mib(r.wide.rss_mib),
                           fmt_ratio(r.wide, r.wide_parse)] for r in rows], head))
        out += [f"wide at N={r.n}: {r.wide_flow}" for r in rows if r.wide_flow]
    else:
        out.append("wide flow: not measured (tests/bench/shapes.py is missing)")
    out.append("")
    out.append("ratios (CLI runs against the parse subproc; API against parse in-proc):")
    head = ["N", "warm/cold", "warm/parse", "cold/parse", "cold/no-cache", "wide/parse", "cmp-warm/parse",
            "cmp-cold/parse", "API/parse"]
    out.append(table([[str(r.n), fmt_ratio(r.warm, r.cold), fmt_ratio(r.warm, r.parse_sub),
                       fmt_ratio(r.cold, r.parse_sub), fmt_ratio(r.cold, r.no_cache), fmt_ratio(r.wide, r.wide_parse),
                       fmt_ratio(r.cmp_warm, r.parse_sub), fmt_ratio(r.cmp_cold, r.parse_sub),
                       fmt_ratio(r.api, r.parse)] for r in rows], head))
    if any(r.paired for r in rows):
        out.append("")
        out.append("paired ratios to the parse floor (each pair run back to back: the floor, then the render; "
                   "median, min and max over --pairs):")
        head = ["N", "pairs", "cold/parse", "cold min", "cold max", "warm/parse", "warm min", "warm max"]
        out.append(table([[str(r.n), str(len(r.paired.get("cold", []))),
                           *spread(r.paired.get("cold", [])), *spread(r.paired.get("warm", []))]
                          for r in rows if r.paired], head))
    out.append("")
    head = ["N", "cold CLI s/1k svc", "wide CLI s/1k svc", "render API s/1k svc", "parse subproc s/1k svc",
            "marginal cold", "marginal wide", "marginal API", "marginal parse"]
    body = []
    prev: Row | None = None
    for r in rows:
        margins = ["-"] * 4
        if prev is not None:
            margins = [marginal(pick(r), pick(prev), r.n, prev.n) for pick in
                       (lambda x: x.cold, lambda x: x.wide, lambda x: x.api, lambda x: x.parse_sub)]
        body.append([str(r.n), per_k(r.cold, r.n), per_k(r.wide, r.n), per_k(r.api, r.n), per_k(r.parse_sub, r.n),
                     *margins])
        prev = r
    out.append("seconds per 1,000 services (marginal: the slope from the previous size):")
    out.append(table(body, head))
    out.append("")
    if chain is not None:
        out.append(f"chain of {chain.depth:,}: {chain_text(chain)}")
        out.append("")
    failures = [f"N={r.n} {name}: {run.error}" for r in rows for name, run in
                (("parse subproc", r.parse_sub), ("cold", r.cold), ("no-cache", r.no_cache), ("warm", r.warm),
                 ("cmp cold", r.cmp_cold), ("cmp warm", r.cmp_warm), ("kustomize", r.kustomize),
                 ("wide parse", r.wide_parse), ("wide", r.wide)) if run.error and not run.error.startswith("skipped")]
    if failures:
        out += ["failures:", *failures, ""]
    out += verdict_lines(verdict(rows, chain))
    return "\n".join(out)


def verdict_lines(checks: list[Check]) -> list[str]:
    """Each check as PASS, FAIL or n/a with its detail, then the verdict line (bench_review.py prints them too)."""
    word = {True: "PASS", False: "FAIL", None: "n/a "}
    out = [f"  {word[c.ok]}  {c.name} ({c.detail})" for c in checks]
    passed = sum(1 for c in checks if c.ok)
    failed = [c.name for c in checks if c.ok is False]
    unmeasured = sum(1 for c in checks if c.ok is None)
    out.append(f"verdict: {passed} of {len(checks)} checks pass" + (f"; FAIL: {'; '.join(failed)}" if failed else "")
               + (f"; {unmeasured} not measured" if unmeasured else ""))
    return out


def compile_renderer() -> None:
    """Write the checkout's bytecode before any timing: an installed devlane has it (pip compiles at install), while a
    checkout run under PYTHONDONTWRITEBYTECODE=1 (set on some CI machines) would compile every stale module in every
    measured process, about 0.25 s when none is compiled: a cost of the checkout, not of devlane."""
    import compileall

    compileall.compile_dir(str(ROOT / "renderer"), quiet=1)


def source_revision() -> str:
    """The checkout's commit, and a digest of uncommitted changes under renderer/ (best effort)."""
    try:
        head = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
        diff = run(["git", "-C", str(ROOT), "diff", "HEAD", "--", "renderer"]).stdout
    except (OSError, SystemExit):
        return "(not a git checkout)"
    return f"{head} + uncommitted renderer changes {hashlib.sha256(diff.encode()).hexdigest()[:8]}" if diff else head


def load_average() -> str:
    """The 1-minute load average before the run: other busy processes make every time here noisy."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except (AttributeError, OSError):
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help="comma-separated service counts (default 1000,5000,10000)")
    parser.add_argument("--repeat", type=int, help="runs per measurement; the median is reported (default 3)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: sizes 1000, repeat 1, no kustomize, a 1,000-deep chain (under a minute)")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the in-process render at the largest size and print the top entries",
    )
    parser.add_argument(
        "--no-kustomize", action="store_true", help="skip kubectl kustomize (it is slow on large repositories)"
    )
    parser.add_argument("--pairs", type=int, metavar="K",
                        help="parse floor, cold and warm render run K times in turn, for the floor ratios' verdicts "
                             "(default 3; 1 with --quick; 0: none)")
    parser.add_argument("--kustomize-timeout", type=float, default=300.0, metavar="S",
                        help="cut kubectl kustomize after S seconds, shown as >S, and skip it at larger sizes")
    parser.add_argument("--wide-timeout", type=float, default=300.0, metavar="S",
                        help="cut a wide-flow or chain render after S seconds, shown as >S (wide: skipped above)")
    parser.add_argument("--chain", type=int, metavar="DEPTH",
                        help=f"depth of the chain render (default {CHAIN_DEPTH}, 1000 with --quick; 0: none)")
    parser.add_argument("--isolation", choices=["suffix", "namespace"], default="suffix",
                        help="the isolation mode of the rendered flow (namespace: every other Service is aliased)")
    parser.add_argument("--routing", choices=["none", "gateway-api", "istio"], default="none",
                        help="the routing mode (a mesh copies what changed and routes it by the flow header)")
    args = parser.parse_args(argv)
    sizes_arg = args.sizes or ("1000" if args.quick else "1000,5000,10000")
    repeat = args.repeat or (1 if args.quick else 3)
    pairs = args.pairs if args.pairs is not None else (1 if args.quick else 3)
    depth = args.chain if args.chain is not None else (1000 if args.quick else CHAIN_DEPTH)
    sizes = sorted({int(s) for s in sizes_arg.split(",") if s.strip()})
    if not sizes or min(sizes) < 1 or repeat < 1 or depth < 0:
        parser.error("--sizes needs positive integers, --repeat at least 1 and --chain at least 0")

    sys.path.insert(0, str(ROOT))  # the checkout's renderer, as the subprocesses use it (PYTHONPATH)
    compile_renderer()
    import yaml

    if not getattr(yaml, "__with_libyaml__", False):
        print("warning: PyYAML has no libyaml here; the C loader baseline is unavailable", file=sys.stderr)
    kubectl = None if args.no_kustomize or args.quick else shutil.which("kubectl")
    shapes = load_shapes()
    revision = source_revision()
    print(
        f"devlane {revision}; python {sys.version.split()[0]}, PyYAML {yaml.__version__} "
        f"(libyaml {yaml.__with_libyaml__}), kubectl {'at ' + kubectl if kubectl else 'not used'}; "
        f"{os.cpu_count()} CPU(s), load {load_average()}; median of {repeat} run(s)",
        flush=True,
    )
    if shapes is None:
        print("note: tests/bench/shapes.py is missing: the wide flow and the chain are not measured", flush=True)
    started = time.perf_counter()
    rows = []
    chain = None
    cut: dict[str, float] = {}  # shared by the sizes: what was cut at one size is skipped at the larger ones
    with tempfile.TemporaryDirectory(prefix="devlane-bench-") as tmp:
        os.environ[CACHE_ENV] = str(Path(tmp) / "cache")  # never the user's cache, in process or in a subprocess
        for n in sizes:
            print(f"... N={n}", file=sys.stderr, flush=True)
            bench_dir = Path(tmp) / f"n{n}"
            bench_dir.mkdir()
            bench = Bench(bench_dir, repeat, kubectl, args.kustomize_timeout, args.wide_timeout, args.isolation,
                          args.routing, cut, pairs)
            rows.append(bench.measure(n, args.profile and n == sizes[-1]))
            if shapes is not None:
                print(f"... N={n} wide", file=sys.stderr, flush=True)
                bench.measure_wide(rows[-1], shapes)
            shutil.rmtree(bench_dir, ignore_errors=True)
        if shapes is not None and depth:
            print(f"... chain of {depth}", file=sys.stderr, flush=True)
            chain_dir = Path(tmp) / "chain"
            chain_dir.mkdir()
            chain = Bench(chain_dir, 1, None, args.kustomize_timeout, args.wide_timeout, args.isolation,
                          args.routing).measure_chain(depth, shapes)
    print(report(rows, chain))
    if source_revision() != revision:
        print(f"warning: the renderer changed during the run ({revision} -> {source_revision()}); rerun")
    if rows[-1].profile:
        print()
        print(rows[-1].profile)
    print(f"({time.perf_counter() - started:.0f} s in all)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
