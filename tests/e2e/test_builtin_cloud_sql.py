"""The managed-database built-ins' output is what a cluster accepts: every object of a flow rendered with cloud-sql
or azure-sql (named by short name) passes strict validation (core kinds
with kubernetes-validate, Config Connector's SQL CRDs v1.155.1, ASO's ServersDatabase JSON Schema), the flow
directory builds with `kubectl kustomize`, and no byte of the written flow carries the repository's password."""

from __future__ import annotations

import base64
import copy

import jsonschema
import pytest
from support import kubectl_kustomize, validate_strict
from support.cloud_sql import CLOUD_DATABASES, CLOUD_SECRET, cloud_shop

from renderer import api

PLUGINS = sorted(CLOUD_DATABASES)


def kinds_and_names(objects: list[dict]) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in objects)


@pytest.mark.parametrize("plugin", PLUGINS)
def test_flow_is_valid_builds_and_is_secret_free(harness, plugin):
    cloud_shop(harness, plugin)
    result = harness.render("pr-7", {"shop": "example.com/shop:2"})
    added = [o for o in result.main.objects if o["kind"] in CLOUD_DATABASES[plugin]["kinds"]]
    assert sorted(o["kind"] for o in added) == CLOUD_DATABASES[plugin]["kinds"]
    for flow in result.flows:
        for obj in flow.objects:
            validate_strict(obj)
    out = harness.tmp / "out"
    paths = api.write(result, out)
    assert kinds_and_names(kubectl_kustomize(paths[0])) == kinds_and_names(result.main.objects)
    leaks = [CLOUD_SECRET.encode(), base64.b64encode(CLOUD_SECRET.encode())]
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and not [p for p in written for leak in leaks if leak in p.read_bytes()]




@pytest.mark.parametrize(("kind", "path"), [
    ("SQLInstance", ("spec", "cloneSource", "sqlInstanceRef")),
    ("SQLUser", ("spec", "password", "valueFrom")),
    ("ServersDatabase", ("spec", "sourceDatabaseReference")),
])
def test_the_validation_is_strict(harness, kind, path):
    """The control: an invented field where the plugins write refs fails, so a passing check means something."""
    plugin = "azure-sql" if kind == "ServersDatabase" else "cloud-sql"
    cloud_shop(harness, plugin)
    obj = copy.deepcopy(next(o for o in harness.render("pr-7", {"shop": "example.com/shop:2"}).main.objects
                             if o["kind"] == kind))
    validate_strict(obj)
    target = obj
    for key in path:
        target = target[key]
    target["invented"] = "x"
    with pytest.raises(jsonschema.ValidationError):
        validate_strict(obj)
