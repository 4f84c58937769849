"""`devlane delete` (in-process CLI) of a flow that was never rendered, or of an invalid flow id: it fails with a
hint and no traceback, and calls no plugin (the repository's plugin logs every call to $DEVLANE_TEST_LOG:
the log must stay absent). Provision, replay and delete with real plugin calls are in
tests/e2e/test_provision_delete.py."""

from __future__ import annotations

import textwrap

LOGGER_MAIN = textwrap.dedent("""
    import os

    def _log(line):
        with open(os.environ["DEVLANE_TEST_LOG"], "a") as fh:
            fh.write(line + "\\n")

    def create_flow(service_specs, pod_specs, flow_uuid, token):
        _log(f"create_flow {flow_uuid}")
        return {"pod_specs": pod_specs, "config_map": {"token": token}}

    def delete_flow(config_map, flow_uuid):
        _log(f"delete_flow {flow_uuid}")
""")


def test_deleting_a_flow_that_is_not_there_is_done_and_says_so(harness, tmp_path):
    """Idempotent, as `kubectl delete --ignore-not-found`: the close job of a PR whose lane is gone (never rendered,
    deleted already) succeeds, runs no plugin, and names the place it looked (a forgotten --out shows)."""
    plugin = harness.plugin("logger", LOGGER_MAIN, where=tmp_path)
    harness.app("api", "zeta, alpha")
    harness.plugin_definition(
        {"name": "rec", "type": "external", "servicename": "zeta", "args": {"token": "z-1"}},
        {"name": "rec", "type": "external", "servicename": "alpha", "args": {"token": "a-1"}},
    )
    log = tmp_path / "log"
    env = {"DEVLANE_TEST_LOG": str(log)}
    for out_dir in ([], ["--out", str(tmp_path / "elsewhere")]):
        out = harness.cli("delete", "--flow", "pr-9", f"--plugin-source=rec={plugin}", *out_dir, env=env)
        assert out.returncode == 0, out.stderr
        place = out_dir[1] if out_dir else harness.root / "rendered"
        assert out.stderr == f"devlane: flow pr-9: no lane in {place}/flows; nothing to delete\n"
        assert not log.exists()
    out = harness.cli("delete", "--flow", "Bad_Flow", f"--plugin-source=rec={plugin}", env=env)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert not log.exists()
