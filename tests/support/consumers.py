"""The real consumers of rendered output: `kubectl kustomize`, strict Kubernetes schemas, upstream CRDs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from . import yamlc
from .paths import CRDS, KUBE_VERSION


def kubectl_kustomize(directory: Path) -> list[dict]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    out = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [d for d in yamlc.safe_load_all(out.stdout) if d]


def validate_strict(obj: dict) -> None:
    """Strict offline schema validation (Kubernetes 1.31), or against the upstream CRD when it is a CR."""
    import kubernetes_validate

    try:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        validate_against_crd(obj)


def validate_against_crd(obj: dict) -> None:
    """Against the upstream schema, made strict the way the API server prunes: an object schema that lists
    its properties (and does not preserve unknown fields) rejects any other field, so a misspelt or
    invented field fails here instead of being silently dropped by the cluster."""
    import jsonschema

    jsonschema.Draft7Validator(crd_schema(obj["apiVersion"], obj["kind"])).validate(obj)


_CRD_CACHE: dict[tuple[str, str], dict] = {}
_CRD_FILES_READ: set[str] = set()

# ASO v2 publishes no CRD file: datree's JSON Schema conversions stand in (see ../shared/crds/README.md).
_JSON_SCHEMAS = {"serversdatabase_v1api20211101.json": ("sql.azure.com/v1api20211101", "ServersDatabase"),
                 "server_v1api20211101.json": ("sql.azure.com/v1api20211101", "Server")}


def _strict(schema: dict) -> dict:
    """A copy of an openAPIV3Schema where every object with `properties` allows no others (the API server's
    pruning, made an error), `metadata` keeps the generic ObjectMeta shape, and nested schemas follow."""
    if not isinstance(schema, dict):
        return schema
    out = {k: (_strict(v) if k in ("items", "additionalProperties", "not") else v) for k, v in schema.items()}
    for key in ("properties", "patternProperties", "definitions"):
        if key in schema:
            out[key] = {name: _strict(sub) for name, sub in schema[key].items()}
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            out[key] = [_strict(sub) for sub in schema[key]]
    if ("properties" in schema and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def crd_schema(api_version: str, kind: str) -> dict:
    if not CRDS.exists():
        pytest.skip("upstream CRDs not available")
    key = (api_version, kind)
    if key not in _CRD_CACHE:
        group = api_version.split("/")[0]
        for f in sorted([*CRDS.rglob("*.yaml"), *CRDS.rglob("*.yml")]):  # megabytes in all: parsed only where the
            # group and kind appear
            if str(f) in _CRD_FILES_READ:
                continue
            text = f.read_text()
            if group not in text or f"kind: {kind}" not in text:
                continue
            _CRD_FILES_READ.add(str(f))
            for doc in yamlc.safe_load_all(text):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                spec = doc["spec"]
                for v in spec["versions"]:
                    _CRD_CACHE[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = strict_root(
                        v["schema"]["openAPIV3Schema"])
        for f in sorted(CRDS.rglob("*.json")):
            if _JSON_SCHEMAS.get(f.name) == key:
                _CRD_CACHE[key] = strict_root(json.loads(f.read_text()))
    assert key in _CRD_CACHE, f"no CRD for {key}"
    return _CRD_CACHE[key]


def strict_root(schema: dict) -> dict:
    """The strict schema, with `metadata` checked as ObjectMeta's usual fields (CRDs leave it open) and
    apiVersion/kind required."""
    strict = _strict(schema)
    props = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, **strict.get("properties", {})}
    props["metadata"] = {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
        "name": {"type": "string"}, "namespace": {"type": "string"}, "generateName": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}}}}
    return {**strict, "properties": props, "required": sorted({*strict.get("required", []), "apiVersion", "kind"})}
