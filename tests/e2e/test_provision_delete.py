"""Side effects stay out of render (SPEC §4.5), through the in-process CLI with real Kardinal plugin
subprocesses: `devlane provision` runs External plugins and records their results, `render` replays them
byte-identically (and refuses a stale record); `devlane delete` calls every plugin's delete_flow with its
stored state, newest first, and removes the flow (also with --out, and reading the state at a git --ref).
Delete of a flow that was never rendered (no plugin runs) is in tests/cli/test_provision_delete.py.

Plugins record their calls in a marker file named by `$DEVLANE_TEST_MARKER` (DEVLANE_* variables
reach plugins through the scrubbed environment; `$DEVLANE_SANDBOX_WRITABLE`, the operator's switch, lets them
write that directory from inside the sandbox).
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from support import Harness, app_yaml, plugin_definition, tree, yamlc

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

FLOW = ["--flow", "pr-1", "--service", "api=api:2"]


def write_app(harness: Harness, defs: list[dict]) -> None:
    """app.yaml: `api` using every instance of `defs`, and their plugin definition (rewritten each time)."""
    plugins = ", ".join(d["servicename"] for d in defs)
    harness.write("app.yaml", app_yaml("api", plugins) + plugin_definition(defs))


def lines(marker: Path) -> list:
    return [json.loads(line) for line in marker.read_text().splitlines()] if marker.exists() else []




# --------------------------------------------------------------------------------------------------
# provision / replay


@pytest.mark.parametrize("declared_by", ["plugin.yaml", "plugin definition"])
def test_external_plugin_runs_only_in_provision_and_render_replays_it(harness, tmp_path, declared_by):
    marker = tmp_path / "marker.jsonl"
    env = {"DEVLANE_TEST_MARKER": str(marker), "DEVLANE_SANDBOX_WRITABLE": str(marker.parent)}
    definition = {"name": "branch", "type": "external", "servicename": "db", "args": {"branch": "dev"}}
    if declared_by == "plugin.yaml":
        plugin = harness.plugin("branch", EXTERNAL_MAIN, EXTERNAL_MANIFEST, where=tmp_path)
    else:  # a plain Kardinal plugin, declared External by the plugin definition
        plugin = harness.plugin("branch", EXTERNAL_MAIN, where=tmp_path)
        definition["sideEffects"] = "External"
    write_app(harness, [definition])
    repo = harness.root
    source = f"--plugin-source=branch={plugin}"

    out = harness.cli("render", *FLOW, source, "--out", str(tmp_path / "a"), env=env)
    assert out.returncode == 1
    assert "External" in out.stderr and "devlane provision --flow pr-1" in out.stderr
    assert not marker.exists()  # render never runs it
    assert not (tmp_path / "a").exists()

    out = harness.cli("provision", *FLOW, source, env=env)
    assert out.returncode == 0, out.stderr
    assert lines(marker) == [{"create": "db-pr-1", "branch": "dev"}]
    record_file = repo / ".devlane" / "state" / "pr-1" / "db.json"
    assert f"recorded {record_file}" in out.stderr
    record = json.loads(record_file.read_text())
    assert record["kind"] == "ProvisionRecord" and record["instance"] == "db" and record["flowId"] == "pr-1"
    assert record["result"]["configMap"] == {"branch": "dev-db-pr-1", "id": 42}
    assert record["inputHash"].startswith("sha256:")
    assert not (repo / "rendered").exists()  # provision writes only the records

    first = harness.cli("render", *FLOW, source, "--out", str(tmp_path / "a"), env=env)
    second = harness.cli("render", *FLOW, source, "--out", str(tmp_path / "b"), env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    a, b = tree(tmp_path / "a" / "flows" / "pr-1"), tree(tmp_path / "b" / "flows" / "pr-1")
    assert a == b
    assert lines(marker) == [{"create": "db-pr-1", "branch": "dev"}]  # replayed, not run
    deployment = yamlc.safe_load(a["deployment-api-pr-1.yaml"])
    env_vars = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "DB_BRANCH", "value": "dev-db-pr-1"} in env_vars
    state = yamlc.safe_load(a["configmap-devlane-state-db-pr-1.yaml"])
    assert json.loads(state["data"]["config_map.json"]) == {"branch": "dev-db-pr-1", "id": 42}
    meta = json.loads(a["flow.metadata"])
    assert [p["status"] for p in meta["plugins"]] == ["replayed"]

    # a changed input (the target image, or the plugin's args) is never served from a stale record
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=api:3", source, "--stdout", env=env)
    assert out.returncode == 1 and "re-provision" in out.stderr and "devlane provision --flow pr-1" in out.stderr
    write_app(harness, [{**definition, "args": {"branch": "other"}}])
    out = harness.cli("render", *FLOW, source, "--stdout", env=env)
    assert out.returncode == 1 and "re-provision" in out.stderr
    assert len(lines(marker)) == 1

    # delete calls delete_flow with the stored state and removes the flow and its records
    out = harness.cli("delete", "--flow", "pr-1", "--out", str(tmp_path / "a"), source, env=env)
    assert out.returncode == 0, out.stderr
    assert lines(marker)[1:] == [{"delete": "db-pr-1", "config_map": {"branch": "dev-db-pr-1", "id": 42}}]
    assert not (tmp_path / "a" / "flows" / "pr-1").exists()
    assert not (repo / ".devlane" / "state" / "pr-1").exists()


def test_provision_without_external_plugins_records_nothing(harness, tmp_path):
    plugin = harness.plugin("recorder", RECORDER_MAIN, where=tmp_path)
    write_app(harness, [{"name": "rec", "type": "external", "servicename": "db", "args": {"token": "t"}}])
    out = harness.cli("provision", *FLOW, f"--plugin-source=rec={plugin}")
    assert out.returncode == 0, out.stderr
    assert "uses no External plugin; nothing to provision" in out.stderr
    assert not (harness.root / ".devlane").exists()


# --------------------------------------------------------------------------------------------------
# delete


class TwoPlugins:
    """A repo whose flow uses two instances (zeta, then alpha) of a plugin whose delete_flow records its calls."""

    def __init__(self, harness: Harness):
        self.harness = harness
        plugin = harness.plugin("recorder", RECORDER_MAIN, where=harness.tmp)
        rec = {"name": "rec", "type": "external"}
        write_app(harness, [{**rec, "servicename": "zeta", "args": {"token": "z-1"}},
                            {**rec, "servicename": "alpha", "args": {"token": "a-1"}}])  # fmt: skip
        self.flags = [f"--plugin-source=rec={plugin}"]
        self.marker = harness.tmp / "marker.jsonl"
        self.env = {"DEVLANE_TEST_MARKER": str(self.marker), "DEVLANE_SANDBOX_WRITABLE": str(self.marker.parent)}
        self.flow_dir = harness.root / "rendered" / "flows" / "pr-1"

    def render(self, *flags: str):
        return self.harness.cli("render", *FLOW, *self.flags, *flags)

    def delete(self, flow_id: str, *flags: str, env: dict[str, str] | None = None):
        return self.harness.cli("delete", "--flow", flow_id, *flags, *self.flags, env={**self.env, **(env or {})})


@pytest.fixture
def two_plugins(harness) -> TwoPlugins:
    return TwoPlugins(harness)


def stored(instance: str, token: str) -> list:
    uuid = f"{instance}-pr-1"
    return [uuid, {"token": token, "uuid": uuid, "nested": {"n": [1, 2.5, None, True], "s": "grüße"}}]


def test_delete_calls_plugins_newest_first_with_their_state(two_plugins):
    repo, flow_dir = two_plugins.harness.root, two_plugins.flow_dir
    out = two_plugins.render()
    assert out.returncode == 0, out.stderr
    meta = json.loads((flow_dir / "flow.metadata").read_text())
    assert [p["instance"] for p in meta["plugins"]] == ["zeta", "alpha"]  # creation order
    (repo / ".devlane" / "state" / "pr-1").mkdir(parents=True)  # a leftover record dir goes too
    (repo / ".devlane" / "state" / "pr-1" / "old.json").write_text("{}")

    out = two_plugins.delete("pr-1")
    assert out.returncode == 0, out.stderr
    assert lines(two_plugins.marker) == [stored("alpha", "a-1"), stored("zeta", "z-1")]  # reverse creation order
    assert "delete_flow done: alpha" in out.stderr and "delete_flow done: zeta" in out.stderr
    assert not flow_dir.exists() and (repo / "rendered" / "flows").is_dir()
    assert not (repo / ".devlane" / "state" / "pr-1").exists()


def test_failing_delete_keeps_the_flow(two_plugins):
    flow_dir = two_plugins.flow_dir
    assert two_plugins.render().returncode == 0
    before = tree(flow_dir)
    out = two_plugins.delete("pr-1", env={"DEVLANE_TEST_FAIL_DELETE": "zeta-pr-1"})
    assert out.returncode == 1
    assert "plugin zeta" in out.stderr and "delete_flow failed" in out.stderr
    assert "cannot delete the branch of zeta-pr-1" in out.stderr
    assert f"kept {flow_dir}" in out.stderr
    assert tree(flow_dir) == before
    assert lines(two_plugins.marker) == [stored("alpha", "a-1")]  # the others still ran
    out = two_plugins.delete("pr-1")  # fixed: run it again
    assert out.returncode == 0, out.stderr
    assert not flow_dir.exists()


def test_delete_with_out_dir(two_plugins, tmp_path):
    out_dir = tmp_path / "elsewhere"
    assert two_plugins.render("--out", str(out_dir)).returncode == 0
    out = two_plugins.delete("pr-1")  # the default output root has nothing: done, and the place it looked is named
    assert out.returncode == 0 and "flow pr-1: no lane in " in out.stderr and "rendered/flows" in out.stderr
    assert lines(two_plugins.marker) == []
    out = two_plugins.delete("pr-1", "--out", str(out_dir))
    assert out.returncode == 0, out.stderr
    assert lines(two_plugins.marker) == [stored("alpha", "a-1"), stored("zeta", "z-1")]
    assert not (out_dir / "flows" / "pr-1").exists()
    again = two_plugins.delete("pr-1", "--out", str(out_dir))  # idempotent: no plugin runs twice
    assert again.returncode == 0 and f"no lane in {out_dir / 'flows'}" in again.stderr, again.stderr
    assert len(lines(two_plugins.marker)) == 2


def test_delete_reads_state_from_a_git_ref(two_plugins):
    if shutil.which("git") is None:
        pytest.skip("git is not available")
    assert two_plugins.render().returncode == 0
    two_plugins.harness.commit("rendered pr-1")
    # the work tree's copy is changed after the commit: --ref must read the committed state
    for f in two_plugins.flow_dir.glob("configmap-devlane-state-*.yaml"):
        f.write_text(f.read_text().replace("-1", "-tampered"))
    out = two_plugins.delete("pr-1", "--ref", "main")
    assert out.returncode == 0, out.stderr
    assert lines(two_plugins.marker) == [stored("alpha", "a-1"), stored("zeta", "z-1")]
    out = two_plugins.delete("pr-404", "--ref", "main")
    assert out.returncode == 1 and "no rendered flow pr-404" in out.stderr and "at main" in out.stderr
