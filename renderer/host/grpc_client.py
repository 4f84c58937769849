"""Host side of the gRPC plugin runtime (Kplug / CNPG-I style).

A gRPC plugin is used exactly like an exec plugin: ResourceList JSON bytes in, ResourceList JSON
bytes out (`GrpcPlugin.invoke`). The server is either started by devlane (`command`: its own
session, a private unix socket, probed until ready, its whole process group killed on exit) or
dialled (`address`: a unix socket or a loopback port, never plain TCP across hosts, and never
stopped by devlane). Only `renderer.host.runtimes` imports this module, lazily, so grpc stays off
the import path of renderer unless a gRPC plugin is used.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import itertools
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from ..core import tempdirs
from ..errors import DevlaneError, PluginError, PluginTimeout, Where, fail
from ..protocol.krm import ADDRESS_ENV, MAX_MESSAGE_BYTES, PROTOCOL_VERSION
from .confine import Jail
from .process import BoundedTail, exit_status, forget, launch, stop_group, tail_text

OUTPUT_TAIL_BYTES = 16 * 1024
IDENTITY_TIMEOUT = 10.0
CHANNEL_OPTIONS = (
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_http_proxy", 0),  # loopback and unix sockets must never go through $http_proxy
    ("grpc.enable_retries", 0),  # a plugin call is not known to be idempotent
)
_LOOPBACK_NAMES = ("localhost", "localhost.", "ip6-localhost")

_live: set[GrpcPlugin] = set()
_live_lock = threading.Lock()


def _grpc() -> tuple[ModuleType, ModuleType, ModuleType]:
    """Import grpc and the generated code on first use, with a fix-it message when missing."""
    try:
        import grpc

        from ..protocol.grpc import devlane_plugin_v1alpha1_pb2 as pb2
        from ..protocol.grpc import devlane_plugin_v1alpha1_pb2_grpc as pb2_grpc
    except ImportError as exc:
        raise fail(f"the grpc plugin runtime needs grpcio and protobuf ({exc})", None,
                   "pip install 'grpcio>=1.85.1' 'protobuf>=7.35.1' (they are devlane dependencies)",
                   code="plugin-grpc-missing") from None
    return grpc, pb2, pb2_grpc


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split_host_port(target: str) -> tuple[str, str] | None:
    """`host:port` / `[v6]:port` → (host, port); None when there is no port."""
    if target.startswith("["):
        host, sep, rest = target[1:].partition("]")
        return (host, rest[1:]) if sep and rest.startswith(":") and rest[1:].isdigit() else None
    host, sep, port = target.rpartition(":")
    return (host, port) if sep and host and port.isdigit() else None


def resolve_address(name: str, address: str, cwd: Path | None = None) -> str:
    """Turn a plugin address into a gRPC target, refusing anything but unix sockets and loopback TCP.

    Plain TCP is unauthenticated and unencrypted; the protocol research (CNPG-I's model) allows unix
    sockets or mTLS, never plain TCP across hosts, and devlane has no mTLS yet. A relative
    `unix:path` is relative to `cwd` (the plugin directory), like paths in `runtime.command`.
    """
    where = Where(plugin=name)
    raw = address.strip()
    if raw.startswith("unix:"):
        path = raw.removeprefix("unix://") if raw.startswith("unix://") else raw.removeprefix("unix:")
        if not path:
            raise fail(f"the address {address!r} names no socket path", where,
                       "write unix:///absolute/path.sock or unix:relative/path.sock", code="plugin-grpc-address")
        if not os.path.isabs(path):
            path = str((cwd or Path.cwd()) / path)
        return f"unix://{os.path.abspath(path)}"
    scheme, _, rest = raw.partition(":")
    if raw.startswith("[") or rest.isdigit():  # host:port / [v6]:port
        parts = _split_host_port(raw)
        hosts = [parts[0]] if parts else []
    elif scheme in ("dns", "ipv4", "ipv6"):  # gRPC name syntax, e.g. dns:///localhost:50051
        rest = rest.removeprefix("//").partition("/")[2] if rest.startswith("//") else rest
        parts_list = [_split_host_port(a) for a in rest.split(",")]
        hosts = [p[0] for p in parts_list if p] if all(parts_list) else []
    else:
        raise fail(f"unsupported plugin address {address!r}", where,
                   "use unix:///path/to/plugin.sock, or 127.0.0.1:PORT for a server on this machine",
                   code="plugin-grpc-address")
    if not hosts:
        raise fail(f"cannot read the plugin address {address!r}", where,
                   "use unix:///path/to/plugin.sock, or 127.0.0.1:PORT for a server on this machine",
                   code="plugin-grpc-address")
    if not all(_is_loopback(h) for h in hosts):
        raise fail(f"refusing to dial {address!r}: plain TCP to another host is unauthenticated and unencrypted "
                   "(devlane speaks gRPC only over unix sockets or loopback; the plugin protocol allows remote "
                   "plugins only with mTLS, which devlane does not support yet)", where,
                   "run the plugin server as a sidecar listening on unix:///path/plugin.sock, or set "
                   "spec.runtime.command so devlane starts it", code="plugin-grpc-address")
    return raw


def _private_dir() -> str:
    """A 0700 temp dir short enough for a unix socket path (sun_path is 104-108 bytes)."""
    base = tempfile.gettempdir()
    if len(base) > 60 and os.path.isdir("/tmp"):
        base = "/tmp"
    return tempdirs.make("grpc", base)


class GrpcPlugin:
    """One gRPC plugin server for the length of a `with` block.

    `command` starts the server (argv, relative to nothing: resolve paths first) with
    `$DEVLANE_PLUGIN_ADDRESS` set to a private unix socket; `address` dials an existing server.
    Either way `Probe` must report ready within `start_timeout` seconds before the first call.
    """

    def __init__(
        self,
        name: str,
        *,
        command: list[str] | None = None,
        address: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        start_timeout: float = 10.0,
        host_capabilities: tuple[str, ...] = (),
        jail: Callable[[list[str], str], Jail] | None = None,
    ):
        if bool(command) == bool(address):
            raise fail("a grpc plugin needs exactly one of runtime.command and runtime.address", Where(plugin=name),
                       "set spec.runtime.command to start the server, or spec.runtime.address to dial one",
                       code="plugin-grpc-config")
        self.name = name
        self.command = list(command) if command else None
        self.cwd = Path(cwd) if cwd is not None else None
        self.env = dict(env) if env is not None else None
        self.start_timeout = start_timeout
        self.host_capabilities = tuple(host_capabilities)
        self.jail = jail  # wraps the server's command in the sandbox, given its private (writable) directory
        self._jail: Jail | None = None
        self.target = resolve_address(name, address, self.cwd) if address else ""
        self.where = Where(plugin=name)
        self._proc: subprocess.Popen[bytes] | None = None
        self._tail = BoundedTail(OUTPUT_TAIL_BYTES)
        self._drain: threading.Thread | None = None
        self._tmp: str | None = None
        self._channel: Any = None
        self._identity: Any = None
        self._flow: Any = None
        self._metadata: dict[str, Any] | None = None
        self._capabilities: list[str] | None = None
        self._tags = itertools.count(1)
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> GrpcPlugin:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The server's pid (= its process group id) when devlane started it."""
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        """Start or dial the server and wait until it is ready; on failure nothing is left running."""
        grpc, _pb2, pb2_grpc = _grpc()
        try:
            if self.command:
                self._spawn()
            self._channel = grpc.insecure_channel(self.target, options=CHANNEL_OPTIONS)
            self._identity = pb2_grpc.IdentityStub(self._channel)
            self._flow = pb2_grpc.FlowPluginStub(self._channel)
            with _live_lock:
                _live.add(self)
            self._wait_ready()
            self._check_protocol()
        except BaseException:
            self.close()
            raise

    def _spawn(self) -> None:
        assert self.command
        self._tmp = _private_dir()
        sock = os.path.join(self._tmp, "plugin.sock")
        self.target = f"unix://{sock}"
        env = {**(self.env if self.env is not None else os.environ), ADDRESS_ENV: self.target}
        try:
            self._jail = self.jail(self.command, self._tmp) if self.jail else Jail(list(self.command))
            self._proc = launch(self._jail.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, cwd=str(self.cwd) if self.cwd else self._tmp, env=env)
        except OSError as exc:
            raise fail(f"the plugin server {' '.join(self.command)!r} could not start: {exc}", self.where,
                       "check spec.runtime.command in plugin.yaml (paths are relative to the plugin directory, "
                       "and scripts need the executable bit)", code="plugin-grpc-start", kind=PluginError) from None
        self._drain = threading.Thread(target=self._tail.drain, args=(self._proc.stdout,), daemon=True,
                                       name="devlane-grpc-output")
        self._drain.start()

    def _wait_ready(self) -> None:
        """Poll Probe with backoff until ready, the process exits, or `start_timeout` passes."""
        grpc, pb2, _ = _grpc()
        deadline = time.monotonic() + self.start_timeout
        delay, last = 0.01, "no answer yet"
        sock = self.target.removeprefix("unix://") if self._proc else None
        while True:
            self._check_alive("before it was ready")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if sock is not None and not os.path.exists(sock):
                last = f"it has not created its socket {sock}"
            else:
                try:
                    reply = self._identity.Probe(pb2.ProbeRequest(), timeout=max(0.05, min(remaining, 1.0)))
                    if reply.ready:
                        return
                    last = "Probe answered ready=false"
                except grpc.RpcError as exc:
                    last = f"Probe failed: {exc.code().name}: {exc.details()}"
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.25)
        self._check_alive("before it was ready")
        what = "the plugin server it started" if self._proc else f"the plugin server at {self.target}"
        raise fail(f"{what} did not become ready within {self.start_timeout:g} s ({last})" + self._output(),
                   self.where, "the server must listen on $DEVLANE_PLUGIN_ADDRESS and answer Identity.Probe with "
                   "ready=true; raise spec.runtime.startTimeoutSeconds if it starts slowly",
                   code="plugin-grpc-not-ready", kind=PluginError)

    def _check_alive(self, when: str) -> None:
        if self._proc is None or self._proc.poll() is None:
            return
        status = exit_status(self._proc.returncode)
        if self._drain is not None:
            self._drain.join(0.5)
        raise fail(f"the plugin server {status} {when}" + self._output(), self.where,
                   "run spec.runtime.command by hand with DEVLANE_PLUGIN_ADDRESS=unix:///tmp/p.sock to see why",
                   code="plugin-grpc-exited", kind=PluginError)

    def _check_protocol(self) -> None:
        versions = self.metadata().get("protocol_versions") or [PROTOCOL_VERSION]  # absent means v1alpha1
        if PROTOCOL_VERSION not in versions:
            raise fail(f"the plugin speaks protocol {', '.join(versions)}, devlane speaks {PROTOCOL_VERSION}",
                       self.where, "upgrade devlane or use a plugin release for this protocol version",
                       code="plugin-grpc-protocol", kind=PluginError)

    def close(self) -> None:
        """Close the channel; stop the server if devlane started it (SIGTERM, grace, SIGKILL group)."""
        if self._closed:
            return
        self._closed = True
        with _live_lock:
            _live.discard(self)
        if self._channel is not None:
            with contextlib.suppress(Exception):
                self._channel.close()
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_group(proc)  # SIGTERM, grace, SIGKILL: also takes children that outlived the leader
            forget(proc)
            if self._drain is not None:
                self._drain.join(1.0)
            with contextlib.suppress(OSError):
                proc.stdout.close()  # type: ignore[union-attr]
        if self._jail is not None:
            self._jail.end()
            self._jail = None
        if self._tmp is not None:
            tempdirs.removed(self._tmp)
            self._tmp = None

    def _output(self) -> str:
        return tail_text(self._tail.text(), "plugin server output")

    # -- calls ---------------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """Identity.GetPluginMetadata as a dict (cached)."""
        if self._metadata is None:
            _, pb2, _ = _grpc()
            reply = self._rpc("GetPluginMetadata", self._identity.GetPluginMetadata,
                              pb2.GetPluginMetadataRequest(), IDENTITY_TIMEOUT)
            self._metadata = {
                "name": reply.name,
                "version": reply.version,
                "display_name": reply.display_name,
                "description": reply.description,
                "project_url": reply.project_url,
                "protocol_versions": list(reply.protocol_versions),
            }
        return dict(self._metadata)

    def capabilities(self) -> list[str]:
        """Identity.GetPluginCapabilities: the operations the plugin implements (cached)."""
        if self._capabilities is None:
            _, pb2, _ = _grpc()
            reply = self._rpc("GetPluginCapabilities", self._identity.GetPluginCapabilities,
                              pb2.GetPluginCapabilitiesRequest(), IDENTITY_TIMEOUT)
            self._capabilities = list(reply.capabilities)
        return list(self._capabilities)

    def probe(self, timeout: float = IDENTITY_TIMEOUT) -> bool:
        _, pb2, _ = _grpc()
        return bool(self._rpc("Probe", self._identity.Probe, pb2.ProbeRequest(), timeout).ready)

    def invoke(self, operation: str, resource_list: bytes, timeout: float) -> bytes:
        """FlowPlugin.Invoke: send one ResourceList (JSON bytes) and return the reply's bytes."""
        _, pb2, _ = _grpc()
        tag = f"{operation}-{next(self._tags)}"
        meta = pb2.RequestMeta(tag=tag, protocol_version=PROTOCOL_VERSION, host_capabilities=self.host_capabilities)
        request = pb2.FlowRequest(meta=meta, operation=operation, resource_list=resource_list)
        reply = self._rpc(f"Invoke {operation}", self._flow.Invoke, request, timeout)
        if reply.meta.tag and reply.meta.tag != tag:
            raise fail(f"Invoke {operation} answered tag {reply.meta.tag!r} to request {tag!r}", self.where,
                       "the server must echo RequestMeta.tag in ResponseMeta.tag", "plugin-grpc-protocol", PluginError)
        if not reply.resource_list:
            raise fail(f"Invoke {operation} returned an empty resource_list" + self._output(), self.where,
                       "a gRPC plugin must return the ResourceList JSON in FlowResponse.resource_list",
                       code="plugin-grpc-no-reply", kind=PluginError)
        return bytes(reply.resource_list)

    def _rpc(self, label: str, method: Any, request: Any, timeout: float) -> Any:
        grpc, _, _ = _grpc()
        if self._channel is None or self._closed:
            raise fail(f"{label} called on a plugin that is not running", self.where, None, "plugin-grpc-closed",
                       PluginError)
        try:
            return method(request, timeout=timeout)
        except grpc.RpcError as exc:
            raise self._error(label, exc, timeout) from None

    def _error(self, label: str, exc: Any, timeout: float) -> DevlaneError:
        grpc, _, _ = _grpc()
        code, details = exc.code(), exc.details() or ""
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return fail(f"{label} exceeded the deadline of {timeout:g} s" + self._output(), self.where,
                        "raise spec.timeoutSeconds in plugin.yaml or --plugin-timeout, or make the plugin faster",
                        "plugin-grpc-deadline", PluginTimeout)
        if code == grpc.StatusCode.UNAVAILABLE:
            if self._proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=0.2)  # a dying server closes the socket just before it exits
            try:
                self._check_alive(f"during {label}")
            except DevlaneError as died:
                return died
            return fail(f"{label} failed: the plugin server at {self.target} is unavailable ({details})"
                        + self._output(), self.where, "check that the plugin server is still running",
                        code="plugin-grpc-unavailable", kind=PluginError)
        if code == grpc.StatusCode.UNIMPLEMENTED:
            return fail(f"{label} is not implemented by the plugin server ({details})", self.where,
                        "the server must implement devlane.plugin.v1alpha1 Identity and FlowPlugin",
                        code="plugin-grpc-unimplemented", kind=PluginError)
        return fail(f"{label} failed with gRPC status {code.name}: {details}" + self._output(), self.where,
                    "a plugin reports its own failures as ResourceList results; a gRPC error means it crashed",
                    code="plugin-grpc-error", kind=PluginError)


def describe(name: str, *, command: list[str] | None = None, address: str | None = None, cwd: Path | None = None,
             env: dict[str, str] | None = None, start_timeout: float = 10.0) -> dict[str, Any]:
    """Start or dial a plugin, read its Identity, stop it: for `devlane plugins describe`."""
    with GrpcPlugin(name, command=command, address=address, cwd=cwd, env=env, start_timeout=start_timeout) as plugin:
        return {"metadata": plugin.metadata(), "capabilities": plugin.capabilities()}


@atexit.register
def _stop_all() -> None:
    """Last resort: never leave a plugin server running when devlane exits without closing it."""
    with _live_lock:
        plugins = list(_live)
    for plugin in plugins:
        with contextlib.suppress(Exception):
            plugin.close()
