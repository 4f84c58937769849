"""Mesh routing on the bundled example and Kardinal's demos, in both mesh modes, checked as the cluster would.

Each case renders with the real CLI and `--validate strict --crds` (the upstream Gateway API and Istio CRDs),
builds every flow directory and `flows/_mesh/` with `kubectl kustomize`, and then asks `support.mesh_model`, a
model of GAMMA and Istio routing written from their specifications, where requests go: with the flow's baggage
member every routed Service leads to the dev copy where the flow has one, and to the baseline otherwise; without
it (or with a look-alike), to the baseline. The real public apps are in `test_realworld_isolation.py`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import CRDS, EXAMPLE, demo_file, kubectl_kustomize, run_cli, standin_flags, validate_strict, yamlc
from support.isolation import load_flow, load_yaml_files
from support.mesh_model import check_mesh_flow, entry_adds_member

MODES = ["gateway-api", "istio"]


def crd_flags() -> list[str]:
    if not (CRDS / "gateway-api").is_dir() or not (CRDS / "istio").is_dir():
        pytest.skip("upstream Gateway API / Istio CRDs not available")
    return ["--validate", "strict", "--crds", str(CRDS / "gateway-api"), "--crds", str(CRDS / "istio")]


@dataclass(frozen=True)
class Case:
    id: str
    flow: list[str]  # the flow's flags
    manifests: str  # glob of the baseline manifests in the repository
    demo: str | None = None  # a Kardinal demo file, else the bookshop example
    config: str = ""  # .devlane.yaml to write (demos)
    dev: tuple[str, ...] = ()  # Services that must get a dev copy
    baseline: tuple[str, ...] = ()  # Services on the entry path that stay baseline on a mesh
    plugins: bool = False  # the demo's plugins run as stand-ins


CASES = [
    Case("bookshop", ["--flow-file", "flows/pr-7.yaml"], "k8s/*.yaml", dev=("orders", "orders-db"), baseline=("web",)),
    Case("new-obd (HTTPRoute entry)", ["--flow", "pr-7", "--service", "cartservice=kurtosistech/cartservice:pr-7"],
         "*.yaml", demo="new-obd__release__obd-kardinal.yaml", dev=("cartservice",), baseline=("frontend",),
         plugins=True),
    Case("kontrol-obd (Service entry, mesh.gateway)",
         ["--flow", "pr-7", "--service", "productcatalogservice=kurtosistech/productcatalogservice:pr-7"], "*.yaml",
         demo="kardinal-kontrol__ci__obd-demo.yaml",
         config="mesh:\n  gateway: istio-system/public\ndomain: dev.example.com\n",
         dev=("productcatalogservice",), baseline=("frontend",), plugins=True),
]  # fmt: skip


def repository(case: Case, tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    if case.demo is None:
        shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("rendered"))
    else:
        repo.mkdir()
        shutil.copy(demo_file(case.demo), repo / "manifest.yaml")
        (repo / ".devlane.yaml").write_text(case.config)
    return repo


@pytest.mark.parametrize("routing", MODES)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_mesh_flow_is_valid_builds_and_routes_by_the_header(case: Case, routing: str, tmp_path: Path):
    repo = repository(case, tmp_path)
    out = tmp_path / "out"
    extra = standin_flags() if case.plugins else []
    r = run_cli("render", str(repo), *case.flow, "--routing", routing, "--out", str(out), *crd_flags(), *extra,
                timeout=120, cwd=repo)
    assert r.returncode == 0, r.stderr
    assert "validated" in r.stderr and "not validated" not in r.stderr, r.stderr  # every route against its CRD

    flow_dir = out / "flows" / "pr-7"
    objects = load_flow(flow_dir)
    built = kubectl_kustomize(flow_dir)
    assert len(built) == len(objects)
    shared: list[dict] = []
    if routing == "istio":
        shared = kubectl_kustomize(out / "flows" / "_mesh")
        assert shared and {o["kind"] for o in shared} == {"VirtualService"}
        assert not [o for o in objects if o["kind"] in ("HTTPRoute", "GRPCRoute") and
                    any(p.get("kind") == "Service" for p in o["spec"].get("parentRefs") or [])]
    else:
        assert not (out / "flows" / "_mesh").exists()
    for obj in [*built, *shared]:
        validate_strict(obj)

    baseline = load_yaml_files(sorted(repo.glob(case.manifests)))
    names = {o["metadata"]["name"] for o in objects if o["kind"] == "Service"}
    for svc in case.dev:
        assert f"{svc}-pr-7" in names, f"no dev copy of {svc}"
    for svc in case.baseline:
        assert f"{svc}-pr-7" not in names, f"{svc} is on the entry path, reached through the mesh: no copy"
    violations = check_mesh_flow(baseline, [*objects, *shared], "pr-7")
    assert not violations, "\n".join(violations)
    assert entry_adds_member(objects, "pr-7")
    meta = yamlc.safe_load((flow_dir / "flow.metadata").read_text())
    assert meta["mesh"]["mode"] == routing and meta["mesh"]["member"] == "devlane-flow=pr-7"
    assert "## Routing: " + routing in (flow_dir / "README.md").read_text()


def test_the_model_sees_a_broken_route(tmp_path: Path):
    """The model used above fails when the catch-all is gone: it checks what the objects say."""
    case = CASES[0]
    repo = repository(case, tmp_path)
    r = run_cli("render", str(repo), *case.flow, "--routing", "gateway-api", "--stdout", cwd=repo)
    assert r.returncode == 0, r.stderr
    objects = [d for d in yamlc.safe_load_all(r.stdout) if d]
    baseline = load_yaml_files(sorted(repo.glob(case.manifests)))
    assert check_mesh_flow(baseline, objects, "pr-7") == []
    route = next(o for o in objects if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "orders-pr-7")
    route["spec"]["rules"].pop()
    assert "orders with baggage 'othervendor=1' reaches None, not the baseline ('bookshop', 'orders')" in \
        check_mesh_flow(baseline, objects, "pr-7")
