"""The host layer's unit tests run as under no inherited hard limit, whatever the runner's `ulimit` (mutmut sets a
hard CPU limit): the sandbox caps each prlimit value by devlane's own hard limit, and these tests assert the values
a plugin gets by default (tests/unit/host/test_confine_hard_limits.py tests the capping itself)."""

from __future__ import annotations

import resource

import pytest

from renderer.host import confine


@pytest.fixture(autouse=True)
def no_inherited_hard_limit(monkeypatch):
    monkeypatch.setattr(confine, "_hard_limit", lambda key: resource.RLIM_INFINITY)
