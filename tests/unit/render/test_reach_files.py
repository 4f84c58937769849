"""The lane's reach reads a dev pod's mounted configuration files in the forms apps write them: Java properties,
Spring's nested YAML, .NET's nested JSON, INI and TOML sections, `.env` and nginx upstreams. A store named only by
a parent key (`redis:` then `host: cache.example.com`) counts. Each file names one store outside the repository;
each is named, with its file and masked line, and the output is still rendered."""

from __future__ import annotations

import pytest
from support import app_yaml, yaml_doc

FILES = {
    "application.properties": ("spring.datasource.url=jdbc:postgresql://pg.example.com:5432/shop\n"
                               "server.port=8080\n", "pg.example.com:5432", "postgres"),
    "application.yml": ("spring:\n  redis:\n    host: cache.example.com\n    port: 6379\n"
                        "server:\n  port: 8080\n", "cache.example.com", "redis"),
    "appsettings.json": ('{\n  "Mongo": {\n    "Host": "mongo.example.com"\n  },\n  "Logging": {\n'
                         '    "Level": "Info"\n  }\n}\n', "mongo.example.com", "mongodb"),
    "app.ini": ("[server]\nport = 8080\n[kafka]\nbootstrap = broker.example.com:9092\n",
                "broker.example.com:9092", "kafka"),
    "config.toml": ('[log]\nlevel = "info"\n[database]\nhost = "sql.example.com"\n', "sql.example.com", "database"),
    ".env": ("LOG_LEVEL=info\nAMQP_URL=amqp://shop:s3cret@mq.example.com:5672/vh\n", "mq.example.com:5672",
             "rabbitmq"),
    "nginx.conf": ("upstream legacy {\n  server mysql.example.com:3306;\n}\nserver {\n  listen 80;\n}\n",
                   "mysql.example.com:3306", "mysql"),
}


@pytest.fixture
def shop(harness):
    harness.write("config.yaml", yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "files"},
                                           "data": {name: text for name, (text, _, _) in FILES.items()}}))
    harness.write("api.yaml", app_yaml("api", containers=[{
        "name": "main", "image": "acme/api:1", "volumeMounts": [{"name": "conf", "mountPath": "/conf"}]}]).replace(
        "    spec: {containers: ", "    spec: {volumes: [{name: conf, configMap: {name: files}}], containers: ", 1))
    return harness


def test_every_file_form_names_its_store(shop):
    result = shop.render("pr-1", {"api": "acme/api:2"})
    found = {r.target: (r.cls, r.kind, r.evidence[0]) for r in result.reach}
    assert set(found) == {target for _, target, _ in FILES.values()}
    for name, (_, target, kind) in FILES.items():
        cls, got, evidence = found[target]
        assert (cls, got) == ("outside-store", kind), name
        assert (evidence.object, evidence.field) == ("ConfigMap/files", f"key {name}"), name
    assert found["mq.example.com:5672"][2].value == "amqp://shop:***@mq.example.com:5672/vh"  # masked
    assert "s3cret" not in str(result.warnings)
