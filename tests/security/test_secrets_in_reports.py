"""No report prints a password: a lane whose dev pods carry secrets in URLs and connection strings (the issue's
`redis://:PASSWORD@cache.example.com:6379/0` with its empty user, Kafka SASL-style `user:pw@broker`, Mongo, AMQP,
JDBC query parameters, ADO.NET/ODBC braces, a token as a URL's user, a reference to a repository store and to a
dev service rewritten in the lane, a 5,000-character line of a mounted file, a Secret read by key) is rendered,
planned, diffed, previewed, linted and inferred, and every output a person or a PR comment sees (stderr, the flow
README, `flow.metadata`, `plan -o json` and text, `diff -o json` and `-o markdown`, `preview` in the terminal and
as HTML, `lint`, `init`) is searched for each secret. The rendered Deployment does carry them (the pod needs
them): what keeps them out of the reports is the masking (`core.secrets_mask`), which the reports show as `***`.
Every excerpt of a value is at most 120 characters."""

from __future__ import annotations

import json

import pytest
from support import app_yaml, yaml_doc, yamlc

pytestmark = pytest.mark.e2e

SECRETS = {name: f"Kq{name}Zx7Vb" for name in "ABCDEFGHIJKLM"}
S = SECRETS
LONG_LINE = ("spring.datasource.url=jdbc:postgresql://pg2.example.com:5432/app?user=app&password=" + S["J"] + "&x="
             + "x" * 5000)
ENV = {
    "REDIS_URL": f"redis://:{S['A']}@cache.example.com:6379/0",
    "KAFKA_BROKERS": f"app:{S['B']}@broker.example.com:9092",
    "MONGO_URL": f"mongodb+srv://app:{S['C']}@mongo.example.com/db?authSource=admin",
    "AMQP_URL": f"amqps://guest:{S['D']}@mq.example.com:5671/vh",
    "DATABASE_URL": f"postgresql://app:{S['E']}@pg.example.com:5432/app",
    "MYSQL_JDBC": f"jdbc:mysql://mysql.example.com:3306/app?user=u&password={S['F']}&useSSL=false",
    "SQL_CONNECTION": f"Server=sql.example.com,1433;Database=app;User Id=u;Pwd={{{S['G']};x}};Encrypt=true",
    "GIT_REMOTE": f"https://{S['H']}@github.com/acme/app.git",
    "ORDERS_DB_URL": f"postgres://app:{S['I']}@orders-db:5432/orders",
    "CART_URL": f"http://shop:{S['L']}@cart:80/api",
    "PG_DSN": f"host=pg3.example.com port=5432 user=app password={S['M']} dbname=app",
    "JAVA_OPTS": "-Xmx1g " + "-Dx=" + "x" * 3000 + f" -Ddb=postgres://app:{S['I']}@orders-db:5432/o " + "y" * 3000,
}
SHOWN = ["redis://:***@cache.example.com:6379/0", "password=***", "Pwd={***}"]  # reach evidence
FLOW = ("--flow", "pr-1", "--service", "api=acme/api:2", "--service", "cart=acme/cart:2")


def _repo(harness, env: dict[str, str]) -> None:
    container = {"name": "main", "image": "acme/api:1", "env": [{"name": k, "value": v} for k, v in env.items()]
                 + [{"name": "SECRET_URL", "valueFrom": {"secretKeyRef": {"name": "api-secret", "key": "url"}}}],
                 "envFrom": [{"configMapRef": {"name": "api-config"}}],
                 "volumeMounts": [{"name": "conf", "mountPath": "/conf"}]}
    api = app_yaml("api", containers=[container]).replace(
        "    spec: {containers: ", "    spec: {volumes: [{name: conf, configMap: {name: api-config}}], containers: ", 1)
    db = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "orders-db"},
           "spec": {"serviceName": "orders-db", "selector": {"matchLabels": {"app": "orders-db"}},
                    "template": {"metadata": {"labels": {"app": "orders-db"}},
                                 "spec": {"containers": [{"name": "pg", "image": "postgres:16"}]}}}},
          {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "orders-db"},
           "spec": {"selector": {"app": "orders-db"}, "ports": [{"name": "pg", "port": 5432}]}}]
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "api-config"},
              "data": {"application.properties": f"server.port=8080\n{LONG_LINE}\n" if env else "server.port=8080\n"}}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api-secret"},
              "stringData": {"url": f"redis://:{S['K']}@secret-cache.example.com:6379"}}
    harness.write("api.yaml", api + "".join(yaml_doc(d) for d in [*db, config, secret]))
    harness.write("cart.yaml", app_yaml("cart"))


@pytest.fixture
def lane(harness):
    """Base: the app without the values; head: with them (so that `diff` shows the lines that hold them)."""
    _repo(harness, {})
    harness.commit("base")
    _repo(harness, ENV)
    harness.commit("head")
    return harness


def _clean(text: str, where: str) -> None:
    for name, secret in SECRETS.items():
        assert secret not in text, f"{where} shows secret {name}"
    if not where.startswith(("diff", "preview")):  # those show whole objects; the others, excerpts of values
        assert "x" * 200 not in text, f"{where} shows a whole long line"


def _evidence(report: object) -> list[str]:
    """Every evidence value in a JSON report (reach's lists of them, `init`'s one per fact)."""
    if isinstance(report, list):
        return [v for item in report for v in _evidence(item)]
    if not isinstance(report, dict):
        return []
    evidence = report.get("evidence")
    found = [e["value"] for e in (evidence if isinstance(evidence, list) else [evidence]) if isinstance(e, dict)]
    return found + [v for key, item in report.items() if key != "evidence" for v in _evidence(item)]


def _excerpts_short(report: object, where: str) -> None:
    values = _evidence(report)
    assert values and all(len(v) <= 120 for v in values), (where, [v for v in values if len(v) > 120])


def test_no_output_shows_a_secret(lane):
    rendered = lane.cli("render", *FLOW)
    assert rendered.returncode == 0, rendered.stderr
    flow = lane.root / "rendered" / "flows" / "pr-1"
    deployment = (flow / "deployment-api-pr-1.yaml").read_text()
    assert S["A"] in deployment and S["L"] in deployment  # the pod gets its values: the reports mask them
    readme, metadata = (flow / "README.md").read_text(), (flow / "flow.metadata").read_text()
    outputs = {"render stderr": rendered.stderr, "README.md": readme, "flow.metadata": metadata}
    for shown in SHOWN:
        assert shown in readme and shown in rendered.stderr, shown
    assert "(secret)" in readme  # the Secret's value is never excerpted
    meta = yamlc.safe_load(metadata)
    _excerpts_short(meta["reach"], "flow.metadata")
    long = [e["value"] for r in meta["reach"] if r["target"] == "orders-db" for e in r["evidence"]
            if "JAVA_OPTS" in e["field"]]
    assert long and long[0].startswith("...") and "orders-db:5432" in long[0]  # the part around the address
    assert {r["target"] for r in meta["reach"]} >= {"cache.example.com:6379", "orders-db", "sql.example.com:1433",
                                                    "pg2.example.com:5432", "secret-cache.example.com:6379"}
    rewrites = [r for r in meta["rewrites"] if r.get("env") == "CART_URL"]
    assert rewrites and rewrites[0]["old"] == "http://shop:***@cart:80/api"  # rewritten in the lane, masked

    plan = lane.cli("plan", *FLOW, "-o", "json")
    assert plan.returncode == 0, plan.stderr
    _excerpts_short(json.loads(plan.stdout)["reach"], "plan -o json")
    outputs |= {"plan -o json": plan.stdout + plan.stderr}
    text = lane.cli("plan", *FLOW)
    outputs |= {"plan": text.stdout + text.stderr}

    for fmt in ("json", "markdown", "text"):
        diff = lane.cli("diff", "--base", "HEAD~1", "--head", "HEAD", *FLOW, "-o", fmt)
        assert diff.returncode == 0, diff.stderr
        outputs[f"diff -o {fmt}"] = diff.stdout + diff.stderr
    for shown in ("redis://:***@cache.example.com:6379/0", "app:***@broker.example.com:9092"):
        assert shown in outputs["diff -o markdown"]  # the env lines of the Deployment, masked

    html = lane.tmp / "preview.html"
    preview = lane.cli("preview", *FLOW, "--html", str(html))
    assert preview.returncode == 0, preview.stderr
    outputs |= {"preview": preview.stdout + preview.stderr, "preview --html": html.read_text()}
    assert "https://***@github.com/acme/app.git" in outputs["preview --html"]  # the rendered objects, masked

    for args in (("lint",), ("lint", "-o", "json"), ("init",), ("init", "-o", "json")):
        out = lane.cli(*args)
        assert out.returncode in (0, 1), out.stderr
        outputs[" ".join(args)] = out.stdout + out.stderr
    assert "***" in outputs["lint"] and "***" in outputs["init -o json"]
    _excerpts_short(json.loads(lane.cli("init", "-o", "json").stdout), "init -o json")

    for where, text in outputs.items():
        _clean(text, where)
