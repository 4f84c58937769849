"""A dev StatefulSet's claims go with its lane: Kubernetes keeps a StatefulSet's claims (and their volumes) when the
StatefulSet is deleted, so a lane pruned by Argo CD or Flux would leave one claim a replica behind, for every pull
request (found by the cluster tier, tests/cluster/test_lanes.py, on robot-shop's redis). The dev copy asks for them to
be deleted with it; the baseline is never touched; a copy whose claim templates a plugin removed carries no policy."""

from __future__ import annotations

import textwrap

STATEFULSET = """
    apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db}
    spec:
      serviceName: db
      selector: {matchLabels: {app: db}}
      template:
        metadata: {labels: {app: db}}
        spec:
          containers:
          - {name: db, image: postgres:17, volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]}
      volumeClaimTemplates:
      - metadata: {name: data}
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: db}
    spec: {selector: {app: db}, ports: [{name: tcp, port: 5432}]}
"""


def _dev_statefulset(result) -> dict:
    (dev,) = [o for o in result.main.objects if o["kind"] == "StatefulSet"]
    return dev


def test_a_dev_statefulsets_claims_are_deleted_with_it_and_the_baselines_policy_kept(harness):
    harness.write("db.yaml", textwrap.dedent(STATEFULSET.replace(
        "      serviceName: db\n", "      serviceName: db\n      persistentVolumeClaimRetentionPolicy: {whenScaled: "
                                   "Delete, whenDeleted: Retain}\n")))
    dev = _dev_statefulset(harness.render("pr-3", {"db": "postgres:18"}))
    assert dev["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenScaled": "Delete", "whenDeleted": "Delete"}
    assert [t["metadata"]["name"] for t in dev["spec"]["volumeClaimTemplates"]] == ["data"]
    baseline = (harness.root / "db.yaml").read_text()
    assert "whenDeleted: Retain" in baseline


def test_a_dev_statefulset_without_claim_templates_gets_no_policy(harness):
    harness.builtin("ephemeral", """
        def create_flow(service_specs, pod_specs, flow_uuid):
            for spec in pod_specs:
                spec["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/data"}]
                spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
            return {"pod_specs": pod_specs, "config_map": {}}
    """)
    harness.write("db.yaml", textwrap.dedent(STATEFULSET.replace(
        "    metadata: {name: db}\n    spec: {selector", "    metadata:\n      name: db\n      annotations: "
        "{kardinal.dev.service/plugins: eph}\n    spec: {selector") + """
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: eph
      annotations:
        kardinal.dev.service/plugin-definition: "[{name: ephemeral, type: stateful, servicename: eph}]"
    spec: {ports: [{port: 1}]}
    """))
    dev = _dev_statefulset(harness.render("pr-3", {"db": "postgres:18"}))
    assert "volumeClaimTemplates" not in dev["spec"]
    assert "persistentVolumeClaimRetentionPolicy" not in dev["spec"]
