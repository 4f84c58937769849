"""examples/argocd: the ConfigManagementPlugin, the ApplicationSet, the repo-server patch and the sidecar's
Dockerfile have what Argo CD needs, the devlane commands they run exist, and the README's references exist."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import Path

from support import EXAMPLE, ROOT, yamlc
from support.harness import git

from renderer.render.routing.mesh import MESH_DIR

ARGOCD = ROOT / "examples" / "argocd"
APPSETS = ("applicationset.yaml", "applicationset-inventory.yaml")  # plain YAML; a kustomize overlay


def test_example_files_are_valid_and_the_readme_references_exist(harness):
    plugin = yamlc.safe_load((ARGOCD / "plugin.yaml").read_text())
    assert (plugin["apiVersion"], plugin["kind"], plugin["metadata"]["name"]) == (
        "argoproj.io/v1alpha1",
        "ConfigManagementPlugin",
        "devlane",
    )
    assert plugin["spec"]["generate"]["command"] == ["devlane", "cmp", "generate"]  # no shell
    assert plugin["spec"]["discover"] == {"fileName": "./.devlane.yaml"}
    assert plugin["spec"]["parameters"]["dynamic"]["command"] == ["devlane", "cmp", "params"]
    for name in APPSETS:
        appset = yamlc.safe_load((ARGOCD / name).read_text())
        assert "pullRequest" in appset["spec"]["generators"][0]
        source = appset["spec"]["template"]["spec"]["source"]
        assert source["plugin"]["name"] == f"{plugin['metadata']['name']}-{plugin['spec']['version']}"
        assert (ROOT / source["path"] / ".devlane.yaml").is_file()
    assert yamlc.safe_load((ARGOCD / "repo-server-patch.yaml").read_text())["spec"]["template"]["spec"]["containers"]
    dockerfile = (ARGOCD / "Dockerfile").read_text()
    assert "USER 999" in dockerfile and "devlane plugins prepare" in dockerfile
    assert "/var/run/argocd/argocd-cmp-server" in dockerfile
    text = (ARGOCD / "README.md").read_text()
    for link in re.findall(r"\]\(([^)#]+)\)", text):
        assert (ARGOCD / link).is_file(), link
    for path in re.findall(r"examples/[\w/.-]+", text):
        assert (ROOT / path).exists(), path
    # the commands the cmp-server and the image build run are real devlane commands
    for command in (plugin["spec"]["generate"]["command"], plugin["spec"]["parameters"]["dynamic"]["command"],
                    ["devlane", "plugins", "prepare"]):  # fmt: skip
        out = harness.cli(*command[1:], "--help")
        assert out.returncode == 0 and out.stdout.startswith("usage: devlane " + " ".join(command[1:])), command


def test_example_manifests_have_what_argocd_needs():
    for path in sorted(ARGOCD.glob("*.yaml")):
        assert all(isinstance(d, dict) for d in yamlc.safe_load_all(path.read_text())), path
    spec = yamlc.safe_load((ARGOCD / "plugin.yaml").read_text())["spec"]
    assert spec["version"] == "v1" and spec["preserveFileMode"] is False
    assert {p["name"] for p in spec["parameters"]["static"]} == {"flow-id", "services", "image-template"}
    pod = yamlc.safe_load((ARGOCD / "repo-server-patch.yaml").read_text())["spec"]["template"]["spec"]
    (sidecar,) = pod["containers"]
    assert sidecar["securityContext"]["runAsUser"] == 999
    mounts = {m["mountPath"]: m["name"] for m in sidecar["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["/var/run/argocd"] == "var-files" and mounts["/home/argocd/cmp-server/plugins"] == "plugins"
    assert "emptyDir" in volumes[mounts["/tmp"]]
    for name in APPSETS:
        plugin = yamlc.safe_load((ARGOCD / name).read_text())["spec"]["template"]["spec"]["source"]["plugin"]
        assert plugin["env"] == [{"name": "FLOW_ID", "value": "pr-{{.number}}"},
                                 {"name": "BASE_REF", "value": "{{.target_branch}}"},
                                 {"name": "PR", "value": "{{.number}}"}]
        # the targets are what the pull request changed, never a service named here whose image CI may not build
        params = {p["name"]: p for p in plugin["parameters"]}
        assert params["services"] == {"name": "services", "string": "auto"}
        assert "{service}" in params["image-template"]["string"] and "array" not in params["services"]
    default_repo = re.search(r"^ARG PLUGIN_REPO=(\S+)", (ARGOCD / "Dockerfile").read_text(), re.M).group(1)
    assert (ROOT / default_repo / ".devlane.yaml").is_file()


def _directories(generator: dict, root: Path) -> list[str]:
    """The directories an ApplicationSet git directory generator yields in `root` (a checkout): every directory a
    `path` matches (Go's path.Match: `*` stays within one segment), but no excluded one and none starting with `.`."""

    def match(pattern: str, path: str) -> bool:
        parts, segments = pattern.split("/"), path.split("/")
        return len(parts) == len(segments) and all(fnmatchcase(s, p) for s, p in zip(segments, parts, strict=True))

    rules = generator["git"]["directories"]
    found = [d.relative_to(root).as_posix() for d in sorted(root.rglob("*")) if d.is_dir()]
    return [d for d in found if not d.rsplit("/", 1)[-1].startswith(".")
            and any(match(r["path"], d) for r in rules if not r.get("exclude"))
            and not any(match(r["path"], d) for r in rules if r.get("exclude"))]


def test_istio_lanes_are_applied_once_each_and_flows_mesh_by_one_application(harness, tmp_path):
    """Routing istio: the mesh Application owns flows/_mesh of the lanes branch, the lanes ApplicationSet yields one
    Application per lane directory there and never _mesh or shared, and both read what `devlane render
    --lanes-branch` commits."""
    (app,) = [d for d in yamlc.safe_load_all((ARGOCD / "application-mesh.yaml").read_text()) if d]
    (appset,) = [d for d in yamlc.safe_load_all((ARGOCD / "applicationset-lanes.yaml").read_text()) if d]
    assert (app["apiVersion"], app["kind"]) == ("argoproj.io/v1alpha1", "Application")
    assert (appset["apiVersion"], appset["kind"]) == ("argoproj.io/v1alpha1", "ApplicationSet")
    source, template = app["spec"]["source"], appset["spec"]["template"]["spec"]
    generator = appset["spec"]["generators"][0]["git"]
    assert "plugin" not in source and "plugin" not in template["source"]  # committed plain files: the CMP refuses istio
    assert template["source"]["path"] == "{{.path.path}}" and appset["spec"]["goTemplate"] is True
    assert source["repoURL"] == template["source"]["repoURL"] == generator["repoURL"]
    branch = generator["revision"]
    assert source["targetRevision"] == template["source"]["targetRevision"] == branch == "devlane-lanes"
    assert app["spec"]["syncPolicy"]["automated"]["prune"] is True
    assert appset["spec"]["template"]["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io"]
    excluded = sorted(r["path"] for r in generator["directories"] if r.get("exclude"))
    assert excluded == [f"flows/{MESH_DIR}", "flows/shared"] and source["path"] == f"flows/{MESH_DIR}"

    harness.copy(EXAMPLE)
    harness.commit("the bookshop")
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(harness.root), str(remote))
    harness.git("remote", "add", "origin", str(remote))
    for flow in ("pr-7", "pr-8"):  # catalog has no plugins: nothing runs
        out = harness.cli("render", "--flow", flow, "--service", f"catalog=ghcr.io/acme/catalog:{flow}",
                          "--routing", "istio", "--lanes-branch", branch)
        assert out.returncode == 0, out.stderr
    lanes = tmp_path / "lanes"
    git(tmp_path, "clone", "-q", "--branch", branch, str(remote), str(lanes))
    (lanes / "flows" / "shared").mkdir()  # as if the repository had shared services
    assert _directories(appset["spec"]["generators"][0], lanes) == ["flows/pr-7", "flows/pr-8"]
    (vs,) = [yamlc.safe_load(f.read_text()) for f in sorted((lanes / source["path"]).glob("virtualservice-*.yaml"))]
    assert [r["name"] for r in vs["spec"]["http"]] == ["flow-pr-7", "flow-pr-8", "baseline"]
