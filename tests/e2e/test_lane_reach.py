"""The lane's reach on real apps nobody here annotated (../shared/realworld, copied to a temporary directory and
used as upstream wrote them): every baseline store, registry and outside store a dev pod can use is named, with
no false alarm on the fully annotated examples and Kardinal's demos. The truth each test holds devlane's report
against is computed here, from the rendered objects and the app's documented stores (its ORIGIN.md), not from
what devlane says it did."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from support import ROOT, yamlc
from support.demos import DEMOS, demo_options
from support.isolation import Objects, dev_pods, referenced_services
from support.realworld import REALWORLD, chart_input, helm_bin
from support.realworld_apps import APPS as REALWORLD_APPS
from support.realworld_apps import STATEFUL, BuiltRepo, Repo

from renderer import api
from renderer.errors import DevlaneError
from renderer.render.plan.flow_spec import FlowRequest, build_flow, resolve
from renderer.views.preview import build_view, console, print_terminal, render_html

FLOW = "pr-1"


def needs(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


def ftgo(tmp_path: Path) -> Path:
    """FTGO's service and stateful-service manifests in one directory; its `extensions/v1beta1` and
    `apps/v1beta1` workloads moved to `apps/v1` (the one edit: Kubernetes serves no other)."""
    repo = tmp_path / "ftgo"
    repo.mkdir()
    for f in sorted(needs(REALWORLD / "ftgo").rglob("*.yml")):
        if "/kubernetes/" in f.as_posix() and "prometheus" not in f.as_posix() and "NodePort" not in f.name:
            text = f.read_text().replace("extensions/v1beta1", "apps/v1").replace("apps/v1beta1", "apps/v1")
            (repo / f.name).write_text(text)
    return repo


def jhipster(tmp_path: Path) -> Path:
    """The JHipster gateway and microservices as upstream deploys them (a kustomize directory: needs kubectl or
    kustomize)."""
    if shutil.which("kubectl") is None and shutil.which("kustomize") is None:
        pytest.skip("kustomize not installed")
    return Path(shutil.copytree(needs(REALWORLD / "jhipster-eureka" / "kubernetes"), tmp_path / "jhipster"))


def eshop_catalog(tmp_path: Path) -> Path:
    """eShop's catalog-api chart with the shared values every release takes (a Helm input: needs helm). Its SQL
    Server and RabbitMQ come from other charts: outside this repository."""
    helm_bin()
    return chart_input(needs(REALWORLD / "eshoponcontainers/deploy/k8s/helm/catalog-api"), tmp_path)[0]


def only(tmp_path: Path, name: str, *files: str) -> Path:
    repo = tmp_path / name
    repo.mkdir()
    for f in files:
        shutil.copy(needs(REALWORLD / f), repo / Path(f).name)
    return repo


def dev_strings(result: api.RenderResult) -> list[str]:
    """Every env value, command and args element of the rendered dev workloads (the flow's objects), and every
    entry of the ConfigMaps they read (the flow's copy, else the repository's)."""
    rendered = [o for o in yamlc.safe_load_all(result.stream()) if o]
    config = {o["metadata"]["name"]: o for o in [*(d.obj for d in result.loaded.documents), *rendered]
              if o.get("kind") == "ConfigMap"}
    out = []
    for obj in rendered:
        spec = (obj.get("spec") or {}).get("template", {}).get("spec") or {}
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            out += [e["value"] for e in c.get("env") or [] if isinstance(e.get("value"), str)]
            out += [a for f in ("command", "args") for a in c.get(f) or [] if isinstance(a, str)]
            names = [(e.get("configMapRef") or {}).get("name") for e in c.get("envFrom") or []]
            names += [((e.get("valueFrom") or {}).get("configMapKeyRef") or {}).get("name") for e in c.get("env") or []]
            out += [v for n in names if n in config for v in (config[n].get("data") or {}).values()]
    return out


def named(strings: list[str], host: str) -> bool:
    """`host` used as a host name in one of the strings (not as part of a longer name, e.g. a dev copy's)."""
    return any(re.search(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", s) for s in strings)


def reach_warnings(result: api.RenderResult) -> dict[str, str]:
    """target -> class, as the render's warnings name them."""
    out = {}
    for p in result.warnings:
        if p.code.startswith("reach-"):
            m = re.search(r"the lane reaches the (?:baseline store|registry|store outside the repository) (\S+)",
                          p.message)
            assert m, p.message
            out[m.group(1)] = p.code.removeprefix("reach-")
    return out


# app -> (repository maker, the flow's target, {store or registry as devlane names it: class}) -- the stores are
# those the app's ORIGIN.md documents for that service; each must also be named in the rendered dev pods
APPS = {
    "ftgo": (ftgo, "ftgo-order-service",
             {"ftgo-mysql": "baseline-store", "ftgo-kafka": "baseline-store", "ftgo-zookeeper": "registry"}),
    "jhipster-eureka": (jhipster, "jhipster/store",
                        {"jhipster/store-postgresql": "baseline-store", "jhipster/jhipster-registry": "registry"}),
    "eshop-catalog-api": (eshop_catalog, "catalog-api", {"rabbitmq": "outside-store", "sql-data": "outside-store"}),
    "booksapp-mysql-app": (lambda t: only(t, "books", "booksapp/k8s/mysql-app.yml"), "books",
                           {"mysql:3306": "outside-store"}),
    "wordpress-cloudsql": (lambda t: only(t, "wp", *(
        f"gke-wordpress-cloudsql/cost-optimization/gke-shift-left-cost/samples/k8s-cost-estimator-github/wordpress/{n}"
        for n in ("wordpress_deployment.yaml", "wordpress_service.yaml", "mysql-statefulset.yaml",
                  "wordpress_volumeclaim.yaml"))), "wordpress", {"127.0.0.1:3306": "outside-store"}),
}


@pytest.mark.parametrize("app", sorted(APPS))
def test_every_store_a_dev_pod_names_is_reported(app, tmp_path):
    make, service, stores = APPS[app]
    repo = make(tmp_path)
    result = api.render(api.Options(repo=repo), build_flow(FLOW, {service: "ghcr.io/example/dev:pr-1"}, []))
    strings = dev_strings(result)
    for target in stores:  # the truth, from the rendered objects: each documented store is still named there
        assert named(strings, target.split("/")[-1].split(":")[0]), (target, strings)
    assert reach_warnings(result) == stores
    shown = " ".join(p.message for p in result.warnings)
    assert not re.search(r"(?i)password=(?!\*\*\*)|//[^/@:]+:(?!\*\*\*)[^/@]+@", shown), shown  # masked
    with pytest.raises(DevlaneError) as refused:  # --strict: the same reach is an error
        api.render(api.Options(repo=repo, strict=True), build_flow(FLOW, {service: "ghcr.io/example/dev:pr-1"}, []))
    assert {p.code for p in refused.value.problems} >= {f"reach-{c}" for c in stores.values()}


def test_a_store_annotated_and_copied_is_no_longer_reached(tmp_path):
    """The fix the warning gives, applied: ftgo-mysql stateful and a dependency of the order service -> the lane
    has its own MySQL, the dev pod names the copy, and only Kafka and ZooKeeper are still reached."""
    repo = ftgo(tmp_path)
    mysql = repo / "ftgo-mysql-deployment.yml"
    mysql.write_text(mysql.read_text().replace("name: ftgo-mysql\n", "name: ftgo-mysql\n  annotations:\n"
                                               "    kardinal.dev.service/stateful: \"true\"\n", 1))
    order = repo / "ftgo-order-service.yml"
    order.write_text(order.read_text().replace("name: ftgo-order-service\n", "name: ftgo-order-service\n"
                                               "  annotations:\n    kardinal.dev.service/dependencies: "
                                               "\"ftgo-mysql:3306\"\n", 1))
    result = api.render(api.Options(repo=repo), build_flow(FLOW, {"ftgo-order-service": "x/dev:1"}, []))
    assert "ftgo-mysql" in result.plan.dev_services()
    strings = dev_strings(result)
    assert named(strings, "ftgo-mysql-pr-1") and not named(strings, "ftgo-mysql")
    assert reach_warnings(result) == {"ftgo-kafka": "baseline-store", "ftgo-zookeeper": "registry"}


def test_the_reach_is_in_the_result_with_masked_evidence(tmp_path):
    result = api.render(api.Options(repo=APPS["booksapp-mysql-app"][0](tmp_path)),
                        build_flow(FLOW, {"books": "x/dev:1"}, []))
    [reached] = result.reach
    assert reached.as_dict()["evidence"] == [{"object": "Deployment/books-pr-1", "container": "service",
                                              "field": "env DATABASE_URL",
                                              "value": "mysql2://booksapp:***@mysql:3306/booksapp_production"}]
    assert "booksapp@" not in str(result.warnings)  # the password never shows


@pytest.mark.parametrize("example,flow_file", [("bookshop", "flows/pr-7.yaml"), ("cloudshop", "flows/pr-12.yaml")])
@pytest.mark.parametrize("isolation", ["suffix", "namespace"])
def test_no_false_alarm_on_the_annotated_examples(example, flow_file, isolation):
    repo = ROOT / "examples" / example
    result = api.render(api.Options(repo=repo, isolation=isolation), resolve(FlowRequest(flow_file=repo / flow_file)))
    assert result.reach == [] and reach_warnings(result) == {}


@pytest.mark.parametrize("demo", sorted(DEMOS))
def test_no_false_alarm_on_kardinals_demos(demo, demo_repo):
    """But one true alarm: the neon demo's cartservice keeps `DB_HOST: postgres` beside the POSTGRES URL its plugin
    sets. The app prefers POSTGRES, which devlane cannot see; each address is judged on its own (issue 44), so the
    fallback is named (a Service `postgres` beside the lane, of another app, would be reached)."""
    file, images = DEMOS[demo]
    result = api.render(demo_options(demo_repo(file)), build_flow("dev-1", images, []))
    expected = [("outside-store", "postgres", "database", "env DB_HOST")] if demo == "neon" else []
    assert [(r.cls, r.target, r.kind, r.evidence[0].field) for r in result.reach] == expected
    assert len(reach_warnings(result)) == len(expected)


def test_a_store_marked_shared_is_listed_not_warned(tmp_path):
    """`shared` on a repository Service (here through .devlane.yaml services:) and `sharedStores` for a host
    outside the repository: accepted silently, listed as shared, and --strict renders."""
    repo = ftgo(tmp_path)
    (repo / ".devlane.yaml").write_text("services:\n  ftgo-kafka: {shared: true}\n  ftgo-zookeeper: {shared: true}\n"
                                        "  ftgo-mysql: {shared: true}\n")
    flow = build_flow(FLOW, {"ftgo-order-service": "x/dev:1"}, [])
    result = api.render(api.Options(repo=repo, strict=True), flow)
    assert reach_warnings(result) == {}
    assert {(r.cls, r.target) for r in result.reach} == {("shared", "ftgo-kafka"), ("shared", "ftgo-mysql"),
                                                         ("shared", "ftgo-zookeeper")}
    books = only(tmp_path, "books", "booksapp/k8s/mysql-app.yml")
    (books / ".devlane.yaml").write_text("sharedStores: [mysql]\n")
    result = api.render(api.Options(repo=books, strict=True), build_flow(FLOW, {"books": "x/dev:1"}, []))
    assert [(r.cls, r.target) for r in result.reach] == [("shared", "mysql:3306")]


def test_the_reach_is_in_plan_flow_metadata_and_the_readme(tmp_path):
    repo = ftgo(tmp_path)
    flow = build_flow(FLOW, {"ftgo-order-service": "x/dev:1"}, [])
    planned = api.plan(api.Options(repo=repo), flow).as_dict()["reach"]
    assert [(r["class"], r["target"]) for r in planned] == [
        ("baseline-store", "ftgo-kafka"), ("baseline-store", "ftgo-mysql"), ("registry", "ftgo-zookeeper")]
    assert planned[1]["evidence"] == [{"object": "Deployment/ftgo-order-service-pr-1",
                                       "container": "ftgo-order-service", "field": "env SPRING_DATASOURCE_URL",
                                       "value": "jdbc:mysql://ftgo-mysql/eventuate"}]
    rendered = api.render(api.Options(repo=repo), flow).main
    assert rendered.metadata["reach"] == planned  # the plan says before any plugin runs what the render finds
    assert "## Reach beyond the lane" in rendered.readme
    assert ("- registry ftgo-zookeeper (zookeeper: image confluentinc/cp-zookeeper:5.2.4): Deployment/"
            "ftgo-order-service-pr-1 container ftgo-order-service env EVENTUATELOCAL_ZOOKEEPER_CONNECTION_STRING = "
            "ftgo-zookeeper:2181") in rendered.readme


def test_the_pr_comment_and_preview_name_each_store(harness, tmp_path):
    """The PR comment's Isolation block (diff at two commits) and preview (terminal tree and HTML page)."""
    harness.copy(ftgo(tmp_path))
    harness.commit("base")
    order = harness.root / "ftgo-order-service.yml"
    order.write_text(order.read_text().replace("image: msapatterns/ftgo-order-service", "image: example/order", 1))
    harness.commit("head")
    out = harness.cli("diff", "--base", "HEAD~1", "--head", "HEAD", "--flow", FLOW, "--service",
                      "ftgo-order-service=x/dev:1", "-o", "markdown")
    assert out.returncode == 0, out.stderr
    block = out.stdout.split("**Isolation: the lane reaches state outside it**", 1)[1].split("\n\n", 2)[1]
    assert [line.split(" (", 1)[0] for line in block.splitlines()] == [
        "- baseline store ftgo-kafka", "- baseline store ftgo-mysql", "- registry ftgo-zookeeper"]
    assert "Fix: add ftgo-mysql (already stateful) to the kardinal.dev.service/dependencies of ftgo-order-service" \
        in block  # never an annotation that is already there

    view = build_view(api.render(api.Options(repo=harness.root), build_flow(FLOW, {"ftgo-order-service": "x"}, [])))
    page = render_html(view)
    assert page.count('<li data-class="baseline-store">') == 2 and page.count('<li data-class="registry">') == 1
    text = io.StringIO()
    print_terminal(view, console(text))
    assert "reach beyond the lane" in text.getvalue() and "registry ftgo-zookeeper" in text.getvalue()


def test_lint_names_each_undeclared_store_per_service(tmp_path, harness):
    """`lint` renders no flow: it names, per service, the stores and registries its pods read that its
    annotations do not declare; a declared stateful dependency is not named."""
    repo = ftgo(tmp_path)
    problems = api.lint(api.Options(repo=repo))
    named = {(p.message.split(" reads the ", 1)[0], p.code) for p in problems if p.code.startswith("undeclared-")}
    assert ("ftgo-order-service", "undeclared-baseline-store") in named
    assert ("ftgo-order-service", "undeclared-registry") in named
    order = [p.message for p in problems if p.message.startswith("ftgo-order-service reads the ")]
    assert sorted(m.split(" reads the ", 1)[1].split(" (", 1)[0] for m in order) == [
        "baseline store ftgo-kafka", "baseline store ftgo-mysql", "registry ftgo-zookeeper"]
    mysql = repo / "ftgo-mysql-deployment.yml"
    mysql.write_text(mysql.read_text().replace("name: ftgo-mysql\n", "name: ftgo-mysql\n  annotations:\n"
                                               "    kardinal.dev.service/stateful: \"true\"\n", 1))
    svc = repo / "ftgo-order-service.yml"
    svc.write_text(svc.read_text().replace("name: ftgo-order-service\n", "name: ftgo-order-service\n  annotations:\n"
                                           "    kardinal.dev.service/dependencies: \"ftgo-mysql:3306\"\n", 1))
    order = [p.message for p in api.lint(api.Options(repo=repo)) if p.message.startswith("ftgo-order-service reads")]
    assert not any("ftgo-mysql" in m for m in order) and len(order) == 2


@pytest.mark.parametrize("example", ["bookshop", "cloudshop"])
def test_lint_names_no_store_of_the_annotated_examples(example):
    assert [p for p in api.lint(api.Options(repo=ROOT / "examples" / example)) if p.code.startswith("undeclared-")] \
        == []


# -- init on the same classifier: every store image marked, the real entry found ------------------------------------

WORDPRESS = "gke-wordpress-cloudsql/cost-optimization/gke-shift-left-cost/samples/k8s-cost-estimator-github/wordpress"
INIT_APPS = {  # the stores each app runs (its ORIGIN.md and manifests, read by hand) and the front a user reaches
    "ftgo": (ftgo, {"ftgo-mysql": "mysql", "ftgo-kafka": "kafka", "ftgo-zookeeper": "zookeeper",
                    "ftgo-dynamodb-local": "dynamodb"}, "ftgo-api-gateway"),
    "jhipster-eureka": (jhipster, {"store-postgresql": "postgres", "product-postgresql": "postgres",
                                   "invoice-postgresql": "postgres", "jhipster-registry": "eureka"}, "store"),
    "yelb": (lambda t: only(t, "yelb", "yelb/deployments/platformdeployment/Kubernetes/yaml/"
                            "yelb-k8s-minikube-nodeport.yaml"), {"redis-server": "redis", "yelb-db": "postgres"},
             "yelb-ui"),  # yelb-db: the image mreferre/yelb-db on 5432
    "booksapp": (lambda t: only(t, "books", "booksapp/booksapp-trafficsplit.yml"), {"mysql": "mysql"}, "webapp"),
    "wordpress": (lambda t: only(t, "wp", *(f"{WORDPRESS}/{n}" for n in (
        "wordpress_deployment.yaml", "wordpress_service.yaml", "mysql-statefulset.yaml",
        "wordpress_volumeclaim.yaml"))), {"mysql": "mysql", "mysql-read": "mysql", "wordpress": ""},
        "wordpress"),  # wordpress keeps its uploads on a claim
}


@pytest.mark.parametrize("app", sorted(INIT_APPS))
def test_init_marks_every_store_and_finds_the_front(app, tmp_path, harness):
    make, stores, front = INIT_APPS[app]
    out = harness.cli("init", str(make(tmp_path)), "-o", "json")
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert {r["service"]: r["store"] for r in found["roles"] if r["role"] == "stateful"} == stores
    [entry] = found["entries"]
    assert entry["service"] == front, entry


def test_with_jhipsters_registry_in_the_lane_the_dev_store_registers_there_only(tmp_path):
    """The fix the registry warning gives, applied to JHipster (its Eureka copied into the lane, its database too):
    computed from the rendered objects, every registry URL of the dev store names a Service of the flow that
    selects the dev registry's pods, none the baseline's."""
    repo = jhipster(tmp_path)
    (repo / ".devlane.yaml").write_text(yaml.safe_dump({"services": {
        "jhipster-registry": {"stateful": True}, "store-postgresql": {"stateful": True},
        "store": {"dependencies": ["jhipster-registry:http", "store-postgresql:5432"]}}}))
    result = api.render(api.Options(repo=repo), build_flow(FLOW, {"jhipster/store": "ghcr.io/example/dev:pr-1"}, []))
    rendered = [o for o in yamlc.safe_load_all(result.stream()) if o]
    services = {o["metadata"]["name"]: o for o in rendered if o["kind"] == "Service"}
    pods = {o["metadata"]["name"]: o["spec"]["template"]["metadata"]["labels"] for o in rendered
            if o["kind"] in ("Deployment", "StatefulSet")}
    env = {e["name"]: e.get("value") for e in next(
        o for o in rendered if o["metadata"]["name"] == f"store-{FLOW}")["spec"]["template"]["spec"]["containers"][0]
        ["env"]}
    for name in ("EUREKA_CLIENT_SERVICE_URL_DEFAULTZONE", "SPRING_CLOUD_CONFIG_URI"):
        host = re.search(r"@([^.:/]+)", env[name]).group(1)
        selector = services[host]["spec"]["selector"]  # a Service of the flow, selecting the dev registry only
        assert [p for p, labels in pods.items() if selector.items() <= labels.items()] == [f"jhipster-registry-{FLOW}"]
    # what is left is said: the lane's registry copy reads its baseline peers from a ConfigMap, by their pods' DNS
    # names (jhipster-registry-0.jhipster-registry...), which no reference rewriting covers
    [peers] = result.reach
    assert (peers.cls, peers.kind, peers.evidence[0].object) == ("registry", "eureka", "ConfigMap/application-config")
    assert peers.target.startswith("jhipster-registry-0.jhipster-registry.jhipster.svc")


# -- the annotated real apps with their `stateful` annotations removed ---------------------------------------------


def _unmarked(cls):
    """The app's repository as `support.realworld_apps` builds it, every `stateful` annotation left out (recorded)."""

    class Unmarked(cls):
        def __init__(self, root):
            super().__init__(root)
            self.unmarked: set[tuple[str | None, str]] = set()

        def stateful(self, service, namespace=None):
            self.unmarked.add((namespace, service))

        def annotate(self, kind, name, namespace=None, **annotations):
            if annotations.pop(STATEFUL, None) is not None:
                self.unmarked.add((namespace, name))
            if annotations:
                super().annotate(kind, name, namespace, **annotations)

    return Unmarked


@pytest.mark.parametrize("app", REALWORLD_APPS, ids=[a.id for a in REALWORLD_APPS])
def test_with_stateful_removed_every_store_a_dev_pod_reads_is_named(app, tmp_path):
    """The hand-annotated real apps of test_realworld_isolation, their stores no longer marked: every baseline store
    a dev pod still reads (found from the rendered objects by `support.isolation`, independently of devlane) is
    named in the lane's reach, and nothing else is. (A StatefulSet is stateful without the annotation, so
    bank-of-anthos' databases still get copies; the EKS and retail-store checkout Redis is a Deployment.)"""
    repo = _unmarked(BuiltRepo if app.built else Repo)(tmp_path / "repo")
    app.build(repo)
    baseline = repo.write()
    flow = build_flow(FLOW, {t: f"ghcr.io/example/{t.rsplit('/', 1)[-1]}:{FLOW}" for t in app.targets}, [])
    result = api.render(api.Options(repo=repo.root), flow)
    rendered = [o for o in yamlc.safe_load_all(result.stream()) if o]
    base, out = Objects(baseline), Objects(rendered)
    namespaces = base.namespaces() | out.namespaces()
    read = {key for pod in dev_pods(out) for key in referenced_services(pod, out, base, namespaces)}
    truth = {name for _, name in read & repo.unmarked}
    named = {r.target.rsplit("/", 1)[-1] for r in result.reach if r.cls == "baseline-store"}
    assert named >= truth, (sorted(truth - named), result.reach)
    assert named <= {n for _, n in repo.unmarked}, named  # a store the hand annotations did not mark: none


def test_kafka_topic_on_ftgo_isolates_the_broker_and_says_the_topics_it_cannot_rename(tmp_path):
    """FTGO's order service with kafka-topic, as upstream configures it: Eventuate compiles its channel names (the
    aggregate classes) into the image, so the lane gets its KafkaTopics, the broker is listed as shared on purpose
    (`isolates: [kafka]`), and each topic is named loudly as one the dev pod still uses the baseline's of."""
    repo = ftgo(tmp_path)
    order = repo / "ftgo-order-service.yml"
    topic = "net.chrisrichardson.ftgo.orderservice.domain.Order"
    definition = [{"name": "kafka-topic", "type": "external", "servicename": "order-events",
                   "args": {"cluster": "ftgo-kafka", "topics": topic}}]
    order.write_text(order.read_text().replace(
        "name: ftgo-order-service\n", "name: ftgo-order-service\n  annotations:\n    kardinal.dev.service/plugins: "
        "order-events\n", 1))
    (repo / "plugins.yml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "plugin-defs", "annotations": {"kardinal.dev.service/plugin-definition": json.dumps(definition)}}}))
    result = api.render(api.Options(repo=repo), build_flow(FLOW, {"ftgo-order-service": "x/dev:1"}, []))
    assert ("shared", "ftgo-kafka") in {(r.cls, r.target) for r in result.reach}
    assert "ftgo-kafka" not in reach_warnings(result)
    [loud] = [p for p in result.warnings if p.where.plugin == "order-events"]
    assert f"topic {topic} is in no env value, command, args or ConfigMap of the dependents" in loud.message
    objects = [o for o in yamlc.safe_load_all(result.stream()) if o]
    [kafka_topic] = [o for o in objects if o["kind"] == "KafkaTopic"]
    assert kafka_topic["spec"]["topicName"] == f"{topic}-order-events-{FLOW}"
