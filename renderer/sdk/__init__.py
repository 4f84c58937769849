"""SDK for writing devlane plugins in Python; runs in plugin processes.

- `renderer.sdk.krm`: exec (KRM function) plugins: `run(handler)`, and `kardinal(module)` to serve a
  Kardinal-style module through any runtime; needs only the standard library.
- `serve(handler, name=..., version=..., capabilities=[...])` makes a gRPC plugin server from a
  function `handler(operation, resource_list: dict) -> dict`; needs grpc/protobuf, imported on
  first use so exec plugins run without them.
"""

from typing import Any

__all__ = ["PluginServer", "serve"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import grpc_server

        return getattr(grpc_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
