"""examples/flux: every file a user applies is valid, and points at what `devlane render` writes."""

from __future__ import annotations

import json
import re
import shutil

import yaml
from conftest import EXAMPLE, ROOT, kubectl_kustomize, run_cli

FLUX = ROOT / "examples" / "flux"
KINDS = {
    "GitRepository": "source.toolkit.fluxcd.io/v1",
    "Kustomization": "kustomize.toolkit.fluxcd.io/v1",
    "ResourceSetInputProvider": "fluxcd.controlplane.io/v1",
    "ResourceSet": "fluxcd.controlplane.io/v1",
}
RENDER = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]


def _docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((FLUX / name).read_text()) if d]


def _all_objects() -> list[dict]:
    return [d for f in sorted(FLUX.glob("*.yaml")) for d in _docs(f.name)]


def test_every_file_is_a_flux_object_of_a_known_version():
    objects = _all_objects()
    assert {o["kind"] for o in objects} == set(KINDS)
    for obj in objects:
        assert obj["apiVersion"] == KINDS[obj["kind"]], obj["metadata"]["name"]
        assert obj["metadata"]["namespace"] == "flux-system"


def test_kustomizations_never_set_target_namespace_and_use_the_declared_source():
    objects = _all_objects()
    sources = {o["metadata"]["name"] for o in objects if o["kind"] == "GitRepository"}
    kustomizations = [o for o in objects if o["kind"] == "Kustomization"]
    assert len(kustomizations) == 2
    for k in kustomizations:
        assert "targetNamespace" not in k["spec"]
        assert k["spec"]["prune"] is True
        assert k["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "bookshop"}
        assert k["spec"]["sourceRef"]["name"] in sources


def test_the_flow_kustomization_builds_what_devlane_renders(tmp_path):
    repo = tmp_path / "examples" / "bookshop"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("rendered"))
    out = run_cli("render", str(repo), *RENDER)
    assert out.returncode == 0, out.stderr
    (flow_ks,) = [o for o in _docs("kustomization-pr-7.yaml")]
    flow_dir = tmp_path / flow_ks["spec"]["path"]
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


def test_resourceset_stamps_the_same_flow_kustomization_per_pull_request():
    provider, rset = _docs("resourceset-pull-requests.yaml")
    assert provider["spec"]["type"] == "GitHubPullRequest"
    assert rset["spec"]["inputsFrom"] == [{"kind": "ResourceSetInputProvider", "name": provider["metadata"]["name"]}]
    text = yaml.safe_dump(rset["spec"]["resources"])
    stamped = yaml.safe_load(text.replace("<< inputs.id >>", "7").replace("<< inputs.sha >>", "ab" * 20))
    repo, ks = stamped
    assert repo["kind"] == "GitRepository" and repo["spec"]["ref"] == {"commit": "ab" * 20}
    (static,) = _docs("kustomization-pr-7.yaml")
    assert ks["spec"]["path"] == static["spec"]["path"]
    assert ks["spec"]["sourceRef"] == {"kind": "GitRepository", "name": repo["metadata"]["name"]}
    assert "targetNamespace" not in ks["spec"]


def test_readme_references_exist():
    text = (FLUX / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)\)", text)
    assert links
    for link in links:
        assert (FLUX / link).is_file(), link
    for path in re.findall(r"examples/flux/[\w.-]+", text):
        assert (ROOT / path).is_file(), path
