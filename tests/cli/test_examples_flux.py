"""examples/flux: every file a user applies is a Flux object of a known version, the Kustomizations never set a target
namespace and use the declared source, and the lanes branch's Kustomization applies flows/ of the branch the lanes
GitRepository follows; routing istio's flows/_mesh has exactly one Kustomization. That the Kustomizations build what
`devlane render` writes is in tests/e2e/test_flux_example.py."""

from __future__ import annotations

import re

import yaml
from support import ROOT, yamlc

from renderer.render.routing.mesh import MESH_DIR

FLUX = ROOT / "examples" / "flux"
KINDS = {
    "GitRepository": "source.toolkit.fluxcd.io/v1",
    "Kustomization": "kustomize.toolkit.fluxcd.io/v1",
}


def _docs(name: str) -> list[dict]:
    return [d for d in yamlc.safe_load_all((FLUX / name).read_text()) if d]


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
    assert len(kustomizations) == 5
    for k in kustomizations:
        assert "targetNamespace" not in k["spec"]
        assert k["spec"]["prune"] is True
        assert k["spec"]["sourceRef"]["kind"] == "GitRepository"
        assert k["spec"]["sourceRef"]["name"] in sources
        if k["spec"]["sourceRef"]["name"] == "bookshop-lanes":
            continue  # the lanes branch holds lanes only
        app = k["spec"]["path"].split("/rendered/")[0]
        assert (ROOT / app / ".devlane.yaml").is_file(), f"{k['metadata']['name']}: {app} is not a devlane app"


def test_the_lanes_kustomization_applies_flows_of_the_lanes_branch():
    (repo,) = _docs("gitrepository-lanes.yaml")
    (lanes,) = _docs("kustomization-lanes.yaml")
    assert repo["spec"]["ref"] == {"branch": "devlane-lanes"}
    assert lanes["spec"]["sourceRef"] == {"kind": "GitRepository", "name": repo["metadata"]["name"]}
    assert lanes["spec"]["path"] == "./flows" and lanes["spec"]["prune"] is True


def test_readme_references_exist():
    text = (FLUX / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)\)", text)
    assert links
    for link in links:
        assert (FLUX / link).is_file(), link
    for path in re.findall(r"examples/flux/[\w.-]+", text):
        assert (ROOT / path).is_file(), path


def test_one_kustomization_applies_flows_mesh_from_the_flows_source():
    """Routing istio: flows/_mesh is applied once for the whole output directory, from the source the flows are
    committed to, and the per pull request ResourceSet never stamps it."""
    (mesh,) = _docs("kustomization-mesh.yaml")
    (flow,) = _docs("kustomization-pr-7.yaml")
    flows = flow["spec"]["path"].rsplit("/", 1)[0]
    assert mesh["spec"]["path"] == f"{flows}/{MESH_DIR}"
    assert mesh["spec"]["sourceRef"] == flow["spec"]["sourceRef"]  # the branch every flow is committed to
    assert [o for o in _all_objects() if o["kind"] == "Kustomization" and o["spec"]["path"].endswith(MESH_DIR)] \
        == [mesh]  # fmt: skip
    assert MESH_DIR not in yaml.safe_dump(_docs("kustomization-lanes.yaml"))  # it includes flows/_mesh, once
