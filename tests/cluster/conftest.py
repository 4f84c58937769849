"""The cluster tier: rendered lanes meet a real control plane (tests/support/controlplane.py), built by
`bash tests/cluster/build.sh`. Its tests are marked `cluster` and `e2e` (tests/conftest.py). The control plane starts
once per test process (once per xdist worker: free ports, a directory each); without the binaries the tests skip
with one line saying how to build them, or fail where DEVLANE_CLUSTER_REQUIRED=1 (`.ci/run` sets it where Go is)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import controlplane


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that needs the control plane skips here, before its fixtures, when it is not built: every skip then has
    the same location, which `pytest -ra` folds into one line (a skip inside a fixture is reported at each test)."""
    if {"cluster", "binaries"} & set(item.fixturenames):
        controlplane.require()


@pytest.fixture(scope="session")
def binaries() -> Path:
    """The directory of the built control plane."""
    return controlplane.require()


@pytest.fixture(scope="session")
def cluster(binaries: Path) -> Iterator[controlplane.ControlPlane]:
    with controlplane.start(binaries) as cp:
        yield cp


@pytest.fixture
def namespace(cluster: controlplane.ControlPlane) -> Iterator[str]:
    """A fresh namespace (with its default ServiceAccount), deleted afterwards without waiting."""
    name = cluster.namespace()
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
