"""Every rule of the dev copies (`render/copies/clone.py`), one case per item (issue 41, point 3), read from the
rendered objects: each Service field a dev Service must not keep (`externalIPs`: CVE-2020-8554; node ports; a
cloud load balancer's), each Service type, NetworkPolicy selectors in `matchLabels` and `matchExpressions` on
each side, `devlane.dev/no-rewrite` in env, args and inside ConfigMaps, each volume mode, each volume annotation a
claim copy drops, each workload kind's selector and replicas, and the overrides. The lists are written here,
independently of the module's own. One render per scenario (module-scoped), one assertion per item."""

from __future__ import annotations

import textwrap

import pytest
import yaml
from support import yamlc

from renderer import api
from renderer.core.names import FLOW_LABEL, dev_label_value
from renderer.errors import DevlaneError
from renderer.render.plan.flow_spec import FlowRequest

FLOW = "pr-1"
K = "kardinal.dev.service/"


def dev(value: str) -> str:
    return dev_label_value(value, FLOW)


def render(root, text: str, images: dict[str, str], env: list | None = None, config: str | None = None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.yaml").write_text(textwrap.dedent(text))
    if config is not None:
        (root / ".devlane.yaml").write_text(textwrap.dedent(config))
    flow = api.resolve(FlowRequest(flow_id=FLOW, images=images, env=env or []))
    return api.render(api.Options(repo=root), flow)


def objects(result) -> dict[tuple[str, str], dict]:
    """The flow's objects as written (the YAML stream read back), by (kind, name)."""
    return {(o["kind"], o["metadata"]["name"]): o for o in yamlc.safe_load_all(result.stream()) if o}


# ---------------------------------------------------------------------------------------------------------------
# Dev Services: each field a dev Service drops, each type, node ports, headless

SERVICE_FIELDS = {  # what the baseline Service has, none of which its dev copy may keep
    "clusterIP": "10.96.0.50", "clusterIPs": ["10.96.0.50"], "externalIPs": ["203.0.113.7"],
    "loadBalancerIP": "198.51.100.9", "loadBalancerSourceRanges": ["0.0.0.0/0"], "externalTrafficPolicy": "Local",
    "healthCheckNodePort": 30999, "allocateLoadBalancerNodePorts": True, "loadBalancerClass": "example.com/lb",
}
SHOP = f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: api}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api, team: shop}}}}
    spec:
      containers:
      - name: main
        image: api:1
        env:
        - {{name: ORDERS_URL, value: "http://orders:80/v1"}}
        - {{name: LEGACY_ORDERS, value: "http://orders:80/v1"}}
        args: ["--orders=http://orders:80"]
        volumeMounts: [{{name: conf, mountPath: /conf}}, {{name: data, mountPath: /data}},
                       {{name: scratch, mountPath: /scratch}}, {{name: logs, mountPath: /logs}}]
      volumes:
      - {{name: conf, configMap: {{name: api-config}}}}
      - {{name: data, persistentVolumeClaim: {{claimName: data}}}}
      - {{name: scratch, persistentVolumeClaim: {{claimName: scratch}}}}
      - {{name: logs, persistentVolumeClaim: {{claimName: logs}}}}
---
apiVersion: v1
kind: Service
metadata:
  name: api
  annotations:
    {K}dependencies: "orders:http"
    devlane.dev/no-rewrite: "LEGACY_ORDERS,legacy.url"
    devlane.dev/volume: "scratch=emptyDir, logs=shared"
    example.com/owner: shop
spec:
  type: LoadBalancer
  selector: {{app: api}}
  ports: [{{name: http, port: 80, targetPort: 8080, nodePort: 30080}}]
{textwrap.indent(yaml.safe_dump(SERVICE_FIELDS, sort_keys=False), "  ")}
---
apiVersion: v1
kind: Service
metadata: {{name: api-nodeport}}
spec:
  type: NodePort
  selector: {{app: api}}
  ports: [{{name: http, port: 80, nodePort: 30081}}]
---
apiVersion: v1
kind: Service
metadata: {{name: api-headless}}
spec:
  clusterIP: None
  selector: {{app: api}}
  ports: [{{name: http, port: 80}}]
---
apiVersion: v1
kind: Service
metadata: {{name: api-external}}
spec:
  type: ExternalName
  externalName: api.example.com
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: api-config, annotations: {{devlane.dev/no-rewrite: "pinned.url"}}}}
immutable: true
data:
  pinned.url: "http://orders:80/v1"
  orders.url: "http://orders:80/v1"
  legacy.url: "http://orders:80/v1"
  own.url: "http://orders:80/v1"
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  annotations:
    pv.kubernetes.io/bind-completed: "yes"
    pv.kubernetes.io/bound-by-controller: "yes"
    volume.beta.kubernetes.io/storage-provisioner: ebs.csi.aws.com
    volume.kubernetes.io/storage-provisioner: ebs.csi.aws.com
    volume.kubernetes.io/selected-node: node-1
    example.com/backup: daily
spec:
  volumeName: pvc-0123
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Gi}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: orders}}
spec:
  selector: {{matchLabels: {{app: orders}}}}
  template:
    metadata: {{labels: {{app: orders}}}}
    spec: {{containers: [{{name: main, image: orders:1}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: orders}}
spec:
  selector: {{app: orders}}
  ports: [{{name: http, port: 80}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: api-in}}
spec:
  podSelector:
    matchLabels: {{team: shop}}
    matchExpressions: [{{key: app, operator: In, values: [api, web]}}, {{key: team, operator: In, values: [shop]}}]
  ingress:
  - from:
    - podSelector: {{matchExpressions: [{{key: app, operator: In, values: [api]}}]}}
    - podSelector: {{matchLabels: {{app: api}}}}
      namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: other}}}}
  egress:
  - to:
    - podSelector: {{matchLabels: {{app: api}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: db-in}}
spec:
  podSelector: {{matchLabels: {{app: db}}}}
  ingress:
  - from:
    - podSelector: {{matchExpressions: [{{key: app, operator: In, values: [api, worker]}}]}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: team-only}}
spec:
  podSelector: {{matchLabels: {{team: shop}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: db-out}}
spec:
  podSelector: {{matchLabels: {{app: db}}}}
  egress:
  - to:
    - podSelector: {{matchLabels: {{app: api}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: web-in}}
spec:
  podSelector: {{matchLabels: {{app: web}}}}
  ingress:
  - from:
    - podSelector: {{matchLabels: {{app: lb}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: other-ns-in}}
spec:
  podSelector: {{matchLabels: {{app: db}}}}
  ingress:
  - from:
    - podSelector: {{matchLabels: {{app: api}}}}
      namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: other}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: not-api}}
spec:
  podSelector: {{matchExpressions: [{{key: app, operator: NotIn, values: [api]}}]}}
---
"""


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    root = tmp_path_factory.mktemp("shop") / "repo"
    claims = "".join(f"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {n}}}\nspec: {{accessModes: "
                     "[ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n---\n" for n in ("scratch", "logs"))
    docs = [d for d in yamlc.safe_load_all(SHOP + claims) if d]
    for d in docs:  # every object in namespace `shop`, labelled by its team
        d["metadata"].update(namespace="shop", labels={"team": "shop", **d["metadata"].get("labels", {})})
    text = "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)
    result = render(root, text, {"api": "api:2", "orders": "orders:2"},
                    env=[("api", "LOG_LEVEL", "debug"), ("api", "ORDERS_URL", "http://override")])
    return result, objects(result), {(d.kind, d.name): d.obj for d in result.loaded.documents}


@pytest.mark.parametrize("field", sorted(SERVICE_FIELDS))
def test_a_dev_service_keeps_no_address_or_port_of_the_baselines(shop, field):
    """externalIPs would let the lane take traffic for any IP (CVE-2020-8554); the others would buy, share or pin a
    cloud load balancer, an IP or a node port the baseline holds."""
    _, got, baseline = shop
    assert field in baseline["Service", "api"]["spec"]  # the baseline had it
    assert field not in got["Service", "api-pr-1"]["spec"]


@pytest.mark.parametrize(("service", "type_"), [("api", "LoadBalancer"), ("api-nodeport", "NodePort")])
def test_a_dev_service_is_cluster_internal_without_node_ports(shop, service, type_):
    _, got, baseline = shop
    assert baseline["Service", service]["spec"]["type"] == type_
    spec = got["Service", f"{service}-pr-1"]["spec"]
    assert spec["type"] == "ClusterIP"
    assert [p.get("nodePort") for p in spec["ports"]] == [None]
    assert spec["selector"] == {"app": dev("api"), FLOW_LABEL: FLOW}


def test_a_headless_service_stays_headless_and_no_service_without_a_selector_is_copied(shop):
    _, got, _ = shop
    assert got["Service", "api-headless-pr-1"]["spec"]["clusterIP"] == "None"
    assert ("Service", "api-external-pr-1") not in got


@pytest.mark.parametrize(("kind", "name"), [
    ("Deployment", "api-pr-1"), ("Service", "api-pr-1"), ("Service", "api-nodeport-pr-1"),
    ("ConfigMap", "api-config-pr-1"), ("PersistentVolumeClaim", "data-pr-1"), ("NetworkPolicy", "api-in-pr-1"),
])  # fmt: skip
def test_each_copy_stays_in_its_baselines_namespace_with_its_labels_and_the_flows(shop, kind, name):
    _, got, _ = shop
    meta = got[kind, name]["metadata"]
    assert meta["namespace"] == "shop"
    assert meta["labels"]["team"] == "shop" and meta["labels"][FLOW_LABEL] == FLOW
    assert meta["labels"]["app.kubernetes.io/managed-by"] == "devlane"


def test_a_dev_service_drops_kardinals_annotations_and_keeps_the_others(shop):
    _, got, _ = shop
    ann = got["Service", "api-pr-1"]["metadata"]["annotations"]
    assert not [k for k in ann if k.startswith(K)] and ann["example.com/owner"] == "shop"
    assert "annotations" not in got["Service", "api-nodeport-pr-1"]["metadata"]


# ---------------------------------------------------------------------------------------------------------------
# References: rewritten in env, args and ConfigMaps; `no-rewrite` honoured in each

def test_references_are_rewritten_in_env_args_and_a_configmap_copy(shop):
    _, got, _ = shop
    spec = got["Deployment", "api-pr-1"]["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
    assert spec["containers"][0]["args"] == ["--orders=http://orders-pr-1:80"]
    assert env["LOG_LEVEL"] == "debug" and env["ORDERS_URL"] == "http://override"  # the flow's overrides
    assert spec["containers"][0]["image"] == "api:2"
    [conf] = [v for v in spec["volumes"] if v["name"] == "conf"]
    assert conf["configMap"]["name"] == "api-config-pr-1"
    data = got["ConfigMap", "api-config-pr-1"]["data"]
    assert data["orders.url"] == data["own.url"] == "http://orders-pr-1:80/v1"


def test_no_rewrite_is_honoured_in_env_and_inside_configmaps(shop):
    _, got, _ = shop
    env = {e["name"]: e.get("value") for e in got["Deployment", "api-pr-1"]["spec"]["template"]["spec"]
           ["containers"][0]["env"]}
    assert env["LEGACY_ORDERS"] == "http://orders:80/v1"
    data = got["ConfigMap", "api-config-pr-1"]["data"]
    assert data["legacy.url"] == "http://orders:80/v1"  # named on the Service
    assert data["pinned.url"] == "http://orders:80/v1"  # named on the ConfigMap itself


def test_a_configmap_copy_is_not_immutable(shop):
    """The copy is rewritten per flow: an immutable one could not be updated by the next render."""
    _, got, baseline = shop
    assert baseline["ConfigMap", "api-config"]["immutable"] is True
    assert "immutable" not in got["ConfigMap", "api-config-pr-1"]


# ---------------------------------------------------------------------------------------------------------------
# Volumes: each mode; each annotation a claim copy drops

def test_each_volume_mode(shop):
    _, got, _ = shop
    volumes = {v["name"]: v for v in got["Deployment", "api-pr-1"]["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"] == {"name": "data", "persistentVolumeClaim": {"claimName": "data-pr-1"}}  # copy
    assert volumes["scratch"] == {"name": "scratch", "emptyDir": {}}  # emptyDir
    assert volumes["logs"] == {"name": "logs", "persistentVolumeClaim": {"claimName": "logs"}}  # shared
    assert ("PersistentVolumeClaim", "scratch-pr-1") not in got and ("PersistentVolumeClaim", "logs-pr-1") not in got


@pytest.mark.parametrize("annotation", ["pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
                                        "volume.beta.kubernetes.io/storage-provisioner",
                                        "volume.kubernetes.io/storage-provisioner",
                                        "volume.kubernetes.io/selected-node"])
def test_a_claim_copy_drops_each_binding_annotation(shop, annotation):
    """A copy that kept them would be taken for bound (to the baseline's volume, on its node) by the controller."""
    _, got, baseline = shop
    assert annotation in baseline["PersistentVolumeClaim", "data"]["metadata"]["annotations"]
    claim = got["PersistentVolumeClaim", "data-pr-1"]
    assert annotation not in claim["metadata"]["annotations"]
    assert claim["metadata"]["annotations"]["example.com/backup"] == "daily"
    assert "volumeName" not in claim["spec"] and claim["spec"]["accessModes"] == ["ReadWriteOnce"]


# ---------------------------------------------------------------------------------------------------------------
# NetworkPolicies: selectors of the dev pods in matchLabels and matchExpressions, as target and as peer

def test_a_policy_selecting_a_dev_pods_baseline_selects_the_dev_pod(shop):
    _, got, _ = shop
    spec = got["NetworkPolicy", "api-in-pr-1"]["spec"]
    assert spec["podSelector"] == {"matchLabels": {"team": "shop"}, "matchExpressions": [
        {"key": "app", "operator": "In", "values": [dev("api"), dev("web")]},
        {"key": "team", "operator": "In", "values": ["shop"]}]}  # `team` no selector reads: the dev pods keep it
    assert spec["ingress"][0]["from"] == [
        {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["api"]}]}},
        {"podSelector": {"matchLabels": {"app": "api"}},
         "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "other"}}},
        {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [dev("api")]}]}},
    ]  # the peer in another namespace is no dev pod: not added
    assert spec["egress"][0]["to"] == [{"podSelector": {"matchLabels": {"app": "api"}}},
                                       {"podSelector": {"matchLabels": {"app": dev("api")}}}]


def test_a_policy_admitting_a_dev_pods_baseline_admits_the_dev_pod(shop):
    _, got, _ = shop
    spec = got["NetworkPolicy", "db-in-pr-1"]["spec"]
    assert spec["podSelector"] == {"matchLabels": {"app": "db"}}
    assert spec["ingress"][0]["from"][1] == {
        "podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [dev("api"), dev("worker")]}]}}


def test_a_policy_letting_pods_reach_a_dev_pods_baseline_lets_them_reach_the_dev_pod(shop):
    _, got, _ = shop
    spec = got["NetworkPolicy", "db-out-pr-1"]["spec"]
    assert spec["podSelector"] == {"matchLabels": {"app": "db"}}
    assert spec["egress"][0]["to"] == [{"podSelector": {"matchLabels": {"app": "api"}}},
                                       {"podSelector": {"matchLabels": {"app": dev("api")}}}]


@pytest.mark.parametrize("policy", ["team-only", "web-in", "other-ns-in", "not-api"])
def test_a_policy_that_neither_selects_nor_admits_a_dev_pods_baseline_is_not_copied(shop, policy):
    """On labels the dev pods keep; about other pods; admitting pods of another namespace; selecting the dev pods
    already (`NotIn`)."""
    _, got, baseline = shop
    assert ("NetworkPolicy", policy) in baseline and ("NetworkPolicy", f"{policy}-pr-1") not in got


def test_a_policy_on_labels_the_dev_pods_keep_is_not_copied(shop):
    _, got, _ = shop
    labels = got["Deployment", "api-pr-1"]["spec"]["template"]["metadata"]["labels"]
    assert labels["team"] == "shop" and labels["app"] == dev("api")  # only what a selector reads is suffixed


# ---------------------------------------------------------------------------------------------------------------
# Workloads: each kind's selector, and replicas only where a kind has them

KINDS = {
    "Deployment": ("apps/v1", "deploy"), "StatefulSet": ("apps/v1", "sts"), "DaemonSet": ("apps/v1", "ds"),
    "ReplicationController": ("v1", "rc"), "Job": ("batch/v1", "job"), "CronJob": ("batch/v1", "cron"),
}


def workload(kind: str, name: str, manual: bool = False) -> dict:
    pod = {"metadata": {"labels": {"app": name}},
           "spec": {"containers": [{"name": "main", "image": f"{name}:1",
                                    "env": [{"name": "DB", "value": "http://db:80"}]}],
                    **({"restartPolicy": "Never"} if kind in ("Job", "CronJob") else {})}}
    spec: dict = {"template": pod}
    if kind in ("Deployment", "StatefulSet", "DaemonSet"):
        spec = {"replicas": 4, "selector": {"matchLabels": {"app": name}}, **spec}
        if kind == "DaemonSet":
            spec.pop("replicas")
    elif kind == "ReplicationController" and manual:  # a selector of some of the template's labels
        pod["metadata"]["labels"]["track"] = "stable"
        spec = {"replicas": 4, "selector": {"app": name}, **spec}
    elif kind == "ReplicationController":
        spec = {"replicas": 4, **spec}  # no selector: the template's labels
    elif kind == "Job" and manual:
        spec = {"manualSelector": True, "selector": {"matchLabels": {"app": name}}, **spec}
    elif kind == "Job":
        spec = {"selector": {"matchLabels": {"controller-uid": "0000"}}, **spec}
    elif kind == "CronJob":
        spec = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": pod}}}
    if kind == "StatefulSet":
        spec["serviceName"] = f"{name}-headless"  # its governing Service; another selects it too
    meta = {"name": name, "annotations": {K + "dependencies": "db:tcp"}}
    return {"apiVersion": KINDS[kind][0], "kind": kind, "metadata": meta, "spec": spec}


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    docs = [workload(kind, name) for kind, (_, name) in KINDS.items()]
    docs += [workload("Job", "manual", manual=True), workload("ReplicationController", "rc2", True)]
    docs += [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "annotations": {
        K + "dependencies": "db:tcp"}}, "spec": {**headless, "selector": {"app": "sts"}, "ports": [{
            "name": "http", "port": 80}]}} for name, headless in (("sts-headless", {"clusterIP": "None"}), ("sts", {}))]
    db = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {
        "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": {
            "metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "main", "image": "postgres:17"}]}}}}
    docs += [db, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "annotations": {
        K + "stateful": "true"}}, "spec": {"selector": {"app": "db"}, "ports": [{"name": "tcp", "port": 80}]}}]
    text = "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)
    images = {name: f"{name}:2" for _, name in KINDS.values()} | {"manual": "manual:2", "rc2": "rc2:2"}
    result = render(tmp_path_factory.mktemp("kinds") / "repo", text, images, config="replicas: 2\n")
    return objects(result)


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet"])
def test_each_kind_with_a_selector_selects_its_dev_pods(kinds, kind):
    name = KINDS[kind][1]
    obj = kinds[kind, f"{name}-pr-1"]
    assert obj["spec"]["selector"] == {"matchLabels": {"app": dev(name), FLOW_LABEL: FLOW}}
    assert obj["spec"]["template"]["metadata"]["labels"]["app"] == dev(name)


def test_a_replication_controllers_selector_is_a_plain_map_of_its_dev_labels(kinds):
    assert kinds["ReplicationController", "rc-pr-1"]["spec"]["selector"] == {"app": dev("rc"), FLOW_LABEL: FLOW}
    rc2 = kinds["ReplicationController", "rc2-pr-1"]["spec"]
    assert rc2["selector"] == {"app": dev("rc2"), FLOW_LABEL: FLOW}  # its own keys, not every label of the template
    assert rc2["template"]["metadata"]["labels"]["track"] == "stable"


def test_replicas_keep_leaves_the_baselines(tmp_path):
    obj = workload("Deployment", "deploy")
    del obj["metadata"]["annotations"]
    text = yaml.safe_dump(obj, sort_keys=False)
    got = objects(render(tmp_path / "repo", text, {"deploy": "deploy:2"}, config="replicas: keep\n"))
    assert got["Deployment", "deploy-pr-1"]["spec"]["replicas"] == 4


def test_a_job_with_a_manual_selector_keeps_one_and_a_job_without_gets_the_servers(kinds):
    assert kinds["Job", "manual-pr-1"]["spec"]["selector"] == {"matchLabels": {"app": dev("manual"), FLOW_LABEL: FLOW}}
    assert "selector" not in kinds["Job", "job-pr-1"]["spec"]  # the API server makes it from the copy's uid


@pytest.mark.parametrize(("kind", "replicas"), [("Deployment", 2), ("StatefulSet", 2), ("ReplicationController", 2),
                                                ("DaemonSet", None), ("Job", None), ("CronJob", None)])
def test_replicas_are_set_on_the_kinds_that_have_them(kinds, kind, replicas):
    name = KINDS[kind][1]
    assert kinds[kind, f"{name}-pr-1"]["spec"].get("replicas") == replicas


def test_a_dev_service_of_a_service_with_only_kardinals_annotations_has_none(kinds):
    assert "annotations" not in kinds["Service", "sts-pr-1"]["metadata"]


def test_a_statefulsets_governing_service_is_its_dev_service(kinds):
    """Its governing Service's dev copy, not that of another Service that selects its pods."""
    assert kinds["StatefulSet", "sts-pr-1"]["spec"]["serviceName"] == "sts-headless-pr-1"
    assert kinds["Service", "sts-headless-pr-1"]["spec"]["clusterIP"] == "None"
    assert "clusterIP" not in kinds["Service", "sts-pr-1"]["spec"]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kinds_references_are_rewritten_to_the_lanes_copy(kinds, kind):
    name = KINDS[kind][1]
    spec = kinds[kind, f"{name}-pr-1"]["spec"]
    pod = (spec["jobTemplate"]["spec"] if kind == "CronJob" else spec)["template"]["spec"]
    assert pod["containers"][0]["env"] == [{"name": "DB", "value": "http://db-pr-1:80"}]
    assert pod["containers"][0]["image"] == f"{name}:2"


# ---------------------------------------------------------------------------------------------------------------
# Refusals: a volume that cannot be given to the lane stops the render, naming the claim and the fix

def volume_repo(annotation: str | None, with_claim: bool = True) -> str:
    ann = f"\n  annotations: {{devlane.dev/volume: {annotation!r}}}" if annotation else ""
    claim = ("apiVersion: v1\nkind: PersistentVolumeClaim\n"
             "metadata: {name: data, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}\n"
             "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n---\n") if with_claim else ""
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: api}}\nspec:\n"
            f"  selector: {{matchLabels: {{app: api}}}}\n  template:\n    metadata: {{labels: {{app: api}}}}\n"
            f"    spec:\n      containers: [{{name: main, image: api:1}}]\n"
            f"      volumes: [{{name: data, persistentVolumeClaim: {{claimName: data}}}}]\n---\n"
            f"apiVersion: v1\nkind: Service\nmetadata:\n  name: api{ann}\n"
            f"spec: {{selector: {{app: api}}, ports: [{{name: http, port: 80}}]}}\n---\n{claim}")


@pytest.mark.parametrize(("annotation", "with_claim", "config", "said", "code", "hint"), [
    ("bogus", True, None, "'bogus' is not a volume mode", "bad-annotation", "use one of copy, emptyDir, shared"),
    ("data=bogus", True, None, "'bogus' is not a volume mode", "bad-annotation", "(or claim=MODE,...)"),
    (None, False, None, "PersistentVolumeClaim data, which is not in the repository", "volume",
     "add PersistentVolumeClaim data to the repository, or annotate api with devlane.dev/volume: emptyDir"),
    ("copy", False, None, "PersistentVolumeClaim data, which is not in the repository", "volume",
     "services.api.volume"),
    ("shared", True, "isolation: namespace\n", "cannot share the baseline PersistentVolumeClaim data", "volume",
     "use devlane.dev/volume: copy or emptyDir, or isolation: suffix"),
])  # fmt: skip
def test_a_volume_the_lane_cannot_have_is_refused(tmp_path, annotation, with_claim, config, said, code, hint):
    with pytest.raises(DevlaneError) as refused:
        render(tmp_path / "repo", volume_repo(annotation, with_claim), {"api": "api:2"}, config=config)
    [problem] = [p for p in refused.value.problems if said in p.message]
    assert problem.code == code and hint in problem.hint and problem.where.file == "app.yaml"


@pytest.mark.parametrize(("annotation", "volume"), [
    ("emptyDir", {"name": "data", "emptyDir": {}}),
    ("shared", {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}),
    ("copy", {"name": "data", "persistentVolumeClaim": {"claimName": "data-pr-1"}}),
    ("other=emptyDir", {"name": "data", "persistentVolumeClaim": {"claimName": "data-pr-1"}}),
    ("other=shared,data=emptyDir", {"name": "data", "emptyDir": {}}),
    (" data = shared ", {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}),
])  # fmt: skip
def test_each_volume_mode_and_its_claim_form(tmp_path, annotation, volume):
    got = objects(render(tmp_path / "repo", volume_repo(annotation), {"api": "api:2"}))
    assert got["Deployment", "api-pr-1"]["spec"]["template"]["spec"]["volumes"] == [volume]
    claims = [o for (kind, _), o in got.items() if kind == "PersistentVolumeClaim"]
    if volume.get("persistentVolumeClaim", {}).get("claimName") == "data-pr-1":
        [claim] = claims
        assert "annotations" not in claim["metadata"]  # none left once the binding ones are dropped
    else:
        assert claims == []


# ---------------------------------------------------------------------------------------------------------------
# A Secret is never copied; a claim template an init container mounts is kept

def test_a_secret_holding_a_dev_services_address_is_not_copied_and_is_named(tmp_path):
    text = yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api-env"},
         "stringData": {"ORDERS_URL": "http://orders:80", "OTHER": "x"}},
        workload("Deployment", "api") | {"metadata": {"name": "api"}},
        workload("Deployment", "orders") | {"metadata": {"name": "orders"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "orders"},
         "spec": {"selector": {"app": "orders"}, "ports": [{"name": "http", "port": 80}]}},
    ], sort_keys=False)
    text = text.replace("env:\n", "envFrom: [{secretRef: {name: api-env}}]\n        env:\n", 1)
    result = render(tmp_path / "repo", text, {"api": "api:2", "orders": "orders:2"})
    got = objects(result)
    assert not [k for k in got if k[0] in ("Secret", "ConfigMap")]
    pod = got["Deployment", "api-pr-1"]["spec"]["template"]["spec"]["containers"][0]
    assert pod["envFrom"] == [{"secretRef": {"name": "api-env"}}]
    [warning] = [w for w in result.warnings if w.code == "secret-reference"]
    assert warning.message.startswith("Secret api-env key ORDERS_URL holds the address of orders, which has a dev "
                                      "version; devlane never copies Secret values")
    assert "ExternalSecret" in warning.hint


def test_a_claim_template_an_init_container_still_mounts_is_kept(harness):
    harness.builtin("scratch", """
        def create_flow(service_specs, pod_specs, flow_uuid):
            for spec in pod_specs:
                spec["containers"][0]["volumeMounts"] = [{"name": "tmp", "mountPath": "/data"}]
                spec["volumes"] = [{"name": "tmp", "emptyDir": {}}]
            return {"pod_specs": pod_specs, "config_map": {}}
    """)
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}}
    db = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {
        "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "volumeClaimTemplates": [claim],
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
            "initContainers": [{"name": "init", "image": "busybox:1", "volumeMounts": [{"name": "data",
                                                                                       "mountPath": "/d"}]}],
            "containers": [{"name": "db", "image": "postgres:17", "volumeMounts": [{"name": "data",
                                                                                   "mountPath": "/d"}]}]}}}}
    plugin = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "scratch-defs", "annotations": {
        K + "plugin-definition": "[{name: scratch, type: stateful, servicename: scratch-defs}]"}},
        "spec": {"ports": [{"port": 1}]}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "annotations": {
        K + "plugins": "scratch-defs"}}, "spec": {"selector": {"app": "db"}, "ports": [{"name": "tcp", "port": 5432}]}}
    harness.write("db.yaml", yaml.safe_dump_all([db, service, plugin], sort_keys=False))
    (dev,) = [o for o in harness.render(FLOW, {"db": "postgres:18"}).main.objects if o["kind"] == "StatefulSet"]
    assert [t["metadata"]["name"] for t in dev["spec"]["volumeClaimTemplates"]] == ["data"]


def test_the_volume_mode_of_any_service_of_the_workload(tmp_path):
    """Two Services select the pods; the one that says the mode is not the first."""
    text = volume_repo("emptyDir").replace("apiVersion: v1\nkind: Service\n", (
        "apiVersion: v1\nkind: Service\nmetadata: {name: aaa-admin}\n"
        "spec: {selector: {app: api}, ports: [{name: http, port: 81}]}\n---\napiVersion: v1\nkind: Service\n"), 1)
    got = objects(render(tmp_path / "repo", text, {"api": "api:2"}))
    assert got["Deployment", "api-pr-1"]["spec"]["template"]["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]
