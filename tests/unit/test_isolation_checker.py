"""The independent isolation checker (`support.isolation`) can fail: each property, violated in a small
hand-written flow, is reported; the clean flow reports nothing; its reference finder reads the common forms
and leaves look-alikes alone."""

from __future__ import annotations

import copy

import pytest
from support.isolation import (
    check_flow,
    config_map_copy_changes,
    edge_warned,
    hosts_in,
    hosts_in_command,
    load_flow,
)

FLOW = "pr-1"


def service(name, selector, ns=None, deps=None, ports=(("tcp", 5432),)):
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    if deps:
        meta["annotations"] = {"kardinal.dev.service/dependencies": deps}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"selector": dict(selector), "ports": [{"name": n, "port": p} for n, p in ports]}}  # fmt: skip


def deployment(name, labels, ns=None, kind="Deployment", env=(), env_from=(), volumes=(), **container):
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    c = {"name": "main", "image": f"example/{name}:1", **container}
    if env:
        c["env"] = list(env)
    if env_from:
        c["envFrom"] = [{"configMapRef": {"name": n}} for n in env_from]
    spec = {"selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {"containers": [c]}}}  # fmt: skip
    if volumes:
        spec["template"]["spec"]["volumes"] = list(volumes)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


def config_map(name, data, ns=None):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **({"namespace": ns} if ns else {})},
            "data": dict(data)}  # fmt: skip


def pvc(name, ns=None):
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def claim(name):
    return [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]


def dev_labels(app):
    return {"app": f"{app}-{FLOW}", "devlane.dev/flow": FLOW}


URI = "postgresql://api:secret@db:5432/db"
DEV_URI = f"postgresql://api:secret@db-{FLOW}:5432/db"


def baseline():
    """api -> db (Postgres with a PVC); api reads its database URL from a ConfigMap; web -> api."""
    return [
        service("web", {"app": "web"}, deps="api:http", ports=(("http", 80),)),
        deployment("web", {"app": "web"}, env=[{"name": "API_ADDR", "value": "api:8080"}]),
        service("api", {"app": "api"}, deps="db:tcp", ports=(("http", 8080),)),
        deployment("api", {"app": "api"}, env_from=["api-config"]),
        config_map("api-config", {"DATABASE_URL": URI, "POSTGRES_DB": "db", "POSTGRES_USER": "db"}),
        service("db", {"app": "db"}),
        deployment("db", {"app": "db"}, kind="StatefulSet", volumes=claim("data")),
        pvc("data"),
    ]


def rendered():
    """A correct flow: api and db have dev versions, api reads a per-flow ConfigMap copy, db a per-flow PVC."""
    return [
        service(f"api-{FLOW}", dev_labels("api"), ports=(("http", 8080),)),
        deployment(f"api-{FLOW}", dev_labels("api"), env_from=[f"api-config-{FLOW}"]),
        config_map(f"api-config-{FLOW}", {"DATABASE_URL": DEV_URI, "POSTGRES_DB": "db", "POSTGRES_USER": "db"}),
        service(f"db-{FLOW}", dev_labels("db")),
        deployment(f"db-{FLOW}", dev_labels("db"), kind="StatefulSet", volumes=claim(f"data-{FLOW}")),
        pvc(f"data-{FLOW}"),
    ]


def find(objects, kind, name):
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def container(objects, name):
    return find(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]


def kinds(violations):
    return sorted({v.kind for v in violations})


def test_a_correct_flow_reports_nothing():
    assert check_flow(baseline(), rendered(), FLOW) == []
    assert config_map_copy_changes(baseline(), rendered(), FLOW) == []


def test_a_baseline_service_selector_matching_a_dev_pod_is_reported():
    objs = rendered()
    find(objs, "Deployment", f"api-{FLOW}")["spec"]["template"]["metadata"]["labels"] = {"app": "api", "x": "y"}
    messages = [str(v) for v in check_flow(baseline(), objs, FLOW) if v.kind == "selector"]
    assert any("baseline Service api selects the dev pods of Deployment api-pr-1" in m for m in messages), messages
    assert any("baseline Deployment api selects" in m for m in messages), messages


def test_a_baseline_workload_match_expressions_selector_is_read():
    base = baseline()
    find(base, "Deployment", "web")["spec"]["selector"] = {
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["api-pr-1", "web"]}]}
    messages = [str(v) for v in check_flow(base, rendered(), FLOW)]
    assert messages == ["baseline Deployment web selects the dev pods of Deployment api-pr-1"]


def test_a_baseline_replication_controller_selector_is_read():
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
          "spec": {"selector": {"app": "api-pr-1"}, "template": {"metadata": {"labels": {"app": "api-pr-1"}},
                                                                 "spec": {"containers": []}}}}  # fmt: skip
    assert [str(v) for v in check_flow([*baseline(), rc], rendered(), FLOW)] == [
        "baseline ReplicationController legacy selects the dev pods of Deployment api-pr-1"]


def test_selectors_in_another_namespace_do_not_count():
    base = [*baseline(), service("api", {"app": "api-pr-1"}, ns="other")]
    assert check_flow(base, rendered(), FLOW) == []


def test_a_dev_service_that_selects_no_dev_pod_is_reported():
    objs = rendered()
    find(objs, "Service", f"db-{FLOW}")["spec"]["selector"] = {"app": "nothing"}
    assert "dev Service db-pr-1 selects no dev pod" in [str(v) for v in check_flow(baseline(), objs, FLOW)]


def env(value, name="DB"):
    return lambda c: c.setdefault("env", []).append({"name": name, "value": value})


LEAKS = {
    "env host:port": env("db:5432"),
    "env bare host": env("db", "DB_HOST"),
    "env url": env("postgres://u:p@db:5432/app"),
    "env jdbc": env("jdbc:postgresql://db:5432/app"),
    "env fqdn": env("db.default.svc.cluster.local", "PGHOST"),
    "env key-value": env("Host=db;Username=app;Password=x", "ConnectionStrings__Default"),
    "env libpq": env("host=db port=5432 dbname=app", "DSN"),
    "env host list": env("db:5432,replica:5432", "HOSTS"),
    "env id@host": env("1@db:9093", "VOTERS"),
    "args flag=url": lambda c: c.update(args=["--db-url=postgres://db:5432/app"]),
    "args flag value": lambda c: c.update(args=["--host", "db"]),
    "args -h": lambda c: c.update(command=["pg_isready", "-h", "db"]),
    "command shell": lambda c: c.update(command=["sh", "-c", "until nc -z db 5432; do sleep 1; done"]),
}


@pytest.mark.parametrize("leak", LEAKS.values(), ids=LEAKS.keys())
def test_a_dev_pod_reading_a_baseline_service_with_a_dev_version_is_reported(leak):
    objs = rendered()
    leak(container(objs, f"api-{FLOW}"))
    violations = check_flow(baseline(), objs, FLOW)
    assert "reference" in kinds(violations), violations
    assert any("reads baseline Service db, which has a dev version db-pr-1" in str(v) for v in violations)


@pytest.mark.parametrize("value", ["db-pr-1:5432", "postgres://u:p@db-pr-1:5432/db", "db-pr-1"])
def test_a_reference_to_the_dev_version_is_fine(value):
    objs = rendered()
    container(objs, f"api-{FLOW}")["env"] = [{"name": "DB_HOST", "value": value}]
    assert check_flow(baseline(), objs, FLOW) == []


def test_an_init_container_is_read():
    objs = rendered()
    spec = find(objs, "Deployment", f"api-{FLOW}")["spec"]["template"]["spec"]
    spec["initContainers"] = [{"name": "wait", "image": "busybox", "args": ["redis-cli", "-h", "db", "ping"]}]
    assert kinds(check_flow(baseline(), objs, FLOW)) == ["reference"]


@pytest.mark.parametrize("how", ["envFrom", "configMapKeyRef", "volume", "projected"])
def test_a_baseline_config_map_the_dev_pod_reads_is_read(how):
    """The dev pod points at the baseline ConfigMap (no per-flow copy): its database URL is a leak."""
    objs = rendered()
    c = container(objs, f"api-{FLOW}")
    spec = find(objs, "Deployment", f"api-{FLOW}")["spec"]["template"]["spec"]
    del c["envFrom"]
    if how == "envFrom":
        c["envFrom"] = [{"configMapRef": {"name": "api-config"}}]
    elif how == "configMapKeyRef":
        c["env"] = [{"name": "DATABASE_URL", "valueFrom": {"configMapKeyRef": {"name": "api-config",
                                                                               "key": "DATABASE_URL"}}}]  # fmt: skip
    elif how == "volume":
        spec["volumes"] = [{"name": "cfg", "configMap": {"name": "api-config"}}]
    else:
        spec["volumes"] = [{"name": "cfg", "projected": {"sources": [{"configMap": {"name": "api-config"}}]}}]
    messages = [str(v) for v in check_flow(baseline(), objs, FLOW)]
    assert any("ConfigMap api-config (baseline)" in m and "(db)" in m for m in messages), messages


def test_a_dev_pod_pointing_at_a_copy_the_flow_lacks_is_reported():
    objs = [o for o in rendered() if o["kind"] != "ConfigMap"]
    assert [str(v) for v in check_flow(baseline(), objs, FLOW) if v.kind == "missing"] == [
        "Deployment api-pr-1 reads ConfigMap api-config-pr-1, which the flow does not hold"]


def test_a_dev_pod_reading_a_name_that_exists_nowhere_is_reported():
    """The generated name a build made (`api-config-h4sh`) not followed: the dev pod reads the source name."""
    base = [o for o in baseline() if o["kind"] != "ConfigMap"] + [config_map("api-config-h4sh", {"A": "b"})]
    find(base, "Deployment", "api")["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"configMapRef": {"name": "api-config-h4sh"}}, {"secretRef": {"name": "made-elsewhere"}}]
    objs = [o for o in rendered() if o["kind"] != "ConfigMap"]
    container(objs, f"api-{FLOW}")["envFrom"] = [{"configMapRef": {"name": "api-config"}},
                                                 {"secretRef": {"name": "made-elsewhere"}}]
    assert [str(v) for v in check_flow(base, objs, FLOW) if v.kind == "dangling"] == [
        "Deployment api-pr-1 reads ConfigMap api-config, which exists neither in the baseline nor in the flow"]
    container(objs, f"api-{FLOW}")["envFrom"][0]["configMapRef"]["name"] = "api-config-h4sh"
    assert [v for v in check_flow(base, objs, FLOW) if v.kind == "dangling"] == []


def test_a_config_map_file_is_read():
    base = [*baseline(), config_map("app-yaml", {"application.yaml": "spring:\n  datasource:\n    host: db\n"})]
    objs = rendered()
    find(objs, "Deployment", f"api-{FLOW}")["spec"]["template"]["spec"]["volumes"] = [
        {"name": "cfg", "configMap": {"name": "app-yaml"}}]
    assert kinds(check_flow(base, objs, FLOW)) == ["reference"]


@pytest.mark.parametrize("value", [
    ("POSTGRES_DB", "db"), ("POSTGRES_USER", "db"), ("DB_NAME", "db"), ("DATA_PATH", "/var/lib/db"),
    ("MESSAGE", "the db is down"), ("GREETING", "db"), ("IMAGE", "example/db:5"),
])  # fmt: skip
def test_values_that_only_look_like_the_service_are_not_references(value):
    objs = rendered()
    container(objs, f"api-{FLOW}")["env"] = [{"name": value[0], "value": value[1]}]
    assert check_flow(baseline(), objs, FLOW) == []


def test_cross_namespace_references_resolve_by_namespace():
    base = [service("ui", {"app": "ui"}, ns="ui", deps="catalog.catalog:http", ports=(("http", 80),)),
            deployment("ui", {"app": "ui"}, ns="ui", env_from=["ui"]),
            config_map("ui", {"ENDPOINT": "http://catalog.catalog.svc:80"}, ns="ui"),
            service("catalog", {"app": "catalog"}, ns="catalog", ports=(("http", 80),)),
            deployment("catalog", {"app": "catalog"}, ns="catalog"),
            service("catalog", {"app": "other-catalog"}, ns="ui", ports=(("http", 80),))]  # fmt: skip
    dev = [service(f"ui-{FLOW}", dev_labels("ui"), ns="ui", ports=(("http", 80),)),
           deployment(f"ui-{FLOW}", dev_labels("ui"), ns="ui", env_from=["ui"]),
           service(f"catalog-{FLOW}", dev_labels("catalog"), ns="catalog", ports=(("http", 80),)),
           deployment(f"catalog-{FLOW}", dev_labels("catalog"), ns="catalog")]  # fmt: skip
    violations = check_flow(base, dev, FLOW)
    assert kinds(violations) == ["reference", "unwired"]
    assert "reads baseline Service catalog/catalog" in str(violations[0])
    [unwired] = [v for v in violations if v.kind == "unwired"]
    assert unwired.edge == (("ui", "ui"), ("catalog", "catalog"))
    fixed = [*dev, config_map(f"ui-{FLOW}", {"ENDPOINT": f"http://catalog-{FLOW}.catalog.svc:80"}, ns="ui")]
    container(fixed, f"ui-{FLOW}")["envFrom"] = [{"configMapRef": {"name": f"ui-{FLOW}"}}]
    assert check_flow(base, fixed, FLOW) == []


def test_a_dev_pod_mounting_a_baseline_pvc_is_reported():
    objs = rendered()
    find(objs, "StatefulSet", f"db-{FLOW}")["spec"]["template"]["spec"]["volumes"] = claim("data")
    assert [str(v) for v in check_flow(baseline(), objs, FLOW)] == [
        "StatefulSet db-pr-1 mounts baseline PersistentVolumeClaim data (volume data)"]


def test_a_dev_copy_in_another_namespace_is_reported():
    objs = rendered()
    for o in objs:
        o["metadata"]["namespace"] = "other"
    violations = check_flow(baseline(), objs, FLOW)
    assert "namespace" in kinds(violations)
    assert "dev Deployment other/api-pr-1 is in namespace other, its baseline Deployment api in None" in map(
        str, violations)


def test_an_unwired_dev_to_dev_edge_is_reported():
    objs = rendered()
    find(objs, "ConfigMap", f"api-config-{FLOW}")["data"]["DATABASE_URL"] = "postgres://x@elsewhere:5432/db"
    violations = check_flow(baseline(), objs, FLOW)
    assert [(v.kind, v.edge) for v in violations] == [("unwired", ((None, "api"), (None, "db")))]
    assert str(violations[0]) == "unwired api->db: no dev pod of api-pr-1 refers to db-pr-1"


def test_an_edge_to_a_baseline_dependency_is_not_an_edge_between_dev_versions():
    objs = [o for o in rendered() if not o["metadata"]["name"].startswith("db-")]
    find(objs, "ConfigMap", f"api-config-{FLOW}")["data"]["DATABASE_URL"] = URI
    assert check_flow(baseline(), objs, FLOW) == []


def test_dependencies_on_a_workload_no_service_selects():
    base = [*baseline(), deployment("worker", {"app": "worker"})]
    base[-1]["metadata"]["annotations"] = {"kardinal.dev.service/dependencies": "db:tcp"}
    objs = [*rendered(), deployment(f"worker-{FLOW}", dev_labels("worker"))]
    assert [v.edge for v in check_flow(base, objs, FLOW)] == [((None, "worker"), (None, "db"))]
    container(objs, f"worker-{FLOW}")["args"] = ["--db-host", f"db-{FLOW}"]
    assert check_flow(base, objs, FLOW) == []


def test_a_config_map_copy_may_change_only_hosts():
    objs = rendered()
    data = find(objs, "ConfigMap", f"api-config-{FLOW}")["data"]
    for key, value in [("POSTGRES_DB", f"db-{FLOW}"), ("DATABASE_URL", f"postgresql://api:secret@db-{FLOW}:5432/db-{FLOW}"),
                       ("DATABASE_URL", "postgresql://api:other@db-pr-1:5432/db")]:  # fmt: skip
        changed = copy.deepcopy(objs)
        find(changed, "ConfigMap", f"api-config-{FLOW}")["data"][key] = value
        assert [v.kind for v in config_map_copy_changes(baseline(), changed, FLOW)] == ["copy"], (key, value)
    assert data["DATABASE_URL"] == DEV_URI


STDERR = """devlane: target api: changed
devlane: warning: api -> db is not wired: no reference to db-pr-1 in env, args or ConfigMaps of api-pr-1
  fix: pass the address through env or a ConfigMap
devlane: warning: something else about db and api
"""


def test_edge_warned_needs_one_warning_naming_both_ends_in_order():
    assert edge_warned(STDERR, ((None, "api"), (None, "db")), FLOW)
    assert not edge_warned(STDERR, ((None, "db"), (None, "web")), FLOW)
    assert not edge_warned(STDERR.replace("warning", "info"), ((None, "api"), (None, "db")), FLOW)
    assert not edge_warned("devlane: warning: apis -> dbx\n", ((None, "api"), (None, "db")), FLOW)
    error = "devlane: error: edge ui/ui -> catalog.catalog unwired\n"
    assert edge_warned(error, (("ui", "ui"), ("catalog", "catalog")), FLOW, severity="error")


FORMS = {
    "postgresql://accounts-admin:accounts-pwd@accounts-db:5432/accounts-db": {"accounts-db"},
    "jdbc:postgresql://ledger-db:5432/postgresdb": {"ledger-db"},
    "mongodb://m1:27017,m2:27017/app?replicaSet=rs0": {"m1", "m2"},
    "http://catalog.catalog.svc:80": {"catalog.catalog.svc"},
    "catalog.catalog.svc.cluster.local": {"catalog.catalog.svc.cluster.local"},
    "ledgerwriter:8080": {"ledgerwriter"},
    "Host=postgresql;Username=postgres;Password=postgres": {"postgresql"},
    "mysql:host=mysql;dbname=ratings": {"mysql"},
    "1@kafka:9093": {"kafka"},
    "kafka-0:9092,kafka-1:9092": {"kafka-0", "kafka-1"},
    "accounts-db": set(),  # a bare value without an address-like key name
    "us-docker.pkg.dev/google-samples/containers/gke/gb-frontend:v5": set(),
    "registry.k8s.io/redis@sha256:0123456789abcdef": set(),
}


@pytest.mark.parametrize(("text", "hosts"), FORMS.items(), ids=list(FORMS))
def test_the_reference_finder_reads_the_common_forms(text, hosts):
    assert hosts_in(text) == hosts


def test_the_reference_finder_reads_address_keys_and_commands():
    assert hosts_in("redis", "REDIS_HOST") == {"redis"}
    assert hosts_in("a,b", "KAFKA_BROKERS") == {"a", "b"}
    assert hosts_in("redis", "REDIS_PASSWORD") == set()
    assert hosts_in_command(["--backend-url=http://backend:9898"]) == {"backend"}
    assert hosts_in_command(["redis-server", "--replicaof", "redis-leader", "6379"]) == {"redis-leader"}
    assert hosts_in_command(["sh", "-c", "until nc -z rabbitmq 5672; do sleep 2; done"]) == {"rabbitmq"}
    assert hosts_in_command(["--port", "5432", "--user", "db"]) == set()


def test_load_flow_reads_the_files_the_kustomization_lists(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources:\n- a.yaml\n")
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    (tmp_path / "stray.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stray}\n")
    assert [o["metadata"]["name"] for o in load_flow(tmp_path)] == ["a"]
