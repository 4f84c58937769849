"""`devlane init` on real public apps (../shared/realworld, temporary copies; skipped when absent).

For each app the adopter's repository is built as `support.realworld_apps` builds it for the isolation tests, but
with the hand annotations *recorded* instead of written (they are the ground truth): the repository is exactly
the upstream files. Then `devlane init --write` (plain manifests) or `--config` (a kustomize base, a Helm
chart) runs with the real CLI, and the app's realistic flow is rendered. Compared with the flow the hand
annotations render:
- the dev set (Services and workloads with a dev version) and the wired edges (a dev pod's reference to
  another dev Service), both computed from the rendered files with `support.isolation`, never from devlane's
  report, are equal, or differ exactly as `DIFFERENCES` says, each difference justified there;
- precision and recall of the inferred dependency edges against the hand ones are printed and pinned.
Also: a second run changes nothing; `--config` leaves every input byte-identical.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support import run_cli
from support.isolation import Objects, baseline_name, dev_pods, key_of, name_of, pod_template, referenced_services
from support.realworld_apps import APPS, BUILT, DEPS, FLOW, INGRESS, STATEFUL, App, BuiltRepo, Repo, image, render

pytestmark = pytest.mark.e2e


class Recorder:
    """Records the hand annotations an app's builder would write, and writes none of them."""

    def __init__(self, root: Path):
        super().__init__(root)  # type: ignore[call-arg]
        self.hand: set[tuple[str, str]] = set()  # (dependent, dependency) by name
        self.hand_stateful: set[str] = set()
        self.hand_entry: str | None = None

    def depends(self, service: str, deps: str, namespace: str | None = None) -> None:
        self.hand |= {(service, d.split(":")[0].split(".")[0]) for d in deps.split(",")}

    def stateful(self, service: str, namespace: str | None = None) -> None:
        self.hand_stateful.add(service)

    def name_port(self, service: str, port_name: str, namespace: str | None = None) -> None:
        pass  # init names unnamed ports by number instead, which dependencies accept

    def entry(self, service: str, port: int, host: str, namespace: str | None = None) -> None:
        self.hand_entry = service

    def annotate(self, kind: str, name: str, namespace: str | None = None, **annotations: str) -> None:
        if DEPS in annotations:
            self.depends(name, annotations[DEPS])
        if STATEFUL in annotations:
            self.stateful(name)
        if INGRESS in annotations:
            self.hand_entry = name


class PlainRecorder(Recorder, Repo):
    pass


class BuiltRecorder(Recorder, BuiltRepo):
    pass


@dataclass(frozen=True)
class Case:
    app: str
    mode: str  # write | config
    precision: float  # of the inferred dependency edges against the hand ones, as measured (pinned)
    recall: float
    # differences from the hand-annotated flow, each justified: dev versions and wired edges only one side has
    dev_only_hand: frozenset[str] = field(default_factory=frozenset)
    dev_only_init: frozenset[str] = field(default_factory=frozenset)
    why: str = ""


CASES = [
    Case("bank-of-anthos", "write", 0.73, 1.0,
         why="init adds what the manifests say beyond the hand set: ledgerwriter reads the whole "
             "service-api-config (contacts, userservice, transactionhistory addresses) and loadgenerator calls "
             "frontend; none of these changes the flow (no stateful callee, not on the entry path)"),
    Case("gke-whereami", "write", 1.0, 1.0),
    Case("k8s-guestbook", "write", 1.0, 0.0,
         dev_only_hand=frozenset({"redis-master", "redis-replica"}),
         why="the PHP guestbook's Redis hosts are compiled into the image: nothing in the manifests names them, "
             "so init infers no edge and lists both Redis Services as unwired (the hand annotation adds the "
             "edges, which devlane then warns are unwired)"),
    Case("eks-workshop-retail-store (kustomize)", "config", 1.0, 1.0),
    Case("retail-store-sample-app (helm)", "config", 1.0, 0.9,
         dev_only_hand=frozenset({"checkout", "checkout-redis"}),
         why="checkout -> orders is missed: upstream values never set checkout's orders endpoint, so without the "
             "edge checkout is not on the entry path to orders; the hand flow copies it (and its own store, "
             "checkout-redis: every dev copy gets its stores), but its dev copy still calls the baseline orders "
             "(the isolation test lists that edge as unwired)"),
    Case("robot-shop (helm)", "config", 1.0, 0.0,
         dev_only_hand=frozenset({"catalogue", "mongodb", "mysql", "payment", "rabbitmq", "ratings", "redis",
                                  "shipping", "user", "web"}),
         why="every robot-shop address is compiled into its images (the only env is INSTANA_AGENT_HOST): init infers "
             "no edge and lists the Services as unwired, suggesting --isolation namespace; the hand flow copies "
             "the stores and their parents along edges whose addresses no manifest holds, and the stores of the copies "
             "made for the path (mysql, rabbitmq)"),
]  # fmt: skip


def _app(app_id: str) -> App:
    return next(a for a in APPS + BUILT if a.id == app_id)


def tree_digest(root: Path, skip: tuple[str, ...] = (".devlane.yaml",)) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).as_posix() not in skip}


def init(root: Path, mode: str) -> dict:
    r = run_cli("init", str(root), f"--{mode}", "-o", "json", timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def short(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def dev_set(objects: list[dict]) -> set[str]:
    return {baseline_name(name_of(o), FLOW) or name_of(o) for o in objects
            if o["kind"] == "Service" or pod_template(o) is not None}


def wired(baseline: list[dict], objects: list[dict]) -> set[tuple[str, str]]:
    """(caller, callee) names where a dev pod reads the address of another dev Service."""
    base, rendered = Objects(baseline), Objects(objects)
    namespaces = base.namespaces() | rendered.namespaces()
    dev_services = {key_of(s) for s in rendered.of_kind("Service")}
    out = set()
    for pod in dev_pods(rendered):
        caller = baseline_name(name_of(pod), FLOW) or name_of(pod)
        for key in referenced_services(pod, rendered, base, namespaces):
            if key in dev_services and baseline_name(key[1], FLOW):
                out.add((caller, baseline_name(key[1], FLOW)))
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.app for c in CASES])
def test_init_gives_the_flow_the_hand_annotation_gives(case: Case, tmp_path: Path):
    app = _app(case.app)
    hand = render(app, tmp_path / "hand")
    assert hand.returncode == 0, hand.stderr

    repo = (BuiltRecorder if app.built else PlainRecorder)(tmp_path / "init" / "repo")
    app.build(repo)
    repo.write()
    before = tree_digest(repo.root)
    first = init(repo.root, case.mode)
    assert first["changed"], "init changed nothing on an unannotated app"
    assert first["next"].startswith(f"devlane render {repo.root} --flow {FLOW} --service ")
    if case.mode == "config":
        assert tree_digest(repo.root) == before, "--config must leave every input byte-identical"
        for rel, text in first["suggested"].items():  # the entry Ingress init prints, added as the note says
            (repo.root / "entry" / Path(rel).name).parent.mkdir(exist_ok=True)
            (repo.root / "entry" / Path(rel).name).write_text(text)
    again = init(repo.root, case.mode)
    assert again["changed"] == [] and again["diff"] == "", again["diff"]

    inferred = {(short(e["from"]), short(e["to"])) for e in first["edges"]}
    true_pos = inferred & repo.hand
    precision = len(true_pos) / len(inferred) if inferred else 1.0  # nothing inferred: nothing wrong
    recall = len(true_pos) / len(repo.hand) if repo.hand else 1.0
    print(f"\n{case.app}: inferred {len(inferred)} edge(s), hand {len(repo.hand)}, precision {precision:.2f}, "
          f"recall {recall:.2f}; missed {sorted(repo.hand - inferred)}, extra {sorted(inferred - repo.hand)}")
    assert (round(precision, 2), round(recall, 2)) == (case.precision, case.recall)
    assert {short(r["service"]) for r in first["roles"] if r["role"] == "stateful"} >= \
        (repo.hand_stateful - case.dev_only_hand)

    flags = [f"--service={t}={image(t)}" for t in app.targets]
    out = tmp_path / "init" / "out"
    r = run_cli("render", str(repo.root), "--flow", FLOW, *flags, "--out", str(out), timeout=120)
    assert r.returncode == 0, r.stderr
    from support.isolation import load_flow

    objects = load_flow(out / "flows" / FLOW)
    hand_dev, init_dev = dev_set(hand.objects), dev_set(objects)
    assert hand_dev - init_dev == case.dev_only_hand, f"{sorted(hand_dev - init_dev)}: {case.why}"
    assert init_dev - hand_dev == case.dev_only_init, case.why
    common = hand_dev & init_dev
    hand_wired = {e for e in wired(hand.baseline, hand.objects) if set(e) <= common}
    assert wired(hand.baseline, objects) >= hand_wired, "an edge the hand flow wires is not wired"
