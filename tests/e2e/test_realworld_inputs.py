"""Every kustomize directory and Helm chart of the real-world apps (../shared/realworld, used in place; skipped
when absent), read by devlane itself: the model is exactly what `kubectl kustomize` / `helm template` build,
and a one-service flow renders from it, whose dev pods read only objects that exist in the build or the flow,
which the independent isolation checker passes, which `kubectl kustomize` builds and strict validation accepts.

The flow's service is chosen from the independent build (a Service selecting exactly one workload, else a lone
workload); the 21 `kind: Component` directories are built through the overlays that use them; a directory
that builds no workload (only ConfigMaps, say) has its model checked and no flow. Annotated flows on the same
inputs are in test_realworld_isolation.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support import SHARED, kubectl_kustomize, validate_strict
from support.isolation import check_flow, load_flow, pod_spec, pod_template, service_selects

from renderer import api
from renderer.errors import DevlaneError
from renderer.render.flow import FlowRequest, resolve

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (kustomize) not installed")]

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


INPUTS = _inputs()


def test_the_corpus_is_all_there():
    if not REALWORLD.is_dir():
        pytest.skip(f"real-world inputs not available ({REALWORLD})")
    kinds = [p.values[1] for p in INPUTS]
    assert kinds.count("kustomize") == 108 and kinds.count("helm") == 10


# --------------------------------------------------------------------------------------------------
# The independent build and the flow's target


def helm_bin() -> str:
    found = shutil.which("helm")
    if found is None:
        pytest.skip("helm not installed (run tests/setup_helm.sh)")
    return found


def built_by_the_tool(path: Path, kind: str) -> list[dict]:
    if kind == "kustomize":
        return kubectl_kustomize(path)
    release = path.name.lower()  # devlane's default release name: the chart directory's name
    out = subprocess.run([helm_bin(), "template", release, str(path), "--include-crds"], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def comparable(obj: dict) -> str:
    """An object as text for comparison; Secret values left out, since charts generate random passwords
    (two runs of `helm template` differ there)."""
    if obj.get("kind") == "Secret":
        obj = {k: v for k, v in obj.items() if k not in ("data", "stringData")}
    return yaml.safe_dump(obj, sort_keys=True)


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


# --------------------------------------------------------------------------------------------------
# The sweep


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


def api_render(path: Path, service: str) -> api.RenderResult | DevlaneError:
    try:
        return api.render(api.Options(repo=path), resolve(FlowRequest(FLOW, {service: IMAGE})))
    except DevlaneError as exc:
        return exc


@pytest.mark.parametrize("path,kind", INPUTS)
def test_a_flow_renders_from_every_realworld_input(path: Path, kind: str, tmp_path: Path):
    rel = path.relative_to(REALWORLD).as_posix()
    if kind == "helm":
        helm_bin()
    if rel == UMBRELLA:
        path = umbrella_copy(tmp_path)
    expected = built_by_the_tool(path, kind)
    service = target(expected)
    if service is None:  # nothing a flow could change: the model alone
        from renderer.core.source import open_source
        from renderer.render import load

        assert sorted(comparable(d.obj) for d in load.read(open_source(path, None)).documents) == sorted(
            comparable(o) for o in expected)
        return
    result = api_render(path, service)
    if rel in NEEDS_CONFIG:
        said, services, (ns, name, key, value) = NEEDS_CONFIG[rel]
        assert isinstance(result, DevlaneError) and said in str(result), result
        assert ".devlane.yaml" in str(result.problems[0].hint)
        path = tmp_path / "copy" / path.relative_to(REALWORLD)
        shutil.copytree(REALWORLD / rel.split("/", 1)[0], tmp_path / "copy" / rel.split("/", 1)[0])
        (path / ".devlane.yaml").write_text(yaml.safe_dump({"services": services}))
        result = api_render(path, service)
        svc = next(o for o in expected if o["kind"] == "Service" and o["metadata"]["name"] == name
                   and o["metadata"].get("namespace") == ns)  # fmt: skip
        svc["metadata"].setdefault("annotations", {})[key] = value
    assert not isinstance(result, DevlaneError), str(result)

    # the model is the build
    assert sorted(comparable(d.obj) for d in result.loaded.documents) == sorted(comparable(o) for o in expected)

    # the flow, as Argo CD or Flux would apply it
    out = tmp_path / "out"
    api.write(result, out)
    flow = load_flow(out / "flows" / FLOW)
    images = {c.get("image") for o in flow for c in pod_spec(o).get("containers") or []}
    assert IMAGE in images, f"{service}: the dev copy does not run the new image"
    violations = [str(v) for v in check_flow(expected, flow, FLOW) if v.kind != "unwired"]
    assert not violations, "\n".join(violations)
    built = kubectl_kustomize(out / "flows" / FLOW)
    assert len(built) == len(flow)
    for obj in built:
        validate_strict(obj)
