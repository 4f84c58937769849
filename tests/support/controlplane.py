"""A real Kubernetes control plane on 127.0.0.1 for the cluster tier (tests/cluster): etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok, built by tests/cluster/build.sh at the versions of
tests/cluster/versions.env, each started on free loopback ports in a temporary directory of its own.

What it proves and no more: the API server's admission (RBAC, ResourceQuota, ValidatingAdmissionPolicy, CRD
schemas) and the controllers' view of objects (ReplicaSets, EndpointSlices from selectors and labels, garbage
collection, namespace deletion). kwok plays the kubelets: Nodes are Ready and every scheduled Pod is Running and
Ready with an IP from the pod CIDR; no container runs, probes are not run.

Every component runs in a session (process group) of its own, killed as a group and waited for when `start()`'s
context ends, by a failure, by Ctrl-C (pytest tears session fixtures down on KeyboardInterrupt) or normally; a
component also dies with the test process that started it (PR_SET_PDEATHSIG), should that be killed outright.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from .paths import ROOT

TIER = ROOT / "tests" / "cluster"
BUILD = "bash tests/cluster/build.sh"
REQUIRED = "DEVLANE_CLUSTER_REQUIRED"  # `.ci/run` sets it where Go is: the tier fails instead of skipping
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
NODES = ("kwok-node-0", "kwok-node-1")
KWOK_STAGES = "kwok-stages.yaml"  # build.sh copies the pinned kwok's fast node and pod stages beside bin/
# Go's collector at a quarter of its default frequency: a test cluster's heaps are small, and garbage collection is a
# large share of kube-apiserver's CPU (about a fifth less CPU for the whole tier on a 2-core machine)
GO_ENV = {"GOGC": "400"}
START_TIMEOUT = 90.0  # a loaded 2-core CI machine; an idle one starts in seconds

T = TypeVar("T")


class ControlPlaneError(Exception):
    """The control plane did not start (the message ends with the failing component's log)."""


def versions() -> dict[str, str]:
    """tests/cluster/versions.env: KUBERNETES_VERSION, ETCD_VERSION, KWOK_VERSION."""
    pairs = (line.split("=", 1) for line in (TIER / "versions.env").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#"))  # fmt: skip
    return {key.strip(): value.strip() for key, value in pairs}


@functools.cache
def bin_dir() -> Path:
    """Where build.sh puts (or put) the binaries of this checkout's pins: it alone computes the cache key."""
    out = subprocess.run(["bash", str(TIER / "build.sh"), "--bin-dir"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def binaries() -> Path | None:
    """The directory of a complete built set (the binaries, and kwok's stages beside it), or None."""
    found = bin_dir()
    complete = all(os.access(found / name, os.X_OK) for name in COMPONENTS) and (found.parent / KWOK_STAGES).is_file()
    return found if complete else None


def require() -> Path:
    """The built set; otherwise the test skips with one line saying how to build it (fails where
    DEVLANE_CLUSTER_REQUIRED=1: CI with Go must not skip the tier silently)."""
    found = binaries()
    missing = None
    if found is None:
        missing = (f"the cluster tier's control plane is not built: run `{BUILD}` (needs Go >= 1.26 and the Go module "
                   "proxy; builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok into "
                   "~/.cache/devlane-test-tools)")
    elif shutil.which("kubectl") is None:
        missing = "the cluster tier needs kubectl on PATH"
    if missing is None:
        return found
    if os.environ.get(REQUIRED) == "1":
        pytest.fail(f"{missing} ({REQUIRED}=1)", pytrace=False)
    pytest.skip(missing)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


try:
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child between fork and exec only calls it
except (OSError, AttributeError):  # not Linux
    _PRCTL = None


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the test process dies (even by SIGKILL, which runs no teardown)."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Component:
    name: str
    process: subprocess.Popen
    log: Path

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return "(no log)"
        return "\n".join(f"    {line[:400]}" for line in text)

    def stop(self, grace: float) -> None:
        """SIGTERM to the component's process group, SIGKILL after `grace` seconds; waits for it."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)  # anything it left in its group
            return
        self.process.wait()


@dataclass
class ControlPlane:
    """A running control plane: its kubeconfig (an admin of group system:masters), the server's URL, and kubectl."""

    root: Path  # the temporary directory: data, certificates, kubeconfig, logs; removed when stopped
    kubeconfig: Path
    server: str
    token: str
    ca_file: Path
    bins: Path
    components: dict[str, Component] = field(default_factory=dict)
    started_in: float = 0.0  # seconds from the first process to every check passing

    # ---- kubectl
    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """The machine's kubectl against this cluster; a failure (with `check`) raises with kubectl's stderr."""
        done = subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig}", *args], input=input, text=True,
                              capture_output=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {done.returncode}:\n{done.stderr}{done.stdout}")
        return done

    def apply(self, docs: str | dict | list[dict], *, namespace: str | None = None, check: bool = True,
              manager: str = "devlane-tests") -> subprocess.CompletedProcess[str]:
        """Server-side apply of YAML text or of objects (as Argo CD and Flux apply)."""
        text = docs if isinstance(docs, str) else yaml.safe_dump_all(docs if isinstance(docs, list) else [docs])
        ns = [f"--namespace={namespace}"] if namespace else []
        return self.kubectl("apply", "--server-side", "--force-conflicts", f"--field-manager={manager}", *ns,
                            "-f", "-", input=text, check=check)

    def get(self, *args: str) -> Any:
        """`kubectl get ARGS -o json`, parsed (a List's `items` for several objects)."""
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def can_i(self, verb: str, resource: str, *, as_: str, namespace: str | None = None) -> bool:
        """`kubectl auth can-i` impersonating `as_` (a SubjectAccessReview the RBAC authorizer answers)."""
        ns = [f"--namespace={namespace}"] if namespace else []
        done = self.kubectl("auth", "can-i", verb, resource, f"--as={as_}", *ns, check=False)
        if done.returncode not in (0, 1):
            raise AssertionError(f"kubectl auth can-i failed: {done.stderr}")
        return done.returncode == 0

    def namespace(self, prefix: str = "t") -> str:
        """A new namespace, once the controller-manager has given it its `default` ServiceAccount (without which
        admission refuses pods)."""
        name = f"{prefix}-{secrets.token_hex(4)}"
        self.kubectl("create", "namespace", name)
        self.wait_for(lambda: self.kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode
                      == 0, what=f"the default ServiceAccount of namespace {name}")
        return name

    def wait_for(self, cond: Callable[[], T], *, timeout: float = 60, what: str = "a condition",
                 interval: float = 0.25) -> T:
        """Polls `cond` until it returns something truthy, which it returns; raises after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            got = cond()
            if got:
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last: {got!r})")
            time.sleep(interval)

    def healthy(self, path: str = "/readyz") -> bool:
        """Does the API server answer `path` (its /readyz: every check passed) with 200, over verified TLS?"""
        return _answers(self.server + path, ssl.create_default_context(cafile=str(self.ca_file)), self.token)

    def pids(self) -> list[int]:
        return [c.process.pid for c in self.components.values()]


def _node(name: str, index: int) -> dict:
    """A Node kwok keeps Ready (it manages every Node: --manage-all-nodes); no taint, so any Pod may land on it."""
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "1Ti"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "type": "kwok"}},
        "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _fill_ip_pools(cp: ControlPlane, nodes: tuple[str, ...], until: Callable[[Callable[[], Any], str], None]) -> None:
    """Gives each Node's pod CIDR its kwok IP pool before any test's Pods arrive, one Pod per Node, then deletes them.

    kwok (v0.8.0 and its main branch) makes a CIDR's pool on first use with a Load and a Store, not LoadOrStore: two
    Pods of one Node handled at once each get a new pool and the same first IP (a CI run saw 3 Running pods with
    2 IPs). Once stored, a pool hands out IPs under its lock."""
    if not nodes:
        return
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"ip-pool-{node}", "namespace": "default"},
             "spec": {"nodeName": node, "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}]}}
            for node in nodes]
    cp.apply(pods)

    names = {p["metadata"]["name"] for p in pods}

    def addressed() -> bool:
        got = cp.get("pods", "-n", "default")["items"]
        return names <= {p["metadata"]["name"] for p in got if p["status"].get("podIP")}

    until(addressed, f"kwok to give a Pod on each of {', '.join(nodes)} an IP")
    cp.kubectl("delete", "pods", "-n", "default", *sorted(names), "--grace-period=0", "--force", "--wait=true")


def _answers(url: str, context: ssl.SSLContext, token: str | None = None) -> bool:
    """Does `url` answer 200?"""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@contextlib.contextmanager
def start(bins: Path | None = None, *, nodes: tuple[str, ...] = NODES, apiserver_args: tuple[str, ...] = (),
          parent: Path | None = None, timeout: float = START_TIMEOUT) -> Iterator[ControlPlane]:
    """Starts the control plane (the built set in `bins`, by default this checkout's; its files in a new temporary
    directory in `parent`), yields it once the API is ready, the controller-manager and the scheduler are healthy
    and `nodes` are Ready; stops every process and removes the directory when the context ends, however it ends."""
    bins = bins or require()
    began = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="devlane-cluster-", dir=parent))
    pki = root / "pki"
    token = secrets.token_hex(16)
    port = {name: free_port() for name in ("etcd", "etcd-peer", "apiserver", "kcm", "scheduler", "kwok")}
    cp = ControlPlane(root=root, kubeconfig=root / "kubeconfig", server=f"https://127.0.0.1:{port['apiserver']}",
                      token=token, ca_file=pki / "apiserver.crt", bins=bins)
    deadline = began + timeout

    def launch(name: str, *args: str) -> None:
        log = root / f"{name}.log"
        with open(log, "wb") as out:
            # HOME is the directory: no user's ~/.kwok/kwok.yaml or ~/.kube/config is read
            process = subprocess.Popen([str(bins / name), *args], stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, cwd=root,
                                       env={**os.environ, "HOME": str(root), **GO_ENV},
                                       start_new_session=True, preexec_fn=_die_with_parent)
        cp.components[name] = Component(name, process, log)

    def until(cond: Callable[[], Any], what: str) -> None:
        """Waits for `cond`, failing early (with its log) when a component exits, or at the deadline."""
        while not cond():
            for name, comp in cp.components.items():
                if comp.process.poll() is not None:
                    raise ControlPlaneError(f"{name} exited with status {comp.process.returncode} before {what}; "
                                            f"its log ({comp.log}):\n{comp.tail()}")
            if time.monotonic() > deadline:
                logs = "\n".join(f"  {c.name} ({c.log}):\n{c.tail(8)}" for c in cp.components.values())
                raise ControlPlaneError(f"timed out after {timeout:g} s waiting for {what}; the logs:\n{logs}")
            time.sleep(0.1)

    try:
        pki.mkdir()
        # service-account keys (ECDSA P-256: quick to make; the apiserver signs ES256 tokens with it)
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key", cwd=pki)
        _openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
        (pki / "tokens.csv").write_text(f'{token},admin,admin,"system:masters"\n')
        etcd_url = f"http://127.0.0.1:{port['etcd']}"
        peer_url = f"http://127.0.0.1:{port['etcd-peer']}"
        launch("etcd", f"--data-dir={root / 'etcd'}", "--name=default", f"--listen-client-urls={etcd_url}",
               f"--advertise-client-urls={etcd_url}", f"--listen-peer-urls={peer_url}",
               f"--initial-advertise-peer-urls={peer_url}", f"--initial-cluster=default={peer_url}",
               "--unsafe-no-fsync", "--log-level=warn")
        launch("kube-apiserver", f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1",
               "--advertise-address=127.0.0.1", f"--secure-port={port['apiserver']}", f"--cert-dir={pki}",
               f"--token-auth-file={pki / 'tokens.csv'}", "--authorization-mode=Node,RBAC",
               # added to the default plugins (which include both): never an empty list, which turns them off
               "--enable-admission-plugins=ResourceQuota,ValidatingAdmissionPolicy",
               "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
               f"--service-account-key-file={pki / 'sa.pub'}",
               f"--service-account-signing-key-file={pki / 'sa.key'}",
               f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=true", "--profiling=false",
               *apiserver_args)
        until(lambda: cp.ca_file.exists() and cp.healthy(), "the API server's /readyz")
        cp.kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "devlane-test",
            "clusters": [{"name": "devlane-test", "cluster": {"server": cp.server,
                                                               "certificate-authority": str(cp.ca_file)}}],
            "users": [{"name": "admin", "user": {"token": token}}],
            "contexts": [{"name": "devlane-test", "context": {"cluster": "devlane-test", "user": "admin"}}],
        }, indent=2))
        kube = f"--kubeconfig={cp.kubeconfig}"
        delegated = (f"--authentication-kubeconfig={cp.kubeconfig}", f"--authorization-kubeconfig={cp.kubeconfig}")
        launch("kube-controller-manager", kube, *delegated, "--leader-elect=false", "--bind-address=127.0.0.1",
               f"--secure-port={port['kcm']}", f"--service-account-private-key-file={pki / 'sa.key'}",
               f"--root-ca-file={cp.ca_file}", "--controllers=*")
        launch("kube-scheduler", kube, *delegated, "--leader-elect=false", "--bind-address=127.0.0.1",
               f"--secure-port={port['scheduler']}")
        launch("kwok", kube, f"--config={bins.parent / KWOK_STAGES}", "--manage-all-nodes=true", f"--cidr={POD_CIDR}",
               "--node-ip=127.0.0.1", f"--server-address=127.0.0.1:{port['kwok']}", "--node-lease-duration-seconds=40")
        cp.apply([_node(name, i) for i, name in enumerate(nodes)])

        unverified = ssl.create_default_context()
        unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE  # their own self-signed certificates

        def nodes_ready() -> bool:
            got = cp.get("nodes")["items"]
            ready = {n["metadata"]["name"] for n in got for c in n.get("status", {}).get("conditions", [])
                     if c["type"] == "Ready" and c["status"] == "True"}
            return ready >= set(nodes)

        for component, what in (("kcm", "controller-manager"), ("scheduler", "scheduler")):
            until(functools.partial(_answers, f"https://127.0.0.1:{port[component]}/healthz", unverified),
                  f"the {what}'s /healthz")
        until(nodes_ready, f"kwok to make the Nodes {', '.join(nodes)} Ready")
        until(lambda: cp.kubectl("get", "serviceaccount", "default", check=False).returncode == 0,
              "the controller-manager's default ServiceAccount")
        _fill_ip_pools(cp, nodes, until)
        cp.started_in = time.monotonic() - began
        yield cp
    finally:
        stop(cp)


def stop(cp: ControlPlane) -> None:
    """Stops the clients first, then the API server, then etcd (each a process group, waited for), with a second
    Ctrl-C ignored meanwhile; removes the temporary directory."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        for name in ("kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            if name in cp.components:
                cp.components[name].stop(grace=5)
    finally:
        shutil.rmtree(cp.root, ignore_errors=True)
        if main:
            signal.signal(signal.SIGINT, previous)
