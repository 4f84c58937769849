"""examples/flux end to end: `devlane render` (in-process, the bookshop's real plugins) writes the flow where the
example's flow Kustomization points, in a form Flux takes, and `kubectl kustomize` builds it; the same for the
inventory example, a kustomize overlay devlane builds itself (snapshot, strict validation, isolation computed
from the rendered objects against what `kubectl kustomize` builds of the overlay). The static checks of the
example files are in tests/cli/test_examples_flux.py."""

from __future__ import annotations

import json

from support import EXAMPLE, ROOT, kubectl_kustomize, tree, validate_strict, yamlc
from support.harness import git
from support.isolation import check_flow, load_flow

RENDER = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]


def test_the_flow_kustomization_builds_what_devlane_renders(harness):
    repo = harness.copy(EXAMPLE, "examples/bookshop")
    out = harness.cli("render", str(repo), *RENDER)
    assert out.returncode == 0, out.stderr
    (flow_ks,) = [d for d in yamlc.safe_load_all((ROOT / "examples" / "flux" / "kustomization-pr-7.yaml").read_text())
                  if d]  # fmt: skip
    flow_dir = harness.root / flow_ks["spec"]["path"]
    assert flow_dir.is_dir(), f"{flow_ks['spec']['path']} is not where devlane rendered the flow"
    files = sorted(p.name for p in flow_dir.iterdir())
    assert "flow.metadata" in files and "kustomization.yaml" in files
    json.loads((flow_dir / "flow.metadata").read_text())  # JSON, and not a .yaml Flux would parse
    listed = yamlc.safe_load((flow_dir / "kustomization.yaml").read_text())["resources"]
    manifests = [f for f in files if f.endswith(".yaml") and f != "kustomization.yaml"]
    assert sorted(listed) == manifests
    for name in manifests:
        obj = yamlc.safe_load((flow_dir / name).read_text())
        assert obj["apiVersion"] and obj["kind"] and obj["metadata"]["name"], name
        assert not any(k.startswith("kustomize.toolkit.fluxcd.io/") for k in obj["metadata"].get("labels") or {})
    built = kubectl_kustomize(flow_dir)
    assert len(built) == len(manifests)


def test_the_inventory_overlay_flow_is_where_its_kustomization_points(harness, snapshot):
    (flow_ks,) = [d for d in yamlc.safe_load_all(
        (ROOT / "examples" / "flux" / "kustomization-inventory-pr-7.yaml").read_text()) if d]  # fmt: skip
    harness.copy(ROOT / "examples" / "inventory", "examples/inventory")
    harness.git("init", "-q")  # a git repository, as Flux's source is: the overlay's base lies inside it
    overlay = harness.root / "examples" / "inventory" / "overlays" / "staging"
    out = harness.cli("render", str(overlay), "--flow", "pr-7", "--service", "api=ghcr.io/acme/inventory-api:pr-7")
    assert out.returncode == 0, out.stderr
    flow_dir = harness.root / flow_ks["spec"]["path"]
    assert flow_dir.is_dir(), f"{flow_ks['spec']['path']} is not where devlane rendered the flow"
    files = tree(flow_dir)
    assert {f: t.decode() for f, t in files.items()} == snapshot
    flow = load_flow(flow_dir)
    baseline = kubectl_kustomize(overlay)
    assert [str(v) for v in check_flow(baseline, flow, "pr-7")] == []
    generated = next(o["metadata"]["name"] for o in baseline if o["kind"] == "ConfigMap")
    api = next(o for o in flow if o["kind"] == "Deployment" and o["metadata"]["name"] == "api-pr-7")
    env_from = api["spec"]["template"]["spec"]["containers"][0]["envFrom"]
    assert env_from == [{"configMapRef": {"name": f"{generated}-pr-7"}}]  # the copy of the generated name
    copy = next(o for o in flow if o["kind"] == "ConfigMap")
    assert copy["data"]["REDIS_URL"] == "redis://redis-pr-7:6379/0" and copy["data"]["LOG_LEVEL"] == "debug"
    assert all(o["metadata"]["namespace"] == "inventory-staging" for o in flow)
    built = kubectl_kustomize(flow_dir)
    assert len(built) == len(flow) == 6
    for obj in built:
        validate_strict(obj)


def test_the_inventory_flow_in_namespace_isolation_is_what_flux_applies(harness):
    """The flow directory holds the flow Namespace: Flux applies it first, prunes it with the flow, and must not
    set spec.targetNamespace (the aliases need each object where devlane put it)."""
    from support.dns import check_namespace_flow

    harness.copy(ROOT / "examples" / "inventory", "examples/inventory")
    harness.git("init", "-q")  # a git repository, as Flux's source is: the overlay's base lies inside it
    overlay = harness.root / "examples" / "inventory" / "overlays" / "staging"
    out = harness.cli("render", str(overlay), "--flow", "pr-7", "--service", "api=ghcr.io/acme/inventory-api:pr-7",
                      "--isolation", "namespace")
    assert out.returncode == 0, out.stderr
    flow_dir = overlay / "rendered" / "flows" / "pr-7"
    flow = load_flow(flow_dir)
    assert ("Namespace", "inventory-staging-pr-7") in {(o["kind"], o["metadata"]["name"]) for o in flow}
    assert check_namespace_flow(kubectl_kustomize(overlay), flow, "pr-7") == []
    built = kubectl_kustomize(flow_dir)
    assert len(built) == len(flow)
    for obj in built:
        validate_strict(obj)
    (flow_ks,) = [d for d in yamlc.safe_load_all(
        (ROOT / "examples" / "flux" / "kustomization-inventory-pr-7.yaml").read_text()) if d]  # fmt: skip
    assert "targetNamespace" not in flow_ks["spec"]


def test_the_mesh_kustomization_builds_the_virtual_services_of_every_flow(harness):
    """Routing istio: two flows rendered into one output directory; the mesh Kustomization's path is the `_mesh`
    directory devlane rebuilt from both, it builds with kubectl, each VirtualService passes the Istio CRD and lists
    both flows, and no flow directory holds one of them (each holds only its entry's Gateway-bound one)."""
    (mesh_ks,) = [d for d in yamlc.safe_load_all((ROOT / "examples" / "flux" / "kustomization-mesh.yaml").read_text())
                  if d]  # fmt: skip
    repo = harness.copy(EXAMPLE, "examples/bookshop")
    for flow in ("pr-7", "pr-8"):  # catalog has no plugins
        out = harness.cli("render", str(repo), "--flow", flow, "--service", f"catalog=ghcr.io/acme/catalog:{flow}",
                          "--routing", "istio")
        assert out.returncode == 0, out.stderr
    mesh_dir = harness.root / mesh_ks["spec"]["path"]
    assert mesh_dir.is_dir(), f"{mesh_ks['spec']['path']} is not where devlane rendered flows/_mesh"
    built = kubectl_kustomize(mesh_dir)
    assert [o["kind"] for o in built] == ["VirtualService"]
    for vs in built:
        validate_strict(vs)
        assert [r["name"] for r in vs["spec"]["http"]] == ["flow-pr-7", "flow-pr-8", "baseline"]
    for flow in ("pr-7", "pr-8"):
        objects = kubectl_kustomize(mesh_dir.parent / flow)  # its entry's Gateway-bound VirtualService, no shared one
        assert [o["metadata"]["name"] for o in objects if o["kind"] == "VirtualService"] == [f"shop-{flow}"]


def test_the_lanes_kustomization_builds_every_lane_on_the_branch_and_prunes_a_removed_one(harness, tmp_path):
    """What CI commits with --lanes-branch is what kustomization-lanes.yaml applies: flows/ of the branch, with the
    kustomization Flux generates for a path that has none (each subdirectory with its own kustomization.yaml)."""
    (lanes_ks,) = [d for d in yamlc.safe_load_all((ROOT / "examples" / "flux" / "kustomization-lanes.yaml")
                                                   .read_text()) if d]  # fmt: skip
    (source,) = [d for d in yamlc.safe_load_all((ROOT / "examples" / "flux" / "gitrepository-lanes.yaml").read_text())
                 if d]  # fmt: skip
    branch = source["spec"]["ref"]["branch"]
    harness.copy(EXAMPLE)
    harness.commit("the bookshop")
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(harness.root), str(remote))
    harness.git("remote", "add", "origin", str(remote))
    for flow in ("pr-7", "pr-8"):
        out = harness.cli("render", "--flow", flow, "--service", f"orders=ghcr.io/acme/bookshop-orders:{flow}",
                          "--lanes-branch", branch)
        assert out.returncode == 0, out.stderr

    def applied() -> set[str]:
        checkout = tmp_path / f"lanes-{git(remote, 'rev-parse', branch)[:7]}"
        git(tmp_path, "clone", "-q", "--branch", branch, str(remote), str(checkout))
        path = checkout / lanes_ks["spec"]["path"]
        lanes = sorted(d.name for d in path.iterdir() if (d / "kustomization.yaml").is_file())
        (path / "kustomization.yaml").write_text(json.dumps({"resources": lanes}))  # as Flux generates it
        return {o["metadata"]["labels"]["devlane.dev/flow"] for o in kubectl_kustomize(path)}

    assert applied() == {"pr-7", "pr-8"}
    out = harness.cli("delete", "--flow", "pr-7", "--lanes-branch", branch)
    assert out.returncode == 0, out.stderr
    assert applied() == {"pr-8"}
