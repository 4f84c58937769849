"""What the live commands decide without a cluster: when a lane's object is ready (kubectl's rollout rules, Job
conditions, kstatus's conventions), when the cluster runs another push of it, which objects are never awaited, and
which objects `gc --cluster` may ever count as a lane's. The same rules meet a real control plane in
tests/cluster/test_live_commands.py."""

from __future__ import annotations

import copy
import re

from hypothesis import given
from hypothesis import strategies as st

from renderer.live.health import health, outdated
from renderer.live.lane import LaneObject
from renderer.live.sweep import lane_of


def deployment(replicas: int = 2, image: str = "example.com/web:2", env: str = "debug") -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web-pr-1", "generation": 3},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "web", "image": image, "env": [{"name": "LOG_LEVEL", "value": env}]}]}}}}


def live(obj: dict, status: dict) -> dict:
    out = copy.deepcopy(obj)
    out["status"] = status
    return out


def state(rendered: dict, status: dict | None) -> tuple[str, str]:
    found = health(LaneObject(rendered, "f.yaml"), None if status is None else live(rendered, status))
    return found.state, found.message


def test_a_deployment_is_ready_once_every_replica_is_updated_and_available():
    d = deployment()
    assert state(d, None) == ("missing", "not in the cluster")
    assert state(d, {"observedGeneration": 2})[0] == "progressing"  # the controller has not seen generation 3
    assert state(d, {"observedGeneration": 3, "replicas": 2, "updatedReplicas": 1}) == \
        ("progressing", "1 of 2 replicas updated")
    assert state(d, {"observedGeneration": 3, "replicas": 3, "updatedReplicas": 2, "availableReplicas": 2}) == \
        ("progressing", "1 old replicas pending termination")
    assert state(d, {"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1}) == \
        ("progressing", "1 of 2 updated replicas available")
    assert state(d, {"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2}) == \
        ("ready", "2 of 2 replicas updated and available")
    stuck = {"observedGeneration": 3, "conditions": [{"type": "Progressing", "status": "False",
                                                      "reason": "ProgressDeadlineExceeded", "message": "too slow"}]}
    assert state(d, stuck) == ("failed", "progress deadline exceeded: too slow")


def test_a_statefulset_waits_for_ready_replicas_and_the_update_revision():
    s = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "generation": 1},
         "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "db", "image": "postgres:16"}]}}}}
    rolled = {"observedGeneration": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1,
              "currentRevision": "db-1", "updateRevision": "db-1"}
    assert state(s, rolled) == ("ready", "1 of 1 replicas ready")
    assert state(s, {**rolled, "readyReplicas": 0})[0] == "progressing"
    assert state(s, {**rolled, "updateRevision": "db-2"}) == ("progressing", "rolling update: 1 of 1 replicas updated")


def test_a_job_is_ready_when_complete_and_failed_when_it_failed():
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "seed"},
           "spec": {"template": {"spec": {"containers": [{"name": "seed", "image": "seed:1"}]}}}}
    assert state(job, {"active": 1}) == ("progressing", "1 running, 0 of 1 succeeded")
    assert state(job, {"conditions": [{"type": "Complete", "status": "True"}]}) == ("ready", "complete")
    failed = {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                              "message": "Job has reached the specified backoff limit"}]}
    assert state(job, failed) == ("failed", "failed: BackoffLimitExceeded: Job has reached the specified backoff "
                                            "limit")


def test_other_kinds_follow_kstatus_and_phases():
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert state(config, {}) == ("ready", "exists")
    custom = {"apiVersion": "rds.services.k8s.aws/v1alpha1", "kind": "DBInstance", "metadata": {"name": "db",
                                                                                               "generation": 2}}
    assert state(custom, {"observedGeneration": 2, "conditions": [
        {"type": "Ready", "status": "False", "reason": "Creating"}]}) == ("progressing", "not ready: Creating")
    assert state(custom, {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True"}]}) == \
        ("ready", "ready")
    assert state(custom, {"conditions": [{"type": "Stalled", "status": "True", "message": "no quota"}]}) == \
        ("failed", "stalled: no quota")
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}}
    assert state(claim, {"phase": "Pending"}) == ("progressing", "Pending")
    assert state(claim, {"phase": "Bound"}) == ("ready", "Bound")
    being_deleted = copy.deepcopy(config)
    being_deleted["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    assert state(being_deleted, {}) == ("progressing", "being deleted")


def test_a_push_not_yet_applied_is_outdated_and_a_digest_pinned_image_is_not():
    rendered = deployment(image="example.com/web:3")
    running = live(deployment(image="example.com/web:2"), {})
    assert outdated(rendered, running) == "container web runs example.com/web:2 (rendered: example.com/web:3)"
    assert health(LaneObject(rendered, "f"), running).state == "outdated"
    pinned = live(deployment(image="example.com/web:3@sha256:" + "a" * 64), {})
    assert outdated(rendered, pinned) is None
    assert outdated(deployment(env="info"), live(deployment(env="debug"), {})) == \
        "container web sets LOG_LEVEL='debug' (rendered: 'info')"


def test_hooks_that_do_not_run_with_the_lane_are_not_awaited():
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "teardown", "annotations": {
        "argocd.argoproj.io/hook": "PostDelete"}}, "spec": {}}
    assert health(LaneObject(job, "f"), None).state == "skipped"
    presync = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "seed", "annotations": {
        "argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"}},
        "spec": {"template": {"spec": {"containers": [{"name": "seed", "image": "seed:1"}]}}}}
    assert health(LaneObject(presync, "f"), None).state == "skipped"  # deleted once it succeeded
    assert health(LaneObject(presync, "f"), live(presync, {"active": 1})).state == "progressing"  # while it runs


LABEL_VALUES = st.one_of(st.sampled_from(["pr-7", "shared", "baseline", "PR-7", "-x", "a" * 41, "", "pr-7\n"]),
                         st.text(max_size=45))


@given(flow=st.one_of(st.none(), LABEL_VALUES), managed=st.one_of(st.none(), st.sampled_from(["devlane", "helm",
                                                                                             "Devlane"])))
def test_gc_counts_an_object_as_a_lanes_only_with_both_labels_and_a_flow_id(flow, managed):
    labels = {k: v for k, v in (("devlane.dev/flow", flow), ("app.kubernetes.io/managed-by", managed)) if v is not None}
    found = lane_of({"metadata": {"labels": labels}})
    if managed != "devlane" or flow is None:
        assert found is None
    else:
        valid = flow == "shared" or (len(flow) <= 40 and flow not in ("baseline", "shared")
                                     and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", flow))
        assert found == (flow if valid else None)
