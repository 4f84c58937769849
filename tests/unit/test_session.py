"""What a session does to the process around it: the sandbox probe started while the repository is read, and
the garbage collector paused for the command (and, in a process that retains its sessions, freed of the
command's objects)."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from renderer import session as session_module
from renderer.host import confine
from renderer.session import Options, Session

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bookshop"


@pytest.fixture
def probes(monkeypatch) -> list[str]:
    """Each `probe_soon` call the session makes, by the mode it was opened in (the probe itself does not run)."""
    calls: list[str] = []
    monkeypatch.setattr(confine, "probe_soon", lambda: calls.append("probe"))
    return calls


def test_a_render_session_probes_the_sandbox_while_it_reads(probes):
    with Session(Options(repo=EXAMPLE, cache=False)):
        pass
    assert probes == ["probe"]


def test_lint_and_inspection_sessions_run_no_plugin_and_probe_nothing(probes):
    with Session(Options(repo=EXAMPLE, cache=False), collect=True):
        pass
    assert probes == []


def test_the_collector_is_paused_for_the_command_and_resumed(probes):
    assert gc.isenabled()
    with Session(Options(repo=EXAMPLE, cache=False)):
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # a library caller keeps a collector that sees everything


def test_a_retaining_process_hides_the_commands_objects_from_the_collector(probes, monkeypatch):
    monkeypatch.setattr(session_module, "_retaining", True)
    monkeypatch.setattr(session_module, "_retained", [])
    try:
        with Session(Options(repo=EXAMPLE, cache=False)) as s:
            documents = s.loaded.documents
        assert gc.isenabled()
        frozen = gc.get_freeze_count()
        assert frozen > len(documents)  # the documents, their dicts and strings: no collection walks them
    finally:
        gc.unfreeze()


def test_probe_soon_runs_the_probe_once_on_another_thread(monkeypatch):

    ran: list[str] = []
    result = confine._unconfined("none", "stub")

    def best(_methods):
        ran.append(threading.current_thread().name)
        return result

    monkeypatch.setattr(confine, "_probed", None)
    monkeypatch.setattr(confine, "best", best)
    monkeypatch.setattr(confine, "reclaim_cgroups", lambda: None)
    thread = confine.probe_soon()
    assert thread is not None
    thread.join(5)
    assert ran == ["devlane-sandbox-probe"]
    assert confine.confinement() is result  # the main thread finds it done
    assert confine.probe_soon() is None  # probed already: nothing starts
    assert ran == ["devlane-sandbox-probe"]


_EXIT_DURING_PROBE = """
import glob, itertools, os, sys, threading, time
from renderer.host.confine import probe_soon
probe_soon()
deadline = time.monotonic() + 20
while not (found := glob.glob(os.path.join(sys.argv[1], f"devlane-probe-{os.getpid()}.*"))):
    if time.monotonic() > deadline:
        sys.exit("the probe made no directory")
    time.sleep(0.001)

def scribble(where=found[0]):  # what the sandboxed check does while the command ends: files keep appearing
    for i in itertools.count():
        try:
            open(os.path.join(where, f"f{i}"), "w").close()
        except OSError:
            pass

threading.Thread(target=scribble, daemon=True).start()
time.sleep(0.01)
"""


@pytest.mark.e2e  # a subprocess that runs the real probe
def test_a_command_ending_while_the_probe_runs_prints_nothing_more(tmp_path):
    """The probe's thread is a daemon: a command that fails early (a closed stdout) ends while it runs. The exit
    handler stops the probe and removes its directory, though files keep appearing there, with nothing printed
    after devlane's one-line error (TemporaryDirectory's finalizer printed a traceback, seen in CI)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "TMPDIR": str(tmp_path)}
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", _EXIT_DURING_PROBE, str(tmp_path)], capture_output=True,
                              text=True, env=env, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        assert not list(tmp_path.iterdir()), "the probe's directory outlived the command"
