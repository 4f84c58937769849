"""`--timeout` and the Argo CD CMP's budget bound every stage, the ones in devlane's own process included (issue 40):
a render past its deadline stops with "timed out after N s" (N the budget), exit 1, nothing written and the previous
output intact, no process left; the library API stops at its cooperative checks (stage boundaries, long loops); the
swap of the output into place is never cut half-way; and a plugin killed at its deadline is reported as timed out,
whatever it wrote (a grandchild holding its stdout open included).

The in-process stage is made slow by a test-only hook in the devlane process alone (`support.devlane_runs.STALL`):
a busy loop, a sleep and a backtracking regular expression (CPython's `re` checks for signals as it matches), none of
which reaches a cooperative check."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from support import app_yaml
from support.devlane_runs import SANDBOXES, sandbox_env, start
from support.harness import tree
from support.processes import sleep_token, wait_for, with_token

from renderer import api
from renderer.core import deadline
from renderer.errors import RenderTimeout
from renderer.render.copies import clone
from renderer.render.inputs import parsing
from renderer.render.plan.flow_spec import FlowRequest

pytestmark = pytest.mark.e2e  # real alarms and timers: seconds of waiting, in the whole suite's tier

FLOW = ("--flow", "pr-1", "--service", "api=api:2")


def flow() -> api.FlowInput:
    return api.resolve(FlowRequest(flow_id="pr-1", images={"api": "api:2"}))


# --------------------------------------------------------------------------------------------------
# The CLI: an in-process stage that never reaches a check


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["busy", "sleep", "regex"])
def test_a_stuck_in_process_stage_stops_at_the_timeout_and_writes_nothing(harness, tmp_path, how):
    harness.write("app.yaml", app_yaml("api"))
    out = tmp_path / "out"
    first = start(harness.root, tmp_path / "t1", "render", *FLOW, "--out", str(out)).finish()
    assert first.code == 0, first.stderr
    before = tree(out)
    harness.write("app.yaml", app_yaml("api").replace("api:1", "api:1.1"))  # this render would change the output
    run = start(harness.root, tmp_path / "t2", "render", *FLOW, "--out", str(out), "--timeout", "2",
                stall=("reach", how)).finish()
    assert run.code == 1, run.stderr
    assert "devlane: error: timed out after 2 s while checking the lane" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert 2 <= run.seconds < 2 + 5, run.seconds
    assert tree(out) == before  # the previous output, byte for byte, and nothing staged beside it
    assert run.left() == [] and run.files_left() == []


@pytest.mark.e2e
def test_cmp_generate_stops_at_its_budget(harness, tmp_path):
    """ARGOCD_EXEC_TIMEOUT=3s gives the render 2.7 s (a tenth kept to answer before Argo CD's SIGTERM)."""
    harness.write("app.yaml", app_yaml("api"))
    env = {"ARGOCD_ENV_FLOW_ID": "pr-1", "PARAM_SERVICES_0": "api=api:2", "ARGOCD_EXEC_TIMEOUT": "3s"}
    run = start(harness.root, tmp_path / "t", "cmp", "generate", env=env, stall=("reach", "busy")).finish()
    assert run.code == 1 and run.stdout == "", run.stderr  # Argo CD gets no stream to apply
    assert "timed out after 2.7 s while checking the lane" in run.stderr and "ARGOCD_EXEC_TIMEOUT" in run.stderr
    assert run.seconds < 2.7 + 5, run.seconds  # from the process start: the interpreter starting up included
    assert run.left() == [] and run.files_left() == []


# --------------------------------------------------------------------------------------------------
# The library: cooperative checks, no signal


@pytest.mark.e2e  # a second of waiting
def test_the_library_stops_in_the_stage_that_ran_out(harness, monkeypatch):
    harness.write("app.yaml", app_yaml("api"))
    real = clone.make

    def slow(*args, **kwargs):
        while not deadline.current().passed:  # the budget runs out in here, where no check is
            time.sleep(0.005)
        return real(*args, **kwargs)

    monkeypatch.setattr(clone, "make", slow)
    with pytest.raises(RenderTimeout) as raised:
        api.render(harness.options(timeout=1), flow())
    assert raised.value.problems[0].message.startswith("timed out after 1 s while making the dev copies: ")
    assert deadline.current() is None  # nothing left in force for the next command of this process


def test_the_library_checks_inside_the_long_loops(harness, monkeypatch):
    """Loading 30 files that take 10 ms each stops after a few of them, not after the stage."""
    for i in range(30):
        harness.write(f"app{i:02}.yaml", app_yaml(f"svc{i:02}"))
    parsed: list[str] = []
    real = parsing._parse

    def slow(path, *args, **kwargs):
        parsed.append(path)
        time.sleep(0.01)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(parsing, "_parse", slow)
    with pytest.raises(RenderTimeout) as raised:
        api.render(harness.options(timeout=0.05, cache=False), flow())
    assert "while loading the repository" in raised.value.problems[0].message
    assert 1 <= len(parsed) < 20, parsed


def test_a_second_session_does_not_extend_the_deadline():
    outer = deadline.Deadline(60, by="--timeout")
    inner = deadline.Deadline(600)
    outer.enter()
    try:
        inner.enter()
        assert deadline.current() is outer
        assert inner.leave() is False  # the outer one is still in force
        assert deadline.current() is outer
    finally:
        assert outer.leave() is True
    assert deadline.current() is None


# --------------------------------------------------------------------------------------------------
# The hard stop (the CLI's SIGALRM) and the swap of the output


def _main_thread_only() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("SIGALRM is delivered to the main thread")


def test_the_alarm_stops_a_step_that_reaches_no_check():
    _main_thread_only()
    d = deadline.Deadline(0.05)
    with deadline.alarms(lambda: None):
        d.enter()
        try:
            with pytest.raises(deadline.TimedOut):
                end = time.monotonic() + 5
                while time.monotonic() < end:  # no check here: only the alarm stops it
                    pass
        finally:
            d.leave()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.sandbox_free
def test_a_step_that_ended_by_its_own_timer_keeps_its_error_while_it_unwinds(monkeypatch):
    """A build killed at the deadline by its own timer leaves `bounded` before its error is raised (its sandbox
    ended, its temporary directory removed, which on a loaded machine takes a while): the alarm must not replace
    that error, which names the input, with the command's anonymous one. Past the grace it still stops the rest."""
    _main_thread_only()
    monkeypatch.setattr(deadline, "BOUNDED_GRACE", 0.8)
    d = deadline.Deadline(0.05)
    with deadline.alarms(lambda: None):
        d.enter()
        try:
            with pytest.raises(ValueError, match="app: timed out"):
                with deadline.bounded():
                    time.sleep(0.35)  # the step's own timer ends it, past the deadline and the alarm's first ring
                time.sleep(0.25)  # the sandbox ends, the temporary directory goes: unbounded, a few alarm retries
                raise ValueError("app: timed out")
            with pytest.raises(deadline.TimedOut):  # a step after it that reaches no check: the alarm stops it
                end = time.monotonic() + deadline.BOUNDED_GRACE + 5
                while time.monotonic() < end:
                    pass
        finally:
            d.leave()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_swap_into_place_is_never_cut():
    """The alarm during `committing()` lets the block finish; a signal handler's action waits for its end."""
    _main_thread_only()
    d = deadline.Deadline(0.05)
    done, deferred = [], []
    with deadline.alarms(lambda: None):
        d.enter()
        try:
            with deadline.committing():
                time.sleep(0.2)  # the alarm fires in here
                assert deadline.defer(lambda: deferred.append("interrupt"))
                assert deferred == []
                done.append("swapped")
            assert deferred == ["interrupt"]
            with pytest.raises(deadline.TimedOut):  # past the deadline, the next check stops the command
                deadline.check()
        finally:
            d.leave()
    assert done == ["swapped"]
    assert not deadline.defer(lambda: None)  # outside the swap, a signal acts at once


def test_past_the_deadline_the_swap_does_not_start():
    d = deadline.Deadline(0.0)
    d.enter()
    try:
        with pytest.raises(deadline.TimedOut), deadline.committing():
            pytest.fail("the output was written past the deadline")
    finally:
        d.leave()


# --------------------------------------------------------------------------------------------------
# A plugin that hangs with a child holding its stdout

HOLDS = '''
import os, subprocess, sys, time
token, mode = sys.argv[1], sys.argv[2]
subprocess.Popen(["sleep", token], start_new_session=(mode == "exits"))  # inherits stdout
sys.stdout.write('{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [')
sys.stdout.flush()
if mode == "sleeps":
    time.sleep(600)
'''


def holding_repo(harness, token: str, mode: str) -> None:
    harness.write("app.yaml", app_yaml("api", "p"))
    harness.plugin_definition({"name": "./plugins/p", "type": "stateful", "servicename": "p", "args": {}},
                              name="p-def")
    harness.plugin("plugins/p", manifest={
        "apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "holds.test.devlane.dev"},
        "spec": {"version": "1.0.0", "runtime": {"type": "exec", "command": ["python3", "fn.py", token, mode]},
                 "capabilities": ["CreateFlow"]}}, files={"fn.py": HOLDS})


def timed_out(run, token: str) -> None:
    assert run.code == 1, run.stderr
    assert "CreateFlow of ./plugins/p (python3 fn.py" in run.stderr and "timed out after 2 s" in run.stderr, run.stderr
    assert "neither JSON nor YAML" not in run.stderr
    assert run.seconds < 2 + 6, run.seconds
    assert wait_for(lambda: not with_token(token), 10), "the plugin's child outlived devlane"
    assert run.left() == [] and run.files_left() == []


@pytest.mark.e2e
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_plugin_that_hangs_while_its_child_holds_stdout_is_timed_out(harness, tmp_path, sandbox):
    """It prints half a reply, then sleeps; its child inherited stdout."""
    token = sleep_token()
    holding_repo(harness, token, "sleeps")
    run = start(harness.root, tmp_path / "t", "render", *FLOW, "--stdout", "--plugin-timeout", "2",
                "--allow-weak-sandbox", env=sandbox_env(sandbox, tmp_path)).finish()
    timed_out(run, token)


@pytest.mark.e2e
def test_a_plugin_whose_escaped_child_holds_stdout_is_timed_out(harness, tmp_path):
    """It prints half a reply and exits; a child that left its process group (setsid) still holds stdout. Where no
    PID namespace ends the call with its main process (the Python helper), the reply is whole only once stdout is
    closed, as Go's exec.Cmd.Wait reads it: the call runs to its deadline and is timed out, not a malformed reply.
    (Under bwrap or unshare the namespace ends that child with the plugin: an exited plugin's half reply.)"""
    token = sleep_token()
    holding_repo(harness, token, "exits")
    run = start(harness.root, tmp_path / "t", "render", *FLOW, "--stdout", "--plugin-timeout", "2",
                "--allow-weak-sandbox", env=sandbox_env("python-helper", tmp_path)).finish()
    timed_out(run, token)
    assert "a process it started held its output open" in run.stderr


def test_the_cli_says_the_timeout_as_an_error(harness, monkeypatch):
    """In-process CLI (no subprocess): a deadline passed in a stage is one error line, exit 1."""
    harness.write("app.yaml", app_yaml("api"))
    monkeypatch.setattr(parsing, "_parse", lambda *a, **k: time.sleep(1))  # the alarm stops the sleep
    out = harness.cli("render", *FLOW, "--stdout", "--no-cache", "--timeout", "0.05")
    assert out.returncode == 1 and out.stdout == "", out.stderr
    assert out.stderr.startswith("devlane: error: timed out after 0.05 s while loading the repository"), out.stderr
    assert out.stderr.count("devlane: error:") == 1 and "hint: raise --timeout" in out.stderr
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.e2e  # a few seconds of waiting
def test_a_built_in_that_hangs_is_not_waited_for_past_the_deadline(harness, tmp_path):
    """A built-in runs in devlane's process, on a worker thread no signal reaches: past the deadline the command stops
    and does not wait for that thread (the process exits after it, see `renderer.cli.run`). A caller of the library
    that renders again in the same process meanwhile waits for it no longer than its own plugin timeout."""
    release = tmp_path / "release"  # the hung built-in ends when the test does, not 20 s later in another test
    harness.builtin("hang", "import os, time\n\ndef create_flow(service_specs, pod_specs, flow_uuid):\n"
                            f"    end = time.monotonic() + 20\n    while not os.path.exists({str(release)!r}) and "
                            "time.monotonic() < end:\n        time.sleep(0.02)\n    return {'pod_specs': pod_specs}\n")
    harness.builtin("seed", "def create_flow(service_specs, pod_specs, flow_uuid):\n"
                            "    return {'pod_specs': pod_specs}\n")
    harness.write("app.yaml", app_yaml("api", "db"))
    harness.plugin_definition({"name": "hang", "type": "stateful", "servicename": "db"}, name="d")
    out_dir = tmp_path / "out"
    try:
        started = time.monotonic()
        out = harness.cli("render", *FLOW, "--out", str(out_dir), "--timeout", "2", "--plugin-timeout", "60")
        took = time.monotonic() - started
        assert out.returncode == 1 and out.stderr.startswith("devlane: error: timed out after 2 s while running the "
                                                             "plugins"), out.stderr
        assert took < 8, took  # not the built-in's 20 s
        assert not out_dir.exists() or not any(out_dir.rglob("*.yaml"))

        harness.write("app.yaml", app_yaml("api", "db"))
        harness.plugin_definition({"name": "seed", "type": "stateful", "servicename": "db"}, name="d")
        started = time.monotonic()
        again = harness.cli("render", *FLOW, "--out", str(out_dir), "--plugin-timeout", "1")
        took = time.monotonic() - started
        assert again.returncode == 1, again
        assert "timed out after 1 s before it started: another built-in plugin of this process is still running" in (
            again.stderr), again.stderr
        assert took < 6, took
    finally:
        release.touch()
