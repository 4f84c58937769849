"""The managed-database built-ins' logic, called directly (plugins/cloud-sql, plugins/azure-sql, and their shared
plugins/_cloud.py): names are deterministic, scoped by a stable hash and within the cloud's limits; the dependents'
pods reach the flow's copy and never the source; env is set by name; passwords only by reference; bad args get
precise errors."""

from __future__ import annotations

import json
import re

import pytest
from support.kardinal import import_builtin

from plugins import _cloud

CLOUD_SQL = import_builtin("cloud-sql")
AZURE_SQL = import_builtin("azure-sql")
CLOUD_SQL_ID = re.compile(r"[a-z][a-z0-9-]*[a-z0-9]\Z")  # Cloud SQL: lowercase letters, digits, hyphens, a letter first
SERVER = "/subscriptions/0000/resourceGroups/dev/providers/Microsoft.Sql/servers/acme-dev-sql"
GCP_ARGS = {"project": "acme-dev", "region": "us-central1", "source_instance": "orders-staging",
            "database_version": "POSTGRES_16", "tier": "db-custom-1-3840", "db_name": "orders", "db_user": "app",
            "password_secret": "orders-db"}
AZ_ARGS = {"server_id": SERVER, "location": "westeurope", "source_database": "orders", "db_user": "app",
           "password_secret": "orders-db"}
SOURCE = "acme-dev:us-central1:orders-staging"


def pod(*containers: dict, init: list[dict] | None = None) -> dict:
    return {"containers": list(containers), **({"initContainers": init} if init else {})}


def app(env: list[dict] | None = None) -> dict:
    return {"name": "app", "image": "example.com/app:1", "env": env or []}


def env_of(container: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def proxies(spec: dict) -> list[dict]:
    return [c for key in ("initContainers", "containers") for c in spec.get(key) or []
            if "cloud-sql-proxy" in c["image"] or "gce-proxy" in c["image"]]


# -- names -----------------------------------------------------------------------------------------------


def test_stable_name_is_deterministic_scoped_and_bounded():
    one = _cloud.stable_name("orders-db-pr-7", ("acme", "orders", "", "orders-db-pr-7"), 63)
    assert one == _cloud.stable_name("orders-db-pr-7", ("acme", "orders", "", "orders-db-pr-7"), 63)
    assert one.startswith("orders-db-pr-7-") and len(one) == len("orders-db-pr-7-") + 8
    assert one != _cloud.stable_name("orders-db-pr-7", ("acme", "orders", "other-repo", "orders-db-pr-7"), 63)
    long_a, long_b = "x" * 80 + "-pr-1", "x" * 80 + "-pr-2"
    a = _cloud.stable_name(long_a, (long_a,), 63)
    b = _cloud.stable_name(long_b, (long_b,), 63)
    assert len(a) == len(b) == 63 and a != b  # the readable part is cut, the hash keeps them apart
    assert _cloud.stable_name("7-Up_DB--pr.9", ("s",), 63).startswith("dl-7-up-db-pr-9-")


# -- cloud-sql -------------------------------------------------------------------------------------------


def gcp(specs: list[dict], flow_uuid: str = "orders-db-pr-7", **args: str) -> dict:
    return CLOUD_SQL.create_flow([{}] * len(specs), specs, flow_uuid, **{**GCP_ARGS, **args})


def test_cloud_sql_clone_name_and_connection_name_are_computed_offline():
    out = gcp([pod(app())])
    instance = out["config_map"]["instance"]
    assert CLOUD_SQL_ID.match(instance) and len(instance) <= 63 and instance.startswith("orders-db-pr-7-")
    assert out["config_map"]["connectionName"] == f"acme-dev:us-central1:{instance}"
    sql, database, user = out["resources"]
    assert sql["spec"]["resourceID"] == instance and sql["metadata"]["name"] == "orders-db-pr-7"
    assert sql["spec"]["cloneSource"] == {"sqlInstanceRef": {"external": "orders-staging"}}
    assert sql["metadata"]["annotations"] == {"cnrm.cloud.google.com/project-id": "acme-dev",
                                              "cnrm.cloud.google.com/deletion-policy": "none"}
    assert sql["spec"]["settings"]["deletionProtectionEnabled"] is False
    assert database["spec"]["instanceRef"] == user["spec"]["instanceRef"] == {"name": "orders-db-pr-7"}
    assert user["spec"]["password"] == {"valueFrom": {"secretKeyRef": {"name": "orders-db", "key": "password"}}}
    assert gcp([pod(app())]) == out  # no clock, no randomness
    assert gcp([pod(app())], "orders-db-pr-8")["config_map"]["instance"] != instance
    assert gcp([pod(app())], name_scope="other")["config_map"]["instance"] != instance
    assert gcp([pod(app())], deletion_policy="abandon")["resources"][0]["metadata"]["annotations"][
        "cnrm.cloud.google.com/deletion-policy"] == "abandon"


def test_cloud_sql_dev_pods_reach_the_clone_and_never_the_source():
    old_proxy = {"name": "cloudsql-proxy", "image": "gcr.io/cloudsql-docker/gce-proxy:1.33.2",
                 "command": ["/cloud_sql_proxy", f"-instances={SOURCE}=tcp:5432"]}
    old_v2 = {"name": "sql", "image": "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.1.0", "restartPolicy": "Always",
              "args": [SOURCE]}
    migrate = {"name": "migrate", "image": "example.com/migrate:1"}
    base = app([{"name": "DB_HOST", "value": "10.0.0.3"}, {"name": "CONN", "value": SOURCE},
                {"name": "DB_PASS", "value": "literal"}])
    out = gcp([pod(base, old_proxy, init=[old_v2, migrate]), pod(app())])
    connection = out["config_map"]["connectionName"]
    for spec in out["pod_specs"]:
        [proxy] = proxies(spec)
        assert proxy["args"][-1] == connection and "--port=5432" in proxy["args"]
        assert spec["initContainers"][0] is proxy and proxy["restartPolicy"] == "Always"  # native, first
        assert SOURCE not in json.dumps(spec)
        env = env_of(spec["containers"][0])
        assert env["DB_HOST"] == "127.0.0.1" and env["DB_PORT"] == "5432" and env["DB_NAME"] == "orders"
        assert env["DB_USER"] == "app" and env["DB_PASS"] == {"secretKeyRef": {"name": "orders-db", "key": "password"}}
    first = out["pod_specs"][0]
    assert [c["name"] for c in first["containers"]] == ["app"]
    assert [c["name"] for c in first["initContainers"]] == ["cloud-sql-proxy", "migrate"]
    assert env_of(first["containers"][0])["CONN"] == connection
    assert "literal" not in json.dumps(out)  # the baseline's literal password is replaced by the reference
    assert [r["severity"] for r in out["results"]] == ["info", "info"]


def test_cloud_sql_plain_container_sidecar_and_options():
    out = gcp([pod(app())], sidecar="container", ip_type="psc", database_version="MYSQL_8_0", host_env="",
              password_env="MYSQL_PWD", proxy_image="example.com/mirror/cloud-sql-proxy@sha256:" + "a" * 64)
    spec = out["pod_specs"][0]
    assert "initContainers" not in spec and [c["name"] for c in spec["containers"]] == ["app", "cloud-sql-proxy"]
    proxy = spec["containers"][1]
    assert "restartPolicy" not in proxy and "--psc" in proxy["args"] and "--port=3306" in proxy["args"]
    assert proxy["image"].endswith("a" * 64)
    env = env_of(spec["containers"][0])
    assert "DB_HOST" not in env and "DB_PASS" not in env and env["MYSQL_PWD"]["secretKeyRef"]["name"] == "orders-db"


@pytest.mark.parametrize(("args", "field", "message"), [
    ({"proxy_image": "gcr.io/cloud-sql-connectors/cloud-sql-proxy"}, "proxy_image", "is not pinned"),
    ({"proxy_image": "gcr.io/cloud-sql-connectors/cloud-sql-proxy:latest"}, "proxy_image", "is not pinned"),
    ({"port": "9801"}, "port", "the proxy's health-check port"),
    ({"port": "70000"}, "port", "is not a TCP port"),
    ({"port": "5432/tcp"}, "port", "is not a TCP port"),
    ({"user_env": "DB_HOST"}, "user_env", "names the same variable as host_env (DB_HOST)"),
    ({"password_secret": "", "password_secret_key": "pw"}, "password_secret_key", "names a key of no Secret"),
])
def test_cloud_sql_bad_args_get_precise_errors(args, field, message):
    errors = CLOUD_SQL.validate_args({**GCP_ARGS, **args})
    assert [e["field"] for e in errors] == [field] and message in errors[0]["message"]


def test_cloud_sql_good_args_are_valid():
    assert CLOUD_SQL.validate_args(GCP_ARGS) == []
    assert CLOUD_SQL.validate_args({**GCP_ARGS, "proxy_image": "r.example/p@sha256:" + "0" * 64}) == []


# -- azure-sql -------------------------------------------------------------------------------------------


def az(specs: list[dict], flow_uuid: str = "orders-db-pr-7", **args: str) -> dict:
    return AZURE_SQL.create_flow([{}] * len(specs), specs, flow_uuid, **{**AZ_ARGS, **args})


def test_azure_sql_copy_and_env_are_computed_offline():
    out = az([pod(app([{"name": "DB_NAME", "value": "orders"}, {"name": "DB_NAME", "value": "x"}]))])
    [db] = out["resources"]
    name = db["spec"]["azureName"]
    assert name.startswith("orders-db-pr-7-") and len(name) <= 128 and db["metadata"]["name"] == "orders-db-pr-7"
    assert db["spec"]["owner"] == {"armId": SERVER} and db["spec"]["createMode"] == "Copy"
    assert db["spec"]["sourceDatabaseReference"] == {"armId": f"{SERVER}/databases/orders"}
    assert db["metadata"]["annotations"] == {"serviceoperator.azure.com/reconcile-policy": "manage"}
    assert "sku" not in db["spec"]  # the copy keeps the source's unless told
    container = out["pod_specs"][0]["containers"][0]
    assert [e["name"] for e in container["env"]].count("DB_NAME") == 1
    assert env_of(container) == {"DB_NAME": name, "DB_HOST": "acme-dev-sql.database.windows.net", "DB_PORT": "1433",
                                 "DB_USER": "app",
                                 "DB_PASSWORD": {"secretKeyRef": {"name": "orders-db", "key": "password"}}}
    assert az([pod(app())]) == az([pod(app())])
    assert az([pod(app())], "orders-db-pr-8")["resources"][0]["spec"]["azureName"] != name
    owned = az([pod(app())], server_id="", server_ref="dev-sql", source_database="",
               source_database_id=f"{SERVER}/databases/orders", sku="GP_S_Gen5_1", sku_capacity="2")
    assert owned["resources"][0]["spec"]["owner"] == {"name": "dev-sql"}
    assert owned["resources"][0]["spec"]["sku"] == {"name": "GP_S_Gen5_1", "capacity": 2}
    assert env_of(owned["pod_specs"][0]["containers"][0])["DB_HOST"] == "dev-sql.database.windows.net"


@pytest.mark.parametrize(("args", "field", "message"), [
    ({"server_ref": "dev-sql"}, "server_id", "set exactly one of server_id"),
    ({"server_id": ""}, "server_id", "set exactly one of server_id"),
    ({"server_id": "/subscriptions/0/resourceGroups/dev/providers/Microsoft.Web/sites/x"}, "server_id",
     "is not a SQL server's ARM id"),
    ({"source_database_id": f"{SERVER}/databases/orders"}, "source_database", "set exactly one of source_database"),
    ({"source_database": "", "source_database_id": SERVER}, "source_database_id", "is not a SQL database's ARM id"),
    ({"sku_tier": "Standard"}, "sku_tier", "set sku too"),
    ({"name_env": "DB_USER"}, "user_env", "names the same variable as name_env (DB_USER)"),
])
def test_azure_sql_bad_args_get_precise_errors(args, field, message):
    errors = AZURE_SQL.validate_args({**AZ_ARGS, **args})
    assert [e["field"] for e in errors] == [field] and message in errors[0]["message"]


def test_azure_sql_good_args_are_valid():
    assert AZURE_SQL.validate_args(AZ_ARGS) == []
