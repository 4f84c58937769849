"""`devlane render --validate strict` on real examples whose plugins run as subprocesses: the bookshop example
(repo-local kardinal-python plugins) and Kardinal's new-obd demo (stand-in plugins), whose HTTPRoute is checked
against the upstream Gateway API CRDs."""

from __future__ import annotations

import pytest
from support import CRDS, EXAMPLE, standin_flags


def test_bookshop_validates_strictly(harness):
    out = harness.cli("render", EXAMPLE, "--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7",
                      "--out", harness.tmp, "--validate", "strict", "--kube-version", "1.31")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "validated 10 objects against Kubernetes 1.31 (strict)" in out.stderr
    assert (harness.tmp / "flows" / "pr-7" / "configmap-devlane-state-seed-orders-db-pr-7.yaml").is_file()


def test_gateway_api_httproute_against_the_upstream_crds(demo_repo, harness):
    if not CRDS.exists():
        pytest.skip("upstream CRDs not available (../shared/crds)")
    repo = demo_repo("new-obd__release__obd-kardinal.yaml")
    flags = ["--flow", "pr-3", "--service", "frontend=x/frontend:3", "--stdout", "--validate", "strict",
             *standin_flags()]  # fmt: skip
    checked = harness.cli("render", repo, *flags, "--crds", CRDS / "gateway-api")
    assert checked.returncode == 0, checked.stderr
    assert "kind: HTTPRoute" in checked.stdout and "unchecked" not in checked.stderr
    unchecked = harness.cli("render", repo, *flags)
    assert unchecked.returncode == 0, unchecked.stderr
    assert "HTTPRoute/" in unchecked.stderr and "(unchecked)" in unchecked.stderr
