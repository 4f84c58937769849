"""What an in-process render (`renderer.api.render`) makes of the dev copies: the image override lands in the
annotated container and a plugin sees that container first, shared copies never point at one flow's dev
services, and objects containing `${` opt out of Flux substitution."""

from __future__ import annotations

import textwrap


def test_image_override_goes_to_the_annotated_container_and_plugins_see_it_first(harness):
    harness.builtin("mark", """
        def create_flow(service_specs, pod_specs, flow_uuid):
            for spec in pod_specs:
                spec["containers"][0].setdefault("env", []).append({"name": "MARKED", "value": flow_uuid})
            return {"pod_specs": pod_specs, "config_map": None}
    """)
    harness.write("app.yaml", textwrap.dedent("""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: a}
        spec:
          selector: {matchLabels: {app: a}}
          template:
            metadata: {labels: {app: a}}
            spec: {containers: [{name: sidecar, image: s}, {name: app, image: a}]}
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: a
          annotations: {devlane.dev/container: app, kardinal.dev.service/plugins: mark}
        spec:
          selector: {app: a}
          ports: [{name: http, port: 80, appProtocol: HTTP}]
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: mark
          annotations:
            kardinal.dev.service/plugin-definition: |
              - {name: mark, type: external, servicename: mark}
    """))
    result = harness.render("pr-1", {"a": "new:1"})
    assert [r.source.origin for r in result.plugins.results] == ["builtin"]  # it ran in-process
    dep = next(o for o in result.main.objects if o["kind"] == "Deployment")
    sidecar, app = dep["spec"]["template"]["spec"]["containers"]
    assert (sidecar["name"], sidecar["image"], "env" in sidecar) == ("sidecar", "s", False)
    assert (app["name"], app["image"], app["env"]) == ("app", "new:1", [{"name": "MARKED", "value": "mark-pr-1"}])
    state = next(o for o in result.main.objects if o["kind"] == "ConfigMap")
    assert state["data"]["config_map.json"] == "null"  # any JSON value round-trips


def test_shared_copies_never_point_at_one_flows_dev_services(harness):
    harness.write("app.yaml", textwrap.dedent("""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: api}
        spec:
          selector: {matchLabels: {app: api}}
          template:
            metadata: {labels: {app: api}}
            spec: {containers: [{name: main, image: x, env: [{name: DB_HOST, value: db}]}]}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: api, annotations: {kardinal.dev.service/dependencies: "db:tcp"}}
        spec:
          selector: {app: api}
          ports: [{name: http, port: 80, appProtocol: HTTP}]
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: db}
        spec:
          selector: {matchLabels: {app: db}}
          template:
            metadata: {labels: {app: db}}
            spec: {containers: [{name: main, image: x, env: [{name: CALLBACK_URL, value: "http://api:80/hook"}]}]}
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: db
          annotations: {kardinal.dev.service/stateful: "true", kardinal.dev.service/shared: "true"}
        spec:
          selector: {app: db}
          ports: [{name: tcp, port: 80}]
    """))
    result = harness.render("pr-1", {"api": "api:2"})
    deployments = {o["metadata"]["name"]: o for f in result.flows for o in f.objects if o["kind"] == "Deployment"}

    def env(name: str) -> str:
        return deployments[name]["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"]

    assert [f.flow_id for f in result.flows] == ["pr-1", "shared"]
    assert env("api-pr-1") == "db-shared"
    assert env("db-shared") == "http://api:80/hook"  # the same for every flow


def test_dollar_braces_opt_out_of_flux_substitution(harness):
    harness.app("orders", containers=[{"name": "app", "image": "orders:1",
                                       "env": [{"name": "LOG_LEVEL", "value": "${LOG_LEVEL:-info}"}]}])  # fmt: skip
    harness.app("web")
    result = harness.render("pr-7", {"orders": "x/orders:7", "web": "x/web:7"})
    dev = {(o["kind"], o["metadata"]["name"]): o for o in result.main.objects}
    orders = dev["Deployment", "orders-pr-7"]
    assert orders["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/substitute"] == "disabled"
    assert "${LOG_LEVEL:-info}" in result.main.files["deployment-orders-pr-7.yaml"]
    assert "kustomize.toolkit.fluxcd.io/substitute: disabled" in result.main.files["deployment-orders-pr-7.yaml"]
    for key in [("Deployment", "web-pr-7"), ("Service", "orders-pr-7")]:
        assert "kustomize.toolkit.fluxcd.io/substitute" not in (dev[key]["metadata"].get("annotations") or {})


def test_claim_templates_a_plugin_unmounted_are_dropped_from_the_dev_copy(harness):
    """A plugin that replaces a StatefulSet's data volume (a seed's emptyDir) leaves its claim template unused:
    devlane drops it from the dev copy, so each flow binds no PersistentVolume that nothing mounts. A template
    still mounted (by any container) stays."""
    harness.builtin("ephemeral", """
        def create_flow(service_specs, pod_specs, flow_uuid):
            for spec in pod_specs:
                spec["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/data"}]
                spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
            return {"pod_specs": pod_specs, "config_map": {}}
    """)
    harness.write("db.yaml", textwrap.dedent("""
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: db}
        spec:
          serviceName: db
          selector: {matchLabels: {app: db}}
          template:
            metadata: {labels: {app: db}}
            spec:
              containers:
              - {name: db, image: postgres:17, volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]}
              - {name: backup, image: example.com/backup:1, volumeMounts: [{name: backups, mountPath: /b}]}
          volumeClaimTemplates:
          - metadata: {name: data}
            spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
          - metadata: {name: backups}
            spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: db
          annotations: {kardinal.dev.service/plugins: eph}
        spec: {selector: {app: db}, ports: [{name: tcp, port: 5432}]}
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: eph
          annotations:
            kardinal.dev.service/plugin-definition: "[{name: ephemeral, type: stateful, servicename: eph}]"
        spec: {ports: [{port: 1}]}
    """))
    result = harness.render("pr-3", {"db": "postgres:18"})
    (dev,) = [o for o in result.main.objects if o["kind"] == "StatefulSet"]
    assert [t["metadata"]["name"] for t in dev["spec"]["volumeClaimTemplates"]] == ["backups"]
