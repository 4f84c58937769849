"""What the CLI shows of the messages a render collects: warnings always, a plugin's stderr (an `info`
message) only with --debug, and `policy.warningsAsErrors` turning warnings, never infos, into errors."""

from __future__ import annotations

import pytest
from support import app_yaml, entry_ingress, plugin_definition

CHATTY = """
    import sys

    def create_flow(service_specs, pod_specs, flow_uuid):
        print("hello from the plugin")
        print("and on stderr", file=sys.stderr)
        return {"pod_specs": pod_specs, "config_map": {}}
"""
FLOW = ["--flow", "pr-1", "--service", "api=api:2", "--stdout"]


@pytest.fixture
def chatty(harness):
    harness.builtin("chatty", CHATTY)
    harness.write("app.yaml", app_yaml("api", "chatty") + entry_ingress("api") + plugin_definition(
        [{"name": "chatty", "type": "stateful", "servicename": "chatty"}]))
    return harness


def test_plugin_output_is_shown_only_with_debug(chatty):
    quiet = chatty.cli("render", *FLOW)
    assert quiet.returncode == 0, quiet.stderr
    assert "hello from the plugin" not in quiet.stderr + quiet.stdout
    loud = chatty.cli("render", *FLOW, "--debug")
    assert loud.returncode == 0, loud.stderr
    assert "devlane: info: plugin chatty: create_flow stderr:\nhello from the plugin" in loud.stderr
    assert "hello from the plugin" not in loud.stdout  # the object stream stays clean
    assert loud.stdout == quiet.stdout


def test_warnings_as_errors_fails_on_a_warning_but_not_on_plugin_output(chatty):
    chatty.config({"policy": {"warningsAsErrors": True}})
    ok = chatty.cli("render", *FLOW)
    assert ok.returncode == 0, ok.stderr  # the plugin's output is information, not a warning
    chatty.write("notes.yaml", "just: a note\n")  # not a Kubernetes object: a warning
    failed = chatty.cli("render", *FLOW)
    assert failed.returncode == 1
    assert "devlane: error: notes.yaml (document 1): document is not a Kubernetes object" in failed.stderr
    assert "info" not in failed.stderr and failed.stdout == ""
    chatty.config({"policy": {"warningsAsErrors": False}})
    warned = chatty.cli("render", *FLOW)
    assert warned.returncode == 0
    assert "devlane: warning: notes.yaml (document 1): document is not a Kubernetes object" in warned.stderr
