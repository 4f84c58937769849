"""examples/flux end to end: `devlane render` (in-process, the bookshop's real plugins) writes the flow where the
example's flow Kustomization points, in a form Flux takes, and `kubectl kustomize` builds it. The static checks of
the example files are in tests/cli/test_examples_flux.py."""

from __future__ import annotations

import json

import yaml
from support import EXAMPLE, ROOT, kubectl_kustomize

RENDER = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]


def test_the_flow_kustomization_builds_what_devlane_renders(harness):
    repo = harness.copy(EXAMPLE, "examples/bookshop")
    out = harness.cli("render", str(repo), *RENDER)
    assert out.returncode == 0, out.stderr
    (flow_ks,) = [d for d in yaml.safe_load_all((ROOT / "examples" / "flux" / "kustomization-pr-7.yaml").read_text())
                  if d]  # fmt: skip
    flow_dir = harness.root / flow_ks["spec"]["path"]
    assert flow_dir.is_dir(), f"{flow_ks['spec']['path']} is not where devlane rendered the flow"
    files = sorted(p.name for p in flow_dir.iterdir())
    assert "flow.metadata" in files and "kustomization.yaml" in files
    json.loads((flow_dir / "flow.metadata").read_text())  # JSON, and not a .yaml Flux would parse
    listed = yaml.safe_load((flow_dir / "kustomization.yaml").read_text())["resources"]
    manifests = [f for f in files if f.endswith(".yaml") and f != "kustomization.yaml"]
    assert sorted(listed) == manifests
    for name in manifests:
        obj = yaml.safe_load((flow_dir / name).read_text())
        assert obj["apiVersion"] and obj["kind"] and obj["metadata"]["name"], name
        assert not any(k.startswith("kustomize.toolkit.fluxcd.io/") for k in obj["metadata"].get("labels") or {})
    built = kubectl_kustomize(flow_dir)
    assert len(built) == len(manifests)
