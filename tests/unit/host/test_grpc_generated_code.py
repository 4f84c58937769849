"""The checked-in gRPC code in renderer/protocol/grpc/ is current: regenerated from the .proto into a temp
dir (in-process protoc from grpcio-tools), it matches byte for byte (see renderer/protocol/grpc/README.md)."""

from __future__ import annotations

from importlib.metadata import version

import pytest


def test_generated_code_is_current(tmp_path):
    tools = pytest.importorskip("grpc_tools")
    pytest.importorskip("grpc")
    from renderer.protocol.grpc import devlane_plugin_v1alpha1_pb2_grpc as checked_in
    from renderer.protocol.grpc import regen

    if version("grpcio-tools") != checked_in.GRPC_GENERATED_VERSION:
        pytest.skip(f"generated with grpcio-tools {checked_in.GRPC_GENERATED_VERSION}, {tools.__name__} here is "
                    f"{version('grpcio-tools')}")  # fmt: skip
    written = regen.generate(tmp_path)
    assert sorted(p.name for p in written) == sorted(regen.GENERATED)
    for path in written:
        current = regen.HERE / path.name
        stale = f"{current} is stale: run python -m renderer.protocol.grpc.regen"
        assert path.read_text() == current.read_text(), stale
