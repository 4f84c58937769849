"""An app that uses all eleven built-ins at once: `api` (the flow's target) behind `web` (the entry) reads a Redis
cache, a Postgres and a MySQL of its own (stateful, so each flow gets a dev copy the seed and sidecar built-ins
edit), and seven outside services (a Neon database, RDS, an SQS queue, an S3 bucket, Cloud SQL, Azure SQL, Stripe),
each an ExternalName Service whose built-in edits api's dev copy and adds the flow's own resource; `flags`, a
Service with the `dummy` built-in, stands for a dependency no plugin has to change.

Every built-in is named by its short name. Passwords come from Secret references; the literal values below are
secret-looking args a definition may carry, which must never reach the output (tests grep for them)."""

from __future__ import annotations

from pathlib import Path

from . import yamlc
from .builders import entry_ingress, yaml_doc
from .harness import Harness

NAMESPACE = "shop"
ACCOUNT = "123456789012"
PROXY = "registry.example.com/mirror/redis-proxy-overlay@sha256:" + "ab" * 32
JOB_IMAGE = "registry.example.com/mirror/neon-tools@sha256:" + "cd" * 32
# Kardinal-style literals that are accepted but never written (each plugin warns instead).
LITERALS = {"aws-rds": ("db_master_password", "rds-Literal-pw-never-rendered-4d1e"),
            "neon-branch": ("NEON_API_KEY", "napi_literal_never_rendered_0123456789abcdef")}

API_ENV = [
    {"name": "REDIS_ADDR", "value": "cache:6379"},
    {"name": "ORDERS_DB_HOST", "value": "orders-db"},
    {"name": "LEDGER_DB_HOST", "value": "ledger-db"},
    {"name": "DATABASE_URL", "value": "postgres://app@neon.example.com/orders"},
    {"name": "RDS_HOST", "value": "reports.c9akciq32.eu-west-1.rds.amazonaws.com"},
    {"name": "QUEUE_URL", "value": f"https://sqs.eu-west-1.amazonaws.com/{ACCOUNT}/events"},
    {"name": "BUCKET_NAME", "value": "acme-uploads"},
    {"name": "CATALOG_DB_HOST", "value": "10.0.0.5"},
    {"name": "BILLING_DB_HOST", "value": "billing.database.windows.net"},
    {"name": "STRIPE_SECRET_KEY", "valueFrom": {"secretKeyRef": {"name": "stripe-live", "key": "key"}}},
    {"name": "FLAGS_URL", "value": "http://flags:80"},
]

# instance (= the Service it is attached to) -> (built-in, type, args)
DEFINITIONS: dict[str, tuple[str, str, dict[str, str]]] = {
    "cache-overlay": ("redis-sidecar", "stateful", {"image": PROXY}),
    "orders-seed": ("postgres-seed", "stateful", {
        "db_name": "orders", "db_user": "orders", "db_password_secret": "orders-db",
        "seed_script": "CREATE TABLE orders (id bigserial PRIMARY KEY);\n"}),
    "ledger-seed": ("mysql-seed", "stateful", {
        "db_name": "ledger", "db_user": "ledger", "db_password_secret": "ledger-db",
        "root_password_secret": "ledger-db",
        "seed_script": "CREATE TABLE entries (id serial PRIMARY KEY);\n"}),
    "neon": ("neon-branch", "external", {
        "NEON_PROJECT_ID": "proud-lake-123456", "NEON_FORK_FROM_BRANCH_ID": "br-wispy-dew-591433",
        LITERALS["neon-branch"][0]: LITERALS["neon-branch"][1], "image": JOB_IMAGE, "env_var": "DATABASE_URL"}),
    "reports-db": ("aws-rds", "external", {
        "db_user": "reports", LITERALS["aws-rds"][0]: LITERALS["aws-rds"][1], "db_subnet_group_name": "dev-lanes",
        "security_group_id": "sg-0123456789abcdef0", "region": "eu-west-1", "host_env": "RDS_HOST",
        "user_env": "RDS_USER", "password_env": "RDS_PASSWORD"}),
    "events": ("aws-sqs", "external", {"region": "eu-west-1", "account_id": ACCOUNT}),
    "uploads": ("aws-s3", "external", {"region": "eu-west-1", "unique_scope": "tests/catalogue-app"}),
    "catalog-db": ("cloud-sql", "external", {
        "project": "acme-dev", "region": "europe-west1", "source_instance": "catalog-main",
        "database_version": "POSTGRES_16", "tier": "db-custom-1-3840", "db_name": "catalog", "db_user": "catalog",
        "password_secret": "catalog-db", "host_env": "CATALOG_DB_HOST", "port_env": "CATALOG_DB_PORT",
        "name_env": "CATALOG_DB_NAME", "user_env": "CATALOG_DB_USER", "password_env": "CATALOG_DB_PASS",
        "port": "15432"}),
    "billing-db": ("azure-sql", "external", {
        "server_id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/dev/providers/"
                     "Microsoft.Sql/servers/acme-dev-sql",
        "location": "westeurope", "source_database": "billing", "sku": "S0", "db_user": "billing",
        "password_secret": "billing-db", "host_env": "BILLING_DB_HOST", "port_env": "BILLING_DB_PORT",
        "name_env": "BILLING_DB_NAME", "user_env": "BILLING_DB_USER", "password_env": "BILLING_DB_PASSWORD"}),
    "payments": ("stripe", "external", {
        "secret_store": "dev-secrets", "secret_store_kind": "ClusterSecretStore", "remote_key": "devlane/stripe",
        "remote_property": "secret_key_test"}),
    "flags": ("dummy", "external", {}),
}
STORES = {"cache": ("cache-overlay", "redis:7.4", 6379, "redis"),
          "orders-db": ("orders-seed", "postgres:17", 5432, "tcp"),
          "ledger-db": ("ledger-seed", "mysql:8.4", 3306, "tcp")}
EXTERNALS = {"neon": "neon.example.com", "reports-db": "reports.c9akciq32.eu-west-1.rds.amazonaws.com",
             "events": "sqs.eu-west-1.amazonaws.com", "uploads": "s3.eu-west-1.amazonaws.com",
             "catalog-db": "catalog-main.example.com", "billing-db": "billing.database.windows.net",
             "payments": "api.stripe.com", "flags": "flags.example.com"}


def _deployment(name: str, containers: list[dict], kind: str = "Deployment") -> dict:
    spec: dict = {"selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers}}}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def _service(name: str, port: int, port_name: str, annotations: dict[str, str], **spec: object) -> dict:
    body = {"ports": [{"name": port_name, "port": port}], **spec}
    if "externalName" not in spec:
        body["selector"] = {"app": name}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations}, "spec": body}


def _store_env(image: str) -> list[dict]:
    if image.startswith("postgres"):
        return [{"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "orders-db", "key": "password"}}}]
    if image.startswith("mysql"):
        ref = {"secretKeyRef": {"name": "ledger-db", "key": "password"}}
        return [{"name": "MYSQL_ROOT_PASSWORD", "valueFrom": ref}, {"name": "MYSQL_PASSWORD", "valueFrom": ref}]
    return []


def catalogue_app(harness: Harness, rename: dict[str, str] | None = None) -> Path:
    """Write the app into the harness repository; a flow on `api` uses every built-in. `rename`: other names for
    plugin instances (an external's instance is also its Service's name), as a user may choose them."""
    new = rename or {}
    definitions = {new.get(k, k): v for k, v in DEFINITIONS.items()}
    stores = {svc: (new.get(i, i), *rest) for svc, (i, *rest) in STORES.items()}
    externals = {new.get(k, k): v for k, v in EXTERNALS.items()}
    deps = [f"{svc}:{port_name}" for svc, (_, _, _, port_name) in stores.items()]
    deps += [f"{svc}:https" for svc in externals]
    objects = [
        _deployment("web", [{"name": "web", "image": "example.com/web:1",
                             "env": [{"name": "API_URL", "value": "http://api:80"}]}]),
        _service("web", 80, "http", {"kardinal.dev.service/dependencies": "api:http"}),
        _deployment("api", [{"name": "api", "image": "example.com/api:1", "env": API_ENV}]),
        _service("api", 80, "http", {"kardinal.dev.service/dependencies": ",".join(deps),
                                     "kardinal.dev.service/plugins": ",".join(externals)}),
    ]
    for svc, (instance, image, port, port_name) in stores.items():
        container = {"name": svc, "image": image, "ports": [{"name": port_name, "containerPort": port}],
                     "env": _store_env(image)}
        objects.append(_deployment(svc, [container], "StatefulSet" if svc == "orders-db" else "Deployment"))
        objects.append(_service(svc, port, port_name, {"kardinal.dev.service/stateful": "true",
                                                       "kardinal.dev.service/plugins": instance}))
    for svc, host in externals.items():
        objects.append(_service(svc, 443, "https", {"kardinal.dev.service/external": "true"},
                                type="ExternalName", externalName=host))
    entry = yamlc.safe_load(entry_ingress("web").rstrip("-\n"))
    entry["metadata"]["namespace"] = NAMESPACE
    harness.write("app.yaml", "".join(yaml_doc(o) for o in [*objects, entry]))
    harness.plugin_definition(*[{"name": builtin, "type": kind, "servicename": instance, "args": args}
                                for instance, (builtin, kind, args) in definitions.items()])
    harness.config({"namespace": NAMESPACE})
    return harness.root
