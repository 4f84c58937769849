"""The gRPC plugin transport: a real SDK server subprocess, dialled over unix sockets (no network).

Covers Identity, the Invoke round trip, error results, deadlines, start failures, the dial mode, a
loopback TCP server in this process, process-group cleanup, and that a plugin process importing the SDK
loads nothing else of devlane. Address checks are in tests/unit/host/test_grpc_address.py; the
staleness check of the generated code is tests/unit/host/test_grpc_generated_code.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

grpc = pytest.importorskip("grpc")

from support import FIXTURES, ROOT  # noqa: E402

from renderer.errors import DevlaneError  # noqa: E402
from renderer.host.grpc_client import GrpcPlugin, describe  # noqa: E402

SERVER = FIXTURES / "grpc" / "echo_server.py"
ENV = {"PATH": os.environ.get("PATH", os.defpath), "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}


def command(mode: str = "serve") -> list[str]:
    return [sys.executable, str(SERVER), mode]


def plugin(mode: str = "serve", start_timeout: float = 20.0, **kw) -> GrpcPlugin:
    return GrpcPlugin("echo", command=command(mode), cwd=ROOT, env=ENV, start_timeout=start_timeout, **kw)


def request(operation: str = "CreateFlow", **args) -> bytes:
    doc = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "functionConfig": {"apiVersion": "devlane.dev/v1alpha1", "kind": "FlowInvocation",
                           "metadata": {"name": "echo"}, "spec": {"operation": operation, "args": args}},
        "items": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "orders", "annotations": {"x": "ü"}}}],
    }  # fmt: skip
    return json.dumps(doc).encode()


def gone(pgid: int, wait: float = 5.0) -> bool:
    """No process is left in the group; killed grandchildren may need a moment for init to reap them."""
    deadline = time.monotonic() + wait
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short private dir: unix socket paths must fit in ~104 bytes, pytest's tmp_path may not."""
    path = Path(tempfile.mkdtemp(prefix="dl-", dir="/tmp" if os.path.isdir("/tmp") else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_identity_invoke_and_cleanup():
    with plugin() as p:
        pgid = p.pid
        sock_dir = Path(p.target.removeprefix("unix://")).parent
        assert sock_dir.stat().st_mode & 0o077 == 0  # private to this user
        assert p.probe() is True
        assert p.metadata() == {
            "name": "echo.test.devlane.dev",
            "version": "1.2.3",
            "display_name": "echo.test.devlane.dev",
            "description": "echoes its items",
            "project_url": "https://example.invalid/echo",
            "protocol_versions": ["v1alpha1"],
        }
        assert p.capabilities() == ["CreateFlow", "DeleteFlow"]
        reply = json.loads(p.invoke("CreateFlow", request(), timeout=10))
        assert reply["items"] == json.loads(request())["items"]
        assert reply["results"] == [{"severity": "info", "message": "handled CreateFlow with 1 items"}]
        again = json.loads(p.invoke("DeleteFlow", request("DeleteFlow"), timeout=10))
        assert again["results"][0]["message"] == "handled DeleteFlow with 1 items"
    assert gone(pgid)
    assert not sock_dir.exists()


def test_compact_json_reply():
    with plugin() as p:
        raw = p.invoke("CreateFlow", request(), timeout=10)
    assert b": " not in raw and b", " not in raw
    assert "ü".encode() in raw  # UTF-8, not \\u escapes


def test_handler_exception_becomes_error_result():
    with plugin() as p:
        reply = json.loads(p.invoke("CreateFlow", request(fail="no database"), timeout=10))
    assert reply["kind"] == "ResourceList"
    assert reply["results"] == [{"severity": "error", "message": "ValueError: cannot CreateFlow: no database"}]
    assert reply["items"] == json.loads(request())["items"]


def test_deadline_names_plugin_and_kills_group():
    start = time.monotonic()
    with pytest.raises(DevlaneError) as err, plugin("child") as p:
        pgid = p.pid
        p.invoke("CreateFlow", request(sleep=30), timeout=0.5)
    assert str(err.value).startswith("plugin echo: Invoke CreateFlow exceeded the deadline of 0.5 s")
    assert err.value.problems[0].code == "plugin-grpc-deadline"
    assert gone(pgid)  # the server and its grandchild `sleep`
    assert time.monotonic() - start < 15


def test_server_ignoring_sigterm_is_killed():
    with plugin("ignore-term") as p:
        pgid = p.pid
    assert gone(pgid)


def test_exit_at_start_reports_status_and_stderr():
    with pytest.raises(DevlaneError) as err, plugin("exit-at-start"):
        pass
    text = str(err.value)
    assert "plugin echo: the plugin server exited with status 3 before it was ready" in text
    assert "echo: missing configuration FOO" in text
    assert err.value.problems[0].code == "plugin-grpc-exited"


@pytest.mark.parametrize("mode", ["never-listen", "not-ready"])
def test_never_ready_times_out(mode):
    p = plugin(mode, start_timeout=1.5)
    start = time.monotonic()
    with pytest.raises(DevlaneError) as err:
        p.__enter__()
    assert 1.5 <= time.monotonic() - start < 10
    text = str(err.value)
    assert "did not become ready within 1.5 s" in text
    assert ("has not created its socket" if mode == "never-listen" else "ready=false") in text
    assert ("warming up forever" if mode == "never-listen" else "echo: serving on unix://") in text
    assert err.value.problems[0].code == "plugin-grpc-not-ready"
    assert p.pid is None  # cleaned up by the failed start


def test_command_not_found():
    with pytest.raises(DevlaneError, match="could not start"):
        GrpcPlugin("echo", command=["/nonexistent/plugin-server"], env=ENV, start_timeout=1).__enter__()


def test_dial_unix_socket_leaves_server_running(short_dir):
    sock = short_dir / "echo.sock"
    server = subprocess.Popen(command(), env={**ENV, "DEVLANE_PLUGIN_ADDRESS": f"unix://{sock}"},
                              cwd=ROOT, start_new_session=True)  # fmt: skip
    try:
        with GrpcPlugin("echo", address=f"unix://{sock}", start_timeout=20) as p:
            assert p.pid is None
            assert json.loads(p.invoke("CreateFlow", request(), timeout=10))["results"][0]["severity"] == "info"
        assert server.poll() is None  # devlane did not stop a server it did not start
        relative = describe("echo", address="unix:echo.sock", cwd=short_dir, start_timeout=5)
        assert relative["capabilities"] == ["CreateFlow", "DeleteFlow"]
        assert server.poll() is None
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0  # the SDK stops cleanly on SIGTERM
        assert not sock.exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def test_server_death_is_reported(short_dir):
    sock = short_dir / "echo.sock"
    server = subprocess.Popen(command(), env={**ENV, "DEVLANE_PLUGIN_ADDRESS": f"unix://{sock}"},
                              cwd=ROOT, start_new_session=True)  # fmt: skip
    try:
        with GrpcPlugin("echo", address=f"unix://{sock}", start_timeout=20) as p:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            with pytest.raises(DevlaneError) as err:
                p.invoke("CreateFlow", request(), timeout=5)
        assert err.value.problems[0].code == "plugin-grpc-unavailable"
        assert "Invoke CreateFlow failed: the plugin server at unix://" in str(err.value)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def test_started_server_crash_mentions_exit_status():
    with plugin() as p:
        os.kill(p.pid, signal.SIGKILL)
        p._proc.wait()
        with pytest.raises(DevlaneError) as err:
            p.invoke("CreateFlow", request(), timeout=5)
    assert "the plugin server was killed by SIGKILL" in str(err.value) and "during Invoke CreateFlow" in str(err.value)


def test_loopback_tcp_in_process_server():
    from renderer.sdk import PluginServer

    def handler(op: str, doc: dict) -> dict:
        return {**doc, "results": [{"severity": "info", "message": op}]}

    server = PluginServer(handler, name="inproc", version="0", capabilities=["CreateFlow"], address="127.0.0.1:0")
    server.start()
    try:
        with GrpcPlugin("inproc", address=f"127.0.0.1:{server.port}", start_timeout=10) as p:
            reply = json.loads(p.invoke("CreateFlow", request(), timeout=10))
        assert reply["results"] == [{"severity": "info", "message": "CreateFlow"}]
    finally:
        server.stop(0)


# The SDK may bring the wire protocol (renderer.protocol) and nothing else of devlane.
@pytest.mark.parametrize("modules", ["renderer.sdk",
                                     "renderer.sdk, renderer.sdk.krm, renderer.sdk.kardinal, renderer.sdk.grpc_server"])
def test_sdk_imports_nothing_else_from_devlane(modules):
    code = (f"import sys, {modules}; extra = sorted(m for m in sys.modules if m.startswith('renderer.')"
            " and m.split('.')[1] not in ('sdk', 'protocol')); print(extra)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], env=ENV, cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
