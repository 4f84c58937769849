"""One classifier, one answer (issue 44, point 3): for any pod a service may have (generated values: stores of
every kind inside and outside the repository, calls to plain services, text), `render`, `plan` and `lint` name
the same addresses as reached beyond the lane, each address judged on its own, whatever else the pod holds."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from renderer import api
from renderer.render.plan.flow_spec import FlowRequest

pytestmark = pytest.mark.e2e

VALUES = ["redis://cache.example.com:6379/0", "postgres://u@pg.example.com:5432/db",
          "jdbc:mysql://legacy-mysql.corp.example.com:3306/orders", "amqp://mq.example.com:5672",
          "kafka.example.com:9092", "mongodb://mongo.example.com:27017/x", "db:5432", "postgres://app@db:5432/app",
          "http://web:80", "plain text", "https://api.stripe.com", "cache:6379", "legacy-db.example.com"]
KEYS = ["DATABASE_URL", "DB_HOST", "CACHE", "URL", "LEGACY_DB", "X"]


def _deployment(name: str, image: str, env: list[dict]) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "main", "image": image, "env": env}]}}}}


def _service(name: str, port: int, annotations: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "annotations": {f"kardinal.dev.service/{k}": v for k, v in annotations.items()}},
            "spec": {"selector": {"app": name}, "ports": [{"name": "tcp", "port": port}]}}


POD = st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES)), min_size=1, max_size=5,
               unique_by=lambda kv: kv[0])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
# the case: the lane's own database (db's dev copy, rewritten) beside an outside one of the same kind
@example(pod=[("DATABASE_URL", "postgres://app@db:5432/app"), ("LEGACY_DB", "postgres://u@pg.example.com:5432/db"),
              ("DB_HOST", "legacy-db.example.com")], db_stateful=True, db_declared=True, web_too=False)
@given(pod=POD, db_stateful=st.booleans(), db_declared=st.booleans(), web_too=st.booleans())
def test_render_plan_and_lint_name_the_same_reach(tmp_path_factory, pod, db_stateful, db_declared, web_too):
    root = tmp_path_factory.mktemp("reach")
    deps = ",".join(d for d, on in (("db:tcp", db_declared), ("web:tcp", web_too)) if on)
    docs = [_deployment("api", "acme/api:1", [{"name": k, "value": v} for k, v in pod]),
            _service("api", 80, {"dependencies": deps} if deps else {}),
            _deployment("db", "postgres:17", []), _service("db", 5432, {"stateful": "true"} if db_stateful else {}),
            _deployment("web", "acme/web:1", []), _service("web", 80, {}),
            _deployment("cache", "redis:7.4", []), _service("cache", 6379, {})]
    (root / "app.yaml").write_text("---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs))
    flow = api.resolve(FlowRequest(flow_id="pr-1", images={"api": "acme/api:2"}))
    rendered = {r.target for r in api.render(api.Options(repo=root), flow).reach if r.cls != "shared"}
    planned = {r.target for r in api.plan(api.Options(repo=root), flow).reach if r.cls != "shared"}
    linted = {re.search(r"reads the (?:baseline store|registry|store outside the repository) (\S+) \(", p.message)[1]
              for p in api.lint(api.Options(repo=root)) if p.code.startswith("undeclared-") and "Deployment/api" in
              str(p.where) + p.message and "api reads" in p.message}
    assert rendered == planned, (pod, rendered, planned)
    assert {t.rpartition("/")[2] for t in rendered} == {t.rpartition("/")[2] for t in linted}, (pod, rendered, linted)
    for key, value in pod:  # independent eyes: an outside store URL of the pod is named, whatever is beside it
        host = re.match(r"[a-z:]+//(?:\w+@)?([a-z.-]+\.example\.com:\d+)", value)
        if host:
            assert host[1] in rendered, (key, value, rendered)
