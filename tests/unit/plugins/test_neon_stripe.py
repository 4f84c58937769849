"""The logic of the neon-branch and stripe built-ins (their shared helpers are tested in test_common.py): the args
each refuses (precisely, never echoing a key), Kardinal's URL defaults, and deterministic output."""

from __future__ import annotations

import pytest
from support.kardinal import import_builtin
from support.neon_stripe import JOB_IMAGE, LIVE_STRIPE_KEY, neon_args, stripe_args

neon = import_builtin("neon-branch")
stripe = import_builtin("stripe")
POD = {"containers": [{"name": "app", "image": "example.com/app:1"}]}


@pytest.mark.parametrize(("args", "field", "message"), [
    ({"image": JOB_IMAGE}, "project_id", "is required"),
    (neon_args(NEON_PROJECT_ID="other-1"), "project_id", "set project_id or NEON_PROJECT_ID"),
    (neon_args(NEON_FORK_FROM_BRANCH_ID="br-x-1"), "parent_branch_id", "not both"),
    (neon_args(NEON_API_KEY="napi_x"), "NEON_API_KEY", "set api_key_secret (a Secret reference) or NEON_API_KEY"),
    (neon_args(image="alpine/k8s:1.31.4"), "image", "must be pinned by digest"),
    (neon_args(ttl_hours="721"), "ttl_hours", "is at most 720"),
    (neon_args(env_var="1BAD"), "env_var", "is not an environment variable name"),
])
def test_neon_validate_args_names_the_field(args, field, message):
    found = neon.validate_args(args)
    assert [f["field"] for f in found] == [field] and message in found[0]["message"]


def test_neon_valid_args_pass():
    assert neon.validate_args(neon_args(ttl_hours="720", pooled="True", env_var="PG_URL")) == []


def test_neon_takes_role_and_database_from_an_existing_url_never_its_password():
    pod = {"containers": [{"name": "app", "env": [
        {"name": "POSTGRES", "value": "postgres://cart%5Fuser:secretpw@ep-old.neon.tech:5432/cart?sslmode=require"}]}]}
    out = neon.create_flow([], [pod], "db-pr-1", NEON_PROJECT_ID="proud-lake-123456", image=JOB_IMAGE)
    job = next(r for r in out["resources"] if r["metadata"]["name"] == "neon-create-db-pr-1")
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (env["ROLE_NAME"], env["DATABASE_NAME"]) == ("cart_user", "cart")
    assert "secretpw" not in repr(out["resources"]) + repr(out["config_map"])
    assert out["pod_specs"][0]["containers"][0]["env"] == [
        {"name": "POSTGRES", "valueFrom": {"secretKeyRef": {"name": "neon-db-pr-1", "key": "DATABASE_URL"}}}]


def test_neon_output_is_deterministic_and_clock_free():
    first = neon.create_flow([], [POD], "db-pr-1", **neon_args())
    assert first == neon.create_flow([], [POD], "db-pr-1", **neon_args())
    jobs = [r for r in first["resources"] if r["kind"] == "Job"]
    assert all("generateName" not in j["metadata"] for j in jobs)
    assert all(j["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/force"] == "enabled" for j in jobs)
    assert [j["metadata"]["annotations"]["argocd.argoproj.io/hook"] for j in jobs] == ["PreSync", "PostDelete"]
    assert "expires_at" not in repr(first["config_map"]) and "now" in jobs[0]["spec"]["template"]["spec"][
        "containers"][0]["command"][2]  # computed in the Job


@pytest.mark.parametrize(("args", "field", "message"), [
    ({"secret_store": "dev-secrets"}, "remote_key", "is required in mode test-key"),
    ({}, "secret_store", "is required in mode test-key"),
    ({"mode": "mock", "secret_store": "dev-secrets"}, "secret_store", "applies to mode test-key only"),
    (stripe_args(image="stripe/stripe-mock:v0.1.0"), "image", "applies to mode mock only"),
    (stripe_args(secret_name="stripe-test"), "remote_key", "not both"),
    ({"secret_key": "api-key", **stripe_args()}, "secret_key", "names a key of no Secret"),
    (stripe_args(refresh_interval="soon"), "refresh_interval", "is not a duration"),
    ({"secret_name": "Not_A_Name"}, "secret_name", "is not a Kubernetes object name"),
    (stripe_args(remote_property="rk_live_abc"), "remote_property", "looks like a live Stripe key"),
    (stripe_args(remote_key="pk_live_abc"), "remote_key", "looks like a live Stripe key"),
    (stripe_args(remote_key="rk_test_abc"), "remote_key", "is a literal Stripe test key"),
])
def test_stripe_validate_args_names_the_field(args, field, message):
    found = [f for f in stripe.validate_args(args) if f["field"] == field]
    assert len(found) == 1 and message in found[0]["message"]


def test_stripe_refusals_never_repeat_the_key():
    found = stripe.validate_args({"secret_store": LIVE_STRIPE_KEY, "remote_key": LIVE_STRIPE_KEY})
    assert {f["field"] for f in found} == {"secret_store", "remote_key"}
    assert LIVE_STRIPE_KEY not in repr(found)


def test_stripe_valid_args_pass():
    assert stripe.validate_args(stripe_args(refresh_interval="1h30m")) == []
    assert stripe.validate_args({"mode": "mock", "api_base_env": "STRIPE_HOST"}) == []
    assert stripe.validate_args({"secret_name": "stripe-test", "secret_key": "api-key"}) == []
