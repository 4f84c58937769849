"""The tests' CRD check is strict: an invented field anywhere in a custom resource fails, as it would be
pruned by the API server, and the ASO JSON Schemas stand in for the CRDs ASO does not publish."""

from __future__ import annotations

import jsonschema
import pytest
from support import validate_strict

QUEUE = {"apiVersion": "sqs.services.k8s.aws/v1alpha1", "kind": "Queue",
         "metadata": {"name": "orders-pr-7"}, "spec": {"queueName": "orders-pr-7"}}
DATABASE = {"apiVersion": "sql.azure.com/v1api20211101", "kind": "ServersDatabase",
            "metadata": {"name": "db-pr-7"},
            "spec": {"owner": {"name": "server"}, "createMode": "Copy", "location": "westeurope"}}


@pytest.mark.parametrize("good", [QUEUE, DATABASE], ids=["ack-crd", "aso-json-schema"])
def test_a_valid_custom_resource_passes(good):
    validate_strict(good)


@pytest.mark.parametrize("good", [QUEUE, DATABASE], ids=["ack-crd", "aso-json-schema"])
@pytest.mark.parametrize("where", ["spec", "metadata", "top"])
def test_an_invented_field_fails(good, where):
    bad = {**good, "spec": dict(good["spec"]), "metadata": dict(good["metadata"])}
    (bad if where == "top" else bad[where])["inventedField"] = "x"
    with pytest.raises(jsonschema.ValidationError, match="inventedField"):
        validate_strict(bad)


def test_a_missing_required_field_fails():
    with pytest.raises(jsonschema.ValidationError, match="'name' is a required property"):
        validate_strict({**QUEUE, "metadata": {}})
