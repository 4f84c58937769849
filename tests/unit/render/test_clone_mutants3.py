"""The per-flow copies `render/copies/clone.py` makes beside a dev pod, read exactly from the rendered flow (issue 41):
the ConfigMap copy and its rewritten data (recorded in `flow.metadata`), the claim copies (one per claim, the binding
annotations and volume dropped), the warnings about a Secret or a registry-held own address (message, hint, file;
errors under `--strict`), the registry a pod registers with, and the claim templates a plugin unmounted."""

from __future__ import annotations

import json
import textwrap

import pytest

from renderer import api
from renderer.errors import DevlaneError
from renderer.render.copies.clone import _drop_unmounted_claims, _shared_registry
from renderer.render.plan.flow_spec import FlowRequest

FLOW = "pr-1"
LABELS = {"devlane.dev/flow": FLOW, "app.kubernetes.io/managed-by": "devlane"}


def app(name: str, container: str = "", pod: str = "") -> str:
    """A Deployment (its container and pod spec extended by the flow-style YAML given) and its Service."""
    return textwrap.dedent(f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: {name}}}
        spec:
          selector: {{matchLabels: {{app: {name}}}}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec: {{containers: [{{name: main, image: "{name}:1"{container}}}]{pod}}}
        ---
        apiVersion: v1
        kind: Service
        metadata: {{name: {name}}}
        spec: {{selector: {{app: {name}}}, ports: [{{name: http, port: 80}}]}}
        ---
        """)


SHOP = (
    app("orders")
    + app("payments")
    + app(
        "api",
        ", envFrom: [{configMapRef: {name: api-config}}, {secretRef: {name: api-secret}}], "
        "volumeMounts: [{name: data, mountPath: /data}, {name: logs, mountPath: /logs}]",
        ", volumes: [{name: data, persistentVolumeClaim: {claimName: data}}, "
        "{name: logs, persistentVolumeClaim: {claimName: logs}}]",
    )
    + textwrap.dedent("""\
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: api-config}
    immutable: true
    data: {ORDERS_URL: "http://orders:80/v1", LOG_LEVEL: info}
    ---
    apiVersion: v1
    kind: Secret
    metadata: {name: api-secret}
    stringData: {UPSTREAMS: "http://payments:80,http://orders:80"}
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata:
      name: data
      annotations: {pv.kubernetes.io/bind-completed: "yes", volume.beta.kubernetes.io/storage-provisioner: ebs,
                    volume.kubernetes.io/selected-node: node-1, team: shop}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeName: pvc-1234}
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: logs}
    """)
)
IMAGES = {"api": "api:2", "orders": "orders:2", "payments": "payments:2"}


def render(root, text: str, images: dict[str, str], **options) -> api.RenderResult:
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.yaml").write_text(text)
    return api.render(api.Options(repo=root, **options), api.resolve(FlowRequest(flow_id=FLOW, images=images)))


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    return render(tmp_path_factory.mktemp("shop") / "repo", SHOP, IMAGES)


def of_kind(result, kind: str) -> dict[str, dict]:
    """The flow's own objects of `kind` (its directory, not `shared`), by name."""
    return {o["metadata"]["name"]: o for o in result.main.objects if o["kind"] == kind}


def test_the_configmap_copy_is_rewritten_mutable_and_recorded_key_by_key(shop):
    """The copy the dev pod reads is the flow's (its directory), no longer immutable (the next render rewrites it);
    `flow.metadata` records the one key that changed, with its old and new value, and no key left as it was."""
    assert of_kind(shop, "ConfigMap") == {
        "api-config-pr-1": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "api-config-pr-1", "labels": LABELS},
            "data": {"ORDERS_URL": "http://orders-pr-1:80/v1", "LOG_LEVEL": "info"},
        }
    }
    assert [r for r in shop.main.metadata["rewrites"] if "configMap" in r] == [
        {
            "configMap": "api-config-pr-1",
            "key": "ORDERS_URL",
            "old": "http://orders:80/v1",
            "new": "http://orders-pr-1:80/v1",
        }
    ]


def test_each_claim_gets_its_own_copy_without_the_baselines_binding(shop):
    """Two claims, two copies (each volume mounts its own); a copy never names the baseline's bound volume nor
    keeps the binding annotations of each prefix (`pv.`, `volume.beta.`, `volume.`), but keeps the others."""
    volumes = of_kind(shop, "Deployment")["api-pr-1"]["spec"]["template"]["spec"]["volumes"]
    assert [v["persistentVolumeClaim"]["claimName"] for v in volumes] == ["data-pr-1", "logs-pr-1"]
    assert of_kind(shop, "PersistentVolumeClaim") == {
        "data-pr-1": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data-pr-1", "annotations": {"team": "shop"}, "labels": LABELS},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
        "logs-pr-1": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "logs-pr-1", "labels": LABELS},
            "spec": {},
        },
    }


SECRET = (
    "Secret api-secret key UPSTREAMS holds the address of orders, payments, which has a dev version; devlane "
    "never copies Secret values, so dev workload api-pr-1 still reaches the baseline"
)
SECRET_HINT = (
    "move the address to a ConfigMap or an env value (devlane rewrites those), or give the flow its own "
    "Secret through a plugin (an ExternalSecret)"
)


def test_a_secret_holding_dev_addresses_is_a_warning_naming_each_service_and_its_file(shop):
    """Each service the value names, once, in order; the fix in the hint; the file of the Secret to edit."""
    [warning] = [p for p in shop.warnings if p.code == "secret-reference"]
    assert (warning.message, warning.hint, warning.where.file) == (SECRET, SECRET_HINT, "app.yaml")


def test_under_strict_a_secret_holding_dev_addresses_is_refused(tmp_path):
    """`--strict` turns the warning into an error of the render, worded the same."""
    with pytest.raises(DevlaneError) as err:
        render(tmp_path / "repo", SHOP, IMAGES, strict=True)
    [problem] = [p for p in err.value.problems if p.code == "secret-reference"]
    assert (problem.message, problem.hint, problem.where.file) == (SECRET, SECRET_HINT, "app.yaml")


ZONE = "eureka.client.serviceUrl.defaultZone=http://discovery:8761/eureka"
OWN = "eureka.instance.hostname=orders"


@pytest.mark.parametrize("properties", [f"{OWN}\n{ZONE}\n", f"{ZONE}\n{OWN}"], ids=["first line", "last, unended"])
def test_an_own_address_kept_in_a_configmap_is_named_by_its_whole_line(tmp_path, properties):
    """While the lane shares the registry, the warning quotes the line that keeps the pod's own address, whole
    (from its first character to its last, whether a newline ends it or not), and tells how to copy the registry."""
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "orders-config"},
        "data": {"application.properties": properties},
    }
    orders = app(
        "orders",
        ", volumeMounts: [{name: conf, mountPath: /config}]",
        ", volumes: [{name: conf, configMap: {name: orders-config}}]",
    )
    result = render(tmp_path / "repo", orders + app("discovery") + json.dumps(config), {"orders": "orders:2"})
    [kept] = [p for p in result.warnings if p.code == "registry-self"]
    assert f"(ConfigMap orders-config key application.properties = {OWN}) is kept" in kept.message
    assert kept.hint == (
        'copy the registry into the lane: annotate discovery kardinal.dev.service/stateful: "true" '
        "and add it to orders's kardinal.dev.service/dependencies (dev pods then register with the "
        "lane's registry, under their dev names)"
    )
    assert kept.where.file == "app.yaml"


@pytest.mark.parametrize(("lane", "registry"), [(frozenset(), "discovery"), (frozenset({"discovery", "orders"}), None)])
def test_a_registry_named_by_its_full_name_is_known_by_its_service_name(lane, registry):
    """`discovery.infra.svc.cluster.local` is Service `discovery`: shared (so named) unless the lane has a copy."""
    spec = {
        "containers": [
            {"name": "main", "env": [{"name": "REGISTRY_HOST", "value": "discovery.infra.svc.cluster.local"}]}
        ]
    }
    assert _shared_registry(spec, lane) == registry


def claim(name: str) -> dict:
    return {"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"]}}


def workload(kind: str, mounts: list[str], templates: list[str]) -> dict:
    """A dev copy (its spec's keys in this order: the claim templates before the retention policy and the pod)."""
    pod = {"containers": [{"name": "db", "volumeMounts": [{"name": m, "mountPath": f"/{m}"} for m in mounts]}]}
    return {
        "kind": kind,
        "metadata": {"name": "db-pr-1"},
        "spec": {
            "serviceName": "db-pr-1",
            "volumeClaimTemplates": [claim(t) for t in templates],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"},
            "template": {"spec": pod},
        },
    }


POLICY = {"whenDeleted": "Delete"}
# the kind, the volumes the plugin left mounted -> the spec's keys after, in order, and the claim templates kept
UNMOUNTED = {
    "one of two": (
        "StatefulSet",
        ["logs"],
        ["serviceName", "persistentVolumeClaimRetentionPolicy", "template", "volumeClaimTemplates"],
        ["logs"],
    ),
    "all": ("StatefulSet", [], ["serviceName", "template"], []),
    "not a StatefulSet": ("Deployment", ["logs"], list(workload("Deployment", [], [])["spec"]), ["data", "logs"]),
}


@pytest.mark.parametrize("case", sorted(UNMOUNTED))
def test_a_statefulsets_claim_templates_a_plugin_unmounted_are_dropped(case):
    """Only a StatefulSet binds claims from templates: those no container mounts any more go, the retention policy
    with the last of them; the rendered spec (its YAML keeps the keys' order) puts the kept templates last."""
    kind, mounts, keys, kept = UNMOUNTED[case]
    out = _drop_unmounted_claims(
        workload(kind, mounts, ["data", "logs"]), workload(kind, ["data", "logs"], [])["spec"]["template"]["spec"]
    )
    assert list(out["spec"]) == keys
    assert [t["metadata"]["name"] for t in out["spec"].get("volumeClaimTemplates", [])] == kept
    assert out["spec"].get("persistentVolumeClaimRetentionPolicy") == (POLICY if kept else None)
