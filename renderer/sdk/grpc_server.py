"""Plugin-server SDK: turn a Python function into a devlane gRPC plugin server.

    from renderer.sdk import serve

    def handler(operation: str, resource_list: dict) -> dict:
        resource_list.setdefault("results", []).append({"severity": "info", "message": "hello"})
        return resource_list

    serve(handler, name="hello.example.com", version="1.0.0", capabilities=["CreateFlow"])

It runs inside plugin processes, so it imports only grpc, protobuf and `renderer.protocol`: never
the rest of devlane. A failing handler becomes an `error` result in the reply (not a gRPC error),
so the host reports it like any other plugin's result.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from concurrent import futures
from typing import Any

import grpc

from ..protocol.grpc import devlane_plugin_v1alpha1_pb2 as pb2
from ..protocol.grpc import devlane_plugin_v1alpha1_pb2_grpc as pb2_grpc
from ..protocol.krm import ADDRESS_ENV, MAX_MESSAGE_BYTES, PROTOCOL_VERSION, dumps, error_reply, operation_of

STOP_GRACE_SECONDS = 1.0

Handler = Callable[[str, dict[str, Any]], dict[str, Any]]


class _Identity(pb2_grpc.IdentityServicer):
    def __init__(self, metadata: pb2.GetPluginMetadataResponse, capabilities: list[str], ready: threading.Event):
        self._metadata = metadata
        self._capabilities = capabilities
        self._ready = ready

    def GetPluginMetadata(self, request: Any, context: Any) -> pb2.GetPluginMetadataResponse:
        return self._metadata

    def GetPluginCapabilities(self, request: Any, context: Any) -> pb2.GetPluginCapabilitiesResponse:
        return pb2.GetPluginCapabilitiesResponse(capabilities=self._capabilities)

    def Probe(self, request: Any, context: Any) -> pb2.ProbeResponse:
        return pb2.ProbeResponse(ready=self._ready.is_set())


class _Flow(pb2_grpc.FlowPluginServicer):
    def __init__(self, handler: Handler):
        self._handler = handler

    def Invoke(self, request: Any, context: Any) -> pb2.FlowResponse:
        try:
            doc = json.loads(request.resource_list.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"resource_list is not JSON: {exc}")
        if not isinstance(doc, dict):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "resource_list is not a JSON object")
        try:
            out = self._handler(request.operation or operation_of(doc), doc)
            if not isinstance(out, dict):
                raise TypeError(f"the handler returned {type(out).__name__}, expected a ResourceList dict")
            data = dumps(out)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)  # the host shows the tail of the server's output
            data = dumps(error_reply(doc, f"{type(exc).__name__}: {exc}"))
        return pb2.FlowResponse(meta=pb2.ResponseMeta(tag=request.meta.tag), resource_list=data)


class PluginServer:
    """A started-on-demand gRPC server; `serve` wraps it, tests may use it directly in-process."""

    def __init__(
        self,
        handler: Handler,
        *,
        name: str,
        version: str,
        capabilities: Iterable[str],
        description: str = "",
        display_name: str = "",
        project_url: str = "",
        address: str | None = None,
        max_workers: int = 4,
    ):
        address = address or os.environ.get(ADDRESS_ENV)
        if not address:
            raise SystemExit(f"{name}: no address to listen on: pass address= or set ${ADDRESS_ENV}")
        self.address = address
        self.ready = threading.Event()
        metadata = pb2.GetPluginMetadataResponse(name=name, version=version, display_name=display_name or name,
                                                 description=description, project_url=project_url,
                                                 protocol_versions=[PROTOCOL_VERSION])
        options = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),  # a second server on the same port must fail, not share it
        ]
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers), options=options)
        pb2_grpc.add_IdentityServicer_to_server(_Identity(metadata, list(capabilities), self.ready), self._server)
        pb2_grpc.add_FlowPluginServicer_to_server(_Flow(handler), self._server)
        self.port = 0

    def _socket_path(self) -> str | None:
        if not self.address.startswith("unix:"):
            return None
        return self.address.removeprefix("unix://") if self.address.startswith("unix://") else self.address[5:]

    def start(self) -> PluginServer:
        """Bind (replacing a stale socket file, as CNPG-I servers do) and start serving."""
        path = self._socket_path()
        if path:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    os.unlink(path)
        try:
            self.port = self._server.add_insecure_port(self.address)
        except RuntimeError as exc:
            raise SystemExit(f"cannot listen on {self.address}: {exc}") from None
        if not self.port:
            raise SystemExit(f"cannot listen on {self.address}")
        self._server.start()
        self.ready.set()
        return self

    def stop(self, grace: float | None = STOP_GRACE_SECONDS) -> None:
        """Stop accepting calls, let running ones finish within `grace`, remove the socket file."""
        self.ready.clear()
        self._server.stop(grace).wait()
        path = self._socket_path()
        if path:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def wait(self) -> None:
        self._server.wait_for_termination()


def serve(
    handler: Handler,
    *,
    name: str,
    version: str,
    capabilities: Iterable[str],
    description: str = "",
    address: str | None = None,
    **options: Any,
) -> None:
    """Serve `handler` on `address` (default `$DEVLANE_PLUGIN_ADDRESS`) until SIGTERM or SIGINT.

    On a signal, calls in flight get a grace second, then the process exits with status 0.

    `handler(operation, resource_list)` gets the parsed request ResourceList and returns the reply
    ResourceList as a JSON-able dict. Extra keyword options go to `PluginServer` (display_name,
    project_url, max_workers).
    """
    server = PluginServer(handler, name=name, version=version, capabilities=capabilities,
                          description=description, address=address, **options).start()
    stopper: list[threading.Thread] = []

    def on_signal(signum: int, frame: Any) -> None:
        if not stopper:  # stop from a thread: never block inside a signal handler
            stopper.append(threading.Thread(target=server.stop, name="devlane-plugin-stop"))
            stopper[0].start()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    server.wait()
    for thread in stopper:
        thread.join()
    if stopper:  # stopped by a signal: exit now, without waiting for handlers still running past the grace
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
