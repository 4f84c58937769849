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


def test_delete_unknown_flow(harness, tmp_path):
    plugin = harness.plugin("logger", LOGGER_MAIN, where=tmp_path)
    harness.app("api", "zeta, alpha")
    harness.plugin_definition(
        {"name": "rec", "type": "external", "servicename": "zeta", "args": {"token": "z-1"}},
        {"name": "rec", "type": "external", "servicename": "alpha", "args": {"token": "a-1"}},
    )
    log = tmp_path / "log"
    env = {"DEVLANE_TEST_LOG": str(log)}
    out = harness.cli("delete", "--flow", "pr-9", f"--plugin-source=rec={plugin}", env=env)
    assert out.returncode == 1
    assert "no rendered flow pr-9" in out.stderr
    assert "hint: pass --out DIR (the render's output root) or --ref REF" in out.stderr
    assert "Traceback" not in out.stderr
    assert not log.exists()
    out = harness.cli("delete", "--flow", "Bad_Flow", f"--plugin-source=rec={plugin}", env=env)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert not log.exists()
