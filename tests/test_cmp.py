"""The Argo CD CMP front door, driven the way argocd-cmp-server drives it: the repository as a tarball
unpacked into a temp dir with file modes reset, `devlane cmp generate` run in the Application's path
with the environment Argo CD sets, and stdout parsed as the manifests."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile

import pytest
import yaml
from conftest import EXAMPLE, ROOT, run_cli

from renderer.cmp import go_duration, parameters, request, unserved

ARGOCD = ROOT / "examples" / "argocd"
SERVICE = "orders=ghcr.io/acme/bookshop-orders:pr-7"


def _unpack_like_argocd(src, dest) -> None:
    """Tar the repo and unpack it with file modes reset, as the cmp-server does (preserveFileMode: false)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(src, arcname=".", filter=lambda ti: None if "rendered" in ti.name.split("/") else ti)
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r:gz") as tar:
        for member in tar.getmembers():
            member.mode = 0o755 if member.isdir() else 0o644
        tar.extractall(dest, filter="data")


def _generate(app_dir, env: dict):
    full = {"PATH": os.environ["PATH"], "HOME": str(app_dir), "PYTHONPATH": str(ROOT),
            "ARGOCD_APP_NAME": "bookshop-pr-7", "ARGOCD_APP_NAMESPACE": "shop", "ARGOCD_APP_PROJECT_NAME": "default",
            "ARGOCD_APP_REVISION": "a" * 40, "ARGOCD_APP_SOURCE_PATH": "examples/bookshop",
            "ARGOCD_APP_SOURCE_REPO_URL": "https://github.com/acme/bookshop.git", **env}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "renderer.cli", "cmp", "generate"], cwd=app_dir, env=full,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.fixture
def app_dir(tmp_path):
    _unpack_like_argocd(EXAMPLE, tmp_path / "repo")
    return tmp_path / "repo"


def test_generate_prints_exactly_what_render_stdout_prints(app_dir):
    params = json.dumps([{"name": "services", "array": [SERVICE]}])
    out = _generate(app_dir, {"ARGOCD_ENV_FLOW_ID": "pr-7", "ARGOCD_APP_PARAMETERS": params,
                              "ARGOCD_EXEC_TIMEOUT": "90s"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    expected = run_cli("render", str(EXAMPLE), "--flow", "pr-7", "--service", SERVICE, "--stdout")
    assert expected.returncode == 0
    assert out.stdout == expected.stdout
    objects = [d for d in yaml.safe_load_all(out.stdout) if d]
    assert len(objects) == 9 and all(o["apiVersion"] and o["kind"] for o in objects)


def test_flattened_param_variables_are_the_fallback(app_dir):
    out = _generate(app_dir, {"PARAM_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE})
    assert out.returncode == 0, out.stderr
    assert "name: orders-pr-7" in out.stdout


def test_errors_exit_non_zero_with_nothing_on_stdout(app_dir):
    out = _generate(app_dir, {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": "nosuch=img:1"})
    assert out.returncode == 1 and out.stdout == ""
    assert "nosuch" in out.stderr and "Traceback" not in out.stderr
    missing = _generate(app_dir, {"PARAM_SERVICES_0": SERVICE})
    assert missing.returncode == 1 and missing.stdout == "" and "FLOW_ID" in missing.stderr


def test_an_empty_result_is_an_error(app_dir, monkeypatch):
    """A render that yields no objects must never reach Argo CD as an empty stream (prune would delete all)."""
    from renderer import api, cmp
    from renderer.errors import DevlaneError

    real = api.render

    def empty(options, flow):
        result = real(options, flow)
        for f in result.flows:
            f.files.clear()
        return result

    env = {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE}
    assert cmp.generate(app_dir, env)[0]  # the real render is not empty
    monkeypatch.setattr(api, "render", empty)
    with pytest.raises(DevlaneError, match="refusing an empty result"):
        cmp.generate(app_dir, env)


def test_exec_timeout_budget_is_parsed_as_a_go_duration():
    assert go_duration("90s") == 90 and go_duration("2m") == 120 and go_duration("1m30s") == 90
    assert go_duration("500ms") == 0.5
    assert parameters({"PARAM_FLOW_ID": "pr-1", "PARAM_SERVICES_1": "b=2", "PARAM_SERVICES_0": "a=1"}) == {
        "flow-id": "pr-1", "services": ["a=1", "b=2"]}


def test_params_announces_the_repository_services(app_dir):
    out = subprocess.run([sys.executable, "-m", "renderer.cli", "cmp", "params"], cwd=app_dir,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    announced = {a["name"]: a for a in json.loads(out.stdout)}
    assert announced["flow-id"]["required"] is True
    assert announced["services"]["collectionType"] == "array"
    assert set(announced["repo-services"]["array"]) >= {"web", "catalog", "orders", "orders-db"}


def test_example_files_are_valid_and_the_readme_references_exist():
    plugin = yaml.safe_load((ARGOCD / "plugin.yaml").read_text())
    assert (plugin["apiVersion"], plugin["kind"], plugin["metadata"]["name"]) == (
        "argoproj.io/v1alpha1", "ConfigManagementPlugin", "devlane")
    assert plugin["spec"]["generate"]["command"] == ["devlane", "cmp", "generate"]  # no shell
    assert plugin["spec"]["discover"] == {"fileName": "./.devlane.yaml"}
    assert plugin["spec"]["parameters"]["dynamic"]["command"] == ["devlane", "cmp", "params"]
    appset = yaml.safe_load((ARGOCD / "applicationset.yaml").read_text())
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


def _objects(stream: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(stream) if d]


def test_generate_objects_match_render_and_the_revision_is_logged(app_dir):
    out = _generate(app_dir, {"ARGOCD_APP_PARAMETERS": json.dumps([
        {"name": "flow-id", "string": "pr-7"}, {"name": "services", "array": [SERVICE]}])})  # fmt: skip
    assert out.returncode == 0, out.stderr
    expected = run_cli("render", str(EXAMPLE), "--flow", "pr-7", "--service", SERVICE, "--stdout")
    assert _objects(out.stdout) == _objects(expected.stdout)
    assert f"revision {'a' * 40}" in out.stderr and "9 objects" in out.stderr
    assert "devlane:" not in out.stdout  # logs never reach Argo CD's manifest parser


def test_app_parameters_json_wins_over_the_flattened_variables(app_dir):
    params = json.dumps([{"name": "services", "array": [SERVICE]}])
    env = {"ARGOCD_ENV_FLOW_ID": "pr-7", "ARGOCD_APP_PARAMETERS": params, "PARAM_SERVICES_0": "nosuch=img:1"}
    out = _generate(app_dir, env)
    assert out.returncode == 0, out.stderr
    assert parameters({"ARGOCD_APP_PARAMETERS": '[{"name": "m", "map": {"a": "1"}}, {"name": "s", "string": "x"}]'}) \
        == {"m": {"a": "1"}, "s": "x"}  # fmt: skip


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"ARGOCD_ENV_FLOW_ID": "PR_7", "PARAM_SERVICES_0": SERVICE}, "invalid flow id"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7"}, "parameter services is empty"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": "orders"}, "expected NAME=IMAGE"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7", "ARGOCD_APP_PARAMETERS": "{not json"}, "not JSON"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE, "ARGOCD_EXEC_TIMEOUT": "soon"}, "duration"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE, "KUBE_API_VERSIONS": "v1,apps/v1"},
         "does not serve networking.k8s.io/v1 Ingress"),
    ],
)
def test_bad_requests_fail_with_the_reason_on_stderr_only(app_dir, env, needle):
    out = _generate(app_dir, env)
    assert out.returncode != 0 and out.stdout == ""
    assert needle in out.stderr and "Traceback" not in out.stderr


def test_a_repository_without_manifests_is_an_error_not_an_empty_stream(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / ".devlane.yaml").write_text((EXAMPLE / ".devlane.yaml").read_text())
    _unpack_like_argocd(src, tmp_path / "repo")
    out = _generate(tmp_path / "repo", {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE})
    assert out.returncode != 0 and out.stdout == "" and "orders" in out.stderr


def test_cluster_api_versions_gate_the_stream(app_dir):
    served = "v1,apps/v1,networking.k8s.io/v1"
    out = _generate(app_dir, {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE, "KUBE_API_VERSIONS": served})
    assert out.returncode == 0, out.stderr
    crd = {"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
           "spec": {"group": "x.dev", "versions": [{"name": "v1"}]}}  # fmt: skip
    objects = [crd, {"apiVersion": "x.dev/v1", "kind": "Thing"}, {"apiVersion": "y.dev/v1", "kind": "Other"}]
    assert unserved(objects, {"apiextensions.k8s.io/v1"}) == ["y.dev/v1 Other"]
    assert unserved([{"apiVersion": "apps/v1", "kind": "Deployment"}], {"apps/v1/Deployment"}) == []


def test_exec_timeout_leaves_a_margin():
    env = {"ARGOCD_ENV_FLOW_ID": "pr-1", "PARAM_SERVICES_0": "a=b:1"}
    assert request(env).timeout == 85
    assert request({**env, "ARGOCD_EXEC_TIMEOUT": "2m"}).timeout == 115
    assert request({**env, "ARGOCD_EXEC_TIMEOUT": "3s"}).timeout == pytest.approx(2.7)


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
    appset = yaml.safe_load((ARGOCD / "applicationset.yaml").read_text())
    plugin = appset["spec"]["template"]["spec"]["source"]["plugin"]
    assert plugin["env"] == [{"name": "FLOW_ID", "value": "pr-{{.number}}"}]
    assert plugin["parameters"][0]["name"] == "services" and isinstance(plugin["parameters"][0]["array"], list)
    default_repo = re.search(r"^ARG PLUGIN_REPO=(\S+)", (ARGOCD / "Dockerfile").read_text(), re.M).group(1)
    assert (ROOT / default_repo / ".devlane.yaml").is_file()
