"""Repositories for the AWS built-ins (aws-rds, aws-sqs, aws-s3): a shop whose Deployment depends on three external
AWS resources, each stood for by an external ExternalName Service; the shop's Service lists one built-in per
resource (named by its short name), as Kardinal's external plugins are listed on the dependent."""

from __future__ import annotations

from pathlib import Path

from .builders import entry_ingress, yaml_doc
from .harness import Harness

# A literal a Kardinal definition may carry: it must never reach rendered output or logs.
ACK_SECRET = "kardinal-Literal-pw-never-rendered-91c2"
ACCOUNT = "123456789012"
SHOP_ENV = [
    {"name": "DB_NAME", "value": "shop"},
    {"name": "DB_HOSTNAME", "value": "shop-db.c9akciq32.us-east-1.rds.amazonaws.com"},
    {"name": "QUEUE_URL", "value": f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/shop-events"},
    {"name": "BUCKET_NAME", "value": "acme-shop-uploads"},
]
DEFINITIONS = {
    "aws-rds": {"db_user": "shop", "db_master_password": ACK_SECRET, "db_subnet_group_name": "dev-lanes",
                "security_group_id": "sg-0123456789abcdef0"},
    "aws-sqs": {"region": "us-east-1", "account_id": ACCOUNT, "visibility_timeout": "30"},
    "aws-s3": {"region": "eu-west-1", "unique_scope": "tests/shop"},
}
SERVICES = {"aws-rds": "shop-db", "aws-sqs": "shop-events", "aws-s3": "shop-uploads"}


def _external(name: str, host: str) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "annotations": {
        "kardinal.dev.service/external": "true"}},
        "spec": {"type": "ExternalName", "externalName": host, "ports": [{"name": "tcp", "port": 443}]}}


def aws_shop(harness: Harness, plugins: tuple[str, ...] = tuple(DEFINITIONS), args: dict | None = None) -> Path:
    """The shop and one ExternalName Service per plugin in `plugins` (instance name = the Service's), with
    `DEFINITIONS` args (updated per plugin by `args`; an empty value removes the arg). A flow on `shop` runs every
    plugin on `shop`'s dev copy."""
    deps = ",".join(f"{SERVICES[p]}:tcp" for p in plugins)
    shop = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop"},
         "spec": {"selector": {"matchLabels": {"app": "shop"}}, "template": {"metadata": {"labels": {"app": "shop"}},
                  "spec": {"containers": [{"name": "shop", "image": "example.com/shop:1", "env": SHOP_ENV}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop", "annotations": {
            "kardinal.dev.service/dependencies": deps,
            "kardinal.dev.service/plugins": ",".join(SERVICES[p] for p in plugins)}},
         "spec": {"selector": {"app": "shop"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}},
    ]
    externals = [_external(SERVICES[p], f"{SERVICES[p]}.example.com") for p in plugins]
    harness.write("app.yaml", "".join(yaml_doc(o) for o in shop + externals) + entry_ingress("shop"))
    merged = {p: {**DEFINITIONS[p], **((args or {}).get(p) or {})} for p in plugins}  # "" drops an arg
    entries = [{"name": p, "type": "external", "servicename": SERVICES[p],
                "args": {k: v for k, v in merged[p].items() if v != ""}} for p in plugins]
    harness.plugin_definition(*entries)
    return harness.root
