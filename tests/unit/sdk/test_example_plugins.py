"""The bookshop example's plugins (its own, examples/bookshop/plugins, and the built-in it names), imported and
called directly through Kardinal's contract: arguments bound by name, inputs and outputs as JSON; no process."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import json
from types import ModuleType
from typing import Any

import pytest
from support import EXAMPLE as BOOKSHOP
from support import yamlc
from support.kardinal import import_builtin


def _import_plugin(name: str) -> ModuleType:
    path = BOOKSHOP / "plugins" / name / "main.py"
    module_name = "bookshop_plugin_" + name.replace("-", "_")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stripe_test_mode() -> ModuleType:
    return _import_plugin("stripe-test-mode")


def _objects() -> dict[tuple[str, str], dict[str, Any]]:
    objects = {}
    for path in sorted((BOOKSHOP / "k8s").glob("*.yaml")):
        for doc in yamlc.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


def _plugin_args(servicename: str) -> dict[str, str]:
    """The args of a plugin definition in the example, as Kardinal passes them (strings)."""
    for obj in _objects().values():
        raw = obj["metadata"].get("annotations", {}).get("kardinal.dev.service/plugin-definition")
        for entry in yamlc.safe_load(raw) if raw else []:
            if entry["servicename"] == servicename:
                return {k: str(v) for k, v in entry["args"].items()}
    raise AssertionError(f"no plugin definition {servicename}")


def _call_like_kardinal(func, service_specs, pod_specs, flow_uuid, args: dict[str, str]):
    """Bind parameters by name from the signature, as Kardinal's wrapper does."""
    known = {"service_specs": service_specs, "pod_specs": pod_specs, "flow_uuid": flow_uuid}
    kwargs = {}
    for name, param in inspect.signature(func).parameters.items():
        if name in known:
            kwargs[name] = known[name]
        elif name in args:
            kwargs[name] = args[name]
        else:
            assert param.default is not inspect.Parameter.empty, f"missing arg {name}"
    # inputs and outputs travel as JSON
    result = func(**json.loads(json.dumps(kwargs)))
    return json.loads(json.dumps(result))


def _pod_spec(kind: str, name: str, target: str | None = None) -> dict[str, Any]:
    """The workload's pod template spec, with the targeted container moved to index 0."""
    spec = copy.deepcopy(_objects()[(kind, name)]["spec"]["template"]["spec"])
    if target is not None:
        containers = spec["containers"]
        index = next(i for i, c in enumerate(containers) if c["name"] == target)
        containers.insert(0, containers.pop(index))
    return spec


def _service_spec(name: str) -> dict[str, Any]:
    return copy.deepcopy(_objects()[("Service", name)]["spec"])


SEED_SQL = (
    "CREATE TABLE IF NOT EXISTS books_orders (\n"
    "  id             SERIAL PRIMARY KEY,\n"
    "  isbn           TEXT        NOT NULL,\n"
    "  title          TEXT        NOT NULL,\n"
    "  quantity       INTEGER     NOT NULL CHECK (quantity > 0),\n"
    "  customer_email TEXT        NOT NULL,\n"
    "  created_at     TIMESTAMPTZ NOT NULL DEFAULT now()\n"
    ");\n"
    "INSERT INTO books_orders (isbn, title, quantity, customer_email) VALUES\n"
    "  ('9780141439518', 'Pride and Prejudice', 1, 'ada@example.com'),\n"
    "  ('9780451524935', 'Nineteen Eighty-Four', 2, 'grace@example.com'),\n"
    "  ('9780547928227', 'The Hobbit', 1, 'linus@example.com');\n"
)

# --- seed-orders-db: the built-in postgres-seed ----------------------------------------


def test_postgres_seed_builtin_on_orders_db() -> None:
    """The example's seed definition, called like Kardinal on orders-db's pod spec: the seed lands in a ConfigMap
    at /docker-entrypoint-initdb.d, the data on an emptyDir at postgres:16's data directory, and the env keeps
    the database the app uses."""
    args = _plugin_args("seed-orders-db")
    assert args == {"db_name": "orders", "db_user": "orders", "seed_script": SEED_SQL}
    plugin = import_builtin("postgres-seed")
    pod_spec = _pod_spec("StatefulSet", "orders-db")
    known = {"service_specs": [_service_spec("orders-db")], "pod_specs": [pod_spec],
             "flow_uuid": "seed-orders-db-pr-7", "extensions": []}
    result = json.loads(json.dumps(plugin.create_flow(**known, **args)))
    (seed,) = result["resources"]
    assert (seed["kind"], seed["metadata"]["name"], seed["data"]) == \
        ("ConfigMap", "seed-seed-orders-db-pr-7", {"seed.sql": SEED_SQL})
    db = result["pod_specs"][0]
    env = {e["name"]: e.get("value") for e in db["containers"][0]["env"]}
    assert (env["POSTGRES_DB"], env["POSTGRES_USER"], env["PGDATA"]) == \
        ("orders", "orders", "/var/lib/postgresql/data/pgdata")
    assert {m["mountPath"]: m["name"] for m in db["containers"][0]["volumeMounts"]} == {
        "/var/lib/postgresql/data": "devlane-seed-data", "/docker-entrypoint-initdb.d": "devlane-seed"}
    assert db["volumes"] == [{"name": "devlane-seed-data", "emptyDir": {}},
                             {"name": "devlane-seed", "configMap": {"name": "seed-seed-orders-db-pr-7"}}]


# --- stripe-test-mode ------------------------------------------------------------------


def test_stripe_test_mode_on_orders(stripe_test_mode: ModuleType) -> None:
    args = _plugin_args("stripe-test-mode")
    assert args == {"secret_name": "stripe-test", "secret_key": "api-key"}
    pod_spec = _pod_spec("Deployment", "orders", target="app")
    assert [c["name"] for c in pod_spec["containers"]] == ["app", "metrics-exporter"]
    before = copy.deepcopy(pod_spec)

    result = _call_like_kardinal(
        stripe_test_mode.create_flow, [_service_spec("orders")], [pod_spec], "stripe-test-mode-pr-7", args
    )

    assert pod_spec == before, "the input must not be mutated"
    assert set(result) == {"pod_specs", "config_map"}
    assert result["config_map"] == {"secret": "stripe-test"}
    expected = copy.deepcopy(before)
    expected["containers"][0]["env"] = [
        {"name": "PORT", "value": "8080"},
        {"name": "LOG_LEVEL", "value": "info"},
        {"name": "DATABASE_HOST", "value": "orders-db"},
        {"name": "DATABASE_URL", "value": "postgres://orders@orders-db:5432/orders"},
        {"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": "orders-db-credentials", "key": "password"}}},
        {"name": "STRIPE_API_KEY", "valueFrom": {"secretKeyRef": {"name": "stripe-test", "key": "api-key"}}},
        {"name": "STATSD_ADDR", "value": "127.0.0.1:9125"},
    ]
    assert result["pod_specs"] == [expected]
    assert result["pod_specs"][0]["containers"][1] == before["containers"][1]
    assert stripe_test_mode.delete_flow(result["config_map"], "stripe-test-mode-pr-7") is None


def test_stripe_test_mode_replaces_plain_value_and_appends(stripe_test_mode: ModuleType) -> None:
    with_value = {
        "containers": [{"name": "api", "image": "api:1", "env": [{"name": "STRIPE_API_KEY", "value": "sk_live_x"}]}]
    }
    without_env = {"containers": [{"name": "worker", "image": "worker:1"}]}

    result = stripe_test_mode.create_flow(
        [{}, {}], [with_value, without_env], "stripe-pr-1", secret_name="stripe-sandbox", secret_key="key"
    )

    ref = {"name": "STRIPE_API_KEY", "valueFrom": {"secretKeyRef": {"name": "stripe-sandbox", "key": "key"}}}
    assert result == {
        "pod_specs": [
            {"containers": [{"name": "api", "image": "api:1", "env": [ref]}]},
            {"containers": [{"name": "worker", "image": "worker:1", "env": [ref]}]},
        ],
        "config_map": {"secret": "stripe-sandbox"},
    }
    assert with_value["containers"][0]["env"] == [{"name": "STRIPE_API_KEY", "value": "sk_live_x"}]


def test_stripe_test_mode_validate_args(stripe_test_mode: ModuleType) -> None:
    assert stripe_test_mode.validate_args(_plugin_args("stripe-test-mode")) == []
    assert stripe_test_mode.validate_args({"secret_name": "Stripe_Test", "secret_key": "a/b"}) == [
        {"field": "secret_name", "message": "'Stripe_Test' is not a valid Secret name"},
        {"field": "secret_key", "message": "'a/b' is not a valid Secret key"},
    ]
