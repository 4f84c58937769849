"""`devlane init`: flags and exit codes, the dry run, `--write` end to end on a small bookshop, the facts it infers
(with their evidence) and an existing annotation it keeps. In-process and light; the real apps are in
tests/e2e/test_init_realworld.py."""

from __future__ import annotations

import json

import pytest
from support import yaml_doc, yamlc

from renderer import api
from renderer.authoring.infer import infer

K = "kardinal.dev.service/"


def deployment(name: str, image: str, env: dict[str, str] | None = None, kind: str = "Deployment",
               volumes: list | None = None) -> dict:
    spec = {"containers": [{"name": name, "image": image,
                            "env": [{"name": k, "value": v} for k, v in (env or {}).items()]}]}
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def service(name: str, ports: list[dict], **extra) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": ports, **extra}}


@pytest.fixture
def bookshop(harness):
    """web -> orders -> orders-db (postgres, unnamed port), orders -> stripe; catalog's redis nobody names."""
    harness.write("web.yaml", "# the storefront\n" + yaml_doc(deployment("web", "acme/web:1", {
        "ORDERS_URL": "http://orders:8080/api"})) + yaml_doc(service("web", [{"name": "http", "port": 80}],
                                                                     type="LoadBalancer")))
    harness.write("orders.yaml", yaml_doc(deployment("orders", "acme/orders:1", {
        "DATABASE_URL": "postgres://u:p@orders-db:5432/orders", "STRIPE_API": "https://api.stripe.com/v1"}))
        + yaml_doc(service("orders", [{"name": "http", "port": 8080}])))
    harness.write("db.yaml", yaml_doc(deployment("orders-db", "docker.io/library/postgres:16", kind="StatefulSet"))
                  + yaml_doc(service("orders-db", [{"port": 5432}])))
    harness.write("cache.yaml", yaml_doc(deployment("cache", "bitnami/redis:7")) + yaml_doc(
        service("cache", [{"name": "redis", "port": 6379}])) + yaml_doc(deployment("queue", "mongo:7")))
    return harness


def test_inference_finds_edges_roles_entries_and_unwired_with_evidence(bookshop):
    inf = infer(api.read(bookshop.options(cache=False)).model)
    edges = {(e.source, e.item): e for e in inf.edges}
    assert set(edges) == {("web", "orders:http"), ("orders", "orders-db:5432")}
    web = edges[("web", "orders:http")].evidence
    assert (web.file, web.index, web.object, web.value) == ("web.yaml", 0, "Deployment/web", "http://orders:8080/api")
    assert web.field == "spec.template.spec.containers[web].env[ORDERS_URL].value"
    assert "has no name: the dependency uses its number" in edges[("orders", "orders-db:5432")].note
    roles = {r.service: r for r in inf.roles}
    assert (roles["orders-db"].role, roles["orders-db"].store, roles["orders-db"].plugin) == \
        ("stateful", "postgres", "postgres-seed")
    assert (roles["cache"].store, roles["cache"].plugin) == ("redis", "redis-sidecar")
    assert (roles["queue"].store, roles["queue"].plugin) == ("mongodb", "mongodb-seed")
    assert (roles["stripe"].role, roles["stripe"].plugin, roles["stripe"].dependents) == \
        ("external", "stripe", ("orders",))
    [entry] = inf.entries
    assert (entry.kind, entry.service, entry.port) == ("suggested", "web", 80)
    assert [u.service for u in inf.unwired] == ["cache"]
    assert "--isolation namespace" in inf.unwired[0].suggestion


def test_mode_flags_are_exclusive(harness):
    r = harness.cli("init", str(harness.root), "--write", "--config")
    assert r.returncode == 2 and "not allowed with argument" in r.stderr


@pytest.fixture
def editor(bookshop):
    """The bookshop, for the tests that go through the round-trip editor."""
    return bookshop


def tree(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_dry_run_writes_nothing_and_prints_the_diff_and_the_summary(editor):
    before = tree(editor.root)
    r = editor.cli("init")
    assert r.returncode == 0, r.stderr
    assert tree(editor.root) == before
    assert "+    kardinal.dev.service/dependencies: orders:http" in r.stdout
    assert "--- /dev/null\n+++ b/web-entry-ingress.yaml" in r.stdout
    lines = r.stdout.splitlines()
    assert any(line.split()[:4] == ["orders-db", "stateful,", "plugin", "postgres-seed"] for line in lines), r.stdout
    assert "cannot be inferred" in r.stdout and "cache" in r.stdout
    assert "dry run:" in r.stdout and "next: devlane render" in r.stdout


def test_write_annotates_in_place_then_renders_and_a_second_run_is_a_no_op(editor):
    r = editor.cli("init", "--write")
    assert r.returncode == 0, r.stderr
    web = list(yamlc.safe_load_all((editor.root / "web.yaml").read_text()))
    assert (editor.root / "web.yaml").read_text().startswith("# the storefront\n")
    assert web[1]["metadata"]["annotations"] == {K + "dependencies": "orders:http"}
    db = list(yamlc.safe_load_all((editor.root / "db.yaml").read_text()))
    assert db[1]["metadata"]["annotations"] == {K + "stateful": "true"}
    assert "lint: 0 error(s)" in r.stdout
    again = editor.cli("init", "--write", "-o", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["changed"] == []
    assert "nothing to change" in editor.cli("init").stdout
    result = editor.render(services={"orders": "acme/orders:pr-1"})
    assert set(result.plan.decisions) >= {"orders", "orders-db", "web"}


def test_an_existing_annotation_is_kept_and_the_disagreement_listed(editor):
    text = (editor.root / "orders.yaml").read_text().replace(
        "  name: orders\nspec:", f"  name: orders\n  annotations:\n    {K}dependencies: web:http\nspec:")
    assert text != (editor.root / "orders.yaml").read_text()
    (editor.root / "orders.yaml").write_text(text)
    r = editor.cli("init", "--write")
    assert r.returncode == 0, r.stderr  # the kept annotation makes a cycle: lint notes it, a flow plans it
    assert "note: " in r.stdout and "dependency cycle: orders -> web -> orders" in r.stdout
    assert (editor.root / "orders.yaml").read_text() == text
    assert f"Service/orders {K}dependencies: 'web:http', inferred 'orders-db:5432'" in r.stdout


def test_a_repository_with_a_broken_file_exits_1_names_it_and_writes_nothing(editor):
    """A render of it would stop on the error, so init says so first: exit 1, as `devlane lint` does."""
    editor.write("broken.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: x\n")
    before = tree(editor.root)
    r = editor.cli("init", "--write")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "broken.yaml:4: invalid YAML" in r.stdout and "Traceback" not in r.stdout + r.stderr
    assert "nothing written: broken.yaml could not be read" in r.stdout
    assert "next: fix the lint errors above" in r.stdout
    assert tree(editor.root) == before


@pytest.fixture
def shop(harness):
    """Four services that all read one ConfigMap whole (envFrom) naming four stores; catalog also reads one key of
    it by name. inventory-db runs a `*-db` image on 3306 as a plain Deployment. orders-api is a LoadBalancer, the
    UI a NodePort."""
    stores = {"DB_URL": "jdbc:mysql://inventory-db:3306/shop", "CACHE": "redis://cache:6379",
              "BROKERS": "events:9092", "CATALOG_DB": "mongodb://catalog-db:27017/catalog"}
    harness.write("config.yaml", yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-env"},
                                           "data": stores}))
    docs = []
    for name in ("orders-api", "payments", "catalog", "shop-ui"):
        d = deployment(name, f"acme/{name}:1")
        d["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "shop-env"}}]
        docs.append(d)
    catalog = docs[2]["spec"]["template"]["spec"]["containers"][0]
    key_ref = {"configMapKeyRef": {"name": "shop-env", "key": "CATALOG_DB"}}
    catalog["env"] = [{"name": "MONGO_URL", "valueFrom": key_ref}]
    docs[3]["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "API", "value": "http://orders-api"}]
    docs += [service("orders-api", [{"name": "http", "port": 80}], type="LoadBalancer"),
             service("payments", [{"name": "http", "port": 80}]), service("catalog", [{"name": "http", "port": 80}]),
             service("shop-ui", [{"name": "http", "port": 80}], type="NodePort"),
             deployment("inventory-db", "acme/inventory-db:3"), service("inventory-db", [{"port": 3306}]),
             deployment("cache", "redis:7"), service("cache", [{"name": "redis", "port": 6379}]),
             deployment("events", "bitnami/kafka:3"), service("events", [{"name": "kafka", "port": 9092}]),
             deployment("catalog-db", "mongo:7"), service("catalog-db", [{"name": "mongo", "port": 27017}])]
    harness.write("shop.yaml", "".join(yaml_doc(d) for d in docs))
    return harness


def test_init_classifies_stores_as_render_does_and_reads_a_shared_config_as_one(shop):
    inf = infer(api.read(shop.options(cache=False)).model)
    roles = {r.service: r for r in inf.roles}
    assert (roles["inventory-db"].store, roles["inventory-db"].plugin) == ("mysql", "mysql-seed")  # *-db on 3306
    assert "image acme/inventory-db:3, port 3306" in roles["inventory-db"].reason
    assert {k: roles[k].store for k in ("cache", "events", "catalog-db")} == \
        {"cache": "redis", "events": "kafka", "catalog-db": "mongodb"}
    [config] = inf.shared_config
    assert (config.object, config.readers, config.stores) == (
        "ConfigMap/shop-env", ("catalog", "orders-api", "payments", "shop-ui"),
        ("cache", "catalog-db", "events", "inventory-db"))
    edges = {(e.source, e.target) for e in inf.edges}
    assert edges == {("catalog", "catalog-db"), ("shop-ui", "orders-api")}  # the key catalog names, not 16 edges
    assert [u.service for u in inf.unwired] == ["catalog", "payments"]  # no store: the shared config names them
    [entry] = inf.entries
    assert entry.service == "shop-ui"
    assert "(type: NodePort, named shop-ui, which looks like the user interface; not the LoadBalancer orders-api, " \
        "which looks like no UI)" in entry.note
    report = shop.cli("init").stdout
    assert "shared configuration (read whole by many services, naming many stores: no edge inferred from it):" \
        in report and "ConfigMap/shop-env: read by catalog, orders-api, payments, shop-ui; names cache, " in report


def test_init_suggests_the_builtin_for_each_store_with_the_args_to_fill_in(shop):
    """A broker gets its client-side built-in (kafka-topic on the services that name it, a lane's own topics on the
    shared cluster); a database its seed built-in; a Redis without persistence redis-sidecar in mode fresh."""
    r = shop.cli("init", "--config")
    assert r.returncode == 0, r.stdout + r.stderr
    config = yamlc.safe_load((shop.root / ".devlane.yaml").read_text())
    defs = {d["servicename"]: d for d in config["plugins"]["definitions"]}
    assert defs["events-kafka-topic"]["type"] == "external"
    assert defs["events-kafka-topic"]["args"] == {"cluster": "FILL-IN", "topics": "FILL-IN"}
    assert defs["catalog-db-mongodb-seed"]["type"] == "stateful"
    assert defs["cache-redis-sidecar"]["args"] == {"mode": "fresh"}
    assert defs["inventory-db-mysql-seed"]["name"] == "mysql-seed"
    text = (shop.root / ".devlane.yaml").read_text()
    assert "add plugins: [events-kafka-topic] to services.catalog, services.orders-api, services.payments, " \
        "services.shop-ui (the clients of events)" in " ".join(text.split())


def _copies_app(harness, own_name_line: bool) -> None:
    """Three services, each mounting its own copy of one config file naming every store and service (and, with
    `own_name_line`, its own name as `serviceName:`), plus one entry (`CACHE`) that names only the cache; a Jaeger
    known only by its agent port, named by each service's env."""
    stores = {"users-db": ("mongo:7", 27017), "posts-db": ("mongo:7", 27017), "cache": ("redis:7", 6379)}
    names = ["compose", "timeline", "users"]
    config = "\n".join(f"{n}: {{addr: {n}, port: 9090}}" for n in names) + "\n" + \
        "\n".join(f"{s}: {{addr: {s}, port: {p}}}" for s, (_, p) in stores.items())
    docs = []
    for name in names:
        own = f"serviceName: {name}\n" if own_name_line else ""
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                     "data": {"service-config.yaml": own + config, "CACHE": "cache:6379"}})
        d = deployment(name, "acme/social:1", {"JAEGER_AGENT_HOST": "tracing"})
        d["spec"]["template"]["spec"]["volumes"] = [{"name": "config", "configMap": {"name": name}}]
        docs += [d, service(name, [{"name": "thrift", "port": 9090}])]
    docs += [deployment("tracing", "acme/all-in-one:1"), service("tracing", [{"name": "agent", "port": 6831}])]
    docs += [deployment("gateway", "acme/gateway:1"), service("gateway", [{"name": "http", "port": 80}],
                                                              type="LoadBalancer")]
    for store, (image, port) in stores.items():
        docs += [deployment(store, image), service(store, [{"name": "db", "port": port}])]
    harness.write("app.yaml", "".join(yaml_doc(d) for d in docs))


@pytest.mark.parametrize("own_name_line", [False, True], ids=["identical", "differing-by-own-name"])
def test_copies_of_one_config_are_one_shared_configuration_and_telemetry_is_no_dependency(harness, own_name_line):
    """Issue 44, point 4: copies of one config file (identical, or differing only by the reader's own name) are one
    shared configuration (no edge from any reader to what it names: 3 x 6 would be there otherwise); an entry beside
    it that names one address is still an edge; a sink known by its port is telemetry, not a dependency; a service
    that names no other is listed as not inferable."""
    _copies_app(harness, own_name_line)
    inf = infer(api.read(harness.options(cache=False)).model)
    assert {(e.source, e.target) for e in inf.edges} == {(n, "cache") for n in ("compose", "timeline", "users")}
    [config] = inf.shared_config
    assert config.object == "ConfigMap/compose[service-config.yaml]"
    assert config.copies == ("ConfigMap/compose[service-config.yaml]", "ConfigMap/timeline[service-config.yaml]",
                             "ConfigMap/users[service-config.yaml]")
    assert (config.readers, config.stores, config.services) == (
        ("compose", "timeline", "users"), ("cache", "posts-db", "users-db"), ("compose", "timeline", "users"))
    [sink] = inf.telemetry
    assert (sink.service, sink.readers) == ("tracing", ("compose", "timeline", "users"))
    assert "listens on port 6831, a telemetry port" in sink.reason
    assert "tracing" not in {r.service for r in inf.roles}
    unwired = {(u.service, u.side) for u in inf.unwired}
    assert ("gateway", "caller") in unwired and not {s for s, side in unwired if side == "caller"} - {"gateway"}
    assert not {s for s, _ in unwired} & {"tracing", "users-db", "posts-db"}  # a sink; stores the config names
    report = harness.cli("init").stdout
    assert "ConfigMap/compose[service-config.yaml] (and 2 copies): read by compose, timeline, users; names cache, " \
           "posts-db, users-db, compose, timeline, users" in report
    assert "telemetry (every lane reports to the baseline's: no dependency written):\n  tracing: Service tracing " \
           "listens on port 6831, a telemetry port; named by compose, timeline, users" in report


def test_a_config_naming_few_addresses_gives_its_edges_even_when_many_read_it(harness):
    """The other side: a ConfigMap many services read that names one store and two services is what each reads
    (bank-of-anthos' service-api-config), not the app's directory: its edges stay."""
    readers = []
    for name in ("a", "b", "c"):
        d = deployment(name, "acme/x:1")
        d["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "api"}}]
        readers += [d, service(name, [{"name": "http", "port": 80}])]
    harness.write("app.yaml", "".join(yaml_doc(d) for d in (
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "api"},
         "data": {"A": "http://a:80", "B": "http://b:80", "DB": "postgres://db:5432/x"}},
        *readers, deployment("db", "postgres:16"), service("db", [{"name": "pg", "port": 5432}]))))
    inf = infer(api.read(harness.options(cache=False)).model)
    assert inf.shared_config == ()
    assert {(e.source, e.target) for e in inf.edges} == {("a", "b"), ("a", "db"), ("b", "a"), ("b", "db"),
                                                         ("c", "a"), ("c", "b"), ("c", "db")}
