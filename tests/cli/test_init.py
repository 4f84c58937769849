"""`devlane init`: flags and exit codes, the dry run, `--write` end to end on a small bookshop, the facts it infers
(with their evidence) and an existing annotation it keeps. In-process and light; the real apps are in
tests/e2e/test_init_realworld.py."""

from __future__ import annotations

import json

import pytest
import yaml
from support import yaml_doc

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
    assert (roles["queue"].store, roles["queue"].plugin) == ("mongodb", None)  # no catalogue plugin yet
    assert (roles["stripe"].role, roles["stripe"].plugin, roles["stripe"].dependents) == \
        ("external", "stripe", ("orders",))
    [entry] = inf.entries
    assert (entry.kind, entry.service, entry.port) == ("suggested", "web", 80)
    assert [u.service for u in inf.unwired] == ["cache"]
    assert "--isolation namespace" in inf.unwired[0].suggestion


def test_image_words_name_a_store_only_as_a_whole_word():
    from renderer.authoring.infer_roles import image_store

    assert image_store("bitnami/postgresql:16") == "postgresql"
    assert image_store("robotshop/rs-mongodb:2.1") == "mongodb"
    assert image_store("oliver006/redis_exporter:v1") is None  # a tool around a store
    assert image_store("provectuslabs/kafka-ui") is None
    assert image_store("acme/predisposition:1") is None  # not a substring of another word
    assert image_store("acme/orders:redis") is None  # a tag is not a repository name


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
    web = list(yaml.safe_load_all((editor.root / "web.yaml").read_text()))
    assert (editor.root / "web.yaml").read_text().startswith("# the storefront\n")
    assert web[1]["metadata"]["annotations"] == {K + "dependencies": "orders:http"}
    db = list(yaml.safe_load_all((editor.root / "db.yaml").read_text()))
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
