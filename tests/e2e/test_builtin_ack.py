"""The AWS built-ins' output is what a cluster accepts: every object of a flow rendered with aws-rds, aws-sqs and
aws-s3 (named by short name, in their typical and variant shapes) passes strict Kubernetes schema validation, the ACK,
External Secrets and Job objects their upstream CRDs and schemas (an invented field fails), the flow directory builds
with `kubectl kustomize`, and no value of any secret-looking arg appears in any rendered file."""

from __future__ import annotations

import pytest
from support import ROOT, kubectl_kustomize, validate_strict, yamlc
from support.ack import DEFINITIONS, aws_shop

from renderer import api

VARIANTS = {
    "typical": None,
    "aurora-fifo-postdelete": {
        "aws-rds": {"engine": "aurora-postgresql", "db_user": "", "db_master_password": "", "db_subnet_group_name": "",
                    "security_group_id": "", "source_cluster": "shop-staging", "master_password_secret": "shop-db",
                    "region": "us-east-1"},
        "aws-sqs": {"fifo": "true", "queue_prefix": "acme-", "deletion_policy": "retain"},
        "aws-s3": {"teardown": "argo-postdelete", "job_service_account": "bucket-janitor", "region": "us-east-1"}},
}


def secret_args() -> dict[str, str]:
    """Every arg value of the definitions that an argsSchema marks secret (writeOnly) or whose name says so."""
    out = {}
    for plugin, args in DEFINITIONS.items():
        props = yamlc.safe_load((ROOT / "plugins" / plugin / "plugin.yaml").read_text())["spec"]["argsSchema"][
            "properties"]
        for name, value in args.items():
            looks = any(w in name for w in ("password", "secret", "token", "key")) and \
                props[name].get("x-devlane-secret") is not False
            if props[name].get("writeOnly") or looks:
                out[f"{plugin}.{name}"] = value
    return out


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_flow_with_the_aws_builtins_is_valid_builds_and_is_secret_free(harness, variant):
    aws_shop(harness, args=VARIANTS[variant])
    result = harness.render("pr-7", {"shop": "example.com/shop:2"})
    kinds = set()
    for flow in result.flows:
        for obj in flow.objects:
            validate_strict(obj)
            kinds.add(obj["kind"])
    assert {"DBInstance", "FieldExport", "Queue", "Bucket"} <= kinds
    assert ("DBCluster" in kinds, "Job" in kinds) == ((True, True) if variant != "typical" else (False, False))
    paths = api.write(result, harness.tmp / "out")
    built = kubectl_kustomize(paths[0])
    assert sorted((o["kind"], o["metadata"]["name"]) for o in built) == \
        sorted((o["kind"], o["metadata"]["name"]) for o in result.main.objects)
    secrets = secret_args()
    assert secrets  # the Kardinal literal password, at least
    files = [p.read_text() for p in (harness.tmp / "out").rglob("*") if p.is_file()]
    for label, value in secrets.items():
        assert not any(value in text for text in files), label
