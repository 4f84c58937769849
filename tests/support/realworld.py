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
from renderer.render.plan.flow_spec import FlowRequest, resolve

from . import yamlc
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
# Directories of charts whose every release takes shared values files from that directory, as upstream deploys
# them (eShop's deploy-all.sh: --values app.yaml --values inf.yaml --values ingress_values.yaml).
SHARED_VALUES = {"eshoponcontainers/deploy/k8s/helm": ("app.yaml", "inf.yaml", "ingress_values.yaml")}
# Charts that take values files of their own instead (paths relative to the chart's directory's parent):
# eShop's tls-support is installed by hand with values-staging.yaml or values-prod.yaml, never by deploy-all.sh.
CHART_VALUES = {"eshoponcontainers/deploy/k8s/helm/tls-support": ("tls-support/values-staging.yaml",)}
# Inputs that build no object at all (eshop-common holds only template helpers).
EMPTY = {"eshoponcontainers/deploy/k8s/helm/eshop-common"}
# Inputs whose flow devlane refuses whatever the adopter configures, and what the refusal says.
REFUSED = {"yelb/deployments/platformdeployment/Kubernetes/chart/yelb": "apiVersion extensions/v1beta1, which "
           "Kubernetes no longer serves"}


def _inputs() -> list:
    if not REALWORLD.is_dir():
        skip = pytest.mark.skip(reason=f"real-world inputs not available ({REALWORLD})")
        return [pytest.param(None, None, marks=skip)]
    kustomizations = sorted({p.parent for p in REALWORLD.rglob("kustomization.yaml")
                             if (yamlc.safe_load(p.read_text()) or {}).get("kind") != "Component"})
    charts = sorted(p.parent for p in REALWORLD.rglob("Chart.yaml"))
    return [*(pytest.param(d, "kustomize", id=d.relative_to(REALWORLD).as_posix()) for d in kustomizations),
            *(pytest.param(d, "helm", id=d.relative_to(REALWORLD).as_posix()) for d in charts)]


INPUTS = _inputs()  # pytest params (directory, "kustomize" or "helm"), one per input


def chart_input(path: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """Where devlane renders the chart in `path` from, and the `helm template` arguments that build it alike:
    the chart as its own repository, released under its Chart.yaml name (devlane's name for a chart at a
    repository's top); or, for a chart of `SHARED_VALUES`, a temporary copy of its directory whose .devlane.yaml
    names the chart and the values files, released under the chart directory's name."""
    rel = path.relative_to(REALWORLD).as_posix() if path.is_relative_to(REALWORLD) else ""
    values = CHART_VALUES.get(rel) or SHARED_VALUES.get(rel.rsplit("/", 1)[0])
    if values is None:  # at the top of its repository, a chart is released as its Chart.yaml name
        top = app_top(path)
        name = path.name if top not in (None, path) else (yamlc.safe_load((path / "Chart.yaml").read_text()) or
                                                          {}).get("name") or "release"
        return path, [name.lower(), str(path)]
    copy = tmp_path / "with-values"
    shutil.copytree(path.parent, copy)
    (copy / ".devlane.yaml").write_text(yaml.safe_dump({"inputs": [{"helm": path.name, "values": list(values)}]}))
    return copy, [path.name, str(copy / path.name), *(x for v in values for x in ("--values", str(copy / v)))]


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


def app_top(path: Path) -> Path | None:
    """The repository an input lies in, as a checkout of the app would have it: the app's directory under
    REALWORLD or under a test's `copy/` of it (an overlay's bases lie elsewhere in the app); None for the
    self-contained copies (a chart with its values, the umbrella chart)."""
    for parent in (path, *path.parents):
        if parent.parent == REALWORLD or parent.parent.name == "copy":
            return parent
    return None


def api_render(path: Path, service: str) -> api.RenderResult | DevlaneError:
    try:
        return api.render(api.Options(repo=path, top=app_top(path)), resolve(FlowRequest(FLOW, {service: IMAGE})))
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
