"""No process outlives the command that started it (issue 40): every way a real `devlane` ends (a finished render,
a failing one, SIGTERM / SIGINT while a plugin or the sandbox probe runs, a timeout in a plugin or in an in-process
stage, `cmp generate`, `plugins describe`, a gRPC plugin) leaves no process of its own behind: no plugin, no
grandchild, no gRPC server, no probe, no bwrap. Each case runs with the sandbox as installed and with bwrap hidden.

Each run has a $TMPDIR of its own; what it left is found in the host's /proc by start time, by its pid while it runs
and afterwards by the directory every sandbox of it binds (`support.processes.left_by`), plus the plugin's own
`sleep` token. `tests/conftest.py` checks the same for the whole suite (and every bwrap orphaned meanwhile)."""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest
from support import app_yaml
from support.devlane_runs import HANG, sandbox_env, start
from support.paths import FIXTURES
from support.processes import now_ticks, orphaned_sandboxes, sleep_token, wait_for, with_token

from renderer.host import confine

pytestmark = pytest.mark.e2e

FLOW = ("--flow", "pr-1", "--service", "api=api:2", "--allow-weak-sandbox")
FINE = '''
def create_flow(service_specs, pod_specs, flow_uuid, token=""):
    return {"pod_specs": pod_specs, "config_map": {"ok": "yes"}}
'''
RAISES = '''
def create_flow(service_specs, pod_specs, flow_uuid, token=""):
    raise RuntimeError("the seed is missing")
'''
TWO = ("installed", "no-bwrap")  # bwrap as installed, and hidden (util-linux unshare)


def plugin_repo(harness, main_py: str, token: str = "") -> None:
    harness.write("app.yaml", app_yaml("api", "p"))
    harness.plugin_definition({"name": "./plugins/p", "type": "stateful", "servicename": "p",
                               "args": {"token": token}}, name="p-def")
    harness.plugin("plugins/p", main_py)


def nothing_left(run, token: str | None = None) -> None:
    assert run.left() == [], f"left running: {run.left()}\n{run.stderr}"
    if token:
        assert wait_for(lambda: not with_token(token), 10), "the plugin's child outlived devlane"
    assert run.files_left() == [], run.stderr


@pytest.fixture
def tmp(tmp_path) -> Path:
    return tmp_path / "tmpdir"


@pytest.mark.parametrize("sandbox", TWO)
def test_a_finished_render(harness, tmp, tmp_path, sandbox):
    plugin_repo(harness, FINE)
    run = start(harness.root, tmp, "render", *FLOW, "--stdout", env=sandbox_env(sandbox, tmp_path)).finish()
    assert run.code == 0 and '"ok": "yes"' in run.stdout, run.stderr + run.stdout
    nothing_left(run)


@pytest.mark.parametrize("sandbox", TWO)
def test_a_failing_render(harness, tmp, tmp_path, sandbox):
    plugin_repo(harness, RAISES)
    run = start(harness.root, tmp, "render", *FLOW, "--stdout", env=sandbox_env(sandbox, tmp_path)).finish()
    assert run.code == 1 and "the seed is missing" in run.stderr, run.stderr
    nothing_left(run)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("sandbox", TWO)
def test_a_signal_while_a_plugin_runs(harness, tmp, tmp_path, sandbox, sig):
    token = sleep_token()
    plugin_repo(harness, HANG, token)
    run = start(harness.root, tmp, "render", *FLOW, "--stdout", env=sandbox_env(sandbox, tmp_path))
    assert wait_for(lambda: bool(with_token(token)), 30), "the plugin never started"
    run.proc.send_signal(sig)
    run.finish()
    assert run.code == 128 + sig and f"stopped by {signal.Signals(sig).name}" in run.stderr, run.stderr
    nothing_left(run, token)


def slow_bwrap(tmp_path: Path, token: str) -> dict[str, str]:
    """$DEVLANE_BWRAP: the real bwrap after a `sleep` named `token`, so the command can end (or be stopped) while the
    sandbox probe runs on its thread."""
    real = next((w.path for w in confine.bwrap_candidates()), "bwrap")
    script = tmp_path / "slow-bwrap"
    script.write_text(f'#!/bin/sh\nsleep {token}\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    return {"DEVLANE_BWRAP": str(script)}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_the_sandbox_probe_runs(harness, tmp, tmp_path, sig):
    token = f"{random.randint(20, 29)}.{random.randint(10**8, 10**9)}"  # a sleep no other process uses
    plugin_repo(harness, FINE)  # a plugin: the render waits for the probe
    run = start(harness.root, tmp, "render", *FLOW, "--stdout", env=slow_bwrap(tmp_path, token))
    assert wait_for(lambda: bool(with_token(token)), 30), "the probe never started"
    run.proc.send_signal(sig)
    run.finish()
    assert run.code == 128 + sig, run.stderr
    nothing_left(run, token)


def test_a_render_that_ends_while_the_sandbox_probe_runs(harness, tmp, tmp_path):
    """No plugin: the render ends without waiting for the probe, which its exit stops."""
    token = f"{random.randint(20, 29)}.{random.randint(10**8, 10**9)}"
    harness.write("app.yaml", app_yaml("api"))
    run = start(harness.root, tmp, "render", *FLOW, "--stdout", env=slow_bwrap(tmp_path, token)).finish()
    assert run.code == 0 and run.seconds < 15, run.stderr  # it never waited for the probe
    nothing_left(run, token)


@pytest.mark.sandbox_own  # about bwrap itself
def test_the_probe_stopped_at_any_moment_of_its_setup_leaves_no_bwrap(tmp_path):
    """bwrap's first child waits on an eventfd for its parent to write the uid map before it sets its parent-death
    signal: the probe stopped at that instant (a command ending while the probe runs on its thread) used to leave
    that child sleeping forever, parent gone. Stopped at random moments of its first milliseconds, it leaves none."""
    if confine.confinement().method != "bwrap":
        pytest.skip("bwrap is not the sandbox here")
    since = now_ticks()
    work = tmp_path / "work"
    work.mkdir()
    probed = confine.confinement()
    candidate = confine.Confinement(probed.method, probed.tool, (), binary=probed.binary)  # no cgroup: a plain user's
    argv = candidate.wrap([sys.executable, "-I", "-S", "-c", "print(1)"], writable=[str(work)]).argv
    for _ in range(150):
        check = confine._Check()
        check.start(argv, str(work))
        time.sleep(random.uniform(0, 0.02))
        check.stop()
    assert wait_for(lambda: not orphaned_sandboxes(since), 5)
    assert [p for p in orphaned_sandboxes(since) if str(work) in p.args] == []


@pytest.mark.parametrize("sandbox", TWO)
def test_a_plugin_past_the_render_timeout(harness, tmp, tmp_path, sandbox):
    token = sleep_token()
    plugin_repo(harness, HANG, token)
    run = start(harness.root, tmp, "render", *FLOW, "--stdout", "--timeout", "2",
                env=sandbox_env(sandbox, tmp_path)).finish()
    assert run.code == 1 and "timed out after 2 s" in run.stderr and "plugin p" in run.stderr, run.stderr
    assert run.seconds < 2 + 8, run.seconds
    nothing_left(run, token)


@pytest.mark.parametrize("sandbox", TWO)
def test_an_in_process_stage_past_the_render_timeout_while_a_plugin_runs(harness, tmp, tmp_path, sandbox):
    """The render's own checks stall (a busy loop no check reaches) while the plugin hangs: both stop at the
    deadline, the plugin by its own timer and the stage by the alarm."""
    token = sleep_token()
    plugin_repo(harness, HANG, token)
    run = start(harness.root, tmp, "render", *FLOW, "--stdout", "--timeout", "2", env=sandbox_env(sandbox, tmp_path),
                stall=("invariants", "busy")).finish()
    assert run.code == 1 and "timed out after 2 s" in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert run.seconds < 2 + 8, run.seconds
    nothing_left(run, token)


@pytest.mark.parametrize("sandbox", TWO)
def test_cmp_generate(harness, tmp, tmp_path, sandbox):
    plugin_repo(harness, FINE)
    env = {**sandbox_env(sandbox, tmp_path), "ARGOCD_ENV_FLOW_ID": "pr-1", "PARAM_SERVICES_0": "api=api:2",
           "DEVLANE_ALLOW_WEAK_SANDBOX": "1"}
    run = start(harness.root, tmp, "cmp", "generate", env=env).finish()
    assert run.code == 0 and '"ok": "yes"' in run.stdout, run.stderr + run.stdout
    nothing_left(run)


@pytest.mark.parametrize("sandbox", TWO)
def test_plugins_describe(harness, tmp, tmp_path, sandbox):
    plugin_repo(harness, FINE)
    run = start(harness.root, tmp, "plugins", "describe", "p", str(harness.root),
                env=sandbox_env(sandbox, tmp_path)).finish()
    assert run.code == 0 and "sandbox" in run.stdout.lower(), run.stdout + run.stderr
    nothing_left(run)


@pytest.mark.parametrize("sandbox", TWO)
def test_a_grpc_plugin_render(harness, tmp, tmp_path, sandbox):
    pytest.importorskip("grpc")
    harness.app("api", "db", [{"name": "main", "image": "api:1"}])
    harness.plugin_definition({"name": "conformance", "type": "stateful", "servicename": "db",
                               "args": {"database": "orders"}}, name="db-def")
    env = sandbox_env(sandbox, tmp_path)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH") or os.environ["PATH"]])
    run = start(harness.root, tmp, "render", *FLOW, "--stdout",
                f"--plugin-source=conformance={FIXTURES / 'conformance' / 'grpc'}", env=env).finish()
    assert run.code == 0 and "orders-db-pr-1" in run.stdout, run.stderr
    nothing_left(run)
