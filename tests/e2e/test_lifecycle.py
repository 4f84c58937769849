"""Lanes that end on their own (issue 34), through the in-process CLI with a real Kardinal plugin subprocess whose
delete_flow records each call in a marker file: `gc --keep` removes every other lane with its plugins' delete_flow
and leaves the kept one byte-identical; a lane whose delete_flow fails is kept, named, exit 1; `render --ttl`
records an expiry from the commit's time (the same bytes on every run) and `gc --expired --now` removes exactly the
lanes past it."""

from __future__ import annotations

import json
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support import app_yaml, plugin_definition, tree

RECORDER = textwrap.dedent("""
    import json, os

    def create_flow(service_specs, pod_specs, flow_uuid):
        return {"pod_specs": pod_specs, "config_map": {"uuid": flow_uuid}}

    def delete_flow(config_map, flow_uuid):
        if os.environ.get("DEVLANE_TEST_FAIL_DELETE") == flow_uuid:
            raise RuntimeError(f"cannot delete the branch of {flow_uuid}")
        with open(os.environ["DEVLANE_TEST_MARKER"], "a") as fh:
            fh.write(json.dumps([flow_uuid, config_map]) + "\\n")
""")


@pytest.fixture
def lanes(harness, tmp_path):
    """A repository (a git commit) whose `api` uses the recorder; returns (env, plugin source, output root)."""
    marker = tmp_path / "marker.jsonl"
    plugin = harness.plugin("rec", RECORDER, where=tmp_path)
    harness.write("app.yaml", app_yaml("api", "db") + plugin_definition(
        [{"name": "rec", "type": "external", "servicename": "db"}]))
    harness.commit("base")
    env = {"DEVLANE_TEST_MARKER": str(marker), "DEVLANE_SANDBOX_WRITABLE": str(tmp_path)}
    return env, f"--plugin-source=rec={plugin}", tmp_path / "out"


def render(harness, lanes, flow_id: str, *extra: str) -> None:
    env, source, out = lanes
    done = harness.cli("render", "--flow", flow_id, "--service", "api=api:2", source, "--out", out, *extra, env=env)
    assert done.returncode == 0, done.stderr


def deleted(tmp_path: Path) -> list[str]:
    marker = tmp_path / "marker.jsonl"
    return [json.loads(line)[0] for line in marker.read_text().splitlines()] if marker.exists() else []


def test_gc_keep_removes_the_others_with_their_plugins_and_leaves_the_kept_lane_byte_identical(harness, lanes,
                                                                                              tmp_path):
    env, source, out = lanes
    for flow_id in ("pr-1", "pr-2", "pr-3"):
        render(harness, lanes, flow_id)
    kept = tree(out / "flows" / "pr-2")
    dry = harness.cli("gc", "--keep", "pr-2", "--out", out, "--dry-run", source, env=env)
    assert dry.returncode == 0, dry.stderr
    assert "would remove flow pr-1: not in the keep list" in dry.stderr and "would remove flow pr-3" in dry.stderr
    assert sorted(p.name for p in (out / "flows").iterdir()) == ["pr-1", "pr-2", "pr-3"] and deleted(tmp_path) == []

    keep_file = tmp_path / "open-prs"
    keep_file.write_text("# the open pull requests\npr-2\n\n")
    done = harness.cli("gc", "--keep-file", keep_file, "--out", out, source, env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(deleted(tmp_path)) == ["db-pr-1", "db-pr-3"]  # each plugin's delete_flow, with its state
    assert "removed flow pr-1: not in the keep list (delete_flow done: db)" in done.stderr
    assert "kept 1 flow: pr-2" in done.stderr
    assert sorted(p.name for p in (out / "flows").iterdir()) == ["pr-2"]
    assert tree(out / "flows" / "pr-2") == kept


def test_a_lane_whose_delete_flow_fails_is_kept_and_named(harness, lanes, tmp_path):
    env, source, out = lanes
    for flow_id in ("pr-1", "pr-3"):
        render(harness, lanes, flow_id)
    done = harness.cli("gc", "--keep", "pr-9", "--out", out, source, env={**env, "DEVLANE_TEST_FAIL_DELETE": "db-pr-3"})
    assert done.returncode == 1
    assert "cannot delete the branch of db-pr-3" in done.stderr and "kept flow pr-3" in done.stderr
    assert deleted(tmp_path) == ["db-pr-1"] and sorted(p.name for p in (out / "flows").iterdir()) == ["pr-3"]
    assert "Traceback" not in done.stderr


def test_gc_needs_a_keep_list_or_expired(harness, lanes):
    env, source, out = lanes
    done = harness.cli("gc", "--out", out, source, env=env)
    assert done.returncode == 2 and "gc needs the flows to keep" in done.stderr
    empty = harness.cli("gc", "--keep", "pr-1", "--out", out, source, env=env)
    assert empty.returncode == 0 and f"no rendered flow in {out / 'flows'}" in empty.stderr
    bad = harness.cli("gc", "--keep", "Bad_Flow", "--out", out, source, env=env)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


def test_expiry_is_deterministic_and_gc_expired_removes_exactly_the_expired_lanes(harness, lanes, tmp_path):
    env, source, out = lanes
    committed = datetime.fromisoformat(harness.git("log", "-1", "--format=%cI"))
    render(harness, lanes, "pr-1", "--ttl", "30m")
    first = (out / "flows" / "pr-1" / "flow.metadata").read_bytes()
    render(harness, lanes, "pr-1", "--ttl", "30m")  # again, later: the same bytes (no clock)
    assert (out / "flows" / "pr-1" / "flow.metadata").read_bytes() == first
    render(harness, lanes, "pr-2", "--ttl", "7d")
    render(harness, lanes, "pr-3", "--ttl", "72h", "--created", "2030-01-01T00:00:00+01:00")
    render(harness, lanes, "pr-4")  # no ttl: never expires
    meta = {f: json.loads((out / "flows" / f / "flow.metadata").read_text()) for f in ("pr-1", "pr-2", "pr-3", "pr-4")}
    utc = committed.astimezone(UTC)  # the commit's committer time, in the one spelling devlane writes
    assert meta["pr-1"]["lifecycle"] == {"created": f"{utc:%Y-%m-%dT%H:%M:%SZ}", "ttl": "30m",
                                         "expires": f"{utc + timedelta(minutes=30):%Y-%m-%dT%H:%M:%SZ}"}
    assert meta["pr-3"]["lifecycle"] == {"created": "2029-12-31T23:00:00Z", "ttl": "72h",
                                         "expires": "2030-01-03T23:00:00Z"}
    assert "lifecycle" not in meta["pr-4"]

    now = (committed + timedelta(hours=1)).isoformat()  # past pr-1's 30 minutes, within pr-2's 7 days
    done = harness.cli("gc", "--expired", "--now", now, "--out", out, source, env=env)
    assert done.returncode == 0, done.stderr
    assert f"removed flow pr-1: expired at {meta['pr-1']['lifecycle']['expires']}" in done.stderr
    assert deleted(tmp_path) == ["db-pr-1"]
    assert sorted(p.name for p in (out / "flows").iterdir()) == ["pr-2", "pr-3", "pr-4"]
    later = harness.cli("gc", "--expired", "--now", "2030-01-04T00:00:00Z", "--out", out, source, env=env)
    assert later.returncode == 0, later.stderr
    assert sorted(p.name for p in (out / "flows").iterdir()) == ["pr-4"]


def test_a_ttl_without_a_time_to_count_from_is_a_usage_error(harness, tmp_path):
    harness.app("api")  # no git repository, no --created
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--ttl", "1d", "--stdout")
    assert done.returncode == 2 and "--ttl needs a time to count from" in done.stderr
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--ttl", "1d", "--created", "yesterday",
                       "--stdout")
    assert done.returncode == 2 and "--created 'yesterday' is not an RFC 3339 time" in done.stderr


def test_a_configured_ttl_without_git_history_records_no_expiry_and_says_so(harness, tmp_path):
    harness.app("api")
    harness.config({"lifecycle": {"ttl": "3d"}})  # an Argo CD repo-server checkout may have no .git
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "lifecycle.ttl: no commit to count from" in done.stderr
    meta = json.loads((tmp_path / "out" / "flows" / "pr-1" / "flow.metadata").read_text())
    assert "lifecycle" not in meta
    harness.commit("base")  # with history, the same config records the expiry
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--out", tmp_path / "out")
    assert json.loads((tmp_path / "out" / "flows" / "pr-1" / "flow.metadata").read_text())["lifecycle"]["ttl"] == "3d"


def test_gc_ends_a_lane_that_was_provisioned_and_never_rendered(harness, tmp_path):
    """An External plugin ran (`provision`, on PR open) and the lane's render never landed: the provision record
    holds what the plugin made, and gc's delete_flow gets that state."""
    marker = tmp_path / "marker.jsonl"
    plugin = harness.plugin("rec", RECORDER, where=tmp_path)
    harness.write("app.yaml", app_yaml("api", "db") + plugin_definition(
        [{"name": "rec", "type": "external", "servicename": "db", "sideEffects": "External"}]))
    env = {"DEVLANE_TEST_MARKER": str(marker), "DEVLANE_SANDBOX_WRITABLE": str(tmp_path)}
    source = f"--plugin-source=rec={plugin}"
    done = harness.cli("provision", "--flow", "pr-5", "--service", "api=api:2", source, env=env)
    assert done.returncode == 0, done.stderr
    assert (harness.root / ".devlane" / "state" / "pr-5" / "db.json").is_file()
    dry = harness.cli("gc", "--keep", "pr-1", "--out", tmp_path / "out", "--dry-run", source, env=env)
    assert "would remove flow pr-5: not in the keep list" in dry.stderr
    done = harness.cli("gc", "--keep", "pr-1", "--out", tmp_path / "out", source, env=env)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in marker.read_text().splitlines()] == [["db-pr-5", {"uuid": "db-pr-5"}]]
    assert not (harness.root / ".devlane" / "state" / "pr-5").exists()
