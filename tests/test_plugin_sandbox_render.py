"""The sandbox seen through the CLI: no network during render (with the hint to declare External),
the network for External plugins in `devlane provision`, and secrets never echoed."""

from __future__ import annotations

import re
import shutil
import socket
import threading

import pytest
from conftest import FIXTURES, run_cli
from test_plugin_failures_cli import make_repo

from renderer.sandbox import network_isolation

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


def _repo(tmp_path, side_effects: str | None = None):
    repo = tmp_path / "repo"
    make_repo(repo, "./plugins/netcall", {"api_key": "sk_live_s3cr3t_value"})
    shutil.copytree(FIXTURES / "plugins" / "netcall", repo / "plugins" / "netcall")
    if side_effects:
        text = (repo / "app.yaml").read_text()
        text = re.sub(r"( *)servicename: fixture", r"\1servicename: fixture\n\1sideEffects: External", text)
        (repo / "app.yaml").write_text(text)
    return repo


def test_render_has_no_network_and_says_how_to_declare_external(tmp_path, server):
    iso = network_isolation()
    if not iso.enforced:
        pytest.skip(f"network isolation cannot be enforced here: {iso.reason}")
    repo = _repo(tmp_path)
    out = run_cli("render", str(repo), *FLOW, "--stdout", env={"DEVLANE_TEST_PORT": str(server)})
    assert out.returncode == 1, out.stderr
    assert "plugin fixture" in out.stderr
    assert "External" in out.stderr and "devlane provision" in out.stderr
    assert out.stdout == ""


def test_provision_gives_external_plugins_the_network_and_render_replays(tmp_path, server):
    repo = _repo(tmp_path, side_effects="External")
    env = {"DEVLANE_TEST_PORT": str(server)}
    refused = run_cli("render", str(repo), *FLOW, "--stdout", env=env)
    assert refused.returncode == 1 and "devlane provision" in refused.stderr
    done = run_cli("provision", str(repo), *FLOW, env=env)
    assert done.returncode == 0, done.stderr
    assert (repo / ".devlane" / "state" / "pr-1" / "fixture.json").is_file()
    rendered = run_cli("render", str(repo), *FLOW, "--stdout", env={})  # no server needed: replayed
    assert rendered.returncode == 0, rendered.stderr
    assert "value: branch-42" in rendered.stdout


def test_secret_args_are_never_echoed(tmp_path):
    repo = _repo(tmp_path)
    out = run_cli("render", str(repo), *FLOW, "--stdout", env={"DEVLANE_TEST_LEAK": "1"})
    assert out.returncode == 1
    assert "the API refused key ***" in out.stderr
    assert "s3cr3t" not in out.stderr and "s3cr3t" not in out.stdout
    described = run_cli("plugins", "describe", "fixture", str(repo))
    assert "s3cr3t" not in described.stdout + described.stderr
    assert "network isolation" in described.stdout


def test_duplicate_env_left_by_a_plugin_is_a_warning_naming_it(tmp_path):
    repo = tmp_path / "dup"
    make_repo(repo, "./plugins/dup", {"db": "orders"})
    shutil.copytree(FIXTURES / "plugins" / "dup_env", repo / "plugins" / "dup")
    out = run_cli("render", str(repo), *FLOW, "--stdout")
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "twice" in line]
    assert warnings == [
        "devlane: warning: plugin fixture: the plugin left env POSTGRES_DB twice in container main of "
        "Deployment/api-pr-1; the last one wins in the pod, but server-side apply (Flux, Argo CD with "
        "ServerSideApply) rejects duplicate keys"
    ]
