"""examples/argocd: the ConfigManagementPlugin, the ApplicationSet, the repo-server patch and the sidecar's
Dockerfile have what Argo CD needs, the devlane commands they run exist, and the README's references exist."""

from __future__ import annotations

import re

import yaml
from support import ROOT

ARGOCD = ROOT / "examples" / "argocd"
APPSETS = ("applicationset.yaml", "applicationset-inventory.yaml")  # plain YAML; a kustomize overlay


def test_example_files_are_valid_and_the_readme_references_exist(harness):
    plugin = yaml.safe_load((ARGOCD / "plugin.yaml").read_text())
    assert (plugin["apiVersion"], plugin["kind"], plugin["metadata"]["name"]) == (
        "argoproj.io/v1alpha1",
        "ConfigManagementPlugin",
        "devlane",
    )
    assert plugin["spec"]["generate"]["command"] == ["devlane", "cmp", "generate"]  # no shell
    assert plugin["spec"]["discover"] == {"fileName": "./.devlane.yaml"}
    assert plugin["spec"]["parameters"]["dynamic"]["command"] == ["devlane", "cmp", "params"]
    for name in APPSETS:
        appset = yaml.safe_load((ARGOCD / name).read_text())
        assert "pullRequest" in appset["spec"]["generators"][0]
        source = appset["spec"]["template"]["spec"]["source"]
        assert source["plugin"]["name"] == f"{plugin['metadata']['name']}-{plugin['spec']['version']}"
        assert (ROOT / source["path"] / ".devlane.yaml").is_file()
    assert yaml.safe_load((ARGOCD / "repo-server-patch.yaml").read_text())["spec"]["template"]["spec"]["containers"]
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
        assert all(isinstance(d, dict) for d in yaml.safe_load_all(path.read_text())), path
    spec = yaml.safe_load((ARGOCD / "plugin.yaml").read_text())["spec"]
    assert spec["version"] == "v1" and spec["preserveFileMode"] is False
    assert {p["name"] for p in spec["parameters"]["static"]} == {"flow-id", "services"}
    pod = yaml.safe_load((ARGOCD / "repo-server-patch.yaml").read_text())["spec"]["template"]["spec"]
    (sidecar,) = pod["containers"]
    assert sidecar["securityContext"]["runAsUser"] == 999
    mounts = {m["mountPath"]: m["name"] for m in sidecar["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["/var/run/argocd"] == "var-files" and mounts["/home/argocd/cmp-server/plugins"] == "plugins"
    assert "emptyDir" in volumes[mounts["/tmp"]]
    for name in APPSETS:
        plugin = yaml.safe_load((ARGOCD / name).read_text())["spec"]["template"]["spec"]["source"]["plugin"]
        assert plugin["env"] == [{"name": "FLOW_ID", "value": "pr-{{.number}}"}]
        assert plugin["parameters"][0]["name"] == "services" and isinstance(plugin["parameters"][0]["array"], list)
    default_repo = re.search(r"^ARG PLUGIN_REPO=(\S+)", (ARGOCD / "Dockerfile").read_text(), re.M).group(1)
    assert (ROOT / default_repo / ".devlane.yaml").is_file()
