"""The plugin sandbox seen through the in-process CLI, with real plugin subprocesses: no network during render
(with the hint to declare External), the network for External plugins in `devlane provision` (then render
replays), secret args never echoed (render errors, `plugins describe`), and a duplicate env var a plugin
leaves is a warning naming it."""

from __future__ import annotations

import socket
import threading

import pytest
from support import FIXTURES, Harness
from support.platform import fixture_apps

from renderer.host.confine import confinement as network_isolation

FLOW = ["--flow", "pr-1", "--service", "api=api:2"]


@pytest.fixture
def server():
    """A loopback TCP server answering `branch-42` (stands in for a database-branching API)."""
    sock = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"branch-42")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1]
    stop.set()
    thread.join()
    sock.close()


def fixture_repo(harness: Harness, fixture: str, args: dict, **extra) -> None:
    """worker and api using the plugin instance `fixture`, whose plugin is tests/fixtures/plugins/FIXTURE."""
    fixture_apps(harness, f"./plugins/{fixture}", args, **extra)
    harness.copy(FIXTURES / "plugins" / fixture, f"plugins/{fixture}")


def netcall_repo(harness: Harness, **extra) -> None:
    fixture_repo(harness, "netcall", {"api_key": "sk_live_s3cr3t_value"}, **extra)


def test_render_has_no_network_and_says_how_to_declare_external(harness, server):
    iso = network_isolation()
    if not iso.enforced:
        pytest.skip(f"network isolation cannot be enforced here: {iso.reason}")
    netcall_repo(harness)
    out = harness.cli("render", *FLOW, "--stdout", env={"DEVLANE_TEST_PORT": str(server)})
    assert out.returncode == 1, out.stderr
    assert "plugin fixture" in out.stderr
    assert "External" in out.stderr and "devlane provision" in out.stderr
    assert out.stdout == ""


def test_provision_gives_external_plugins_the_network_and_render_replays(harness, server):
    netcall_repo(harness, sideEffects="External")
    env = {"DEVLANE_TEST_PORT": str(server)}
    refused = harness.cli("render", *FLOW, "--stdout", env=env)
    assert refused.returncode == 1 and "devlane provision" in refused.stderr
    done = harness.cli("provision", *FLOW, env=env)
    assert done.returncode == 0, done.stderr
    assert (harness.root / ".devlane" / "state" / "pr-1" / "fixture.json").is_file()
    rendered = harness.cli("render", *FLOW, "--stdout")  # no server needed: replayed
    assert rendered.returncode == 0, rendered.stderr
    assert "value: branch-42" in rendered.stdout


def test_secret_args_are_never_echoed(harness):
    netcall_repo(harness)
    out = harness.cli("render", *FLOW, "--stdout", env={"DEVLANE_TEST_LEAK": "1"})
    assert out.returncode == 1
    assert "the API refused key ***" in out.stderr
    assert "s3cr3t" not in out.stderr and "s3cr3t" not in out.stdout
    described = harness.cli("plugins", "describe", "fixture", str(harness.root))
    assert "s3cr3t" not in described.stdout + described.stderr
    assert "network isolation" in described.stdout


def test_duplicate_env_left_by_a_plugin_is_a_warning_naming_it(harness):
    fixture_repo(harness, "dup_env", {"db": "orders"})
    out = harness.cli("render", *FLOW, "--stdout")
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "twice" in line]
    assert warnings == [
        "devlane: warning: plugin fixture: the plugin left env POSTGRES_DB twice in container main of "
        "Deployment/api-pr-1; the last one wins in the pod, but server-side apply (Flux, Argo CD with "
        "ServerSideApply) rejects duplicate keys"
    ]
