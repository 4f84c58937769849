"""The round-trip proof on real input: every Service and workload of every YAML file of the real-world apps
(`../shared/realworld`, read in place; edits are written to a temporary directory) gets Kardinal annotations
from `renderer.authoring.yamledit`. Each edited file keeps every old byte, reads as its old objects plus the
annotations, and a second plan over the written file is empty. Nothing may be skipped for a reason that
means the editor lost its place (a re-read that differs, an end it could not find)."""

from __future__ import annotations

import collections

import pytest
from support.paths import SHARED
from support.yamledit import check_annotated

from renderer.authoring.yamledit import AnnotationEdit, EditPlan, apply, plan_annotations
from renderer.core.yamlio import parse_documents
from renderer.errors import DevlaneError

REALWORLD = SHARED / "realworld"
TARGETS = {"Service", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"}
EDITS = (("kardinal.dev.service/dependencies", "probe:http,redis:6379"), ("kardinal.dev.service/stateful", "true"))
LOST = ("would not", "could not be located", "ruamel.yaml", "count different documents")


def _targets(rel: str, docs: list) -> list[AnnotationEdit]:
    out = []
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict):
            continue
        meta = doc.get("metadata")
        if doc.get("kind") in TARGETS and isinstance(meta, dict) and meta.get("name"):
            ns = meta.get("namespace")
            out += [AnnotationEdit(rel, index, str(doc["kind"]), str(meta["name"]), str(ns) if ns else None, key,
                                   value) for key, value in EDITS]
    return out


@pytest.mark.skipif(not REALWORLD.is_dir(), reason="../shared/realworld is absent")
def test_every_real_world_service_and_workload_round_trips(tmp_path):
    files = sorted(p for p in REALWORLD.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    counts: collections.Counter[str] = collections.Counter()
    skipped: collections.Counter[str] = collections.Counter()
    for path in files:
        rel = path.relative_to(REALWORLD).as_posix()
        try:
            docs = parse_documents(path.read_bytes(), rel)
        except DevlaneError:
            counts["not YAML (Helm templates)"] += 1
            continue
        edits = _targets(rel, docs)
        if not edits:
            counts["no Service or workload"] += 1
            continue
        plan = plan_annotations(REALWORLD, edits)
        counts["files"] += 1
        counts["objects"] += len(edits) // len(EDITS)
        for _, reason in plan.skipped:
            skipped[reason] += 1
        lost = [reason for reason in skipped if any(word in reason for word in LOST)]
        assert not lost, f"{rel}: {lost}"
        done = [e for e in edits if e not in {s for s, _ in plan.skipped}
                and e not in {d.edit for d in plan.disagreements}]
        if not done:
            continue
        before, after = plan.changes[rel]
        added: dict[int, dict[str, str]] = {}
        for e in done:
            added.setdefault(e.index, {})[e.key] = e.value
        check_annotated(before, after, added, rel)
        counts["objects annotated"] += len(added)
        copy = tmp_path / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(path.read_bytes())
        assert apply(tmp_path, plan) == [rel]
        assert plan_annotations(tmp_path, edits) == EditPlan({}, plan.disagreements, plan.skipped)
    print(f"\nreal-world round trip: {dict(counts)}; skipped: {dict(skipped) or 'none'}")
    assert counts["files"] >= 100 and counts["objects annotated"] >= 150
