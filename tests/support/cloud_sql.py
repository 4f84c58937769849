"""Repositories for the managed-database built-ins (plugins/cloud-sql, plugins/azure-sql): an app that uses a
cloud database, the database standing as a plugin-definition pseudo-Service, its password in a repository
Secret that must never reach rendered output or logs."""

from __future__ import annotations

import base64
from pathlib import Path

from . import yamlc
from .builders import entry_ingress, yaml_doc
from .harness import Harness

# A password the cloud-database tests put in a repository Secret: it must never reach rendered output or logs.
CLOUD_SECRET = "cl0ud-Pw-never-rendered-4c1e"
SUBSCRIPTION = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/dev/providers/Microsoft.Sql"
CLOUD_DATABASES = {
    "cloud-sql": {
        "args": {"project": "acme-dev", "region": "us-central1", "source_instance": "shop-staging",
                 "database_version": "POSTGRES_16", "tier": "db-custom-1-3840", "db_name": "shop",
                 "db_user": "shop_app", "password_secret": "shop-db"},
        "kinds": ["SQLDatabase", "SQLInstance", "SQLUser"],
        "host": "127.0.0.1", "password_env": "DB_PASS",
    },
    "azure-sql": {
        "args": {"server_id": f"{SUBSCRIPTION}/servers/acme-dev-sql", "location": "westeurope",
                 "source_database": "shop", "sku": "S0", "db_user": "shop_app", "password_secret": "shop-db"},
        "kinds": ["ServersDatabase"],
        "host": "acme-dev-sql.database.windows.net", "password_env": "DB_PASSWORD",
    },
}


def cloud_shop(harness: Harness, plugin: str, args: dict | None = None) -> Path:
    """A shop whose database is a cloud database reached through `plugin` (the built-in, by its short name):
    the shop's Service lists the pseudo-Service `shop-db` as its plugin, which defines it as an external
    plugin; the baseline shop reads the shared database with the password of the repository Secret `shop-db`.
    A flow on `shop` gives it a dev copy wired to the flow's database."""
    db = CLOUD_DATABASES[plugin]
    shop = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "shop"}}, "template": {
                "metadata": {"labels": {"app": "shop"}},
                "spec": {"containers": [{"name": "shop", "image": "example.com/shop:1", "env": [
                    {"name": "DB_HOST", "value": "shared-db.example.com"}, {"name": "DB_NAME", "value": "shop"},
                    {"name": db["password_env"], "valueFrom": {"secretKeyRef": {"name": "shop-db",
                                                                               "key": "password"}}}]}]}}}}
    objects = [
        shop,
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop", "annotations": {
            "kardinal.dev.service/plugins": "shop-db"}},
         "spec": {"selector": {"app": "shop"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shop-db"},
         "stringData": {"password": CLOUD_SECRET}},
    ]
    harness.write("app.yaml", "".join(yaml_doc(o) for o in objects) + entry_ingress("shop"))
    harness.plugin_definition({"name": plugin, "type": "external", "servicename": "shop-db",
                               "args": {**db["args"], **(args or {})}}, name="shop-db")
    return harness.root


def flow_files(out: Path) -> dict[str, str]:
    """Every file written under `out`, by its relative path."""
    return {p.relative_to(out).as_posix(): p.read_text() for p in sorted(out.rglob("*")) if p.is_file()}


def flow_objects(files: dict[str, str]) -> list[dict]:
    """The rendered objects among `files` (kustomization files left out)."""
    return [yamlc.safe_load(t) for n, t in files.items() if n.endswith(".yaml") and "kustomization" not in n]


def render_secret_free(harness: Harness, *argv: str) -> dict[str, str]:
    """`devlane render ARGV --out DIR --debug` in-process; it must succeed, and neither a written file nor the
    logs may carry CLOUD_SECRET (plain or base64). The written files."""
    out = harness.tmp / "out"
    result = harness.cli("render", *argv, "--out", out, "--debug")
    assert result.returncode == 0, result.stderr
    files = flow_files(out)
    leaks = [CLOUD_SECRET, base64.b64encode(CLOUD_SECRET.encode()).decode()]
    assert not [leak for text in [*files.values(), result.stdout, result.stderr] for leak in leaks if leak in text]
    return files
