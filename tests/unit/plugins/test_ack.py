"""The AWS built-ins' logic, called directly (no render): names within each AWS limit and stable, env set by name,
args refused with the field and the reason, and a Kardinal literal password never written."""

from __future__ import annotations

import json
import re

import pytest
from support.kardinal import import_builtin

from plugins import _ack, _common

RDS, SQS, S3 = (import_builtin(n) for n in ("aws-rds", "aws-sqs", "aws-s3"))
LONG = "a-very-long-servicename-for-the-orders-database-x" + "-pr-" + "1234567890" * 4  # 104 characters
POD = {"containers": [{"name": "app", "image": "example.com/app:1",
                       "env": [{"name": "DB_HOSTNAME", "value": "old"}, {"name": "X", "value": "1"},
                               {"name": "DB_HOSTNAME", "value": "dup"}]}]}


@pytest.mark.parametrize("uuid", ["orders-db-pr-7", "9lives-pr-7", LONG, "a--b-pr-7"])
def test_rds_identifiers_follow_rds_rules(uuid):
    ident = _ack.aws_name(uuid, RDS.MAX_IDENTIFIER, letter_first=True)
    assert re.fullmatch(r"[a-z][a-z0-9-]{0,62}", ident) and "--" not in ident and not ident.endswith("-")
    assert ident == _ack.aws_name(uuid, RDS.MAX_IDENTIFIER, letter_first=True)  # stable
    if len(uuid) <= 63 and uuid[0].isalpha() and "--" not in uuid:
        assert ident == uuid


def test_long_names_are_shortened_with_a_hash_that_keeps_them_apart():
    a, b = (_ack.aws_name(LONG + s, 63) for s in ("0", "1"))
    assert len(a) == len(b) == 63 and a != b and a[:40] == b[:40]


@pytest.mark.parametrize("fifo", [True, False])
def test_sqs_queue_names_fit_80_with_the_fifo_suffix(fifo):
    name = SQS.queue_name(LONG, "acme_dev-", fifo)
    assert len(name) <= 80 and re.fullmatch(r"[A-Za-z0-9_-]+(\.fifo)?", name)
    assert name.endswith(".fifo") is fifo and name.startswith("acme_dev-")
    assert SQS.queue_url("eu-west-1", "123456789012", name) == f"https://sqs.eu-west-1.amazonaws.com/123456789012/{name}"


def test_s3_bucket_names_are_global_lowercase_and_stable():
    names = {i: S3.bucket_name(uuid, prefix, scope) for i, (uuid, prefix, scope) in enumerate([
        ("uploads-pr-7", "", ""), ("uploads-pr-7", "", "repo-b"), ("uploads-pr-7", "acme", ""), (LONG, "acme", "")])}
    for name in names.values():
        assert 3 <= len(name) <= 63 and re.fullmatch(r"[a-z0-9][a-z0-9-]*[a-z0-9]", name), name
    assert len(set(names.values())) == 4  # the scope and the prefix change the hash
    assert names[0].startswith("uploads-pr-7-") and names[0] == S3.bucket_name("uploads-pr-7", "", "")
    assert S3.bucket_name("xn--pr-7", "", "").startswith("xn-pr-7-")  # "--" collapses: not the reserved xn--
    assert S3.bucket_name("sthree-pr-7", "", "").startswith("b-sthree-pr-7-")


def test_dependents_get_env_by_name_on_a_copy():
    specs = _common.wire([POD], {"DB_HOSTNAME": _ack.configmap_ref("conn", "host"), "NEW": _ack.value("v")})
    assert specs[0]["containers"][0]["env"] == [
        {"name": "DB_HOSTNAME", "valueFrom": {"configMapKeyRef": {"name": "conn", "key": "host"}}},
        {"name": "X", "value": "1"}, {"name": "NEW", "value": "v"}]
    assert POD["containers"][0]["env"][2]["value"] == "dup"  # the input is not modified


@pytest.mark.parametrize(("module", "args", "expected"), [
    (RDS, {"snapshot": "s1", "source_cluster": "c1", "engine": "aurora-postgresql"},
     {"snapshot": "set snapshot (restore a snapshot) or source_cluster (clone an Aurora cluster), not both"}),
    (RDS, {"source_cluster": "c1", "engine": "postgres"},
     {"source_cluster": "an Aurora clone needs an Aurora engine (aurora-postgresql or aurora-mysql), not postgres"}),
    (RDS, {"engine": "aurora-mysql"}, {"db_user": "a fresh aurora-mysql database needs a master user name"}),
    (RDS, {"snapshot": "s1", "db_user": "x", "allocated_storage": "30"},
     {"db_user": "a restored database keeps its source's master user; drop db_user (the dependents keep their own "
                 "user env)",
      "allocated_storage": "a restored database keeps its source's storage; drop allocated_storage"}),
    (RDS, {"master_password_secret_key": "pw", "region": "mars-1"},
     {"master_password_secret_key": "names a key of no Secret; set master_password_secret too",
      "region": "'mars-1' is not an AWS region code (such as us-east-1 or eu-west-2)"}),
    (SQS, {"region": "us-east-1", "account_id": "123", "delay_seconds": "901"},
     {"account_id": "'123' is not a 12-digit AWS account id",
      "delay_seconds": "'901' is not a whole number from 0 to 900"}),
    (SQS, {"region": "us-east-1", "account_id": "123456789012", "redrive_policy": "{\"maxReceiveCount\": 3}"},
     {"redrive_policy": "must be a JSON object with deadLetterTargetArn (and maxReceiveCount)"}),
    (S3, {"region": "us-east-1", "job_image": "amazon/aws-cli:2", "expiration_days": "0"},
     {"expiration_days": "'0' is not a whole number of days from 1 to 3650",
      "job_image": "only teardown argo-postdelete runs a Job; set teardown: argo-postdelete or drop it"}),
    (S3, {"region": "us-east-1", "teardown": "argo-postdelete", "job_service_account": "j",
          "deletion_policy": "delete"},
     {"deletion_policy": "teardown argo-postdelete sets retain, so that pruning the Bucket never waits on a non-empty "
                         "bucket; drop deletion_policy"}),
])
def test_bad_args_name_the_field_and_the_reason(module, args, expected):
    assert {e["field"]: e["message"] for e in module.validate_args(args)} == expected


def test_good_args_pass():
    assert RDS.validate_args({"db_user": "u", "db_master_password": "p",
                              "security_group_id": "sg-0123456789abcdef0"}) == []
    assert SQS.validate_args({"region": "us-east-1", "account_id": "123456789012", "fifo": "True",
                              "content_based_deduplication": "true"}) == []
    assert S3.validate_args({"region": "eu-west-1"}) == []


def test_a_kardinal_literal_password_is_never_written():
    secret = "Literal-Pw-7741"
    out = RDS.create_flow([{}], [POD], "orders-db-pr-7", db_user="orders", db_master_password=secret)
    assert secret not in json.dumps(out)
    [warning] = out["results"]
    assert warning["severity"] == "warning" and "never written" in warning["message"]
    env = {e["name"]: e for e in out["pod_specs"][0]["containers"][0]["env"]}
    ext = next(r for r in out["resources"] if r["kind"] == "ExternalSecret")
    db = next(r for r in out["resources"] if r["kind"] == "DBInstance")
    assert env["DB_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": ext["spec"]["target"]["name"], "key": "password"}
    assert db["spec"]["masterUserPassword"] == env["DB_PASSWORD"]["valueFrom"]["secretKeyRef"]


def test_a_restore_keeps_the_source_credentials():
    out = RDS.create_flow([{}], [POD], "orders-db-pr-7", snapshot="orders-seed")
    env = {e["name"] for e in out["pod_specs"][0]["containers"][0]["env"]}
    assert env == {"DB_HOSTNAME", "X"} and [r["kind"] for r in out["resources"]] == ["DBInstance", "ConfigMap",
                                                                                     "FieldExport"]
    assert "masterUserPassword" not in out["resources"][0]["spec"]
