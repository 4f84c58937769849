"""A lane in its own namespace keeps its OpenTelemetry agents (issue 44, point 7): with the OpenTelemetry
Operator's real CRD (`opentelemetry.io_instrumentations.yaml`, from a fetched snapshot of
open-telemetry/opentelemetry-operator; skipped without it) in the repository, the `Instrumentation` devlane makes
or copies into the flow namespace is valid against that CRD (made strict as the API server prunes), and carries
`tracecontext` and `baggage`."""

from __future__ import annotations

import jsonschema
import pytest
from support import yaml_doc, yamlc
from support.consumers import strict_root
from support.mirror import export, snapshot

pytestmark = pytest.mark.e2e

CRD_PATH = "config/crd/bases/opentelemetry.io_instrumentations.yaml"


@pytest.fixture(scope="module")
def crd_text(tmp_path_factory) -> str:
    git_dir = snapshot("open-telemetry+opentelemetry-operator", "DEVLANE_OTEL_OPERATOR")
    return export(git_dir, CRD_PATH, tmp_path_factory.mktemp("otel")).read_text()


def _app(inject: str, extra: str = "") -> str:
    pod = {"metadata": {"labels": {"app": "api"}, "annotations": {
        "instrumentation.opentelemetry.io/inject-python": inject}},
        "spec": {"containers": [{"name": "main", "image": "api:1"}]}}
    return (yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "shop"},
                      "spec": {"selector": {"app": "api"}, "ports": [{"name": "http", "port": 80}]}})
            + yaml_doc({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": "shop"},
                        "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": pod}}) + extra)


@pytest.mark.parametrize("baseline", [False, True], ids=["made", "copied"])
def test_the_lanes_instrumentation_is_valid_against_the_operators_crd(harness, crd_text: str, baseline: bool):
    crd = yamlc.safe_load(crd_text)
    served = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    own = yaml_doc({"apiVersion": f"opentelemetry.io/{served['name']}", "kind": "Instrumentation",
                    "metadata": {"name": "python", "namespace": "shop"},
                    "spec": {"exporter": {"endpoint": "http://otel-collector.observability:4318"},
                             "propagators": ["tracecontext"], "sampler": {"type": "parentbased_traceidratio",
                                                                           "argument": "0.25"}}})
    harness.write("app.yaml", _app("true", own if baseline else ""))
    harness.write("crds/instrumentations.yaml", crd_text)
    harness.config({"isolation": "namespace"})
    result = harness.render("pr-1", {"api": "api:2"})
    [made] = [o for f in result.flows for o in f.objects if o["kind"] == "Instrumentation"]
    assert made["metadata"]["namespace"] == "shop-pr-1"
    assert made["spec"]["propagators"] == ["tracecontext", "baggage"]
    if baseline:  # the baseline's own settings kept
        assert made["spec"]["exporter"] == {"endpoint": "http://otel-collector.observability:4318"}
    version = made["apiVersion"].split("/")[1]
    schema = next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]
    jsonschema.Draft7Validator(strict_root(schema)).validate(made)
    assert not [p for p in result.warnings if "Instrumentation" in p.message]


def test_the_operators_crd_lists_the_version_devlane_makes(crd_text: str):
    """devlane makes `opentelemetry.io/v1alpha1` Instrumentations: the CRD must serve it."""
    crd = yamlc.safe_load(crd_text)
    assert any(v["name"] == "v1alpha1" and v.get("served") for v in crd["spec"]["versions"])
    assert "baggage" in str(crd)  # a propagator the CRD's enum admits


