"""What the gRPC client accepts to dial, checked without starting or dialling anything: unix sockets and
loopback TCP only (plain TCP to another host is refused), relative unix paths, unsupported address forms,
and exactly one of `command` and `address`."""

from __future__ import annotations

from pathlib import Path

import pytest

from renderer.errors import DevlaneError
from renderer.host.grpc_client import GrpcPlugin, resolve_address


@pytest.mark.parametrize(
    "address",
    ["10.0.0.5:50051", "example.com:443", "dns:///example.com:443", "ipv4:127.0.0.1:1,10.0.0.1:2", "[2001:db8::1]:80"],
)
def test_non_loopback_tcp_refused(address):
    with pytest.raises(DevlaneError) as err:
        GrpcPlugin("remote", address=address, start_timeout=1)
    assert "plain TCP to another host is unauthenticated and unencrypted" in str(err.value)
    assert "mTLS" in str(err.value)
    assert err.value.problems[0].code == "plugin-grpc-address"


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("unix:///run/p.sock", "unix:///run/p.sock"),
        ("unix:p.sock", "unix:///plugins/x/p.sock"),
        ("127.0.0.1:5000", "127.0.0.1:5000"),
        ("localhost:5000", "localhost:5000"),
        ("[::1]:5000", "[::1]:5000"),
        ("dns:///localhost:5000", "dns:///localhost:5000"),
    ],
)
def test_resolve_address(address, target):
    assert resolve_address("p", address, Path("/plugins/x")) == target


@pytest.mark.parametrize("address", ["unix-abstract:p", "vsock:3:5000", "unix:", "nonsense"])
def test_unsupported_address(address):
    with pytest.raises(DevlaneError) as err:
        resolve_address("p", address)
    assert err.value.problems[0].code == "plugin-grpc-address"
    assert err.value.problems[0].where.plugin == "p"


def test_needs_exactly_one_of_command_and_address():
    with pytest.raises(DevlaneError, match="exactly one"):
        GrpcPlugin("p", start_timeout=1)
    with pytest.raises(DevlaneError, match="exactly one"):
        GrpcPlugin("p", command=["x"], address="unix:///x", start_timeout=1)
