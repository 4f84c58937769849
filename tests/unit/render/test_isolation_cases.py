"""Isolation on real manifest shapes (issue: isolation that holds on real apps), one test per case.

Every assertion reads the rendered objects, never devlane's own report of what it did.
"""

from __future__ import annotations

import pytest
from support import entry_ingress, yaml_doc

K = "kardinal.dev.service/"


def workload(name: str, kind: str = "Deployment", ns: str | None = None, labels: dict | None = None,
             annotations: dict | None = None, **container) -> str:
    labels = labels or {"app": name}
    meta = {"name": name, **({"namespace": ns} if ns else {}), **({"annotations": annotations} if annotations else {})}
    volumes = container.pop("volumes", None)
    pod = {"containers": [{"name": "main", "image": f"{name}:1", **container}], **({"volumes": volumes} if volumes
                                                                                   else {})}
    template = {"metadata": {"labels": labels}, "spec": pod}
    if kind == "CronJob":
        spec = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {**template, "spec": {
            **pod, "restartPolicy": "Never"}}}}}
    elif kind == "Job":
        spec = {"template": {**template, "spec": {**pod, "restartPolicy": "Never"}}}
    else:
        spec = {"selector": {"matchLabels": labels}, "template": template}
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    return yaml_doc({"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec})


def service(name: str, port: str = "http", ns: str | None = None, selector: dict | None = None, **annotations) -> str:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    if annotations:
        meta["annotations"] = {(k if "/" in k else K + k): v for k, v in annotations.items()}
    return yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                     "spec": {"selector": selector or {"app": name}, "ports": [{"name": port, "port": 80}]}})


def configmap(name: str, data: dict, ns: str | None = None) -> str:
    return yaml_doc({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": name, **({"namespace": ns} if ns else {})}, "data": data})


def objects(result) -> dict[tuple[str, str], dict]:
    return {(o["kind"], o["metadata"]["name"]): o for f in result.flows for o in f.objects}


def pod(obj: dict) -> dict:
    spec = obj["spec"]
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"]


def env(obj: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in pod(obj)["containers"][0].get("env") or []}


def codes(result) -> list[str]:
    return [w.code for w in result.warnings]


def stateful_db(name: str = "db", port: str = "tcp", **container) -> str:
    return workload(name, "StatefulSet", **container) + service(name, port)


# --- 1. references everywhere a pod reads an address -------------------------------------------


def test_args_flags_and_shell_strings_are_rewritten(harness):
    harness.write("app.yaml", entry_ingress("frontend") + service("frontend", dependencies="backend:http")
                  + workload("frontend", args=["--backend-url=http://backend:9898", "--port", "8080"])
                  + service("backend", dependencies="db:tcp")
                  + workload("backend", command=["sh", "-c", "until nc -z db 5432; do sleep 1; done; exec backend"])
                  + stateful_db())
    got = objects(harness.render("pr-1", {"backend": "backend:2"}))
    assert pod(got["Deployment", "frontend-pr-1"])["containers"][0]["args"] == [
        "--backend-url=http://backend-pr-1:9898", "--port", "8080"]
    assert pod(got["Deployment", "backend-pr-1"])["containers"][0]["command"] == [
        "sh", "-c", "until nc -z db-pr-1 5432; do sleep 1; done; exec backend"]


def test_configmaps_a_dev_pod_reads_get_per_flow_copies(harness):
    """envFrom, configMapKeyRef and a mounted properties file: each read ConfigMap holding a reference is copied."""
    harness.write("app.yaml", service("orders", dependencies="rabbitmq:amqp")
                  + workload("orders", envFrom=[{"configMapRef": {"name": "orders-env"}}],
                             env=[{"name": "BROKER", "valueFrom": {"configMapKeyRef": {"name": "broker",
                                                                                       "key": "BROKER_HOST"}}}],
                             volumeMounts=[{"name": "conf", "mountPath": "/conf"}],
                             volumes=[{"name": "conf", "configMap": {"name": "orders-files"}}])
                  + stateful_db("rabbitmq", "amqp")
                  + configmap("orders-env", {"RABBITMQ_URL": "amqp://guest:guest@rabbitmq:5672", "LOG_LEVEL": "info"})
                  + configmap("broker", {"BROKER_HOST": "rabbitmq"})
                  + configmap("orders-files", {"app.properties": "spring.rabbitmq.host=rabbitmq\nspring.rabbitmq."
                                               "username=rabbitmq\n"})
                  + configmap("unrelated", {"X": "rabbitmq:5672"}))
    result = harness.render("pr-1", {"orders": "orders:2"})
    got = objects(result)
    assert got["ConfigMap", "orders-env-pr-1"]["data"] == {"RABBITMQ_URL": "amqp://guest:guest@rabbitmq-pr-1:5672",
                                                            "LOG_LEVEL": "info"}
    assert got["ConfigMap", "broker-pr-1"]["data"] == {"BROKER_HOST": "rabbitmq-pr-1"}
    assert got["ConfigMap", "orders-files-pr-1"]["data"]["app.properties"] == (
        "spring.rabbitmq.host=rabbitmq-pr-1\nspring.rabbitmq.username=rabbitmq\n")  # the user name is left alone
    spec = pod(got["Deployment", "orders-pr-1"])
    assert spec["containers"][0]["envFrom"] == [{"configMapRef": {"name": "orders-env-pr-1"}}]
    assert env(got["Deployment", "orders-pr-1"])["BROKER"]["configMapKeyRef"]["name"] == "broker-pr-1"
    assert spec["volumes"][0]["configMap"]["name"] == "orders-files-pr-1"
    assert ("ConfigMap", "unrelated-pr-1") not in got  # not read by a dev pod: not copied


def test_no_rewrite_covers_configmap_keys_and_args(harness):
    harness.write("app.yaml", service("api", dependencies="postgres:tcp", **{"devlane.dev/no-rewrite": "DB_LABEL,args"})
                  + workload("api", args=["--db-host=postgres"], envFrom=[{"configMapRef": {"name": "api-env"}}])
                  + stateful_db("postgres")
                  + configmap("api-env", {"DB_HOST": "postgres", "DB_LABEL": "postgres:5432"}))
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert pod(got["Deployment", "api-pr-1"])["containers"][0]["args"] == ["--db-host=postgres"]
    assert got["ConfigMap", "api-env-pr-1"]["data"] == {"DB_HOST": "postgres-pr-1", "DB_LABEL": "postgres:5432"}


def test_a_secret_holding_an_address_is_a_warning_and_an_error_under_strict(harness):
    harness.write("app.yaml", service("api", dependencies="postgres:tcp")
                  + workload("api", env=[{"name": "DB", "value": "postgres:5432"}],
                             envFrom=[{"secretRef": {"name": "api-secrets"}}])
                  + stateful_db("postgres")
                  + yaml_doc({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api-secrets"},
                              "stringData": {"DATABASE_URL": "postgres://app:pw@postgres:5432/app"}}))
    result = harness.render("pr-1", {"api": "api:2"})
    warning = next(w for w in result.warnings if w.code == "secret-reference")
    assert "Secret api-secrets key DATABASE_URL" in warning.message and "ConfigMap" in warning.hint
    assert not any(o["kind"] == "Secret" for o in objects(result).values() if isinstance(o, dict))
    strict = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout", "--strict")
    assert strict.returncode == 1 and "api-secrets" in strict.stderr


# --- 2. wired or warned -------------------------------------------------------------------------


def test_an_unwired_edge_is_a_warning_and_an_error_under_policy_strict(harness):
    """The guestbook shape: the frontend's address of redis is compiled into the image."""
    harness.write("app.yaml", service("frontend", dependencies="redis:tcp") + workload("frontend")
                  + stateful_db("redis"))
    result = harness.render("pr-1", {"frontend": "frontend:2"})
    warning = next(w for w in result.warnings if w.code == "unwired")
    assert "edge frontend -> redis is not wired" in warning.message and "redis-pr-1" in warning.message
    assert "--isolation namespace" in warning.hint and "env or a ConfigMap" in warning.hint
    harness.config({"policy": {"strict": True}})
    out = harness.cli("render", "--flow", "pr-1", "--service", "frontend=frontend:2", "--stdout")
    assert out.returncode == 1 and "edge frontend -> redis is not wired" in out.stderr


def test_a_wired_edge_is_not_warned(harness):
    harness.write("app.yaml", service("frontend", dependencies="redis:tcp")
                  + workload("frontend", env=[{"name": "REDIS_ADDR", "value": "redis:6379"}]) + stateful_db("redis"))
    assert "unwired" not in codes(harness.render("pr-1", {"frontend": "frontend:2"}))


# --- 3. volumes ----------------------------------------------------------------------------------

PVC = yaml_doc({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "pgdata"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                         "volumeName": "pv-0042"}})
PG = dict(volumeMounts=[{"name": "data", "mountPath": "/var/lib/postgresql/data"}],
          volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "pgdata"}}])


def test_a_dev_pod_gets_its_own_claim_never_the_baseline_one(harness):
    harness.write("app.yaml", service("api", dependencies="postgres:tcp") + workload("api")
                  + workload("postgres", **PG) + service("postgres", "tcp", stateful="true") + PVC)
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert pod(got["Deployment", "postgres-pr-1"])["volumes"][0]["persistentVolumeClaim"] == {"claimName":
                                                                                              "pgdata-pr-1"}
    claim = got["PersistentVolumeClaim", "pgdata-pr-1"]
    assert "volumeName" not in claim["spec"] and claim["spec"]["resources"] == {"requests": {"storage": "1Gi"}}


def test_a_claim_missing_from_the_repo_is_an_error_unless_the_service_says_emptydir_or_shared(harness):
    harness.write("app.yaml", service("api", dependencies="postgres:tcp") + workload("api")
                  + workload("postgres", **PG) + service("postgres", "tcp", stateful="true"))
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout")
    assert out.returncode == 1
    assert "baseline PersistentVolumeClaim pgdata, which is not in the repository" in out.stderr
    assert "devlane.dev/volume: emptyDir" in out.stderr
    harness.write("app.yaml", service("api", dependencies="postgres:tcp") + workload("api")
                  + workload("postgres", **PG)
                  + service("postgres", "tcp", stateful="true", **{"devlane.dev/volume": "emptyDir"}))
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert pod(got["Deployment", "postgres-pr-1"])["volumes"] == [{"name": "data", "emptyDir": {}}]
    harness.write("app.yaml", service("api", dependencies="postgres:tcp") + workload("api")
                  + workload("postgres", **PG)
                  + service("postgres", "tcp", stateful="true", **{"devlane.dev/volume": "pgdata=shared"}))
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert pod(got["Deployment", "postgres-pr-1"])["volumes"][0]["persistentVolumeClaim"]["claimName"] == "pgdata"


def test_devlanes_own_keys_kept_in_config_for_manifests_one_does_not_own(harness):
    """`.devlane.yaml services.<name>.volume` (and container, workload, noRewrite) act as the annotations."""
    harness.write("app.yaml", service("api", dependencies="postgres:tcp") + workload("api")
                  + workload("postgres", **PG) + service("postgres", "tcp", stateful="true"))
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout")
    assert out.returncode == 1 and "in .devlane.yaml: services.postgres.volume" in out.stderr
    harness.config({"services": {"postgres": {"volume": "emptyDir"}}})
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert pod(got["Deployment", "postgres-pr-1"])["volumes"] == [{"name": "data", "emptyDir": {}}]
    harness.write("app.yaml", service("api") + workload("api", env=[{"name": "DB", "value": "db:5432"}])
                  + service("db", "tcp", stateful="true") + workload("db"))
    harness.config({"services": {"api": {"dependencies": ["db:tcp"], "noRewrite": ["DB"]}}})
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert pod(got["Deployment", "api-pr-1"])["containers"][0]["env"] == [{"name": "DB", "value": "db:5432"}]
    harness.config({"services": {"api": {"dependencies": ["db:tcp"]}}})
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert pod(got["Deployment", "api-pr-1"])["containers"][0]["env"] == [{"name": "DB", "value": "db-pr-1:5432"}]


# --- 4. namespaces -------------------------------------------------------------------------------


def test_an_unrelated_object_in_another_namespace_moves_nothing(harness):
    harness.write("app.yaml", service("api") + workload("api") + configmap("tooling", {"a": "b"}, ns="monitoring"))
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert "namespace" not in got["Deployment", "api-pr-1"]["metadata"]
    assert "namespace" not in got["Service", "api-pr-1"]["metadata"]


def test_same_name_in_two_namespaces_are_two_services(harness):
    harness.write("app.yaml", service("api", ns="shop", dependencies="db.data:tcp") + workload("api", ns="shop")
                  + service("api", ns="admin") + workload("api", ns="admin")
                  + workload("db", "StatefulSet", ns="data") + service("db", "tcp", ns="data"))
    ambiguous = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout")
    assert ambiguous.returncode == 1
    assert "flow target 'api' is ambiguous: Service admin/api, Service shop/api" in ambiguous.stderr
    assert "--service admin/api=IMAGE" in ambiguous.stderr
    got = objects(harness.render("pr-1", {"shop/api": "api:2"}))
    assert got["Deployment", "api-pr-1"]["metadata"]["namespace"] == "shop"
    assert got["StatefulSet", "db-pr-1"]["metadata"]["namespace"] == "data"  # the cross-namespace dependency
    assert sum(1 for kind, _ in got if kind == "Deployment") == 1


def test_a_target_named_by_a_service_that_selects_nothing_and_a_workload_is_the_workload(harness):
    """eks-workshop's ALB exercise: Service ui's selector is broken on purpose, Deployment ui stands alone."""
    harness.write("app.yaml", service("ui", ns="ui", selector={"app": "ui-app"}) + workload("ui", ns="ui"))
    got = objects(harness.render("pr-1", {"ui": "ui:2"}))
    assert got["Deployment", "ui-pr-1"]["spec"]["template"]["spec"]["containers"][0]["image"] == "ui:2"


# --- 5. ambiguity only where the flow goes -------------------------------------------------------


def test_one_service_over_three_versions_blocks_only_flows_that_need_it(harness):
    versions = "".join(workload(f"reviews-v{i}", labels={"app": "reviews", "version": f"v{i}"}) for i in (1, 2, 3))
    harness.write("app.yaml", versions + service("reviews") + service("ratings") + workload("ratings")
                  + service("productpage", dependencies="reviews:http") + workload("productpage"))
    assert objects(harness.render("pr-1", {"ratings": "ratings:2"}))["Deployment", "ratings-pr-1"]
    out = harness.cli("render", "--flow", "pr-1", "--service", "reviews=reviews:2", "--stdout")
    assert out.returncode == 1
    assert "selector matches 3 workloads (Deployment/reviews-v1, Deployment/reviews-v2, Deployment/reviews-v3)" \
        in out.stderr and "has no Deployment" not in out.stderr


# --- 6. targets that are not behind a Service ----------------------------------------------------


def test_a_queue_consumer_without_a_service_is_a_target_with_dependencies_on_itself(harness):
    harness.write("app.yaml", workload("worker", annotations={K + "dependencies": "rabbitmq:amqp"},
                                       env=[{"name": "AMQP_URL", "value": "amqp://rabbitmq:5672"}])
                  + stateful_db("rabbitmq", "amqp"))
    result = harness.render("pr-1", {"worker": "worker:2"})
    got = objects(result)
    assert env(got["Deployment", "worker-pr-1"])["AMQP_URL"] == "amqp://rabbitmq-pr-1:5672"
    assert result.plan.decisions["rabbitmq"].version == "dev"
    assert "unreachable" not in codes(result)  # a consumer is not reached through an entry


def test_a_migration_job_against_the_dev_database_is_copied_with_its_hook(harness):
    hook = {"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}
    harness.write("app.yaml", service("api", dependencies="postgres:tcp") + workload("api")
                  + stateful_db("postgres")
                  + workload("migrate", "Job", annotations=hook,
                             env=[{"name": "DATABASE_URL", "value": "postgresql://app@postgres:5432/app"}])
                  + workload("vacuum", "CronJob", args=["psql", "-h", "postgres", "-c", "VACUUM"])
                  + workload("report", "CronJob", env=[{"name": "TARGET", "value": "http://elsewhere"}]))
    result = harness.render("pr-1", {"api": "api:2"})
    got = objects(result)
    job = got["Job", "migrate-pr-1"]
    assert job["metadata"]["annotations"] == hook
    assert env(job)["DATABASE_URL"] == "postgresql://app@postgres-pr-1:5432/app"
    assert "selector" not in job["spec"]
    assert pod(got["CronJob", "vacuum-pr-1"])["containers"][0]["args"] == ["psql", "-h", "postgres-pr-1", "-c",
                                                                           "VACUUM"]
    assert ("CronJob", "report-pr-1") not in got
    assert "reads postgres" in result.plan.decisions["migrate"].reasons[0]


# --- 7. NetworkPolicies --------------------------------------------------------------------------


def netpol(name: str, selector: dict, ingress_from: list[dict] | None = None) -> str:
    spec: dict = {"podSelector": selector, "policyTypes": ["Ingress"]}
    if ingress_from is not None:
        spec["ingress"] = [{"from": ingress_from, "ports": [{"port": 80}]}]
    return yaml_doc({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name},
                     "spec": spec})


def test_network_policies_admitting_the_baseline_admit_the_dev_pods(harness):
    harness.write("app.yaml", entry_ingress("frontend") + service("frontend", dependencies="backend:http")
                  + workload("frontend", env=[{"name": "BACKEND_URL", "value": "http://backend"}])
                  + service("backend") + workload("backend") + service("catalog") + workload("catalog")
                  + netpol("default-deny", {}, None)
                  + netpol("backend-allow", {"matchLabels": {"app": "backend"}},
                           [{"podSelector": {"matchLabels": {"app": "frontend"}}}])
                  + netpol("catalog-allow", {"matchLabels": {"app": "catalog"}},
                           [{"podSelector": {"matchLabels": {"app": "frontend"}}}]))
    got = objects(harness.render("pr-1", {"backend": "backend:2"}))
    backend = got["NetworkPolicy", "backend-allow-pr-1"]["spec"]
    dev_backend = got["Deployment", "backend-pr-1"]["spec"]["template"]["metadata"]["labels"]
    dev_frontend = got["Deployment", "frontend-pr-1"]["spec"]["template"]["metadata"]["labels"]
    assert backend["podSelector"]["matchLabels"].items() <= dev_backend.items()
    peers = [p["podSelector"]["matchLabels"] for p in backend["ingress"][0]["from"]]
    assert {"app": "frontend"} in peers and any(p.items() <= dev_frontend.items() for p in peers)
    catalog = got["NetworkPolicy", "catalog-allow-pr-1"]["spec"]  # baseline catalog admits the dev frontend
    assert catalog["podSelector"] == {"matchLabels": {"app": "catalog"}}
    assert any(p["podSelector"]["matchLabels"].items() <= dev_frontend.items() for p in catalog["ingress"][0]["from"])
    assert ("NetworkPolicy", "default-deny-pr-1") not in got  # deny-all already applies to the dev pods


# --- 8. honest reporting -------------------------------------------------------------------------


def test_a_second_service_on_a_dev_workload_is_reported_as_dev(harness):
    harness.write("app.yaml", entry_ingress("frontend") + service("frontend") + workload("frontend")
                  + service("frontend-external", selector={"app": "frontend"}))
    result = harness.render("pr-1", {"frontend": "frontend:2"})
    assert result.plan.decisions["frontend-external"].version == "dev"
    assert "selects the dev workload of frontend" in result.plan.decisions["frontend-external"].reasons
    assert "| frontend-external | dev |" in result.main.readme
    assert ("Service", "frontend-external-pr-1") in objects(result)


def test_a_target_nothing_reaches_renders_with_a_warning(harness):
    harness.write("app.yaml", service("api") + workload("api"))
    result = harness.render("pr-1", {"api": "api:2"})
    warning = next(w for w in result.warnings if w.code == "unreachable")
    assert "nothing in the flow reaches api" in warning.message and "kardinal.dev.service/ingress" in warning.hint
    harness.append("app.yaml", entry_ingress("api"))
    assert "unreachable" not in codes(harness.render("pr-1", {"api": "api:2"}))


@pytest.mark.parametrize("source", ["./plugins/missing", "github.com/acme/nothing-here"])
def test_lint_reports_an_unresolvable_plugin_source(harness, source):
    harness.write("app.yaml", service("api", plugins="db") + workload("api")
                  + yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "defs", "annotations": {
                      K + "plugin-definition": f"- name: {source}\n  type: stateful\n  servicename: db\n"}}}))
    out = harness.cli("lint")
    assert out.returncode == 1 and "plugin db: plugin" in out.stdout and source in out.stdout


def test_lint_warns_of_what_a_flow_would_fail_on(harness):
    versions = "".join(workload(f"reviews-v{i}", labels={"app": "reviews", "version": f"v{i}"}) for i in (1, 2))
    harness.write("app.yaml", versions + service("reviews") + workload("postgres", **PG) + service("postgres", "tcp"))
    out = harness.cli("lint")
    assert out.returncode == 0, out.stdout
    assert "selector of reviews matches 2 workloads" in out.stdout
    assert "mounts PersistentVolumeClaim pgdata, which is not in the repository" in out.stdout


def test_a_job_reading_the_dev_database_from_a_secret_is_not_copied_but_warned(harness):
    harness.write("app.yaml", service("api", dependencies="postgres:tcp") + workload("api")
                  + stateful_db("postgres")
                  + workload("migrate", "Job", envFrom=[{"secretRef": {"name": "db-url"}}])
                  + yaml_doc({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db-url"},
                              "stringData": {"DATABASE_URL": "postgresql://app@postgres:5432/app"}}))
    result = harness.render("pr-1", {"api": "api:2"})
    assert ("Job", "migrate-pr-1") not in objects(result)
    warning = next(w for w in result.warnings if w.code == "secret-reference")
    assert "Job/migrate reads the address of postgres from Secret db-url key DATABASE_URL" in warning.message


def test_a_variable_used_as_a_host_through_substitution_is_rewritten(harness):
    """The OpenTelemetry demo's shape: a name on its own, used as the host of another variable."""
    harness.write("app.yaml", service("api", dependencies="collector:grpc")
                  + workload("api", env=[{"name": "OTEL_COLLECTOR_NAME", "value": "collector"},
                                         {"name": "OTEL_EXPORTER_OTLP_ENDPOINT",
                                          "value": "http://$(OTEL_COLLECTOR_NAME):4317"}])
                  + workload("collector", "StatefulSet") + service("collector", "grpc"))
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert env(got["Deployment", "api-pr-1"])["OTEL_COLLECTOR_NAME"] == "collector-pr-1"
