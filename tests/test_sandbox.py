"""The plugin sandbox with real subprocesses: allowlisted env, no network, hints, secret scrubbing, tails.

Network tests only talk to a loopback server started here; inside the sandbox even that must fail.
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

from renderer import sandbox
from renderer.sandbox import (
    ENV_ALLOWLIST,
    MASK,
    NETWORK_HINT,
    BoundedTail,
    Isolation,
    network_hint,
    network_isolation,
    plugin_env,
    sandboxed_argv,
    scrub,
    scrub_obj,
    secret_values,
)

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


def _enforced() -> Isolation:
    iso = network_isolation()
    if not iso.enforced:
        pytest.skip(f"network isolation cannot be enforced here: {iso.reason}")
    return iso


@pytest.fixture(params=["auto", "util-linux unshare", "python helper"])
def wrap(request):
    """Start commands through the probed wrapper, and through each implementation on its own."""
    _enforced()
    if request.param == "auto":
        return sandboxed_argv
    iso = sandbox._probe([c for c in sandbox._candidates() if c[1] == request.param])
    if not iso.enforced:
        pytest.skip(f"{request.param} cannot isolate here: {iso.reason}")
    return lambda argv: [*iso.wrapper, *argv]


def _run(argv: list[str], cwd: Path, timeout: float = 20, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=plugin_env(str(cwd), kw.pop("extra", None)), capture_output=True,
                          text=True, timeout=timeout, check=False, **kw)  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Environment


def test_plugin_env_passes_only_the_allowlist(monkeypatch, tmp_path):
    for name in ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "ARGOCD_AUTH_TOKEN", "KUBECONFIG", "HTTPS_PROXY",
                 "http_proxy", "PYTHONPATH", "SSH_AUTH_SOCK", "SOURCE_DATE_EPOCH"):  # fmt: skip
        monkeypatch.setenv(name, "leak-me")
    monkeypatch.setenv("DEVLANE_X", "visible")
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    seen = json.loads(_run([PY, "-c", code], tmp_path).stdout)
    assert "leak-me" not in json.dumps(seen)
    assert seen["DEVLANE_X"] == "visible"
    assert seen["HOME"] == seen["TMPDIR"] == str(tmp_path)
    assert (seen["LANG"], seen["LC_ALL"], seen["TZ"], seen["PYTHONHASHSEED"]) == ("C.UTF-8", "C.UTF-8", "UTC", "0")
    assert "SOURCE_DATE_EPOCH" not in seen
    fixed = {n for n in ENV_ALLOWLIST if not n.endswith("*")}
    assert {k for k in seen if not k.startswith("DEVLANE_")} <= fixed

    seen = json.loads(_run([PY, "-c", code], tmp_path, extra={"SOURCE_DATE_EPOCH": "1700000000"}).stdout)
    assert seen["SOURCE_DATE_EPOCH"] == "1700000000"


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
    assert network_hint(proc.stderr) == NETWORK_HINT


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
    assert facts["pid"] == proc.pid  # exec in place: the runtime's process-group kill still reaches the plugin
    assert facts["uid"] == os.getuid()
    assert facts["x"] == "1"
    assert facts["sigign"] == normal["sigign"]  # no signal left ignored by the wrapper


def test_a_missing_command_exits_127(wrap, tmp_path):
    proc = _run(wrap(["devlane-no-such-plugin-binary"]), tmp_path)
    assert proc.returncode == 127
    assert "devlane-no-such-plugin-binary" in proc.stderr


def test_sandboxed_children_started_from_threads(server, tmp_path):
    _enforced()
    results: dict[int, subprocess.CompletedProcess] = {}

    def worker(i: int) -> None:
        d = tmp_path / str(i)
        d.mkdir()
        results[i] = _run(sandboxed_argv([PY, "-c", CONNECT + f"\nprint({i})", str(server)]), d)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == list(range(6))
    for proc in results.values():
        assert proc.returncode == 1 and "blocked errno=" in proc.stdout, proc.stderr


def test_network_allowed_or_unavailable_leaves_argv_alone(monkeypatch):
    assert sandboxed_argv(["plugin", "--x"], network=True) == ["plugin", "--x"]
    monkeypatch.setattr(sandbox, "_probed", Isolation(False, "none", "unit test"))
    assert network_isolation().reason == "unit test"
    assert sandboxed_argv(["plugin"]) == ["plugin"]
    assert "not enforced" in network_isolation().describe()


def test_isolation_is_probed_once():
    first = network_isolation()
    assert network_isolation() is first
    assert (first.reason == "") == first.enforced
    if first.enforced:
        assert first.method in ("netns", "userns+netns") and first.wrapper and "no network" in first.describe()


def test_probe_explains_why_it_cannot_isolate(monkeypatch):
    false = shutil.which("false") or "/bin/false"
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    sysctls = {"/proc/sys/kernel/unprivileged_userns_clone": "0"}
    monkeypatch.setattr(sandbox, "_read_sysctl", sysctls.get)
    iso = sandbox._probe([("userns+netns", "fake", (false,))])
    assert not iso.enforced and iso.method == "none"
    assert iso.reason == "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)"
    sysctls.clear()
    assert "seccomp" in sandbox._probe([("netns", "fake", (false,))]).reason
    monkeypatch.setattr(sandbox.sys, "platform", "darwin")
    assert "Linux-only" in sandbox._probe([]).reason


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
        shutil.copy(Path(sandbox.__file__), work / "sandbox.py")
        os.chmod(work, 0o777)
        os.chmod(work / "sandbox.py", 0o644)
        code = f"""
import json, subprocess, sys
sys.path.insert(0, {str(work)!r})
import sandbox
iso = sandbox.network_isolation()
out = {{"enforced": iso.enforced, "method": iso.method, "reason": iso.reason}}
if iso.enforced:
    argv = sandbox.sandboxed_argv([sys.executable, "-c", {CONNECT!r}, "{server}"])
    p = subprocess.run(argv, capture_output=True, text=True, cwd={str(work)!r}, env=sandbox.plugin_env({str(work)!r}))
    out["child"] = p.stdout
    p = subprocess.run(sandbox.sandboxed_argv(["id", "-u"]), capture_output=True, text=True)
    out["uid"] = p.stdout.strip()
print(json.dumps(out))
"""
        proc = subprocess.run([python, "-I", "-c", code], user=65534, group=65534, extra_groups=[], cwd=work,
                              env={"PATH": os.environ.get("PATH", os.defpath)}, capture_output=True, text=True,
                              timeout=60, check=False)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        facts = json.loads(proc.stdout)
        if not facts["enforced"]:
            pytest.skip(f"unprivileged isolation unavailable: {facts['reason']}")
        assert facts["method"] == "userns+netns"
        assert "blocked errno=" in facts["child"]
        assert facts["uid"] == "65534"
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# Network hints


@pytest.mark.parametrize(
    "text",
    [
        "OSError: [Errno 101] Network is unreachable",
        "socket.gaierror: [Errno -3] Temporary failure in name resolution",
        "socket.gaierror: [Errno -2] Name or service not known",
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.neon.tech', port=443): Max retries "
        "exceeded with url: /v2/projects (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object>: "
        "Failed to establish a new connection: [Errno 111] Connection refused'))",
        "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>",
        "curl: (6) Could not resolve host: api.github.com",
        "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com",
        'Get "https://api.example.com": dial tcp: lookup api.example.com on 10.0.0.2:53: no such host',
        "Error: getaddrinfo ENOTFOUND registry.npmjs.org",
        "httpx.ConnectError: [Errno 99] Cannot assign requested address",
        "dial tcp 10.1.2.3:5432: connect: connection refused",
        "Error: connect ECONNREFUSED 203.0.113.9:443",
        "java.net.UnknownHostException: api.example.com",
    ],
)
def test_network_hint_recognises_network_attempts(text):
    assert network_hint(f"Traceback (most recent call last):\n  ...\n{text}\n") == NETWORK_HINT


@pytest.mark.parametrize(
    "text",
    [
        "",
        "KeyError: 'token'",
        "ValueError: port must be between 0 and 65535",
        "error: NetworkPolicy 'deny-all' not found in the flow",
        "plugin timed out after 30 s",
        "ConnectionRefusedError: [Errno 111] Connection refused",  # no target named: may be a local helper
        "dial tcp 127.0.0.1:8080: connect: connection refused",
        "requests.exceptions.HTTPError: 404 Client Error for url: https://localhost:9000/x",
        "Error: connect ECONNREFUSED 127.0.0.1:6379",
        "see https://docs.example.com/plugins for the args schema",
    ],
)
def test_network_hint_stays_quiet_on_other_failures(text):
    assert network_hint(text) is None


# --------------------------------------------------------------------------------------------------
# Secrets


def test_secret_values_from_schema_marks_and_names():
    schema = {"type": "object", "properties": {
        "dbPassword": {"type": "string"},
        "apiToken": {"type": "string", "x-devlane-secret": False},
        "seed": {"type": "string", "writeOnly": True},
        "pin": {"type": "integer", "format": "password"},
        "conn": {"type": "object", "x-devlane-secret": True},
        "nested": {"type": "object", "properties": {"inner": {"type": "string", "writeOnly": True}}},
    }}  # fmt: skip
    args = {
        "dbPassword": "hunter22",
        "apiToken": "public-not-secret",
        "seed": "s33d-value",
        "pin": 4711,
        "conn": {"user": "admin", "pass": "pa55word"},
        "nested": {"inner": "deep-secret", "plain": "visible"},
        "GITHUB_TOKEN": "ghp_abcdef123456",
        "aws_secret_access_key": "AKIA/xyz+abc",
        "API_KEY": "ab",  # too short to scrub without mangling output
        "use_token": "true",  # a flag, not a secret
        "token_ttl": 3600,  # a number under a secret-looking name only
        "database_url": "postgres://app:s%40fe-pw@db.example.com:5432/app",
        "image": "nginx:1.27",
    }
    found = secret_values(args, schema)
    assert set(found) == {"hunter22", "s33d-value", "4711", "admin", "pa55word", "deep-secret", "ghp_abcdef123456",
                          "AKIA/xyz+abc", "s%40fe-pw", "s@fe-pw"}  # fmt: skip
    assert [len(s) for s in found] == sorted((len(s) for s in found), reverse=True)
    assert secret_values({"password": "topsecret"}, None) == ["topsecret"]
    assert secret_values({}, schema) == []


def test_secret_values_splits_multiline_secrets():
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
    found = secret_values({"tls_key": pem})
    assert pem in found and "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" in found


def test_scrub_hides_secrets_inside_longer_strings():
    text = "auth failed for token=ghp_abcdef123456; retry with ghp_abcdef123456!"
    assert scrub(text, ["ghp_abcdef123456"]) == "auth failed for token=***; retry with ***!"
    assert scrub(text, []) == text
    assert scrub("ab and abc", ["ab"]) == "ab and abc"  # too short to be treated as a secret
    assert scrub('{"pw": "a\\"b\\\\c"}', ['a"b\\c']) == '{"pw": "***"}'  # as json.dumps wrote it
    assert scrub("url?pw=p%40ss%2Fword", ["p@ss/word"]) == "url?pw=***"  # as a query string carries it


@pytest.mark.parametrize("order", [["abcdef", "defghi"], ["defghi", "abcdef"]])
def test_scrub_overlapping_and_nested_secrets(order):
    assert scrub("xx abcdefghi yy", order) == "xx *** yy"  # no "ghi" or "abc" left over
    assert scrub("abcdefabcdef", order) == "***"
    assert scrub("secret and secretvalue", ["secret", "secretvalue"]) == "*** and ***"


def test_scrub_obj_walks_messages_and_results():
    obj = {
        "message": "could not log in as admin with pa55word",
        "results": [{"field": "pa55word", "n": 3, "ok": True}, ("pa55word", None)],
        "pa55word-key": "v",
    }
    assert scrub_obj(obj, ["pa55word", "admin"]) == {
        "message": f"could not log in as {MASK} with {MASK}",
        "results": [{"field": MASK, "n": 3, "ok": True}, (MASK, None)],
        f"{MASK}-key": "v",
    }
    assert scrub_obj(obj, []) is obj


# --------------------------------------------------------------------------------------------------
# Output tails


def test_bounded_tail_keeps_only_the_end():
    tail = BoundedTail(limit=10)
    for chunk in (b"line1\n", b"line2\n", b"line3\n"):
        tail.feed(chunk)
    assert tail.data == b"ne2\nline3\n" and tail.total == 18 and tail.truncated
    assert tail.text() == "line3\n"
    tail.feed(b"x" * 50)
    assert tail.data == b"x" * 10
    small = BoundedTail(limit=100)
    small.feed(b"all of it")
    assert small.text() == "all of it" and not small.truncated


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
