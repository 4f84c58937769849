"""Nothing left behind, on any exit: every way a real `devlane` process ends (an error in any stage, a plugin
that raises or hangs past its timeout ignoring SIGTERM, SIGTERM / SIGINT to devlane, bad CMP parameters) leaves no
temporary directory in its $TMPDIR and no process of its plugins; a `kill -9` leaves them only until the next run
of any command, which removes them.

Each process gets a $TMPDIR of its own, so what is left is exactly what it left; plugin processes are found by a
unique `sleep` token in the host's /proc (support.processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT, app_yaml
from support.devlane_runs import HANG
from support.processes import mentioning, sleep_token, wait_for, with_token

pytestmark = pytest.mark.e2e

FLOW = ("--flow", "pr-1", "--service", "api=api:2", "--stdout")
RAISES = '''
def create_flow(service_specs, pod_specs, flow_uuid):
    raise RuntimeError("the seed is missing")
'''


def plugin_repo(harness, main_py: str, args: dict | None = None) -> None:
    harness.write("app.yaml", app_yaml("api", "p"))
    harness.plugin_definition({"name": "./plugins/p", "type": "stateful", "servicename": "p", "args": args or {}},
                              name="p-def")  # fmt: skip
    harness.plugin("plugins/p", main_py)


def start(harness, tmp: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    tmp.mkdir(exist_ok=True)
    full = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "renderer.cli", *args], cwd=harness.root, env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def finish(proc: subprocess.Popen, timeout: float = 60) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def left(tmp: Path) -> list[str]:
    """What the run left in its $TMPDIR: directories, and processes still working in one (a sandbox started
    there, whose command line names its directory), which get a moment to be reaped."""
    assert wait_for(lambda: not mentioning(str(tmp)), 5), f"processes left: {mentioning(str(tmp))}"
    return sorted(p.name for p in tmp.iterdir()) if tmp.is_dir() else []



@pytest.fixture
def tmp(tmp_path) -> Path:
    return tmp_path / "tmpdir"


def slow_bwrap(tmp_path: Path) -> dict[str, str]:
    """$DEVLANE_BWRAP: a bwrap that takes two seconds to start, so the command ends while the sandbox probe runs
    on its thread (as on a machine where bwrap fails and the slower fallbacks are probed)."""
    from renderer.host import confine

    real = next((w.path for w in confine.bwrap_candidates()), "bwrap")
    script = tmp_path / "slow-bwrap"
    script.write_text(f'#!/bin/sh\nsleep 2\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    return {"DEVLANE_BWRAP": str(script)}


@pytest.mark.parametrize("probe", ["quick", "slow"])
@pytest.mark.parametrize("case", ["bad-yaml", "bad-annotation", "plugin-raises", "no-such-service"])
def test_an_error_in_any_stage_leaves_nothing(harness, tmp, tmp_path, case, probe):
    if case == "bad-yaml":
        harness.write("app.yaml", app_yaml("api") + "---\nkind: [unclosed\n")
    elif case == "bad-annotation":
        harness.write("app.yaml", app_yaml("api").replace("name: api\n", "name: api\n  annotations: {kardinal.dev"
                                                          ".service/dependencies: 'nope:'}\n", 1))
    elif case == "plugin-raises":
        plugin_repo(harness, RAISES)
    else:
        harness.write("app.yaml", app_yaml("api"))
    flow = FLOW if case != "no-such-service" else ("--flow", "pr-1", "--service", "nope=x:1", "--stdout")
    env = slow_bwrap(tmp_path) if probe == "slow" else {}
    code, err = finish(start(harness, tmp, "render", str(harness.root), *flow, "--allow-weak-sandbox", env=env))
    assert code == 1 and "Traceback" not in err, err
    assert left(tmp) == [], err


def test_a_plugin_that_hangs_and_ignores_sigterm_is_a_timeout_and_leaves_nothing(harness, tmp):
    token = sleep_token()
    plugin_repo(harness, HANG, {"token": token})
    code, err = finish(start(harness, tmp, "render", str(harness.root), *FLOW, "--plugin-timeout", "2"))
    assert code == 1 and "timed out after 2 s" in err and "reply" not in err.split("hint:")[0], err
    assert wait_for(lambda: not with_token(token), 10), "the plugin's child outlived the timeout"
    assert left(tmp) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_devlane_leaves_nothing(harness, tmp, sig):
    token = sleep_token()
    plugin_repo(harness, HANG, {"token": token})
    proc = start(harness, tmp, "render", str(harness.root), *FLOW)
    assert wait_for(lambda: bool(with_token(token)), 30), "the plugin never started"
    proc.send_signal(sig)
    code, err = finish(proc)
    assert code == 128 + sig and f"stopped by {signal.Signals(sig).name}" in err, err
    assert wait_for(lambda: not with_token(token), 10)
    assert left(tmp) == []


def test_kill_9_leaves_directories_that_the_next_run_removes(harness, tmp):
    token = sleep_token()
    plugin_repo(harness, HANG, {"token": token})
    for _ in range(2):  # two rounds: each killed run leaves its own
        proc = start(harness, tmp, "render", str(harness.root), *FLOW)
        assert wait_for(lambda: bool(with_token(token)), 30), "the plugin never started"
        proc.kill()
        proc.wait()
        assert wait_for(lambda: not with_token(token), 10), "the plugin outlived devlane's SIGKILL"
    stale = left(tmp)
    assert any(n.startswith("devlane-plugin-") for n in stale) and any(n.startswith("devlane-plugins-")
                                                                      for n in stale), stale
    harness.write("app.yaml", app_yaml("api"))  # the next run: any command, even one that runs no plugin
    code, err = finish(start(harness, tmp, "lint", str(harness.root)))
    assert code == 0, err
    assert left(tmp) == []


def test_bad_cmp_parameters_leave_nothing(harness, tmp):
    harness.write("app.yaml", app_yaml("api"))
    for params in ('[{"name": "image", "string": "' + "a" * 300 + '"}]', "[" * 50_000 + "]" * 50_000, "{"):
        env = {"ARGOCD_ENV_FLOW_ID": "pr-1", "ARGOCD_APP_PARAMETERS": params}
        code, err = finish(start(harness, tmp, "cmp", "generate", env=env))
        assert code == 1 and "Traceback" not in err, err
    assert left(tmp) == []


def test_a_finished_render_leaves_nothing(harness, tmp):
    plugin_repo(harness, "def create_flow(service_specs, pod_specs, flow_uuid):\n"
                "    return {'pod_specs': pod_specs, 'config_map': {}}\n")
    started = time.monotonic()
    code, err = finish(start(harness, tmp, "render", str(harness.root), *FLOW))
    assert code == 0, err
    assert left(tmp) == [] and time.monotonic() - started < 60
