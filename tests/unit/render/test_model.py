"""The model of a repository (`renderer.render.model.topology.build_model`): Kardinal annotations, Service -> workload
matching, target containers, stateful/external services, plugin definitions, and problems it records."""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml
from support import yamlc

from renderer.errors import Problem
from renderer.render.inputs.document import Document
from renderer.render.model.records import Model
from renderer.render.model.topology import build_model


def docs(text: str, file: str = "app.yaml") -> list[Document]:
    return [Document(d, file, i) for i, d in enumerate(yamlc.safe_load_all(textwrap.dedent(text))) if d]


def errors(model: Model) -> list[Problem]:
    return [p for p in model.problems if p.severity == "error"]


def warnings(model: Model) -> list[Problem]:
    return [p for p in model.problems if p.severity == "warning"]


def deployment(name: str, app: str, kind: str = "Deployment", containers: str = "[{name: main, image: x}]") -> str:
    return f"""
    apiVersion: apps/v1
    kind: {kind}
    metadata: {{name: {name}}}
    spec:
      selector: {{matchLabels: {{app: {app}}}}}
      template:
        metadata: {{labels: {{app: {app}}}}}
        spec: {{containers: {containers}}}
    ---"""


def service(name: str, app: str | None, annotations: dict | None = None, port: str = "http", http: bool = True) -> str:
    ann = json.dumps(annotations or {})
    sel = f"selector: {{app: {app}}}" if app else ""
    proto = "appProtocol: HTTP" if http else ""
    return f"""
    apiVersion: v1
    kind: Service
    metadata: {{name: {name}, annotations: {ann}}}
    spec:
      {sel}
      ports: [{{name: {port}, port: 80, {proto}}}]
    ---"""


def test_port_name_must_exist_on_target():
    model = build_model(docs(
        deployment("a", "a") + service("a", "a", {"kardinal.dev.service/dependencies": "b:grpc"})
        + deployment("b", "b") + service("b", "b")
    ))  # fmt: skip
    [problem] = errors(model)
    assert "Service b has no port named 'grpc'" in problem.message
    assert problem.hint == "port names of b: http (an unnamed port: its number)"


def test_selector_matches_pod_template_labels_not_workload_labels():
    text = """
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web-v1, labels: {app: something-else}}
    spec:
      selector: {matchLabels: {app: web, version: v1}}
      template:
        metadata: {labels: {app: web, version: v1}}
        spec: {containers: [{name: main, image: x}]}
    ---""" + service("web", "web")
    model = build_model(docs(text))
    assert model.services["web"].workload.doc.name == "web-v1"


def test_ambiguous_selector_is_recorded_not_an_error_and_a_named_workload_resolves_it():
    """One Service over three versioned Deployments blocks only the flows that need its dev version (plan tests)."""
    two = deployment("web-v1", "web") + deployment("web-v2", "web")
    model = build_model(docs(two + service("web", "web")))
    assert not errors(model)
    assert model.services["web"].workload is None
    assert sorted(w.doc.name for w in model.services["web"].ambiguous) == ["web-v1", "web-v2"]
    model = build_model(docs(two + service("web", "web", {"devlane.dev/workload": "web-v2"})))
    assert not errors(model) and model.services["web"].workload.doc.name == "web-v2"


def test_stateful_defaults_and_overrides():
    model = build_model(docs(
        deployment("db", "db", "StatefulSet") + service("db", "db", http=False)
        + deployment("cache", "cache", "StatefulSet")
        + service("cache", "cache", {"kardinal.dev.service/stateful": "false"})
        + deployment("q", "q") + service("q", "q", {"kardinal.dev.service/stateful": "true"})
        + deployment("x", "x") + service("x", "x", {"kardinal.dev.service/stateful": "yes"})
    ))  # fmt: skip
    assert [model.services[n].stateful for n in ("db", "cache", "q")] == [True, False, True]
    assert [p.message for p in errors(model)] == [
        'annotation kardinal.dev.service/stateful must be "true" or "false", got \'yes\''
    ]


def test_target_container_by_annotation_else_first():
    two = "[{name: sidecar, image: s}, {name: app, image: a}]"
    model = build_model(docs(
        deployment("a", "a", containers=two) + service("a", "a", {"devlane.dev/container": "app"})
        + deployment("b", "b", containers=two) + service("b", "b")
        + deployment("c", "c", containers=two) + service("c", "c", {"devlane.dev/container": "nope"})
    ))  # fmt: skip
    assert model.services["a"].container == "app"
    assert model.services["b"].container == "sidecar"
    assert "devlane.dev/container: nope is not a container" in errors(model)[0].message


@pytest.mark.parametrize("value", ["- {name: x}", "[1, 2", "just a string"])
def test_bad_plugin_definitions_are_reported(value):
    text = f"""
    apiVersion: v1
    kind: Service
    metadata:
      name: defs
      annotations:
        kardinal.dev.service/plugin-definition: {json.dumps(value)}
    """
    model = build_model(docs(text))
    assert errors(model) and all(p.code == "bad-plugin-definition" for p in errors(model))


def test_plugin_args_keep_their_literal_text_as_kardinal_does():
    text = """
    apiVersion: v1
    kind: Service
    metadata:
      name: defs
      annotations:
        kardinal.dev.service/plugin-definition: |
          - name: x
            type: stateful
            serviceName: seed
            args: {count: 007, flag: yes, ratio: 1e3, empty: }
    """
    model = build_model(docs(text))
    assert model.plugin_defs["seed"].args == {"count": "007", "flag": "yes", "ratio": "1e3", "empty": ""}


def test_unknown_devlane_annotation_and_wrong_kind_are_reported():
    text = deployment("a", "a").replace("metadata: {name: a}", "metadata: {name: a, annotations: "
                                        "{kardinal.dev.service/dependencies: 'b:http'}}")  # fmt: skip
    model = build_model(docs(text + service("a", "a", {"devlane.dev/contianer": "x"})))
    assert [p.code for p in errors(model)] == ["unknown-key"]
    assert "is not read: Service a selects it" in warnings(model)[0].message


def test_dependency_on_an_external_service_needs_its_plugin():
    ext = service("stripe", None, {"kardinal.dev.service/external": "true"})
    caller = service("pay", "pay", {"kardinal.dev.service/dependencies": "stripe:http"})
    model = build_model(docs(deployment("pay", "pay") + caller + ext))
    assert [p.code for p in errors(model)] == ["external-without-plugin"]
    defined = """
    apiVersion: v1
    kind: Service
    metadata:
      name: stripe-def
      annotations:
        kardinal.dev.service/plugin-definition: "[{name: dummy, type: external, servicename: stripe}]"
    ---"""
    caller = service("pay", "pay", {"kardinal.dev.service/dependencies": "stripe:http",
                                    "kardinal.dev.service/plugins": "stripe"})  # fmt: skip
    model = build_model(docs(deployment("pay", "pay") + caller + ext + defined))
    assert not errors(model)
    assert model.externals["stripe"] == ["pay"]


@pytest.mark.parametrize(("kind", "key"), [("Ingress", "ingress"), ("Service", "stateful"), ("Service", "external"),
                                          ("Service", "shared")])
def test_a_flag_that_is_not_true_or_false_names_its_object(kind, key):
    """Every Kardinal flag annotation, on every kind that reads one, is refused with its object's location."""
    spec = "{rules: [{host: a.example.com}]}" if kind == "Ingress" else "{ports: [{name: http, port: 80}]}"
    api = "networking.k8s.io/v1" if kind == "Ingress" else "v1"
    model = build_model(docs(f"""
        apiVersion: {api}
        kind: {kind}
        metadata: {{name: web, annotations: {{kardinal.dev.service/{key}: "maybe"}}}}
        spec: {spec}
        """, file="web.yaml"))
    (problem,) = errors(model)
    assert problem.message == f"annotation kardinal.dev.service/{key} must be \"true\" or \"false\", got 'maybe'"
    assert problem.where.file == "web.yaml" and problem.where.object == f"{kind}/web"


@pytest.mark.parametrize(("obj", "expected"), [
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "a"},
                                                          "annotations": {"k": "v"}}},
     ("Service", "v1", "a", "ns", {"k": "v"}, {"app": "a"})),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": 7, "namespace": "", "labels": None}},
     ("Deployment", "apps/v1", "7", None, {}, {})),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": ["not", "a", "map"]}},
     ("ConfigMap", "v1", "c", None, {}, {})),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": "not a map"}, ("Secret", "v1", "", None, {}, {})),
    ({"kind": "Namespace"}, ("Namespace", "", "", None, {}, {})),
], ids=["full", "numeric-name", "list-annotations", "bad-metadata", "bare"])
def test_a_documents_metadata_fields_loaded_or_read_lazily(obj, expected):
    """Loading sets a Document's metadata fields at once; a Document made elsewhere computes them on first
    read. Both give the same values, whatever shape the metadata has."""
    fields = ("kind", "api_version", "name", "namespace", "annotations", "labels")
    eager, lazy = Document.loaded(obj, "f.yaml", 0), Document(obj, "f.yaml", 0)
    assert all(f in eager.__dict__ for f in fields)  # set, not computed on first use
    assert "kind" not in lazy.__dict__
    assert tuple(getattr(eager, f) for f in fields) == expected
    assert tuple(getattr(lazy, f) for f in fields) == expected


def test_a_plugin_definition_on_an_apps_own_service_is_said():
    """Kardinal reads a Service with a plugin-definition as a pseudo-Service: its selector and plugins would be
    dropped silently (FTGO's order service, annotated in place, lost its kafka-topic that way)."""
    definition = [{"name": "kafka-topic", "type": "external", "servicename": "events", "args": {"cluster": "k"}}]
    holder = {"kardinal.dev.service/plugin-definition": yaml.safe_dump(definition)}
    model = build_model(docs(
        deployment("orders", "orders")
        + service("orders", "orders", {**holder, "kardinal.dev.service/plugins": "events"})
        + service("defs", None, {"kardinal.dev.service/plugin-definition": yaml.safe_dump(
            [{**definition[0], "servicename": "other"}])})), None)
    [said] = [p for p in warnings(model) if p.code == "definition-holder"]  # the pseudo-Service defs: nothing
    assert "Service orders holds a kardinal.dev.service/plugin-definition" in said.message
    assert "its selector, kardinal.dev.service/plugins ignored" in said.message
