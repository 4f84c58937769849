"""Repositories several test layers build the same way."""

from __future__ import annotations

from pathlib import Path

from renderer.authoring.scaffold import scaffold

from .builders import entry_ingress, yaml_doc
from .harness import Harness
from .paths import EXAMPLE, ROOT

BOOKSHOP_PLUGINS = ("stripe-test-mode",)  # the example's own plugins
BOOKSHOP_BUILTINS = ("postgres-seed",)  # the built-ins it names


def inspection_repo(harness: Harness) -> Path:
    """A scaffolded exec plugin, a scaffolded Kardinal plugin with an External definition, a missing plugin
    (for `plugins list | describe`)."""
    scaffold("flags", "exec", harness.root / "plugins")
    scaffold("notify", "kardinal-python", harness.root / "plugins")
    harness.app("app", "flags-app,notify-app,gone", containers=[{"name": "app", "image": "example.com/app:1"}])
    harness.plugin_definition(
        {"name": "./plugins/flags", "type": "stateful", "servicename": "flags-app", "args": {"mode": "preview"}},
        {"name": "./plugins/notify", "type": "external", "servicename": "notify-app", "sideEffects": "External",
         "args": {"api_token": "s3cr3t", "channel": "dev"}},
        {"name": "./plugins/missing", "type": "external", "servicename": "gone"},
        file="defs.yaml",
    )
    harness.config({"exclude": ["plugins/**"]})
    return harness.root


def bookshop_builtins(harness: Harness) -> Path:
    """The bookshop example, its own plugins moved out of the repository and served as built-ins by plain name
    beside the built-ins it names: the real plugin code, run in-process, so no process is started."""
    harness.copy(EXAMPLE)
    builtins = harness.builtins()
    for name in BOOKSHOP_PLUGINS:
        (harness.root / "plugins" / name).rename(builtins / name)
    for name in BOOKSHOP_BUILTINS:  # devlane's own, as installed: the directory and the shared modules beside it
        harness.copy(ROOT / "plugins" / name, name, where=builtins)
        for shared in (ROOT / "plugins").glob("_*.py"):
            (builtins / shared.name).write_bytes(shared.read_bytes())
    defs = harness.root / "k8s" / "plugins.yaml"
    defs.write_text(defs.read_text().replace("name: ./plugins/", "name: "))
    return harness.root


# A password the seed tests put in a repository Secret: it must never reach rendered output or logs.
SEED_SECRET = "pa55-Wd-never-rendered-7f3a"
SCHEMA_SQL = "CREATE TABLE items (id int PRIMARY KEY);\n"
SCHEMA_JS = "db.createCollection('items');\n"
# per built-in: its database image, port, data directory, the Secret-held env and the args; the schema file (an
# extension ConfigMap's) and the inline seed default to SQL
SEED_DATABASES = {
    "postgres-seed": {"image": "postgres:17", "port": 5432, "data": "/var/lib/postgresql/data",
                      "env": {"POSTGRES_PASSWORD": "password"},
                      "args": {"db_password_secret": "shop-db"}},
    "mysql-seed": {"image": "mysql:8.4", "port": 3306, "data": "/var/lib/mysql",
                   "env": {"MYSQL_ROOT_PASSWORD": "root-password", "MYSQL_PASSWORD": "password"},
                   "args": {"db_password_secret": "shop-db", "root_password_secret": "shop-db"}},
    "mongodb-seed": {"image": "mongo:7.0", "port": 27017, "data": "/data/db",
                     "env": {"MONGO_INITDB_ROOT_PASSWORD": "password"},
                     "args": {"db_password_secret": "shop-db"}, "schema": ("01-schema.js", SCHEMA_JS),
                     "seed": ("seed.js", "db.items.insertMany([{id: 1}, {id: 2}]);")},
}


def _deployment(name: str, container: dict, volumes: list[dict] | None = None) -> dict:
    spec = {"containers": [container], **({"volumes": volumes} if volumes else {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def _service(name: str, port: dict, annotations: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "annotations": annotations},
            "spec": {"selector": {"app": name}, "ports": [port]}}


def seed_file(plugin: str, which: str) -> tuple[str, str]:
    """(file name, text) of the `schema` (an extension's) or the inline `seed` of `plugin`'s seeded shop."""
    sql = {"schema": ("01-schema.sql", SCHEMA_SQL), "seed": ("seed.sql", "INSERT INTO items VALUES (1), (2);")}
    return SEED_DATABASES[plugin].get(which) or sql[which]


def seeded_shop(harness: Harness, plugin: str, extensions: list | None = None) -> Path:
    """A shop and its database (on the official image, passwords from the repository Secret `shop-db`)
    seeded by the built-in `plugin`, named by its short name: schema from an extension ConfigMap, data
    inline (or the definition's `extensions`). A flow on `shop` gives the database a dev copy (stateful, over
    TCP)."""
    db = SEED_DATABASES[plugin]
    secret_env = [{"name": name, "valueFrom": {"secretKeyRef": {"name": "shop-db", "key": key}}}
                  for name, key in db["env"].items()]
    objects = [
        _deployment("shop", {"name": "shop", "image": "example.com/shop:1", "env": [
            {"name": "DB_HOST", "value": "shop-db"}, {"name": "DB_NAME", "value": "shop"},
            {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "shop-db", "key": "password"}}}]}),
        _service("shop", {"name": "http", "port": 80, "targetPort": 8080},
                 {"kardinal.dev.service/dependencies": "shop-db:db"}),
        _deployment("shop-db", {"name": "db", "image": db["image"], "ports": [{"containerPort": db["port"]}],
                                "env": secret_env, "volumeMounts": [{"name": "data", "mountPath": db["data"]}]},
                    [{"name": "data", "emptyDir": {}}]),
        _service("shop-db", {"name": "db", "port": db["port"]},
                 {"kardinal.dev.service/stateful": "true", "kardinal.dev.service/plugins": "shop-seed"}),
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shop-db"},
         "stringData": {"password": SEED_SECRET, "root-password": SEED_SECRET}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-schema"},
         "data": dict([seed_file(plugin, "schema")])},
    ]
    harness.write("app.yaml", "".join(yaml_doc(o) for o in objects) + entry_ingress("shop"))
    harness.plugin_definition({"name": plugin, "type": "stateful", "servicename": "shop-seed",
                               "extensions": ["ConfigMap/shop-schema"] if extensions is None else extensions,
                               "args": {"seed_script": seed_file(plugin, "seed")[1], "db_name": "shop",
                                        "db_user": "shop", **db["args"]}})
    return harness.root
