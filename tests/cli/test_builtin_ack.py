"""The AWS built-ins (plugins/aws-rds, aws-sqs, aws-s3), in-process: their argsSchema lists exactly the args
create_flow binds, a repository names them by short name and the dev copy is wired to the flow's own resources
(computed from the rendered objects), nothing secret is rendered or logged, a definition written for Kardinal's
aws-rds-plugin works with only `name` changed, and renders are byte-identical. Strict validation and `kubectl
kustomize` of the rendered flows are in tests/e2e/test_builtin_ack.py."""

from __future__ import annotations

import inspect

import pytest
from support import ROOT, yamlc
from support.ack import ACK_SECRET, SERVICES, aws_shop
from support.kardinal import import_builtin

FLOW = ["--flow", "pr-7", "--service", "shop=example.com/shop:2"]
KARDINAL_OWN = ("service_specs", "pod_specs", "flow_uuid")


def render(harness, *extra: str) -> tuple[list[dict], str]:
    result = harness.cli("render", *FLOW, "--stdout", "--debug", *extra)
    assert result.returncode == 0, result.stderr
    return [o for o in yamlc.safe_load_all(result.stdout) if o], result.stdout + result.stderr


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


@pytest.mark.parametrize("plugin", sorted(SERVICES))
def test_args_schema_lists_exactly_the_args_create_flow_binds(plugin):
    spec = yamlc.safe_load((ROOT / "plugins" / plugin / "plugin.yaml").read_text())["spec"]
    module = import_builtin(plugin)
    bound = [p for p in inspect.signature(module.create_flow).parameters if p not in KARDINAL_OWN]
    assert list(spec["argsSchema"]["properties"]) == bound == list(module.ARGS)
    assert all(k.rpartition("/")[0] for k in spec["emits"] if k != "ConfigMap")  # custom kinds name their group


def test_dev_copy_is_wired_to_the_flows_own_resources(harness):
    aws_shop(harness)
    objects, _ = render(harness)
    shop = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "shop-pr-7")
    env = {e["name"]: e for e in shop["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert len(env) == len(shop["spec"]["template"]["spec"]["containers"][0]["env"])  # set by name, no duplicate
    # RDS: the host comes from the ConfigMap a FieldExport of the flow's DBInstance fills
    [db] = by_kind(objects, "DBInstance")
    [export] = by_kind(objects, "FieldExport")
    ref = env["DB_HOSTNAME"]["valueFrom"]["configMapKeyRef"]
    assert (export["spec"]["to"]["name"], export["spec"]["to"]["key"]) == (ref["name"], ref["key"])
    assert export["spec"]["from"]["resource"] == {"group": "rds.services.k8s.aws", "kind": "DBInstance",
                                                  "name": db["metadata"]["name"]}
    target = next(o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == ref["name"])
    assert "data" not in target  # empty: the controller writes it, GitOps never fights over it
    secret = env["DB_PASSWORD"]["valueFrom"]["secretKeyRef"]
    assert db["spec"]["masterUserPassword"] == secret
    assert [e["spec"]["target"]["name"] for e in by_kind(objects, "ExternalSecret")] == [secret["name"]]
    assert env["DB_USER"]["value"] == db["spec"]["masterUsername"] == "shop"
    # SQS: the URL names the flow's queue; S3: the bucket name is the flow's bucket
    [queue] = by_kind(objects, "Queue")
    assert env["QUEUE_URL"]["value"].endswith("/" + queue["spec"]["queueName"])
    [bucket] = by_kind(objects, "Bucket")
    assert env["BUCKET_NAME"]["value"] == bucket["spec"]["name"]
    # every added AWS name carries the flow; the baseline shop is untouched
    assert all("pr-7" in n for n in (db["spec"]["dbInstanceIdentifier"], queue["spec"]["queueName"],
                                     bucket["spec"]["name"]))
    assert not [o for o in objects if o["metadata"]["name"] == "shop"]


def test_nothing_secret_is_rendered_or_logged(harness):
    aws_shop(harness)
    _, text = render(harness)
    assert ACK_SECRET not in text
    assert "args.db_master_password is never written into the manifests" in text
    described = harness.cli("plugins", "describe", "aws-rds", harness.root)
    assert described.returncode == 0 and "db_master_password: ***" in described.stdout
    assert ACK_SECRET not in described.stdout + described.stderr


def test_kardinal_definition_works_with_only_the_name_changed(harness):
    """Kardinal's aws-rds-plugin args (db_user, db_master_password, db_subnet_group_name, security_group_id) as the
    only args: the flow gets its own Postgres, and the app its DB_HOSTNAME, DB_USER and DB_PASSWORD."""
    aws_shop(harness, ("aws-rds",))
    text = (harness.root / "app.yaml").read_text()
    harness.write("app.yaml", text.replace("name: aws-rds", "name: github.com/kurtosis-tech/aws-rds-plugin"))
    assert harness.cli("render", *FLOW, "--stdout").returncode == 1  # Kardinal's own plugin is not pinned here
    harness.write("app.yaml", text)
    objects, _ = render(harness)
    [db] = by_kind(objects, "DBInstance")
    assert (db["spec"]["engine"], db["spec"]["dbSubnetGroupName"], db["spec"]["vpcSecurityGroupIDs"]) == \
        ("postgres", "dev-lanes", ["sg-0123456789abcdef0"])
    assert db["spec"]["dbName"] == "shop"  # the dependents' DB_NAME, as Kardinal's plugin read it


def test_renders_are_identical_and_the_scope_changes_the_bucket(harness):
    aws_shop(harness)
    first, _ = render(harness)
    again, _ = render(harness)
    assert first == again
    aws_shop(harness, args={"aws-s3": {"unique_scope": "another/repo"}})
    other, _ = render(harness)
    names = [by_kind(objs, "Bucket")[0]["spec"]["name"] for objs in (first, other)]
    assert names[0] != names[1] and names[0].rsplit("-", 1)[0] == names[1].rsplit("-", 1)[0]
