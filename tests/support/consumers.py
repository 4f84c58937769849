"""The real consumers of rendered output: `kubectl kustomize`, strict Kubernetes schemas, upstream CRDs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from .paths import CRDS, KUBE_VERSION


def kubectl_kustomize(directory: Path) -> list[dict]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    out = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def validate_strict(obj: dict) -> None:
    """Strict offline schema validation (Kubernetes 1.31), or against the upstream CRD when it is a CR."""
    import kubernetes_validate

    try:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        validate_against_crd(obj)


def validate_against_crd(obj: dict) -> None:
    import jsonschema

    jsonschema.Draft7Validator(crd_schema(obj["apiVersion"], obj["kind"])).validate(obj)


_CRD_CACHE: dict[tuple[str, str], dict] = {}


def crd_schema(api_version: str, kind: str) -> dict:
    if not CRDS.exists():
        pytest.skip("upstream CRDs not available")
    if not _CRD_CACHE:
        for f in sorted(CRDS.rglob("*.yaml")):
            for doc in yaml.safe_load_all(f.read_text()):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                group = doc["spec"]["group"]
                for v in doc["spec"]["versions"]:
                    _CRD_CACHE[(f"{group}/{v['name']}", doc["spec"]["names"]["kind"])] = v["schema"]["openAPIV3Schema"]
    key = (api_version, kind)
    assert key in _CRD_CACHE, f"no CRD for {key}"
    return _CRD_CACHE[key]
