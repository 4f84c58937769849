"""examples/flux end to end: `devlane render` (in-process, the bookshop's real plugins) writes the flow where the
example's flow Kustomization points, in a form Flux takes, and `kubectl kustomize` builds it; the same for the
inventory example, a kustomize overlay devlane builds itself (snapshot, strict validation, isolation computed
from the rendered objects against what `kubectl kustomize` builds of the overlay). The static checks of the
example files are in tests/cli/test_examples_flux.py."""

from __future__ import annotations

import json

from support import EXAMPLE, ROOT, kubectl_kustomize, tree, validate_strict, yamlc
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
