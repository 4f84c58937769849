"""Every test under `tests/security/` and `tests/robustness/` runs twice (issue 40): with the plugin sandbox as
installed (bwrap where it works) and with bwrap hidden (`$DEVLANE_BWRAP` pointing at nothing: util-linux unshare,
as on a machine without a usable bwrap). What devlane refuses, and what it leaves behind, must not depend on which.

Both conftests of those directories use the hook and the fixture below. The fixture `sandbox` (autouse) sets the
mode for the test: the environment, which the real `devlane` processes a test starts inherit, and the probed
confinement of this process, for the in-process runs. A test that chooses its sandboxes itself (it parametrizes
`sandbox` or `bwrap`, or is marked `sandbox_own`, as a test of bwrap itself) keeps its own; a module whose tests run
nothing in a sandbox, only in-process scanning or parsing, says so with `pytestmark = pytest.mark.sandbox_free`,
and a tripwire fails any of its tests that wraps a process in the sandbox after all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

SANDBOXES = ("installed", "no-bwrap")
HIDDEN = {"DEVLANE_BWRAP": "/nonexistent/bwrap"}  # no bwrap: $DEVLANE_BWRAP alone is tried, and fails
_OWN = {"sandbox", "bwrap"}  # parameters with which a test chooses its sandboxes itself
_unshare: dict[str, object] = {}  # the probed unshare confinement of this process, once


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`sandbox` in both modes, for every test that neither chooses its own nor runs nothing sandboxed."""
    marked = metafunc.definition.get_closest_marker
    if "sandbox" not in metafunc.fixturenames or marked("sandbox_own") or marked("sandbox_free"):
        return
    chosen = {name.strip() for mark in metafunc.definition.iter_markers("parametrize")
              for name in (mark.args[0].split(",") if isinstance(mark.args[0], str) else mark.args[0])}
    if not chosen & _OWN:
        metafunc.parametrize("sandbox", SANDBOXES, indirect=True)


def use_sandbox(mode: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run this test's plugins under `mode` (one of `SANDBOXES`); skips where unshare cannot isolate."""
    from renderer.host import confine

    if mode == "no-bwrap":
        for key, value in HIDDEN.items():
            monkeypatch.setenv(key, value)
        if "probed" not in _unshare:
            _unshare["probed"] = confine.probe("unshare", confine.usable_cgroups(), confine._binaries("unshare")[0])
        weaker = _unshare["probed"]
        if not weaker.enforced:  # type: ignore[attr-defined]
            pytest.skip(f"unshare cannot isolate here: {weaker.reason}")  # type: ignore[attr-defined]
        monkeypatch.setattr(confine, "_probed", weaker)
    return mode


@pytest.fixture(autouse=True)
def sandbox(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str | None]:
    """The sandbox this test runs its plugins under (`SANDBOXES`), or None in a `sandbox_free` module."""
    if not request.node.get_closest_marker("sandbox_free"):
        yield use_sandbox(getattr(request, "param", SANDBOXES[0]), monkeypatch)
        return
    from renderer.host import confine

    wrapped: list[str] = []
    real = confine.Confinement.wrap

    def tripwire(self: confine.Confinement, argv: list[str], *args: object, **kwargs: object) -> object:
        if sys._getframe(1).f_code.co_name != "probe":  # the sandbox's own probe is no process run in it
            wrapped.append(" ".join(map(str, argv))[:200])
        return real(self, argv, *args, **kwargs)

    monkeypatch.setattr(confine.Confinement, "wrap", tripwire)
    yield None
    if wrapped:
        pytest.fail(f"this test ran a process in the sandbox ({wrapped[0]}): its module is not sandbox_free")
