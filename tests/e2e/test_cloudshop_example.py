"""examples/cloudshop as a user renders it: a checkout service on Amazon RDS, SQS and Stripe, whose flow gets its
own database (ACK DBInstance restored from a snapshot, host exported by a FieldExport), its own queue (ACK Queue,
URL computed offline) and a Stripe test-mode key (ExternalSecret), all from built-ins named by short name. The
rendered flow (snapshot) passes `--validate strict` against the upstream CRDs, builds with `kubectl kustomize`,
and the dev checkout's wiring, read from the rendered objects, reaches only the flow's own resources."""

from __future__ import annotations

import yaml
from support import CRDS, ROOT, kubectl_kustomize, tree, validate_strict, yamlc

EXAMPLE = ROOT / "examples" / "cloudshop"


def test_cloudshop_renders_a_cloud_backed_flow(harness, snapshot):
    repo = harness.copy(EXAMPLE)
    crds = [f"--crds={CRDS / d}" for d in ("aws-controllers-k8s", "external-secrets") if (CRDS / d).is_dir()]
    out = harness.cli("render", "--flow-file", repo / "flows" / "pr-12.yaml", "--validate", "strict", *crds)
    assert out.returncode == 0, out.stderr
    assert "rendered flow pr-12: 13 objects" in out.stderr
    flow_dir = repo / "rendered" / "flows" / "pr-12"
    files = tree(flow_dir)
    assert {f: t.decode() for f, t in files.items()} == snapshot
    objects = {(o["kind"], o["metadata"]["name"]): o for o in
               (yamlc.safe_load(t) for f, t in files.items() if f.endswith(".yaml") and f != "kustomization.yaml")}
    for obj in objects.values():
        validate_strict(obj)
    assert len(kubectl_kustomize(flow_dir)) == len(objects)

    checkout = objects["Deployment", "checkout-pr-12"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in checkout["env"]}
    db, queue = objects["DBInstance", "payments-db-pr-12"], objects["Queue", "order-events-pr-12"]
    export = objects["FieldExport", "host-payments-db-pr-12"]
    assert export["spec"]["from"]["resource"]["name"] == db["metadata"]["name"]
    assert env["DB_HOSTNAME"]["valueFrom"]["configMapKeyRef"] == {"name": export["spec"]["to"]["name"], "key": "host"}
    assert ("ConfigMap", export["spec"]["to"]["name"]) in objects  # FieldExport needs its target to exist
    assert env["DB_PASSWORD"]["valueFrom"]["secretKeyRef"] == db["spec"]["masterUserPassword"]
    assert db["spec"]["dbSnapshotIdentifier"] == "payments-staging-nightly"
    assert env["ORDER_EVENTS_QUEUE_URL"]["value"].endswith("/123456789012/" + queue["spec"]["queueName"])
    stripe = objects["ExternalSecret", "stripe-stripe-api-pr-12"]
    assert env["STRIPE_SECRET_KEY"]["valueFrom"]["secretKeyRef"]["name"] == stripe["spec"]["target"]["name"]
    production = ("payments.c9akciq32", "/order-events\n", "stripe-live")
    assert not any(p in yaml.safe_dump(checkout["env"]) for p in production)
