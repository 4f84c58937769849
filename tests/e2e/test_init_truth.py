"""`devlane init` against hand-written truth (issue 44, point 4): on every plain app and every Helm umbrella of
../shared/realworld, and on DeathStarBench's social network (a fetched snapshot), the edges init infers are
measured against what a person who knows the app writes (`tests/e2e/init_truth/*.yaml`, written from each app's
ORIGIN.md and source, never from init's output):

- precision (inferred edges that are true) and recall (true edges whose address a manifest holds, inferred) are
  both >= 0.8, and pinned as measured;
- every true edge init does not infer is listed as not inferable: its caller or callee among init's `unwired`
  (with the reason), or the shared configuration it comes from (caller among the readers, callee named);
- telemetry sinks are listed as telemetry, and no edge leads to one.

Each app is laid out as an adopter's repository in a temporary directory (plain files copied byte for byte; a
chart read as the repository's input) and init runs with the real CLI (`--dry-run -o json`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support import run_cli
from support.mirror import export, snapshot
from support.realworld import REALWORLD, helm_bin

pytestmark = pytest.mark.e2e

TRUTH = Path(__file__).parent / "init_truth"
CASES = sorted(p.stem for p in TRUTH.glob("*.yaml"))
FLOOR = 0.8


def _edges(items: list[str]) -> set[tuple[str, str]]:
    return {tuple(part.strip() for part in item.split("->")) for item in items}  # type: ignore[misc]


def _layout(truth: dict, tmp_path: Path) -> Path:
    """The adopter's repository for `truth['layout']`, in `tmp_path`."""
    layout = truth["layout"]
    repo = tmp_path / "repo"
    if "files" in layout:
        src = REALWORLD / truth["app"]
        if not src.is_dir():
            pytest.skip(f"real-world inputs not available ({src})")
        chosen = [p.relative_to(src).as_posix() for pattern in layout["files"] for p in sorted(src.glob(pattern))]
        assert chosen, f"{truth['app']}: no file matches {layout['files']}"
        for rel in chosen:
            text = (src / rel).read_text()
            for old, new in (layout.get("rewrite") or {}).items():
                text = text.replace(old, new)
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        return repo
    helm = helm_bin()
    if "fetched" in layout:
        export(snapshot(layout["fetched"], "DEVLANE_" + layout["fetched"].split("+")[1].upper()), layout["chart"],
               repo)
    else:
        if not (REALWORLD / truth["app"]).is_dir():
            pytest.skip(f"real-world inputs not available ({REALWORLD / truth['app']})")
        shutil.copytree(REALWORLD / truth["app"], repo)
    chart = layout["chart"]
    if layout.get("dependencyBuild"):
        out = subprocess.run([helm, "dependency", "build", str(repo / chart)], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
    config = {"inputs": [{"helm": chart, "releaseName": layout.get("release", "rel"),
                          "values": [f"{chart}/{v}" for v in layout.get("values", [])]}]}
    (repo / ".devlane.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return repo


def short(key: str) -> str:
    return key.rsplit("/", 1)[-1]


@pytest.mark.parametrize("case", CASES)
def test_init_infers_what_a_person_writes(case: str, tmp_path: Path):
    truth = yaml.safe_load((TRUTH / f"{case}.yaml").read_text())
    repo = _layout(truth, tmp_path)
    r = run_cli("init", str(repo), "--dry-run", "-o", "json", timeout=180)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    report = json.loads(r.stdout)

    inferable = _edges(truth["edges"])
    hidden = {e: group["why"] for group in truth["notInferable"] for e in _edges(group["edges"])}
    true = inferable | set(hidden)
    inferred = {(short(e["from"]), short(e["to"])) for e in report["edges"]}
    precision = len(inferred & true) / len(inferred) if inferred else 1.0
    recall = len(inferred & inferable) / len(inferable) if inferable else 1.0
    print(f"\n{case}: inferred {len(inferred)}, true {len(true)} ({len(inferable)} in the manifests), "
          f"precision {precision:.2f}, recall {recall:.2f}; extra {sorted(inferred - true)}, "
          f"missed {sorted(inferable - inferred)}")
    assert precision >= FLOOR and recall >= FLOOR, f"{case}: precision {precision:.2f}, recall {recall:.2f}"
    assert {"precision": round(precision, 2), "recall": round(recall, 2)} == truth["measured"]

    callees = {short(u["service"]) for u in report["unwired"] if u["side"] == "callee"}
    callers = {short(u["service"]) for u in report["unwired"] if u["side"] == "caller"}
    shared = [({short(k) for k in c["readers"]}, {short(k) for k in (*c["stores"], *c["services"])})
              for c in report["sharedConfig"]]
    unlisted = sorted(e for e in true - inferred if e[0] not in callers and e[1] not in callees
                      and not any(e[0] in readers and e[1] in named for readers, named in shared))
    assert not unlisted, f"{case}: neither inferred nor listed as not inferable: {unlisted}"
    assert all(u["reason"] and u["suggestion"] for u in report["unwired"])

    sinks = {short(t["service"]) for t in report["telemetry"]}
    assert sinks == set(truth["telemetry"]), f"{case}: telemetry {sorted(sinks)}"
    assert not {e for e in inferred if e[1] in sinks or e[0] in sinks}, "an edge to or from a telemetry sink"
