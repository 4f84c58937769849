"""A signal that lands where Python ignores the handler's exception (a finalizer, an at-fork hook while the sandbox
probe forks) still ends the command with 128+N and the "stopped by" line, never with the error its stop caused
("devlane is stopping; no plugin is started", exit 1)."""

from __future__ import annotations

import os
import signal

import pytest

from renderer import api
from renderer.errors import DevlaneError


class _LandsInAFinalizer:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(10_000))  # the handler runs here, in a finalizer: its exception is reported as ignored, and lost


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_signal_whose_exception_python_ignored_still_ends_the_command_with_its_status(harness, monkeypatch):
    def render(*_args: object) -> api.RenderResult:
        _LandsInAFinalizer()  # made and collected at once
        raise DevlaneError("devlane is stopping; no plugin is started")

    monkeypatch.setattr(api, "render", render)
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout")
    assert out.returncode == 128 + signal.SIGINT, out.stderr
    assert "devlane: stopped by SIGINT; running plugins were killed" in out.stderr
    assert "no plugin is started" not in out.stderr
