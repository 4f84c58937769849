"""How `devlane plugins describe` words the sandbox's network-isolation probe (`renderer.views.inspect`),
for an enforced and an unavailable isolation. The probe's answer is given, so no process starts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from renderer.views import inspect


@pytest.mark.parametrize(("probe", "shown"), [
    (SimpleNamespace(enforced=True, method="bwrap", reason="a private network namespace", layers=(), binary=None),
     "enforced (bwrap): a private network namespace"),
    (SimpleNamespace(enforced=False, method="none", reason="unprivileged user namespaces are disabled", layers=(),
                     binary=None),
     "not enforced: unprivileged user namespaces are disabled"),
])  # fmt: skip
def test_describe_reports_the_sandbox_probe(monkeypatch, probe, shown):
    monkeypatch.setattr(inspect, "confinement", lambda: probe)
    assert inspect.network_text(inspect.network_status()) == shown
