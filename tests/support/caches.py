"""The cache as tests watch it: a test's own `$DEVLANE_CACHE`, and the caches the commands it runs open (whose
counters say what each command read and wrote)."""

from __future__ import annotations

from pathlib import Path

import pytest

from renderer import session
from renderer.core.cache import Cache


def own_cache(monkeypatch: pytest.MonkeyPatch, root: Path) -> Path:
    """Point `$DEVLANE_CACHE` at `root` for this test (tests/conftest.py shares one per session otherwise)."""
    monkeypatch.setenv("DEVLANE_CACHE", str(root))
    return root


def opened_caches(monkeypatch: pytest.MonkeyPatch) -> list[Cache | None]:
    """Each cache a command's session opens from now on, in order (None: the command ran with `--no-cache`)."""
    opened: list[Cache | None] = []
    real = session.open_cache

    def recording(*args, **kwargs) -> Cache | None:
        opened.append(real(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(session, "open_cache", recording)
    return opened
