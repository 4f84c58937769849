"""Fixtures for every layer. Tests under `tests/e2e/`, `tests/contract/` and `tests/security/` are marked
`e2e`: they start real processes (plugin subprocesses, the CLI, git, kubectl, a browser, venvs, gRPC servers);
`pytest -m "not e2e"` runs the in-process unit and CLI tests alone."""

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
from hypothesis import settings  # noqa: E402
from support import ROOT, Harness, demo_file  # noqa: E402

for _tree in ("renderer", "plugins"):
    compileall.compile_dir(ROOT / _tree, quiet=1)

E2E_DIRS = {"e2e", "contract", "security"}

# Tools that tests/setup_*.sh install inside the checkout (helm): found by shutil.which and by subprocesses.
TOOLS_BIN = ROOT / ".tools" / "bin"
if TOOLS_BIN.is_dir():
    os.environ["PATH"] = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


# The parse cache of every devlane run in the tests: one per test session, never the user's ~/.cache/devlane.
# Shared across tests on purpose, so renders of the same inputs exercise the warm path too.
if "DEVLANE_CACHE" not in os.environ or not os.environ.get("DEVLANE_TEST_KEEP_CACHE"):
    os.environ["DEVLANE_CACHE"] = tempfile.mkdtemp(prefix="devlane-test-cache-")
    atexit.register(shutil.rmtree, os.environ["DEVLANE_CACHE"], True)


# Property tests: 50 examples each by default, which keeps the fast suite within its budget; a deeper run is
# DEVLANE_HYPOTHESIS=thorough (500 each). Tests that set max_examples themselves keep their own.
settings.register_profile("default", max_examples=50, deadline=None)  # speed is the benchmark's job, not a test's
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("DEVLANE_HYPOTHESIS", "default"))


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
    if config.getoption("markexpr", "").strip() == "not e2e" and collection_path.parent == config.rootpath / "tests" \
            and collection_path.name in E2E_DIRS:
        return True
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if E2E_DIRS & set(item.path.relative_to(config.rootpath / "tests").parts[:1]):
            item.add_marker(pytest.mark.e2e)


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
