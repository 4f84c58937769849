"""The seed built-ins' logic (plugins/_dbseed.py and each engine), called directly through Kardinal's functions:
the data directory each image reference gets, what replaces the baseline's mounts and volumes, the password
rules (Secret reference, Kardinal's literal, the image's own alternatives), and that seeding is idempotent."""

from __future__ import annotations

import copy

import pytest
from support.kardinal import import_builtin

from plugins._common import Image
from plugins._dbseed import DATA_VOLUME, INIT_DIR, SEED_VOLUME

POSTGRES = import_builtin("postgres-seed")
MYSQL = import_builtin("mysql-seed")
OLD, NEW = "/var/lib/postgresql/data", "/var/lib/postgresql"


def pod(image: str, env: list[dict] | None = None, mounts: list[dict] | None = None,
        volumes: list[dict] | None = None, more: list[dict] | None = None) -> dict:
    db = {"name": "db", "image": image, "env": env or [], "volumeMounts": mounts or []}
    return {"containers": [db, *(more or [])], "volumes": volumes or []}


def seed(module, pod_spec: dict, **args: str) -> dict:
    return module.create_flow([{}], [pod_spec], "seed-pr-1", None, **{"seed_script": "SELECT 1;", **args})


def data_mount(result: dict) -> str:
    mounts = result["pod_specs"][0]["containers"][0]["volumeMounts"]
    return next(m["mountPath"] for m in mounts if m["name"] == DATA_VOLUME)


@pytest.mark.parametrize(("image", "env", "expected"), [
    ("postgres:14", {}, OLD),
    ("postgres:17.6-bookworm", {}, OLD),
    ("postgres:16@sha256:" + "a" * 64, {}, OLD),
    ("postgres:18", {}, NEW),
    ("docker.io/library/postgres:18.1-alpine", {}, NEW),
    ("localhost:5000/postgres", {}, NEW),  # no tag: latest, 18 or later
    ("postgres:alpine", {}, NEW),
    ("postgis/postgis:17-3.5", {}, OLD),
    ("timescale/timescaledb:2.17.2-pg17", {}, OLD),
    ("timescale/timescaledb:2.22.0-pg18", {}, NEW),
    ("postgres:16", {"PGDATA": "/var/lib/postgresql/data/pgdata"}, OLD),
    ("postgres:16", {"PGDATA": "/pgdata"}, "/pgdata"),
    ("postgres:18", {"PGDATA": "/var/lib/postgresql/18/docker"}, NEW),
])
def test_data_directory_follows_the_image_version(image, env, expected):
    assert POSTGRES._data_dir(Image.parse(image), env) == expected
    entries = [{"name": k, "value": v} for k, v in env.items()]
    result = seed(POSTGRES, pod(image, entries), db_password_secret="db")
    assert data_mount(result) == expected


@pytest.mark.parametrize(("image", "message"), [
    ("postgres@sha256:" + "a" * 64, "cannot be told from the image reference"),
    ("bitnami/postgresql:16", "not the official postgres image"),
    ("postgis/postgis:latest", "cannot be told from the image reference"),
])
def test_unknown_images_need_data_dir(image, message):
    result = seed(POSTGRES, pod(image), db_password_secret="db")
    assert result["results"][0]["severity"] == "error" and message in result["results"][0]["message"]
    assert "set data_dir" in result["results"][0]["tags"]["devlane.dev/hint"]
    assert data_mount(seed(POSTGRES, pod(image), db_password_secret="db", data_dir=NEW)) == NEW


def test_baseline_mounts_are_replaced_and_only_orphaned_volumes_dropped():
    spec = pod("postgres:18", mounts=[{"name": "data", "mountPath": OLD}, {"name": "init", "mountPath": INIT_DIR},
                                      {"name": "conf", "mountPath": "/etc/postgresql"}],
               volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "pg"}},
                        {"name": "init", "configMap": {"name": "schema"}}, {"name": "conf", "emptyDir": {}}],
               more=[{"name": "backup", "image": "backup:1", "volumeMounts": [{"name": "init", "mountPath": "/in"}]}])
    result = seed(POSTGRES, spec, db_password_secret="db")
    out = result["pod_specs"][0]
    assert [(m["name"], m["mountPath"]) for m in out["containers"][0]["volumeMounts"]] == [
        ("conf", "/etc/postgresql"), (DATA_VOLUME, NEW), (SEED_VOLUME, INIT_DIR)]
    assert [v["name"] for v in out["volumes"]] == ["init", "conf", DATA_VOLUME, SEED_VOLUME]  # init: still mounted
    assert out["volumes"][-1] == {"name": SEED_VOLUME, "configMap": {"name": "seed-seed-pr-1"}}
    warning = next(r for r in result["results"] if r["severity"] == "warning")
    assert f"replaces what the dev copy mounted at {INIT_DIR} (volume init)" in warning["message"]


def test_seeding_twice_changes_nothing_more():
    once = seed(POSTGRES, pod("postgres:17", [{"name": "POSTGRES_DB", "value": "a"}]), db_name="cart",
                db_password_secret="db")
    twice = seed(POSTGRES, copy.deepcopy(once["pod_specs"][0]), db_name="cart", db_password_secret="db")
    assert twice["pod_specs"] == once["pod_specs"] and twice["resources"] == once["resources"]


def test_env_is_replaced_by_name_and_file_twins_dropped():
    env = [{"name": "POSTGRES_USER", "value": "a"}, {"name": "POSTGRES_PASSWORD_FILE", "value": "/run/p"},
           {"name": "LOG", "value": "x"}, {"name": "POSTGRES_USER", "value": "b"}]
    out = seed(POSTGRES, pod("postgres:17", env), db_user="app", db_password_secret="db", db_password_secret_key="k")
    assert out["pod_specs"][0]["containers"][0]["env"] == [
        {"name": "POSTGRES_USER", "value": "app"}, {"name": "LOG", "value": "x"},
        {"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "k"}}},
        {"name": "DEVLANE_SEED_DIGEST", "value": out["pod_specs"][0]["containers"][0]["env"][-1]["value"]}]


def test_a_changed_seed_changes_the_pod_template():
    a = seed(POSTGRES, pod("postgres:17"), db_password_secret="db")
    b = seed(POSTGRES, pod("postgres:17"), db_password_secret="db", seed_script="SELECT 2;")
    assert a["pod_specs"] != b["pod_specs"]


@pytest.mark.parametrize(("env", "severity", "text"), [
    ([{"name": "POSTGRES_PASSWORD", "value": "pw"}], None, None),
    ([{"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}], "warning",
     "keeps the POSTGRES_PASSWORD its baseline reads from a Secret or file"),
    ([{"name": "POSTGRES_PASSWORD", "value": "other"}], "error", "sets a different POSTGRES_PASSWORD"),
    ([], "error", "sets no POSTGRES_PASSWORD to keep instead of args.db_password"),
])
def test_kardinal_literal_password_is_kept_never_written(env, severity, text):
    result = seed(POSTGRES, pod("postgres:14", env), db_password="pw")
    assert [r["severity"] for r in result["results"]] == ([severity] if severity else [])
    if text:
        assert text in result["results"][0]["message"] and "pw" not in result["results"][0]["message"]
    if severity != "error":
        assert result["pod_specs"][0]["containers"][0]["env"][0] == env[0]


def test_the_images_own_alternatives_to_a_password():
    trust = seed(POSTGRES, pod("postgres:17", [{"name": "POSTGRES_HOST_AUTH_METHOD", "value": "trust"}]))
    assert trust["results"] == []
    refused = seed(POSTGRES, pod("postgres:17", [{"name": "POSTGRES_HOST_AUTH_METHOD", "value": "md5"}]))
    assert "sets no POSTGRES_PASSWORD" in refused["results"][0]["message"]
    random_root = seed(MYSQL, pod("mysql:8.4"))
    assert [(r["severity"], r["message"]) for r in random_root["results"]] == [
        ("info", "MYSQL_ROOT_PASSWORD is not set, so the dev database gets MYSQL_RANDOM_ROOT_PASSWORD=yes")]
    user_without_password = seed(MYSQL, pod("mysql:8.4"), db_user="app", root_password_secret="db")
    assert "sets no MYSQL_PASSWORD, and without it the MySQL image does not create MYSQL_USER" in \
        user_without_password["results"][0]["message"]


@pytest.mark.parametrize(("args", "field", "text"), [
    ({"db_password": "x", "db_password_secret": "s"}, "db_password", "not both"),
    ({"db_password_secret_key": "k"}, "db_password_secret_key", "set db_password_secret too"),
    ({"seed_script": "  "}, "seed_script", "is empty"),
    ({"data_dir": "/var/lib/../x"}, "data_dir", "normalized absolute path"),
    ({"data_dir": INIT_DIR}, "data_dir", "other than / and the init directory"),
])
def test_validate_args(args, field, text):
    problems = POSTGRES.validate_args(args)
    assert [p["field"] for p in problems] == [field] and text in problems[0]["message"]
    assert MYSQL.validate_args({"db_user": "root"})[0]["field"] == "db_user"


def test_extensions_must_be_configmaps_of_init_files():
    def ext(kind: str = "ConfigMap", **data: str) -> dict:
        return {"kind": kind, "metadata": {"name": "e"}, "data": data}

    def error(*extensions: dict, **args: str) -> str:
        result = POSTGRES.create_flow([{}], [pod("postgres:17")], "s-pr-1", list(extensions),
                                      **{"db_password_secret": "db", **args})
        return result["results"][0]["message"]

    assert "is not a ConfigMap" in error(ext("Secret", **{"a.sql": "x"}))
    assert "would ignore" in error(ext(**{"notes.txt": "x"}))
    assert "both give seed.sql" in error(ext(**{"seed.sql": "x"}), seed_script="SELECT 1;")
    assert "nothing to seed" in error()
    assert "holds at most 1048576" in error(ext(**{"big.sql": "x" * (1024 * 1024 + 1)}))
