"""The plugin sandbox seen through the in-process CLI, with real plugin subprocesses: no network during render
(with the hint to declare External), the network for External plugins in `devlane provision` (then render
replays), secret args never echoed (render errors, `plugins describe`), and a duplicate env var a plugin
leaves is a warning naming it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest
from support import FIXTURES, ROOT, Harness
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


def test_under_an_inherited_hard_cpu_limit_an_unpinned_plugin_runs_confined_within_it(harness):
    """A CI job's `ulimit -t 60`: a hard CPU limit below a plugin's 120 s, which devlane cannot raise. Each sandbox's
    prlimit asks for the lower limit (asking for 120 s failed, every sandbox method with it, and the unpinned plugin
    was refused as unconfined); the plugin's process then runs under 60 CPU seconds."""
    if not network_isolation().enforced:
        pytest.skip(f"the sandbox cannot be enforced here: {network_isolation().reason}")
    fixture_repo(harness, "dup_env", {"db": "orders"})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def devlane(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["prlimit", "--cpu=60:60", sys.executable, "-m", "renderer.cli", *args],
                              cwd=harness.root, env=env, capture_output=True, text=True, timeout=120)

    done = devlane("render", *FLOW, "--stdout")
    assert done.returncode == 0, done.stderr
    assert "name: api-pr-1" in done.stdout and "POSTGRES_DB" in done.stdout
    described = devlane("plugins", "describe", "fixture")  # what the probe saw inside the sandbox
    assert "enforced  cpu-time-limit: 120 CPU seconds per process, lowered to 60 by the hard limit" in described.stdout
