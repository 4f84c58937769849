"""SDK for writing devlane plugins in Python; runs in plugin processes, so it needs only grpc/protobuf.

`serve(handler, name=..., version=..., capabilities=[...])` makes a gRPC plugin server from a
function `handler(operation, resource_list: dict) -> dict`.
"""

from .grpc_server import PluginServer, serve

__all__ = ["PluginServer", "serve"]
