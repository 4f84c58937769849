"""Fixtures for every layer. Tests under `tests/e2e/`, `tests/contract/` and `tests/security/` are marked
`e2e`: they start real processes (plugin subprocesses, the CLI, git, kubectl, a browser, venvs, gRPC servers);
`pytest -m "not e2e"` runs the in-process unit and CLI tests alone. Tests under `tests/cluster/` are marked `cluster`
and `e2e` (a real control plane)."""

from __future__ import annotations

import atexit
import compileall
import os
import shutil
import sys
import tempfile

# Bytecode, even where PYTHONDONTWRITEBYTECODE is set (as on the CI machine): pytest keeps its assertion
# rewrites only where bytecode may be written, and re-rewrote some 220 test modules on every run (4 s of the
# fast suite); and every devlane subprocess the tests start (the CLI, plugins, gRPC servers) compiled the
# renderer from source again (0.15 s each, hundreds of them). Compiled once here, the subprocesses read it.
sys.dont_write_bytecode = False

import pytest  # noqa: E402 - after the setting above, so the modules below are cached too
from support import ROOT, Harness, demo_file, hypothesis_profiles  # noqa: E402

for _tree in ("renderer", "plugins"):
    compileall.compile_dir(ROOT / _tree, quiet=1)

E2E_DIRS = {"e2e", "contract", "security", "cluster"}

# Tools that tests/setup_*.sh install inside the checkout (helm): found by shutil.which and by subprocesses.
TOOLS_BIN = ROOT / ".tools" / "bin"
if TOOLS_BIN.is_dir():
    os.environ["PATH"] = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


# The parse cache of every devlane run in the tests: one per test session, never the user's ~/.cache/devlane.
# Shared across tests on purpose, so renders of the same inputs exercise the warm path too.
if "DEVLANE_CACHE" not in os.environ or not os.environ.get("DEVLANE_TEST_KEEP_CACHE"):
    os.environ["DEVLANE_CACHE"] = tempfile.mkdtemp(prefix="devlane-test-cache-")
    atexit.register(shutil.rmtree, os.environ["DEVLANE_CACHE"], True)


# Property tests: 50 examples each, random locally, derandomized in CI (`ci`); `random` (200, fresh seed) and
# `thorough` (500) run deeper: DEVLANE_HYPOTHESIS=<profile> (tests/support/hypothesis_profiles.py).
hypothesis_profiles.load()


# No process outlives the suite (issue 40). Each test process, at its end, lists the processes it started that still
# run (in-process renders: probes, plugins, gRPC servers, git); with xdist each worker is a session of its own and
# cannot fail the run, so workers write theirs to a directory the controller reads. The controller (or the only
# process) adds every bwrap orphaned on this machine since the suite began (a killed sandbox setup sleeps forever),
# prints them all and fails the run.
_LEFTOVERS = "DEVLANE_TEST_LEFTOVERS"
if _LEFTOVERS not in os.environ:
    os.environ[_LEFTOVERS] = tempfile.mkdtemp(prefix="devlane-test-leftovers-")
    atexit.register(shutil.rmtree, os.environ[_LEFTOVERS], True)
_SUITE_STARTED = pytest.StashKey[int]()


def pytest_sessionstart(session):
    from support.processes import now_ticks

    session.config.stash[_SUITE_STARTED] = now_ticks()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    from support.processes import descendants, orphaned_sandboxes, processes, wait_for

    since = session.config.stash.get(_SUITE_STARTED, None)
    if since is None:
        return
    leftovers = os.environ[_LEFTOVERS]
    worker = hasattr(session.config, "workerinput")
    if worker or not session.config.pluginmanager.hasplugin("dsession"):  # the controller's children are workers
        mine = lambda: descendants(os.getpid(), processes(since))  # noqa: E731
        if not wait_for(lambda: not mine(), 5):
            with open(os.path.join(leftovers, f"{os.getpid()}.txt"), "a") as out:
                out.writelines(f"left running by test process {os.getpid()}: {p}\n" for p in mine())
    if worker:
        return
    wait_for(lambda: not orphaned_sandboxes(since), 5)
    found = [f"orphaned sandbox: {p}\n" for p in orphaned_sandboxes(since)]
    for name in sorted(os.listdir(leftovers)):
        with open(os.path.join(leftovers, name)) as text:
            found += text.readlines()
    if found:
        print("\n\nPROCESSES OUTLIVED THE TEST SUITE (issue 40: no process outlives the command that started it):\n"
              + "".join(f"  {line}" for line in found), file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_report_header(config):
    """Which plugin-sandbox layers this machine enforces: the security tests skip only the missing ones."""
    from renderer.host.confine import confinement

    got = confinement()
    missing = ", ".join(la.name for la in got.missing()) or "none"
    return [f"plugin sandbox: {got.method} ({got.tool}); {len(got.layers) - len(got.missing())}/{len(got.layers)} "
            f"layers enforced; missing: {missing}"]


def pytest_ignore_collect(collection_path, config):
    """`-m "not e2e"` (the fast part): the end-to-end directories hold only e2e tests, so they are not even
    imported (every xdist worker would collect them, about a second each, only to deselect them)."""
    if _fast_part(config) and collection_path.parent == config.rootpath / "tests" \
            and collection_path.name in E2E_DIRS:
        return True
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        top = set(item.path.relative_to(config.rootpath / "tests").parts[:1])
        if E2E_DIRS & top:
            item.add_marker(pytest.mark.e2e)
        if "cluster" in top:  # a real control plane (tests/cluster/conftest.py)
            item.add_marker(pytest.mark.cluster)


def _fast_part(config: pytest.Config) -> bool:
    return config.getoption("markexpr", "").strip() == "not e2e"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker per core for the fast part, which computes; two per core for the whole suite, whose
    end-to-end tests spend much of their time waiting (plugin timeouts, killed and hung processes, builds in
    subprocesses, a control plane's controllers): on two cores it then takes about 8 minutes, not 9.5."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores if _fast_part(config) else 2 * cores


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """The whole suite: xdist's load scheduling, except that the cluster tier's tests all go to one worker, since
    each worker that runs one starts a control plane of its own (tests/cluster/conftest.py: four seconds of CPU,
    1 GB). `--dist loadgroup` with xdist_group marks would do this, but pytest 9.2 no longer lets xdist rename the
    tests it groups. The scopes go out largest first, so the cluster's starts early. The fast part has no cluster
    test: xdist's own scheduling (None), which sends tests in batches."""
    if _fast_part(config):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ClusterOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "tests/cluster" if nodeid.startswith("tests/cluster/") else nodeid

        def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
            """As xdist's, but a finished scope leaves the node's work: xdist counts the node's pending tests
            over every scope it ever got, at each test's end (quadratic: 6,000 single-test scopes)."""
            nodeid = self.registered_collections[node][item_index]
            work = self.assigned_work[node]
            scope = work[self._split_scope(nodeid)]
            scope[nodeid] = True
            if all(scope.values()):
                del work[self._split_scope(nodeid)]
            self._reschedule(node)

    return ClusterOnOneWorker(config, log)


@pytest.fixture
def harness(tmp_path, monkeypatch) -> Harness:
    """A repository in a temp dir and the ways to run devlane on it (see tests/support/harness.py)."""
    return Harness(tmp_path, monkeypatch)


@pytest.fixture
def demo_repo(tmp_path):
    """Make a repo in a temp dir holding one Kardinal demo manifest (read from ../shared in place)."""

    def make(name: str):
        repo = tmp_path / "repo"
        repo.mkdir(exist_ok=True)
        shutil.copy(demo_file(name), repo / "manifest.yaml")
        return repo

    return make


@pytest.fixture
def loads(monkeypatch) -> list:
    """Each call of the loader (`renderer.render.inputs.load.read`), as (source kind, ref): a command must load each
    ref it reads once."""
    from renderer.render.inputs import load

    calls: list = []
    real = load.read

    def counting(source, *args, **kwargs):
        calls.append((type(source).__name__, getattr(source, "ref", None)))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(load, "read", counting)
    return calls
