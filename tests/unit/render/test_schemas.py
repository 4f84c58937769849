"""The JSON Schemas in schemas/ (`.devlane.yaml` config and `kind: Flow` files) and the documents that must
satisfy them: the bookshop example's config, flow file and manifests, and Kardinal operator's Flow samples."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from support import EXAMPLE, KUBE_VERSION, ROOT, demo_file, yamlc

SCHEMAS = ROOT / "schemas"
BOOKSHOP = EXAMPLE

CONFIG_SCHEMA = SCHEMAS / "devlane-config.schema.json"
FLOW_SCHEMA = SCHEMAS / "flow.schema.json"


def _load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _load_yaml(path: Path) -> Any:
    return yamlc.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def config_validator() -> Draft202012Validator:
    return Draft202012Validator(_load_json(CONFIG_SCHEMA), format_checker=Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def flow_validator() -> Draft202012Validator:
    return Draft202012Validator(_load_json(FLOW_SCHEMA), format_checker=Draft202012Validator.FORMAT_CHECKER)


def _errors(validator: Draft202012Validator, doc: Any) -> list[tuple[list[Any], str]]:
    return sorted(
        ((list(e.absolute_path), str(e.validator)) for e in validator.iter_errors(doc)),
        key=repr,
    )


def _best(validator: Draft202012Validator, doc: Any) -> tuple[list[Any], str]:
    error = best_match(validator.iter_errors(doc))
    assert error is not None, "document unexpectedly valid"
    return list(error.absolute_path), str(error.validator)


def _devlane_flow(name: str = "pr-7") -> dict[str, Any]:
    return {
        "apiVersion": "devlane.dev/v1alpha1",
        "kind": "Flow",
        "metadata": {"name": name},
        "spec": {"services": [{"name": "orders", "image": "ghcr.io/acme/bookshop-orders:pr-7"}]},
    }


# --- the schemas themselves ------------------------------------------------------------


@pytest.mark.parametrize("path", [CONFIG_SCHEMA, FLOW_SCHEMA], ids=lambda p: p.name)
def test_schema_is_valid_json_schema(path: Path) -> None:
    schema = _load_json(path)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def _walk_object_schemas(node: Any, path: str = "#"):
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            yield path, node
        for key, value in node.items():
            yield from _walk_object_schemas(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk_object_schemas(value, f"{path}/{i}")


def test_config_schema_is_closed_and_documented() -> None:
    schema = _load_json(CONFIG_SCHEMA)
    for path, node in _walk_object_schemas(schema):
        if "properties" in node and node.get("type") == "object":
            assert node.get("additionalProperties") is False or isinstance(node.get("additionalProperties"), dict), (
                f"{path} must close additionalProperties"
            )
        for name, prop in node.get("properties", {}).items():
            assert prop.get("description"), f"{path}/properties/{name} has no description"
    # every top-level field is optional: an empty file is a valid config
    assert "required" not in schema
    Draft202012Validator(schema).validate({})


def test_flow_schema_fields_are_documented() -> None:
    schema = _load_json(FLOW_SCHEMA)
    for path, node in _walk_object_schemas(schema):
        if path.endswith("/if"):  # the apiVersion discriminators
            continue
        for name, prop in node.get("properties", {}).items():
            assert prop.get("description"), f"{path}/properties/{name} has no description"


# --- documents that must validate ------------------------------------------------------


def test_example_config_validates(config_validator: Draft202012Validator) -> None:
    config = _load_yaml(BOOKSHOP / ".devlane.yaml")
    assert _errors(config_validator, config) == []
    assert config["routing"] == "none"
    assert config["domain"] == "preview.bookshop.example.com"


def test_full_config_validates(config_validator: Draft202012Validator) -> None:
    config = {
        "apiVersion": "devlane.dev/v1alpha1",
        "kind": "Config",
        "manifests": ["**/*.yaml", "**/*.yml"],
        "exclude": ["charts/**"],
        "routing": "gateway-api",
        "domain": "apps.example.com",
        "namespace": "shop",
        "output": "rendered",
        "replicas": "keep",
        "plugins": {
            "sources": {
                "github.com/org/repo": {"path": "./vendor/plugins/repo"},
                "github.com/kurtosis-tech/postgres-seed-plugin": {
                    "git": "https://github.com/kurtosis-tech/postgres-seed-plugin.git",
                    "ref": "main",
                },
            },
            "timeoutSeconds": 60,
        },
        "policy": {"warningsAsErrors": True},
    }
    assert _errors(config_validator, config) == []
    assert _errors(config_validator, {**config, "replicas": 0}) == []


def test_example_flow_file_validates(flow_validator: Draft202012Validator) -> None:
    flow = _load_yaml(BOOKSHOP / "flows" / "pr-7.yaml")
    assert _errors(flow_validator, flow) == []
    assert flow["metadata"]["name"] == "pr-7"
    assert flow["spec"]["services"] == [
        {"name": "orders", "image": "ghcr.io/acme/bookshop-orders:pr-7", "env": {"LOG_LEVEL": "debug"}}
    ]


def test_flow_env_list_form_and_template_validate(flow_validator: Draft202012Validator) -> None:
    flow = _devlane_flow()
    flow["spec"]["services"][0]["env"] = [{"name": "LOG_LEVEL", "value": "debug"}]
    flow["spec"]["template"] = {"file": "template.yaml", "args": {"last_insert_quantity": 3, "x": "y"}}
    assert _errors(flow_validator, flow) == []
    # a 40-character id is the longest accepted
    assert _errors(flow_validator, _devlane_flow("a" * 40)) == []


@pytest.mark.parametrize(
    "name", ["kardinal-operator__ci__flow-test.yaml", "kardinal-operator__config__samples__core_v1_flow.yaml"]
)
def test_kardinal_operator_flow_sample_validates(flow_validator: Draft202012Validator, name: str) -> None:
    flow = _load_yaml(demo_file(name))  # skipped when ../shared is not beside this checkout
    assert flow["apiVersion"] == "core.kardinal.dev/v1"
    assert _errors(flow_validator, flow) == []


# --- negative cases --------------------------------------------------------------------


def test_config_unknown_key_is_reported(config_validator: Draft202012Validator) -> None:
    errors = list(config_validator.iter_errors({"routing": "none", "routnig": "istio"}))
    assert [(list(e.absolute_path), e.validator) for e in errors] == [([], "additionalProperties")]
    assert "'routnig' was unexpected" in errors[0].message
    # nested objects are closed too
    assert _errors(config_validator, {"plugins": {"timeout": 5}}) == [(["plugins"], "additionalProperties")]
    assert _errors(config_validator, {"policy": {"strictt": True}}) == [(["policy"], "additionalProperties")]


def test_config_bad_routing_is_reported(config_validator: Draft202012Validator) -> None:
    assert _errors(config_validator, {"routing": "foo"}) == [(["routing"], "enum")]


def test_config_negative_replicas_is_reported(config_validator: Draft202012Validator) -> None:
    assert _errors(config_validator, {"replicas": -1}) == [(["replicas"], "oneOf")]
    assert _errors(config_validator, {"replicas": "all"}) == [(["replicas"], "oneOf")]
    assert _errors(config_validator, {"replicas": 1.5}) == [(["replicas"], "oneOf")]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"namespace": "Shop"}, [(["namespace"], "pattern")]),
        ({"domain": "https://apps.example.com"}, [(["domain"], "pattern")]),
        ({"output": "../elsewhere"}, [(["output"], "pattern")]),
        ({"output": "/tmp/out"}, [(["output"], "pattern")]),
        ({"plugins": {"timeoutSeconds": 0}}, [(["plugins", "timeoutSeconds"], "minimum")]),
        ({"plugins": {"sources": {"x": {"path": "a", "git": "b"}}}}, [(["plugins", "sources", "x"], "oneOf")]),
        ({"plugins": {"sources": {"x": {"ref": "main"}}}}, [(["plugins", "sources", "x"], "oneOf")]),
        ({"policy": {"warningsAsErrors": "yes"}}, [(["policy", "warningsAsErrors"], "type")]),
        ({"kind": "Flow"}, [(["kind"], "const")]),
        ({"manifests": "**/*.yaml"}, [(["manifests"], "type")]),
    ],
)
def test_config_other_bad_values(config_validator: Draft202012Validator, doc: dict, expected: list) -> None:
    assert _errors(config_validator, doc) == expected


def test_flow_bad_id_is_reported(flow_validator: Draft202012Validator) -> None:
    assert _best(flow_validator, _devlane_flow("Bad_ID")) == (["metadata", "name"], "pattern")


def test_flow_id_with_a_trailing_newline_is_reported(flow_validator: Draft202012Validator) -> None:
    """`$` in a pattern matches before a final newline in Python's `re`: the schemas must not."""
    assert _best(flow_validator, _devlane_flow("pr-7\n")) == (["metadata", "name"], "pattern")
    assert not list(flow_validator.iter_errors(_devlane_flow("pr-7")))


def test_flow_id_of_41_chars_is_reported(flow_validator: Draft202012Validator) -> None:
    assert _best(flow_validator, _devlane_flow("a" * 41)) == (["metadata", "name"], "maxLength")


def test_kardinal_flow_bad_id_and_missing_image(flow_validator: Draft202012Validator) -> None:
    flow = {
        "apiVersion": "core.kardinal.dev/v1",
        "kind": "Flow",
        "metadata": {"name": "Bad_ID", "namespace": "baseline"},
        "spec": {"service": "frontend", "image": "kurtosistech/frontend:demo-frontend"},
    }
    assert _best(flow_validator, flow) == (["metadata", "name"], "pattern")
    flow["metadata"]["name"] = "flow-test"
    assert _errors(flow_validator, flow) == []
    del flow["spec"]["image"]
    assert _best(flow_validator, flow) == (["spec"], "required")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda f: f.update(extra=1), ([], "additionalProperties")),
        (lambda f: f["spec"].update(services=[]), (["spec", "services"], "minItems")),
        (lambda f: f["spec"]["services"][0].pop("name"), (["spec", "services", 0], "required")),
        (
            lambda f: f["spec"]["services"][0].update(env={"A": 1}),
            (["spec", "services", 0, "env", "A"], "type"),
        ),
        (
            lambda f: f["spec"]["services"][0].update(env=[{"name": "A"}]),
            (["spec", "services", 0, "env", 0], "required"),
        ),
        (lambda f: f["metadata"].update(namespace="x"), (["metadata"], "additionalProperties")),
        (lambda f: f.update(kind="Template"), (["kind"], "const")),
        (lambda f: f.pop("apiVersion"), ([], "required")),
    ],
)
def test_flow_other_bad_values(flow_validator: Draft202012Validator, mutate, expected) -> None:
    flow = copy.deepcopy(_devlane_flow())
    mutate(flow)
    assert _best(flow_validator, flow) == expected


def test_flow_unknown_api_version_is_reported(flow_validator: Draft202012Validator) -> None:
    flow = {**_devlane_flow(), "apiVersion": "devlane.dev/v2"}
    assert (["apiVersion"], "enum") in _errors(flow_validator, flow)


# --- the example's manifests are valid Kubernetes 1.31 objects -------------------------


def _example_objects() -> list[tuple[str, dict[str, Any]]]:
    objects = []
    for path in sorted((BOOKSHOP / "k8s").glob("*.yaml")):
        for doc in yamlc.safe_load_all(path.read_text(encoding="utf-8")):
            if doc is not None:
                objects.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return objects


def test_example_manifests_pass_strict_kubernetes_schema() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    objects = _example_objects()
    assert len(objects) == 13  # the Secret with the orders database's password included
    for label, obj in objects:
        try:
            kubernetes_validate.validate(obj, f"{KUBE_VERSION}.0", strict=True)
        except kubernetes_validate.ValidationError as e:  # pragma: no cover - failure path
            pytest.fail(f"{label}: {'.'.join(map(str, e.path))}: {e.message}")
    # strict mode really rejects unknown fields
    bad = copy.deepcopy(dict(objects)["web.yaml:Service/web"])
    bad["spec"]["selectr"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, f"{KUBE_VERSION}.0", strict=True)


def test_example_manifests_are_consistent() -> None:
    objects = dict(_example_objects())
    for label, obj in objects.items():
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] == "bookshop", label
    services = {o["metadata"]["name"]: o for o in objects.values() if o["kind"] == "Service"}
    definitions = {}
    for svc in services.values():
        raw = svc["metadata"].get("annotations", {}).get("kardinal.dev.service/plugin-definition")
        if raw:
            for entry in yamlc.safe_load(raw):
                assert set(entry) == {"name", "type", "servicename", "args"}
                assert all(isinstance(v, str) for v in entry["args"].values())
                definitions[entry["servicename"]] = entry
    assert {k: (v["name"], v["type"]) for k, v in definitions.items()} == {
        "seed-orders-db": ("postgres-seed", "stateful"),
        "stripe-test-mode": ("./plugins/stripe-test-mode", "external"),
    }
    assert (BOOKSHOP / "plugins" / "stripe-test-mode" / "main.py").is_file()
    assert (ROOT / "plugins" / "postgres-seed" / "main.py").is_file()
    edges = set()
    for name, svc in services.items():
        annotations = svc["metadata"].get("annotations", {})
        for dep in filter(None, annotations.get("kardinal.dev.service/dependencies", "").split(",")):
            target, port = dep.split(":")
            assert port in [p["name"] for p in services[target]["spec"]["ports"]], dep
            edges.add((name, target, port))
        for plugin in filter(None, annotations.get("kardinal.dev.service/plugins", "").split(",")):
            assert plugin in definitions, plugin
    assert edges == {("web", "catalog", "http"), ("web", "orders", "http"), ("orders", "orders-db", "tcp")}
    # every Service with a selector matches exactly one workload through its metadata.labels
    workloads = [o for o in objects.values() if o["kind"] in ("Deployment", "StatefulSet")]
    for name, svc in services.items():
        selector = svc.get("spec", {}).get("selector")
        if selector:
            matches = [w for w in workloads if selector.items() <= w["metadata"]["labels"].items()]
            assert [w["metadata"]["name"] for w in matches] == [name]
