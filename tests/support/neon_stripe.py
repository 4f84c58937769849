"""A repository for the neon-branch and stripe built-ins: a shop that reads DATABASE_URL and STRIPE_SECRET_KEY,
carrying both plugins (external, by short name), and the secret-looking values the tests grep for."""

from __future__ import annotations

from pathlib import Path

from .builders import entry_ingress, yaml_doc
from .harness import Harness

# Values that must never reach rendered output, logs or flow.metadata.
NEON_LITERAL_KEY = "napi_never-rendered-3c9e71d0aa"
LIVE_STRIPE_KEY = "sk_live_51NeverRendered0000000000"
JOB_IMAGE = "alpine/k8s@sha256:" + "4d48c9ab8abe3da595f5f11005045068dcb9068deb42e04c06c9f7b15c96e89b"
FLOW = ["--flow", "pr-7", "--service", "shop=example.com/shop:2"]


def neon_args(**extra: str) -> dict[str, str]:
    return {"project_id": "proud-lake-123456", "parent_branch_id": "br-wispy-dew-591433",
            "api_key_secret": "neon-api", "image": JOB_IMAGE, **extra}


def stripe_args(**extra: str) -> dict[str, str]:
    return {"secret_store": "dev-secrets", "secret_store_kind": "ClusterSecretStore",
            "remote_key": "devlane/stripe", "remote_property": "secret_key_test", **extra}


def neon_stripe_shop(harness: Harness, neon: dict | None = None, stripe: dict | None = None) -> Path:
    """The shop (the flow's target) wired to a Neon branch (`shop-db`) and Stripe (`payments`); its baseline
    reads both from Secrets of its own, and sets DATABASE_URL twice (the dev copy must end with one)."""
    shop = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "shop"}}, "template": {
                "metadata": {"labels": {"app": "shop"}},
                "spec": {"containers": [{"name": "shop", "image": "example.com/shop:1", "env": [
                    {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": "shop-db", "key": "url"}}},
                    {"name": "STRIPE_SECRET_KEY", "valueFrom": {"secretKeyRef": {"name": "stripe-live",
                                                                                 "key": "key"}}},
                    {"name": "PORT", "value": "8080"}]}]}}}}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "shop", "annotations": {"kardinal.dev.service/plugins": "shop-db,payments"}},
               "spec": {"selector": {"app": "shop"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}
    harness.write("app.yaml", yaml_doc(shop) + yaml_doc(service) + entry_ingress("shop"))
    harness.plugin_definition(
        {"name": "neon-branch", "type": "external", "servicename": "shop-db", "args": neon_args()
         if neon is None else neon},
        {"name": "stripe", "type": "external", "servicename": "payments", "args": stripe_args()
         if stripe is None else stripe})
    return harness.root
