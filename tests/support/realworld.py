"""The real-world inputs (../shared/realworld, used in place; skipped when absent): every kustomize directory and
Helm chart of the public apps there, and the service a one-service flow on each changes
(tests/e2e/test_realworld_inputs.py, tests/e2e/test_cache_corpora.py).

The flow's service is a Service selecting exactly one workload, else a lone workload; the `kind: Component`
directories are built through the overlays that use them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from renderer import api
from renderer.errors import DevlaneError
from renderer.render.flow import FlowRequest, resolve

from .isolation import pod_template, service_selects
from .paths import SHARED

REALWORLD = SHARED / "realworld"
FLOW = "pr-1"
IMAGE = "ghcr.io/example/dev:pr-1"
UMBRELLA = "retail-store-sample-app/src/app/chart"  # `file://` dependencies: built after `helm dependency build`
# Directories whose flow devlane refuses until the adopter says something, and what they say in .devlane.yaml
# (what the refusal says, the config, the annotation the config puts on the Service).
NEEDS_CONFIG = {
    "eks-workshop-retail-store/manifests/modules/fundamentals/storage/fsxl/deployment": (
        "PersistentVolumeClaim fsxl-claim, which is not in the repository", {"ui/ui": {"volume": "emptyDir"}},
        ("ui", "ui", "devlane.dev/volume", "emptyDir")),
}


def _inputs() -> list:
    if not REALWORLD.is_dir():
        skip = pytest.mark.skip(reason=f"real-world inputs not available ({REALWORLD})")
        return [pytest.param(None, None, marks=skip)]
    kustomizations = sorted({p.parent for p in REALWORLD.rglob("kustomization.yaml")
                             if (yaml.safe_load(p.read_text()) or {}).get("kind") != "Component"})
    charts = sorted(p.parent for p in REALWORLD.rglob("Chart.yaml"))
    return [*(pytest.param(d, "kustomize", id=d.relative_to(REALWORLD).as_posix()) for d in kustomizations),
            *(pytest.param(d, "helm", id=d.relative_to(REALWORLD).as_posix()) for d in charts)]


INPUTS = _inputs()  # pytest params (directory, "kustomize" or "helm"), one per input


def helm_bin() -> str:
    found = shutil.which("helm")
    if found is None:
        pytest.skip("helm not installed (run tests/setup_helm.sh)")
    return found


def target(objects: list[dict]) -> str | None:
    """A Service that selects exactly one workload in its namespace, else a lone workload; None: no workload."""
    workloads = [o for o in objects if pod_template(o) is not None]
    for svc in sorted((o for o in objects if o["kind"] == "Service"), key=lambda o: o["metadata"]["name"]):
        ns = svc["metadata"].get("namespace")
        chosen = [w for w in workloads if w["metadata"].get("namespace") == ns
                  and (svc.get("spec") or {}).get("selector")
                  and service_selects(svc, (pod_template(w).get("metadata") or {}).get("labels") or {})]
        if len(chosen) == 1:
            return svc["metadata"]["name"] if not ns else f"{ns}/{svc['metadata']['name']}"
    names = sorted(w["metadata"]["name"] for w in workloads)
    return names[0] if names else None


def api_render(path: Path, service: str) -> api.RenderResult | DevlaneError:
    try:
        return api.render(api.Options(repo=path), resolve(FlowRequest(FLOW, {service: IMAGE})))
    except DevlaneError as exc:
        return exc


def umbrella_copy(tmp_path: Path) -> Path:
    """The retail umbrella chart in a temporary copy of its `src/`, with `helm dependency build` run there."""
    src = REALWORLD / UMBRELLA
    work = tmp_path / "src"
    shutil.copytree(src.parent.parent, work)
    chart = work / "app" / "chart"
    refused = api_render(chart, "carts")
    assert isinstance(refused, DevlaneError) and "helm dependency build" in str(refused.problems[0].hint)
    out = subprocess.run([helm_bin(), "dependency", "build", str(chart)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return chart
