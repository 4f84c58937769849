"""Side effects stay out of render (SPEC §4.5): `devlane provision` runs External plugins and records
their results, `render` replays them; `devlane delete` calls every plugin's delete_flow with its
stored state, newest first, and removes the flow.

Plugins record their calls in a marker file named by `$DEVLANE_TEST_MARKER` (DEVLANE_* variables
reach plugins through the scrubbed environment).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import app_yaml, run_cli

EXTERNAL_MAIN = textwrap.dedent("""
    import json, os

    def create_flow(service_specs, pod_specs, flow_uuid, branch="main"):
        with open(os.environ["DEVLANE_TEST_MARKER"], "a") as fh:
            fh.write(json.dumps({"create": flow_uuid, "branch": branch}) + "\\n")
        for spec in pod_specs:
            spec["containers"][0].setdefault("env", []).append({"name": "DB_BRANCH", "value": f"{branch}-{flow_uuid}"})
        return {"pod_specs": pod_specs, "config_map": {"branch": f"{branch}-{flow_uuid}", "id": 42}}

    def delete_flow(config_map, flow_uuid):
        with open(os.environ["DEVLANE_TEST_MARKER"], "a") as fh:
            fh.write(json.dumps({"delete": flow_uuid, "config_map": config_map}) + "\\n")
""")

EXTERNAL_MANIFEST = """
apiVersion: devlane.dev/v1alpha1
kind: Plugin
metadata: {name: branch.test.devlane.dev}
spec:
  version: 1.0.0
  runtime: {type: kardinal-python}
  sideEffects: External
"""

RECORDER_MAIN = textwrap.dedent("""
    import json, os

    def create_flow(service_specs, pod_specs, flow_uuid, token):
        config_map = {"token": token, "uuid": flow_uuid, "nested": {"n": [1, 2.5, None, True], "s": "grüße"}}
        return {"pod_specs": pod_specs, "config_map": config_map}

    def delete_flow(config_map, flow_uuid):
        if os.environ.get("DEVLANE_TEST_FAIL_DELETE") == flow_uuid:
            raise RuntimeError(f"cannot delete the branch of {flow_uuid}")
        with open(os.environ["DEVLANE_TEST_MARKER"], "a") as fh:
            fh.write(json.dumps([flow_uuid, config_map]) + "\\n")
""")

APP = app_yaml("api", "PLUGINS") + """apiVersion: v1
kind: Service
metadata:
  name: plugin-defs
  annotations:
    kardinal.dev.service/plugin-definition: |
DEFS
"""


def make_repo(root: Path, defs: list[dict]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    text = textwrap.indent(yaml.safe_dump(defs, sort_keys=False), " " * 6)
    plugins = ", ".join(d["servicename"] for d in defs)
    (root / "app.yaml").write_text(APP.replace("PLUGINS", plugins).replace("DEFS\n", text))
    return root


def make_plugin(root: Path, main: str, manifest: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "main.py").write_text(main)
    if manifest is not None:
        (root / "plugin.yaml").write_text(manifest)
    return root


def lines(marker: Path) -> list:
    return [json.loads(line) for line in marker.read_text().splitlines()] if marker.exists() else []


def tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------------------------------
# provision / replay


@pytest.mark.parametrize("declared_by", ["plugin.yaml", "plugin definition"])
def test_external_plugin_runs_only_in_provision_and_render_replays_it(tmp_path, declared_by):
    marker = tmp_path / "marker.jsonl"
    env = {"DEVLANE_TEST_MARKER": str(marker)}
    if declared_by == "plugin.yaml":
        plugin = make_plugin(tmp_path / "branch", EXTERNAL_MAIN, EXTERNAL_MANIFEST)
        definition = {"name": "branch", "type": "external", "servicename": "db", "args": {"branch": "dev"}}
    else:  # a plain Kardinal plugin, declared External by the plugin definition
        plugin = make_plugin(tmp_path / "branch", EXTERNAL_MAIN)
        definition = {"name": "branch", "type": "external", "servicename": "db", "args": {"branch": "dev"},
                      "sideEffects": "External"}  # fmt: skip
    repo = make_repo(tmp_path / "repo", [definition])
    flow = ["--flow", "pr-1", "--service", "api=api:2", f"--plugin-source=branch={plugin}"]

    out = run_cli("render", str(repo), *flow, "--out", str(tmp_path / "a"), env=env)
    assert out.returncode == 1
    assert "External" in out.stderr and "devlane provision --flow pr-1" in out.stderr
    assert not marker.exists()  # render never runs it
    assert not (tmp_path / "a").exists()

    out = run_cli("provision", str(repo), *flow, env=env)
    assert out.returncode == 0, out.stderr
    assert lines(marker) == [{"create": "db-pr-1", "branch": "dev"}]
    record_file = repo / ".devlane" / "state" / "pr-1" / "db.json"
    assert f"recorded {record_file}" in out.stderr
    record = json.loads(record_file.read_text())
    assert record["kind"] == "ProvisionRecord" and record["instance"] == "db" and record["flowId"] == "pr-1"
    assert record["result"]["configMap"] == {"branch": "dev-db-pr-1", "id": 42}
    assert record["inputHash"].startswith("sha256:")
    assert not (repo / "rendered").exists()  # provision writes only the records

    first = run_cli("render", str(repo), *flow, "--out", str(tmp_path / "a"), env=env)
    second = run_cli("render", str(repo), *flow, "--out", str(tmp_path / "b"), env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    a, b = tree(tmp_path / "a" / "flows" / "pr-1"), tree(tmp_path / "b" / "flows" / "pr-1")
    assert a == b
    assert lines(marker) == [{"create": "db-pr-1", "branch": "dev"}]  # replayed, not run
    deployment = yaml.safe_load(a["deployment-api-pr-1.yaml"])
    env_vars = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "DB_BRANCH", "value": "dev-db-pr-1"} in env_vars
    state = yaml.safe_load(a["configmap-devlane-state-db-pr-1.yaml"])
    assert json.loads(state["data"]["config_map.json"]) == {"branch": "dev-db-pr-1", "id": 42}
    meta = json.loads(a["flow.metadata"])
    assert [p["status"] for p in meta["plugins"]] == ["replayed"]

    # a changed input (the target image, or the plugin's args) is never served from a stale record
    out = run_cli("render", str(repo), "--flow", "pr-1", "--service", "api=api:3", f"--plugin-source=branch={plugin}",
                  "--stdout", env=env)  # fmt: skip
    assert out.returncode == 1 and "re-provision" in out.stderr and "devlane provision --flow pr-1" in out.stderr
    make_repo(repo, [{**definition, "args": {"branch": "other"}}])
    out = run_cli("render", str(repo), *flow, "--stdout", env=env)
    assert out.returncode == 1 and "re-provision" in out.stderr
    assert len(lines(marker)) == 1

    # delete calls delete_flow with the stored state and removes the flow and its records
    out = run_cli("delete", str(repo), "--flow", "pr-1", "--out", str(tmp_path / "a"),
                  f"--plugin-source=branch={plugin}", env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert lines(marker)[1:] == [{"delete": "db-pr-1", "config_map": {"branch": "dev-db-pr-1", "id": 42}}]
    assert not (tmp_path / "a" / "flows" / "pr-1").exists()
    assert not (repo / ".devlane" / "state" / "pr-1").exists()


def test_provision_without_external_plugins_records_nothing(tmp_path):
    plugin = make_plugin(tmp_path / "recorder", RECORDER_MAIN)
    repo = make_repo(tmp_path / "repo", [{"name": "rec", "type": "external", "servicename": "db",
                                          "args": {"token": "t"}}])  # fmt: skip
    out = run_cli("provision", str(repo), "--flow", "pr-1", "--service", "api=api:2", f"--plugin-source=rec={plugin}")
    assert out.returncode == 0, out.stderr
    assert "uses no External plugin; nothing to provision" in out.stderr
    assert not (repo / ".devlane").exists()


# --------------------------------------------------------------------------------------------------
# delete


@pytest.fixture
def two_plugins(tmp_path):
    """A repo whose flow uses two instances (zeta, then alpha) of a plugin whose delete_flow records its calls."""
    plugin = make_plugin(tmp_path / "recorder", RECORDER_MAIN)
    defs = [{"name": "rec", "type": "external", "servicename": "zeta", "args": {"token": "z-1"}},
            {"name": "rec", "type": "external", "servicename": "alpha", "args": {"token": "a-1"}}]  # fmt: skip
    repo = make_repo(tmp_path / "repo", defs)
    marker = tmp_path / "marker.jsonl"
    return repo, [f"--plugin-source=rec={plugin}"], marker, {"DEVLANE_TEST_MARKER": str(marker)}


def stored(instance: str, token: str) -> list:
    uuid = f"{instance}-pr-1"
    return [uuid, {"token": token, "uuid": uuid, "nested": {"n": [1, 2.5, None, True], "s": "grüße"}}]


def test_delete_calls_plugins_newest_first_with_their_state(two_plugins):
    repo, flags, marker, env = two_plugins
    out = run_cli("render", str(repo), "--flow", "pr-1", "--service", "api=api:2", *flags)
    assert out.returncode == 0, out.stderr
    flow_dir = repo / "rendered" / "flows" / "pr-1"
    meta = json.loads((flow_dir / "flow.metadata").read_text())
    assert [p["instance"] for p in meta["plugins"]] == ["zeta", "alpha"]  # creation order
    (repo / ".devlane" / "state" / "pr-1").mkdir(parents=True)  # a leftover record dir goes too
    (repo / ".devlane" / "state" / "pr-1" / "old.json").write_text("{}")

    out = run_cli("delete", str(repo), "--flow", "pr-1", *flags, env=env)
    assert out.returncode == 0, out.stderr
    assert lines(marker) == [stored("alpha", "a-1"), stored("zeta", "z-1")]  # reverse creation order
    assert "delete_flow done: alpha" in out.stderr and "delete_flow done: zeta" in out.stderr
    assert not flow_dir.exists() and (repo / "rendered" / "flows").is_dir()
    assert not (repo / ".devlane" / "state" / "pr-1").exists()


def test_failing_delete_keeps_the_flow(two_plugins):
    repo, flags, marker, env = two_plugins
    assert run_cli("render", str(repo), "--flow", "pr-1", "--service", "api=api:2", *flags).returncode == 0
    flow_dir = repo / "rendered" / "flows" / "pr-1"
    before = tree(flow_dir)
    out = run_cli("delete", str(repo), "--flow", "pr-1", *flags, env={**env, "DEVLANE_TEST_FAIL_DELETE": "zeta-pr-1"})
    assert out.returncode == 1
    assert "plugin zeta" in out.stderr and "delete_flow failed" in out.stderr
    assert "cannot delete the branch of zeta-pr-1" in out.stderr
    assert f"kept {flow_dir}" in out.stderr
    assert tree(flow_dir) == before
    assert lines(marker) == [stored("alpha", "a-1")]  # the others still ran
    out = run_cli("delete", str(repo), "--flow", "pr-1", *flags, env=env)  # fixed: run it again
    assert out.returncode == 0, out.stderr
    assert not flow_dir.exists()


def test_delete_with_out_dir(two_plugins, tmp_path):
    repo, flags, marker, env = two_plugins
    out_dir = tmp_path / "elsewhere"
    assert run_cli("render", str(repo), "--flow", "pr-1", "--service", "api=api:2", *flags,
                   "--out", str(out_dir)).returncode == 0  # fmt: skip
    out = run_cli("delete", str(repo), "--flow", "pr-1", *flags, env=env)  # the default output root has nothing
    assert out.returncode == 1 and "no rendered flow pr-1" in out.stderr and "--out DIR" in out.stderr
    out = run_cli("delete", str(repo), "--flow", "pr-1", "--out", str(out_dir), *flags, env=env)
    assert out.returncode == 0, out.stderr
    assert lines(marker) == [stored("alpha", "a-1"), stored("zeta", "z-1")]
    assert not (out_dir / "flows" / "pr-1").exists()


def test_delete_reads_state_from_a_git_ref(two_plugins):
    if shutil.which("git") is None:
        pytest.skip("git is not available")
    repo, flags, marker, env = two_plugins
    assert run_cli("render", str(repo), "--flow", "pr-1", "--service", "api=api:2", *flags).returncode == 0
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "rendered pr-1"], check=True)
    # the work tree's copy is changed after the commit: --ref must read the committed state
    flow_dir = repo / "rendered" / "flows" / "pr-1"
    for f in flow_dir.glob("configmap-devlane-state-*.yaml"):
        f.write_text(f.read_text().replace("-1", "-tampered"))
    out = run_cli("delete", str(repo), "--flow", "pr-1", "--ref", "main", *flags, env=env)
    assert out.returncode == 0, out.stderr
    assert lines(marker) == [stored("alpha", "a-1"), stored("zeta", "z-1")]
    out = run_cli("delete", str(repo), "--flow", "pr-404", "--ref", "main", *flags, env=env)
    assert out.returncode == 1 and "no rendered flow pr-404" in out.stderr and "at main" in out.stderr


def test_delete_unknown_flow(two_plugins):
    repo, flags, marker, env = two_plugins
    out = run_cli("delete", str(repo), "--flow", "pr-9", *flags, env=env)
    assert out.returncode == 1
    assert "no rendered flow pr-9" in out.stderr
    assert "hint: pass --out DIR (the render's output root) or --ref REF" in out.stderr
    assert "Traceback" not in out.stderr
    assert not marker.exists()
    out = run_cli("delete", str(repo), "--flow", "Bad_Flow", *flags, env=env)
    assert out.returncode != 0 and "Traceback" not in out.stderr
