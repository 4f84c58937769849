"""The two sandboxes a security test runs its plugin processes under: the one installed (bwrap where it works), and
bwrap hidden (util-linux unshare, as on a machine without a usable bwrap, the operator accepting the weaker
sandbox). What the output policy refuses does not depend on either."""

from __future__ import annotations

import pytest

SANDBOXES = ("bwrap", "no-bwrap")


def use_sandbox(mode: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run this test's plugins under `mode` (one of `SANDBOXES`); skips where unshare cannot isolate."""
    from renderer.host import confine

    if mode == "no-bwrap":
        weaker = confine.probe("unshare", confine.usable_cgroups())
        if not weaker.enforced:
            pytest.skip(f"unshare cannot isolate here: {weaker.reason}")
        monkeypatch.setattr(confine, "_probed", weaker)
        monkeypatch.setenv("DEVLANE_ALLOW_WEAK_SANDBOX", "1")
    return mode
