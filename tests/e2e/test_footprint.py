"""A lane's footprint, its budget, its sleep schedule and its quota (issue 34), checked from the rendered files with
this file's own arithmetic (its own quantity parser and the scheduler's rule for init containers and sidecars), never
from devlane's numbers: the footprint equals those sums; a budget one unit below a lane's footprint fails naming the
limit and the largest contributor, one at it passes; the PR comment holds the footprint table; the sleep schedule
and the quota validate strictly, pass the output policy's content rules and build with `kubectl kustomize`, and in
namespace isolation the lane's Namespace is one of the flow's objects (pruning the flow deletes it)."""

from __future__ import annotations

import json
import textwrap
from decimal import Decimal
from pathlib import Path

import pytest
from support import kubectl_kustomize, plugin_definition, validate_strict, yaml_doc, yamlc
from support.footprint import most_pods, pod_requests, q

from renderer.render.plugins.output_policy import content_findings, name_findings

FLOW = ["--flow", "pr-1", "--service", "web=web:2"]
QUEUE_PLUGIN = textwrap.dedent("""
    def create_flow(service_specs, pod_specs, flow_uuid):
        queue = {"apiVersion": "sqs.services.k8s.aws/v1alpha1", "kind": "Queue",
                 "metadata": {"name": "jobs-" + flow_uuid}, "spec": {"queueName": "jobs-" + flow_uuid}}
        return {"pod_specs": pod_specs, "config_map": {}, "resources": [queue]}

    def delete_flow(config_map, flow_uuid):
        return None
""")


def shop(harness, tmp_path: Path, config: dict | None = None) -> str:
    """web (2 replicas: an app container, a sidecar init container, a bigger plain init container, and a claim) and
    db (a StatefulSet with a claim template and a container without requests), both in the flow; a plugin adds an
    SQS Queue."""
    web = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}}, "spec": {
                "initContainers": [
                    {"name": "proxy", "image": "proxy:1", "restartPolicy": "Always",
                     "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}}},
                    {"name": "migrate", "image": "web:1",
                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                   "limits": {"cpu": "1", "memory": "1Gi"}}}],
                "containers": [{"name": "web", "image": "web:1", "resources": {
                    "requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}},
                    "env": [{"name": "DB", "value": "db:5432"}],
                    "volumeMounts": [{"name": "uploads", "mountPath": "/uploads"}]}],
                "volumes": [{"name": "uploads", "persistentVolumeClaim": {"claimName": "uploads"}}]}}}}
    db = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {
        "serviceName": "db", "replicas": 1, "selector": {"matchLabels": {"app": "db"}}, "template": {
            "metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
                {"name": "postgres", "image": "postgres:17", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}}]}}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "uploads"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}}

    def service(name: str, port: int, annotations: dict) -> dict:
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "annotations": annotations},
                "spec": {"selector": {"app": name}, "ports": [{"name": "tcp", "port": port}]}}

    harness.write("app.yaml", "".join(yaml_doc(o) for o in [
        web, service("web", 80, {"kardinal.dev.service/dependencies": "db:tcp",
                                 "kardinal.dev.service/plugins": "jobs"}),
        db, service("db", 5432, {"kardinal.dev.service/stateful": "true"}), claim]) + plugin_definition(
        [{"name": "./plugins/queue", "type": "external", "servicename": "jobs"}]))
    harness.plugin("plugins/queue", QUEUE_PLUGIN, {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin",
                                                   "metadata": {"name": "queue"},
                                                   "spec": {"emits": ["sqs.services.k8s.aws/Queue"]}})
    harness.config({"replicas": "keep", **(config or {})})
    return str(tmp_path / "out")


def rendered(out: str, flow: str = "pr-1") -> tuple[list[dict], dict]:
    d = Path(out) / "flows" / flow
    objects = [yamlc.safe_load(p.read_text()) for p in sorted(d.glob("*.yaml")) if p.name != "kustomization.yaml"]
    return objects, json.loads((d / "flow.metadata").read_text())


def test_the_footprint_equals_the_sums_of_the_rendered_objects(harness, tmp_path):
    out = shop(harness, tmp_path, {"footprint": {"prices": {"cpuHour": 0.04, "memoryGiBHour": 0.005,
                                                            "storageGiBMonth": 0.1, "currency": "EUR",
                                                            "resources": {"Queue": 0.02}}}})
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 0, done.stderr
    objects, meta = rendered(out)
    fp = meta["footprint"]
    workloads = [o for o in objects if o["kind"] in ("Deployment", "StatefulSet")]
    assert fp["devCopies"] == len(workloads) == 2

    def total(key: str, resource: str) -> Decimal:
        return sum((pod_requests(o["spec"]["template"]["spec"], key, resource) * o["spec"].get("replicas", 1)
                    for o in workloads), Decimal(0))

    assert fp["requests"] == {"cpuMillicores": int(total("requests", "cpu") * 1000),
                              "memoryBytes": int(total("requests", "memory"))}
    assert fp["requests"]["cpuMillicores"] == 2 * 1050  # the migrate init container and the sidecar beside it
    assert fp["limits"] == {"cpuMillicores": int(total("limits", "cpu") * 1000) or None,  # null: none set
                            "memoryBytes": int(total("limits", "memory")) or None}
    claims = [o for o in objects if o["kind"] == "PersistentVolumeClaim"]
    storage = sum(q(c["spec"]["resources"]["requests"]["storage"]) for c in claims) + sum(
        q(t["spec"]["resources"]["requests"]["storage"]) * o["spec"]["replicas"]
        for o in workloads for t in o["spec"].get("volumeClaimTemplates") or [])
    assert fp["storageBytes"] == storage == 7 * 2**30
    assert fp["cloudResources"] == {"sqs.services.k8s.aws/Queue": 1}
    assert fp["withoutRequests"] == ["StatefulSet/db-pr-1 container postgres: no cpu or memory request"]
    cost = (total("requests", "cpu") * 24 * Decimal("0.04") + total("requests", "memory") / 2**30 * 24
            * Decimal("0.005") + Decimal(storage) / 2**30 * Decimal("0.1") / 30 + Decimal("0.02"))
    assert fp["estimate"]["costPerDay"] == float(round(cost, 2)) and fp["estimate"]["currency"] == "EUR"
    readme = (Path(out) / "flows" / "pr-1" / "README.md").read_text()
    assert "## Footprint" in readme and "| CPU requests / limits | 2100m / 2 |" in readme
    assert "| Cloud resources | 1 Queue |" in readme and "EUR per day (an estimate" in readme


@pytest.mark.parametrize(("limit", "value", "contributor"), [
    ("cpu", "2100m", "Deployment/web-pr-1 2100m (2 replicas)"),
    ("memory", "2176Mi", "Deployment/web-pr-1 2176Mi (2 replicas)"),
    ("storage", "7Gi", "StatefulSet/db-pr-1 claim data (1 replicas) 5Gi"),
    ("devCopies", 2, "Deployment/web-pr-1"),
])  # fmt: skip
def test_a_budget_just_below_the_footprint_fails_naming_the_limit_and_one_at_it_passes(harness, tmp_path, limit,
                                                                                      value, contributor):
    below = int(value) - 1 if isinstance(value, int) else f"{q(value) * (1000 if limit == 'cpu' else 1) - 1}" + (
        "m" if limit == "cpu" else "")
    out = shop(harness, tmp_path, {"policy": {"budget": {limit: below}}})
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 1
    assert f"flow pr-1 is over policy.budget.{limit}" in done.stderr and contributor in done.stderr
    assert "Traceback" not in done.stderr and not (Path(out) / "flows" / "pr-1").exists()
    harness.config({"replicas": "keep", "policy": {"budget": {limit: value}}})
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 0, done.stderr


def test_a_pull_request_cannot_raise_the_trusted_budget(harness, tmp_path):
    out = shop(harness, tmp_path, {"policy": {"budget": {"cpu": 100}}})  # the head asks for 100 cores
    policy = tmp_path / "policy.yaml"
    policy.write_text("policy:\n  budget: {cpu: '2'}\n")  # the operator allows 2
    done = harness.cli("render", *FLOW, "--out", out, "--policy", policy)
    assert done.returncode == 1 and "over policy.budget.cpu: its pods request 2100m CPU, the budget is 2" in done.stderr


def test_the_lanes_budget_counts_the_output_directorys_flows(harness, tmp_path):
    out = shop(harness, tmp_path, {"policy": {"budget": {"lanes": 1}}})
    assert harness.cli("render", *FLOW, "--out", out).returncode == 0
    assert harness.cli("render", *FLOW, "--out", out).returncode == 0  # the same lane again
    done = harness.cli("render", "--flow", "pr-2", "--service", "web=web:2", "--out", out)
    assert done.returncode == 1 and "flow pr-2 would be lane 2 of the output directory" in done.stderr
    assert "devlane gc" in done.stderr


def test_the_sleep_schedule_scales_only_the_lanes_workloads_and_passes_the_policy(harness, tmp_path):
    out = shop(harness, tmp_path, {"lifecycle": {"sleep": {"down": "0 20 * * 1-5", "up": "0 7 * * 1-5",
                                                           "timeZone": "Europe/Berlin"}}})
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 0, done.stderr
    assert "lifecycle.sleep runs registry.k8s.io/kubectl:v1.34.1, which is not pinned by digest" in done.stderr
    assert "Deployment/web-pr-1 keeps replicas: 2, which Argo CD self-heal or a Flux reconcile" in done.stderr
    objects, meta = rendered(out)
    assert meta["footprint"]["devCopies"] == 2  # the schedule's CronJobs are devlane's, not the lane's
    workloads = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] in ("Deployment", "StatefulSet")}
    assert "replicas" not in workloads["db-pr-1"] and workloads["web-pr-1"]["replicas"] == 2  # 1 is left unset
    mine = [o for o in objects if "sleep" in o["metadata"]["name"] or "wake" in o["metadata"]["name"]]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in mine) == [
        ("CronJob", "sleep-pr-1"), ("CronJob", "wake-pr-1"), ("Role", "devlane-sleep-pr-1"),
        ("RoleBinding", "devlane-sleep-pr-1"), ("ServiceAccount", "devlane-sleep-pr-1")]
    for obj in mine:
        validate_strict(obj)
        assert content_findings(obj, "pr-1") == [] and name_findings(obj["metadata"]["name"], "pr-1") == []
    role = next(o for o in mine if o["kind"] == "Role")
    assert {n for r in role["rules"] for n in r["resourceNames"]} == {"web-pr-1", "db-pr-1"}  # never the baseline's
    jobs = {o["metadata"]["name"]: o["spec"] for o in mine if o["kind"] == "CronJob"}
    assert jobs["sleep-pr-1"]["schedule"] == "0 20 * * 1-5" and jobs["sleep-pr-1"]["timeZone"] == "Europe/Berlin"
    args = {c["name"]: c["args"] for spec in jobs.values()
            for c in spec["jobTemplate"]["spec"]["template"]["spec"]["containers"]}
    assert args == {"scale-to-0": ["scale", "--replicas=0", "deployment/web-pr-1", "statefulset/db-pr-1"],
                    "scale-to-1": ["scale", "--replicas=1", "statefulset/db-pr-1"],
                    "scale-to-2": ["scale", "--replicas=2", "deployment/web-pr-1"]}
    kubectl_kustomize(Path(out) / "flows" / "pr-1")
    strict = harness.cli("render", *FLOW, "--out", out, "--strict")
    assert strict.returncode == 1 and "set lifecycle.sleep.image to the image pinned by digest" in strict.stderr


def test_a_sleep_schedule_or_zone_the_api_server_would_refuse_fails_the_render_naming_each_key(harness, tmp_path):
    """Minute 61, hour 25 and a time zone outside the IANA database once rendered CronJobs the cluster refused
    (issue 44); the verdicts are the API server's: tests/cluster/test_schedules.py."""
    out = shop(harness, tmp_path, {"lifecycle": {"sleep": {"down": "61 20 * * 1-5", "up": "0 25 * * 1-5",
                                                           "timeZone": "Mars/Olympus"}}})
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 1, done.stderr
    for said in ("lifecycle.sleep.down: '61 20 * * 1-5' has '61' in its minute field: 61 is above 59",
                 "lifecycle.sleep.up: '0 25 * * 1-5' has '25' in its hour field: 25 is above 23",
                 "lifecycle.sleep.timeZone: 'Mars/Olympus' is not a time zone of the IANA database"):
        assert ".devlane.yaml" in done.stderr and said in done.stderr, done.stderr
    assert not Path(out, "flows").exists()


def test_a_quota_in_the_lanes_namespace_and_the_namespace_is_part_of_the_flow(harness, tmp_path):
    out = shop(harness, tmp_path, {"isolation": "namespace", "namespace": "shop",
                                   "policy": {"budget": {"cpu": "4", "memory": "8Gi", "storage": "20Gi"}},
                                   "lifecycle": {"quota": {"defaultRequest": {"cpu": "50m", "memory": "64Mi"}}}})
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 0, done.stderr
    built = kubectl_kustomize(Path(out) / "flows" / "pr-1")
    [namespace] = [o["metadata"]["name"] for o in built if o["kind"] == "Namespace"]  # pruned with the flow
    quota = next(o for o in built if o["kind"] == "ResourceQuota")
    limits = next(o for o in built if o["kind"] == "LimitRange")
    assert quota["metadata"]["namespace"] == limits["metadata"]["namespace"] == namespace != "shop"
    assert quota["spec"]["hard"] == {"requests.cpu": "4", "requests.memory": "8Gi", "requests.storage": "20Gi"}
    assert limits["spec"]["limits"] == [{"type": "Container", "defaultRequest": {"cpu": "50m", "memory": "64Mi"}}]
    for obj in (quota, limits):
        validate_strict(obj)
    # as admitted there: db's container, which sets no requests, requests the LimitRange's defaults
    footprint = rendered(out)[1]["footprint"]
    assert footprint["requests"] == {"cpuMillicores": 2100 + 50, "memoryBytes": (2176 + 64) * 2**20}


def test_the_pr_comment_shows_the_footprint_table(harness, tmp_path):
    shop(harness, tmp_path)
    harness.commit("base")
    harness.write("app.yaml", (harness.root / "app.yaml").read_text().replace("image: web:1", "image: web:3"))
    harness.commit("head")
    done = harness.cli("diff", "--base", "HEAD~1", "--head", "HEAD", *FLOW, "-o", "markdown")
    assert done.returncode == 0, done.stderr
    assert "| Footprint | |" in done.stdout and "| CPU requests / limits | 2100m / 2 |" in done.stdout
    assert "| Storage | 7Gi in 2 volumes |" in done.stdout


def test_budgets_on_cloud_resources_and_cost(harness, tmp_path):
    prices = {"cpuHour": 0.04, "memoryGiBHour": 0.005, "resources": {"Queue": 0.5}}
    out = shop(harness, tmp_path, {"footprint": {"prices": prices},
                                   "policy": {"budget": {"resources": {"sqs.services.k8s.aws/Queue": 0}}}})
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 1
    assert "over policy.budget.resources.sqs.services.k8s.aws/Queue: 1 sqs.services.k8s.aws/Queue, the budget " \
           "is 0; most: Queue/jobs-jobs-pr-1" in done.stderr
    harness.config({"replicas": "keep", "footprint": {"prices": prices}, "policy": {"budget": {"costPerDay": 1}}})
    done = harness.cli("render", *FLOW, "--out", out)
    # 2.1 cores x 24 x 0.04 + 2176Mi x 24 x 0.005 + one Queue at 0.5 a day
    assert done.returncode == 1 and "over policy.budget.costPerDay: an estimated 2.77 USD per day" in done.stderr
    assert "most: CPU 2.02, sqs.services.k8s.aws/Queue 0.50, memory 0.26" in done.stderr
    harness.config({"replicas": "keep", "policy": {"budget": {"costPerDay": 1}}})  # no prices: said, not guessed
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 1 and "policy.budget.costPerDay needs footprint.prices" in done.stderr


def test_plan_and_preview_show_the_footprint(harness, tmp_path):
    shop(harness, tmp_path)
    planned = harness.cli("plan", *FLOW, "-o", "json")
    assert planned.returncode == 0, planned.stderr
    before = json.loads(planned.stdout)["footprint"]  # the dev copies before plugins: no Queue yet
    assert before["devCopies"] == 2 and before["requests"]["cpuMillicores"] == 2100 and before["cloudResources"] == {}
    text = harness.cli("plan", *FLOW).stderr + harness.cli("plan", *FLOW).stdout
    assert "footprint of the dev copies (before plugins" in text and "CPU requests / limits: 2100m / 2" in text
    page = tmp_path / "preview.html"
    shown = harness.cli("preview", *FLOW, "--html", page)
    assert shown.returncode == 0, shown.stderr
    html = page.read_text()
    assert "<h2>Footprint</h2>" in html and "<th>Cloud resources</th><td>1 Queue</td>" in html


def test_the_trusted_sources_price_the_budget_and_bound_the_ttl(harness, tmp_path):
    out = shop(harness, tmp_path, {"footprint": {"prices": {"cpuHour": 0}},  # the head prices CPU at nothing
                                   "lifecycle": {"ttl": "30d"}})
    policy = tmp_path / "policy.yaml"
    policy.write_text("policy:\n  budget: {costPerDay: 1}\nfootprint:\n  prices: {cpuHour: 0.04}\n"
                      "lifecycle:\n  ttl: 7d\n")
    done = harness.cli("render", *FLOW, "--out", out, "--policy", policy, "--created", "2030-01-01T00:00:00Z")
    assert done.returncode == 1 and "over policy.budget.costPerDay: an estimated 2.02 USD per day" in done.stderr
    policy.write_text("lifecycle:\n  ttl: 7d\n")
    done = harness.cli("render", *FLOW, "--out", out, "--policy", policy, "--created", "2030-01-01T00:00:00Z")
    assert done.returncode == 0, done.stderr
    assert rendered(out)[1]["lifecycle"] == {"created": "2030-01-01T00:00:00Z", "ttl": "7d",
                                             "expires": "2030-01-08T00:00:00Z"}  # the shorter, trusted one


@pytest.mark.parametrize("app_id", ["bank-of-anthos", "eks-workshop-retail-store"])
def test_the_footprint_of_a_real_app_equals_the_sums_of_its_rendered_objects(tmp_path, app_id):
    """Real manifests (../shared/realworld: requests and limits as upstream set them, Postgres StatefulSets with
    claim templates), rendered as a new user would, held against this suite's own sums."""
    from support.realworld_apps import APPS, render

    app = next(a for a in APPS if a.id == app_id)
    done = render(app, tmp_path)
    assert done.returncode == 0, done.stderr
    fp = json.loads((done.flow_dir / "flow.metadata").read_text())["footprint"]
    workloads = [o for o in done.objects if o["kind"] in ("Deployment", "StatefulSet", "Job", "CronJob", "Pod")]
    assert fp["devCopies"] == len(workloads) > 0

    def total(key: str, resource: str) -> Decimal:
        return sum((pod_requests(o["spec"]["template"]["spec"], key, resource) * o["spec"].get("replicas", 1)
                    for o in workloads), Decimal(0))

    assert fp["requests"] == {"cpuMillicores": int(total("requests", "cpu") * 1000),
                              "memoryBytes": int(total("requests", "memory"))}
    assert fp["limits"] == {"cpuMillicores": int(total("limits", "cpu") * 1000) or None,  # null: none set
                            "memoryBytes": int(total("limits", "memory")) or None}
    assert fp["requests"]["cpuMillicores"] > 0
    storage = sum(q(o["spec"]["resources"]["requests"]["storage"]) for o in done.objects
                  if o["kind"] == "PersistentVolumeClaim") + sum(
        q(t["spec"]["resources"]["requests"]["storage"]) * o["spec"].get("replicas", 1)
        for o in workloads for t in o["spec"].get("volumeClaimTemplates") or [])
    assert fp["storageBytes"] == storage


# the queue plugin, adding the lane's autoscalers: an HPA on web (maxReplicas 40), a KEDA ScaledObject on db (no
# maxReplicaCount: KEDA's 100), a VPA on web (no replicas), and a KEDA ScaledJob (5 jobs of 2 pods at most)
SCALING_PLUGIN = textwrap.dedent("""
    def create_flow(service_specs, pod_specs, flow_uuid):
        flow = flow_uuid[len("jobs-"):]
        web = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web-" + flow}
        hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "web-" + flow_uuid},
               "spec": {"scaleTargetRef": web, "minReplicas": 2, "maxReplicas": 40, "metrics": [{
                   "type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                              "averageUtilization": 70}}}]}}
        keda = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "db-" + flow_uuid},
                "spec": {"scaleTargetRef": {"kind": "StatefulSet", "name": "db-" + flow}, "triggers": [
                    {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "60"}}]}}
        vpa = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
               "metadata": {"name": "web-vpa-" + flow_uuid},
               "spec": {"targetRef": web, "updatePolicy": {"updateMode": "Auto"}}}
        sweep = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "metadata": {"name": "sweep-" + flow_uuid},
                 "spec": {"maxReplicaCount": 5, "jobTargetRef": {"parallelism": 2, "template": {"spec": {
                     "restartPolicy": "Never", "containers": [{"name": "sweep", "image": "sweep:1", "resources": {
                         "requests": {"cpu": "100m", "memory": "32Mi"}}}]}}},
                          "triggers": [{"type": "cron", "metadata": {"timezone": "UTC", "start": "0 * * * *",
                                                                     "end": "5 * * * *", "desiredReplicas": "5"}}]}}
        return {"pod_specs": pod_specs, "config_map": {}, "resources": [hpa, keda, vpa, sweep]}
""")
SCALING_MANIFEST = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "queue"},
                    "spec": {"emits": ["autoscaling/HorizontalPodAutoscaler", "keda.sh/ScaledObject",
                                       "keda.sh/ScaledJob", "autoscaling.k8s.io/VerticalPodAutoscaler"]}}


def scaling_shop(harness, tmp_path: Path, config: dict | None = None) -> str:
    out = shop(harness, tmp_path, config)
    harness.plugin("plugins/queue", SCALING_PLUGIN, SCALING_MANIFEST)
    return out


def test_autoscalers_count_their_target_at_its_maximum(harness, tmp_path):
    """An HPA's maxReplicas, a ScaledObject's default 100 and a ScaledJob's jobs times parallelism are what the lane
    may reserve; the VPA adds no replicas. The footprint equals this suite's own sums at those counts (storage too:
    each StatefulSet replica claims its own volume)."""
    out = scaling_shop(harness, tmp_path)
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 0, done.stderr
    objects, meta = rendered(out)
    fp = meta["footprint"]
    workloads = [o for o in objects if o["kind"] in ("Deployment", "StatefulSet", "ScaledJob")]
    assert fp["devCopies"] == len(workloads) == 3
    pods = {o["metadata"]["name"]: most_pods(o, objects) for o in workloads}
    assert pods == {"web-pr-1": (40, "HorizontalPodAutoscaler/web-jobs-pr-1"),
                    "db-pr-1": (100, "ScaledObject/db-jobs-pr-1"), "sweep-jobs-pr-1": (10, None)}

    def spec(o: dict) -> dict:
        return (o["spec"]["jobTargetRef"] if o["kind"] == "ScaledJob" else o["spec"])["template"]["spec"]

    def total(key: str, resource: str) -> Decimal:
        return sum((pod_requests(spec(o), key, resource) * pods[o["metadata"]["name"]][0] for o in workloads),
                   Decimal(0))

    assert fp["requests"] == {"cpuMillicores": int(total("requests", "cpu") * 1000),
                              "memoryBytes": int(total("requests", "memory"))}
    assert fp["requests"]["cpuMillicores"] == 40 * 1050 + 10 * 100  # db's container requests nothing
    assert fp["limits"] == {"cpuMillicores": int(total("limits", "cpu") * 1000) or None,  # null: none set
                            "memoryBytes": int(total("limits", "memory")) or None}
    storage = sum(q(c["spec"]["resources"]["requests"]["storage"]) for c in objects
                  if c["kind"] == "PersistentVolumeClaim") + sum(
        q(t["spec"]["resources"]["requests"]["storage"]) * pods[o["metadata"]["name"]][0]
        for o in workloads for t in o["spec"].get("volumeClaimTemplates") or [])
    assert fp["storageBytes"] == storage == (2 + 100 * 5) * 2**30
    assert {w["object"]: (w["replicas"], w.get("scaledBy")) for w in fp["workloads"]} == {
        f"{o['kind']}/{o['metadata']['name']}": pods[o["metadata"]["name"]] for o in workloads}
    assert fp["cloudResources"] == {}  # KEDA's objects scale the lane; they are no cloud resource
    readme = (Path(out) / "flows" / "pr-1" / "README.md").read_text()
    assert "| Autoscaled | Deployment/web-pr-1 up to 40 pods (HorizontalPodAutoscaler/web-jobs-pr-1); " \
           "StatefulSet/db-pr-1 up to 100 pods (ScaledObject/db-jobs-pr-1) |" in readme, readme


def test_an_hpas_maximum_counts_against_the_budget_naming_the_hpa(harness, tmp_path):
    """The lane starts at 2100m CPU, within a 10-core budget; its HPA may scale web to 40 pods of 1050m: refused,
    naming the HPA, nothing written. Without the autoscalers the same budget passes."""
    out = scaling_shop(harness, tmp_path, {"policy": {"budget": {"cpu": "10"}}})
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 1, done.stderr
    assert "flow pr-1 is over policy.budget.cpu: its pods request 43 CPU, the budget is 10; most: " \
           "Deployment/web-pr-1 42 (40 replicas, the most HorizontalPodAutoscaler/web-jobs-pr-1 may scale it to)" \
           in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (Path(out) / "flows" / "pr-1").exists()
    harness.plugin("plugins/queue", QUEUE_PLUGIN, {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin",
                                                   "metadata": {"name": "queue"},
                                                   "spec": {"emits": ["sqs.services.k8s.aws/Queue"]}})
    done = harness.cli("render", *FLOW, "--out", out)
    assert done.returncode == 0, done.stderr
