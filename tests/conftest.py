"""Shared test helpers: the Kardinal demo data (used in place, never copied into the project),
stand-in plugins, a CLI runner, and the real consumers (kubectl kustomize, kubernetes-validate)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = (ROOT / ".." / "shared").resolve()
DEMO = SHARED / "seeds-data" / "kardinal-demo"
CRDS = SHARED / "crds"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
STANDINS = FIXTURES / "kardinal-standins"
EXAMPLE = ROOT / "examples" / "bookshop"
KUBE_VERSION = "1.31"

# Kardinal's plugin repos, mapped onto our own stand-ins (same contract, no network).
STANDIN_SOURCES = {
    "github.com/kurtosis-tech/jsdelivr-api-plugin": "jsdelivr-api",
    "github.com/leoporoli/jsdelivr-api-plugin": "jsdelivr-api",
    "github.com/kurtosis-tech/postgres-seed-plugin": "postgres-seed",
    "github.com/leoporoli/postgres-seed-plugin": "postgres-seed",
    "github.com/kurtosis-tech/neondb-plugin": "neon-branch",
    "github.com/kurtosis-tech/redis-sidecar-plugin": "redis-sidecar",
}


def standin_sources() -> dict[str, str]:
    return {name: str(STANDINS / d) for name, d in STANDIN_SOURCES.items()}


def standin_flags() -> list[str]:
    return [f"--plugin-source={n}={p}" for n, p in standin_sources().items()]


def demo_file(name: str) -> Path:
    path = DEMO / name
    if not path.exists():
        pytest.skip(f"Kardinal demo data not available ({path})")
    return path


@pytest.fixture
def demo_repo(tmp_path):
    """Make a repo in a temp dir holding one Kardinal demo manifest (read from ../shared)."""

    def make(name: str) -> Path:
        repo = tmp_path / "repo"
        repo.mkdir(exist_ok=True)
        shutil.copy(demo_file(name), repo / "manifest.yaml")
        return repo

    return make


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    """Run the real `devlane` CLI in a subprocess, as a user would."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "renderer.cli", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


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

    schema = crd_schema(obj["apiVersion"], obj["kind"])
    jsonschema.Draft7Validator(schema).validate(obj)


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


def app_yaml(name: str, plugins: str | None = None, containers: list[dict] | None = None, port: int = 80) -> str:
    """A Deployment and the Service selecting it (annotated with the Kardinal plugins it uses), as a YAML
    stream ending with `---`, for tests that build small repositories."""
    containers = containers or [{"name": "main", "image": f"{name}:1"}]
    annotations = "{}" if plugins is None else f"{{kardinal.dev.service/plugins: {json.dumps(plugins)}}}"
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n"
        f"  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n"
        f"    spec: {{containers: {json.dumps(containers)}}}\n---\n"
        f"apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  annotations: {annotations}\nspec:\n"
        f"  selector: {{app: {name}}}\n  ports: [{{name: http, port: {port}}}]\n---\n"
    )
