"""Loaded into the mutation tests' pytest runs only (`[tool.mutmut] pytest_add_cli_args` in pyproject.toml): a
mutant's verdict must be its tests' verdict, the same on every run, and found soon.

- A run fails only when a test does. The suite's end-of-session check of leftover processes (tests/conftest.py)
  also fails a run for any sandbox orphaned on the whole machine meanwhile, another test run's included (and
  waits up to 5 s for it), and for what earlier runs wrote in its leftovers directory, which every run forked
  from mutmut's server shares: it would count surviving mutants as killed. (The tests that can leave processes
  start them, so they are e2e and not run here.)
- Property tests draw derandomized examples, use no example database and pass no "too slow" health check: a
  failure saved while one mutant ran would otherwise be replayed against the next, and a verdict would depend on
  the order mutants ran in, or on the load of the machine.
- Each test of a mutant has a cache of its own (`_a_cache_of_its_own`): what the cache holds is keyed by the
  code's text, the same for every mutant.
- A failing clean run (the tests on the unmutated code, which mutmut runs first) says which test failed and why,
  in `clean-run-failures.txt` beside mutmut's stats: mutmut runs it in a forked server whose output it does not
  show, and prints only "Failed to run clean test".
- A mutant's tests run fastest first (mutmut runs them with -x, and its own order is random): the unit tests of the
  mutated module, which catch most mutants, come before the renders that also reach it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings


def pytest_configure(config: pytest.Config) -> None:
    settings.register_profile("mutation", settings(), derandomize=True, database=None,
                              suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
    settings.load_profile("mutation")


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    from support import processes

    machine_wide = processes.orphaned_sandboxes
    processes.orphaned_sandboxes = lambda since: []  # for the conftest's check only, not for the tests
    try:
        return (yield)
    finally:
        processes.orphaned_sandboxes = machine_wide
        if session.testsfailed == 0 and session.exitstatus == pytest.ExitCode.TESTS_FAILED:
            session.exitstatus = pytest.ExitCode.OK


CLEAN_RUN_FAILURES = "clean-run-failures.txt"  # in mutants/, where mutmut runs the tests; run.sh prints it


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In the clean run only (mutmut names no mutant then): each failure, with pytest's account of it."""
    if report.failed and os.environ.get("MUTANT_UNDER_TEST") == "":
        with open(CLEAN_RUN_FAILURES, "a") as out:
            out.write(f"{report.nodeid} ({report.when}) failed:\n{report.longreprtext}\n\n")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):  # the stats, clean and forced-fail runs
        return
    try:  # mutmut runs the tests in mutants/, beside its record of each test's duration
        durations = json.loads(Path("mutmut-stats.json").read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))


@pytest.fixture(autouse=True)
def _a_cache_of_its_own(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test of a mutant reads and writes a cache of its own. devlane's cached parses, stored models and lint
    findings are keyed by its code's text, and that text is the same for every mutant (mutmut switches them on at
    run time): an entry written while another mutant ran, or none, would answer for this one and hide it."""
    if "__mutmut_" in os.environ.get("MUTANT_UNDER_TEST", ""):
        monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path_factory.mktemp("cache")))
