"""Confinement of plugin processes: namespaces, a read-only filesystem, hidden secrets, resource limits.

A plugin may come from the pull request being rendered, and devlane runs inside CI and inside the
Argo CD repo-server, where credentials live and stdout is applied to the cluster. So every plugin
process is started through a wrapper that builds its sandbox before the plugin's first instruction:

- ``bwrap`` (bubblewrap, when present and working): new user, PID, mount, IPC, UTS and network
  namespaces, ``/`` read-only, a fresh ``/proc`` (devlane's ``/proc/<pid>/environ`` and ``fd/``
  are not there), fresh ``/dev``, ``/tmp`` and ``/dev/shm``, HOME, ``.git`` directories and
  mounted service-account secrets hidden, no capabilities, a parent-death signal;
- util-linux ``unshare`` as the fallback: the same namespaces and a fresh ``/proc``, but the
  filesystem stays writable where devlane's user may write;
- a tiny Python helper as the last resort: a network namespace only.

Resource limits come from ``prlimit`` (address space when no memory cgroup, processes, file size,
CPU time) and, where devlane may create cgroups, a cgroup per call (memory and process count,
killed as a whole at the end). What the chosen wrapper really enforces is verified once per
process by running a probe inside it (`confinement`), so `devlane plugins describe` reports facts
of this machine, not intentions; `policy.requireSandbox` refuses to run a plugin when any layer is
missing. Wrappers exec in place and are plain argv (no ``preexec_fn``), so starting a plugin is
safe from any thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..core.dirlock import alive
from .cgroups import MIB, Cgroup, reclaim_cgroups, usable_cgroups
from .sandbox import plugin_env

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PROBE_TIMEOUT_SECONDS = 10.0
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

    def as_dict(self) -> dict[str, int]:
        names = {v: k for k, v in self.KEYS.items()}
        return {names[f.name]: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class SandboxPolicy:
    """What the repository asks of the sandbox: default limits, and whether every layer is required."""

    limits: Limits = Limits()
    require: bool = False  # policy.requireSandbox

    def admit(self, confined: Confinement) -> list[str]:
        """The layers a plugin process would run without, when the policy requires them all; [] to go ahead."""
        return [f"{la.name} ({la.how})" for la in confined.missing()] if self.require else []


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

    def layer(self, name: str) -> Layer:
        return next(la for la in self.layers if la.name == name)

    @property
    def enforced(self) -> bool:
        """Whether plugins are kept off the network (the first promise; kept for callers that ask only that)."""
        return self.layer("network-namespace").enforced

    def missing(self) -> list[Layer]:
        return [la for la in self.layers if not la.enforced]

    def describe(self) -> str:
        """One line for humans: what a plugin can reach during render."""
        if self.enforced:
            return (f"no network: each plugin process gets its own network namespace with only a loopback of its "
                    f"own ({self.method} via {self.tool})")
        return f"not enforced: plugins can reach the network during render ({self.reason})"

    def wrap(self, argv: Sequence[str], *, writable: Sequence[str], network: bool = False,
             limits: Limits = Limits(), readable: Sequence[str] = ()) -> Jail:
        """`argv` inside this sandbox, writing only under `writable` (the first is the working directory)."""
        cg = Cgroup.create(self.cgroups, limits.memory_mib, limits.processes) if self.cgroups else None
        writable = [*writable, *granted_paths()]
        try:
            inner = _namespaces(self.method, list(argv), writable, readable, network)
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
            reclaim_temp_dirs()
            _probed = best(METHODS)
        return _probed


def probe_soon() -> threading.Thread | None:
    """Start the probe on a daemon thread unless it ran already: its subprocesses then run on another core while
    the command reads the repository, instead of after it, when the first plugin starts (a warm render spends a
    tenth of its time waiting on them). Whoever calls `confinement()` meanwhile waits for the same result."""
    if _probed is not None or _probe_lock.locked():
        return None
    thread = threading.Thread(target=confinement, name="devlane-sandbox-probe", daemon=True)
    thread.start()
    return thread


def best(methods: Iterable[str]) -> Confinement:
    """The first of `methods` whose probe proves it isolates the network; else an unconfined record."""
    reasons: list[str] = []
    cgroups = usable_cgroups()
    for method in methods:
        got = probe(method, cgroups)
        if got.enforced:
            return replace(got, reason="; ".join(reasons))
        reasons.append(got.reason)
    return replace(probe("none", cgroups), reason=_blocked_reason(reasons))


# --------------------------------------------------------------------------------------------------
# Building the wrappers

METHODS = ("bwrap", "unshare", "python")
TOOLS = {"bwrap": "bubblewrap", "unshare": "util-linux unshare", "python": "python helper", "none": "none"}


def _home() -> str | None:
    home = os.path.realpath(os.path.expanduser("~"))
    return home if home not in ("/", "") and os.path.isdir(home) else None


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _keep_paths(argv: Sequence[str], readable: Sequence[str]) -> list[str]:
    """What a plugin needs to read even when it lives under the hidden HOME: its interpreter, PATH, itself."""
    keep = [*readable, sys.prefix, sys.base_prefix, sys.exec_prefix, str(_DEVLANE_ROOT)]
    keep += [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
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


def _bwrap(argv: list[str], writable: Sequence[str], readable: Sequence[str], network: bool) -> list[str]:
    out = [shutil.which("bwrap") or "bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--ro-bind", "/", "/",
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


def _unshare(argv: list[str], network: bool) -> list[str]:
    unshare = shutil.which("unshare") or "unshare"
    setpriv = shutil.which("setpriv") or "setpriv"
    flags = ["--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--ipc",
             "--uts"]
    if not network:
        flags.append("--net")
    return [setpriv, "--pdeathsig", "KILL", "--", unshare, *flags, "--", *argv]


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


def _namespaces(method: str, argv: list[str], writable: Sequence[str], readable: Sequence[str],
                network: bool) -> list[str]:
    if method == "bwrap":
        return _bwrap(argv, writable, readable, network)
    if method == "unshare":
        return _unshare(argv, network)
    if method == "python":
        return _python(argv, network)
    return argv


def _limits_prefix(method: str, limits: Limits, memory: bool) -> list[str]:
    """`prlimit` with the call's limits (the address space only when no memory cgroup bounds it)."""
    prlimit = shutil.which("prlimit")
    if method == "none" or not prlimit:
        return []
    opts = [f"--nproc={limits.processes}", f"--fsize={limits.file_size_mib * MIB}",
            f"--cpu={limits.cpu_seconds}", "--core=0"]
    if memory:
        opts.insert(0, f"--as={limits.memory_mib * MIB}")
    return [prlimit, *opts, "--"]


# --------------------------------------------------------------------------------------------------
# Temporary directories of dead runs

TEMP_PREFIXES = ("devlane-plugin-", "devlane-plugins-", "devlane-grpc-", "devlane-probe-")


def temp_prefix(kind: str) -> str:
    """A temp-dir prefix that names this process, so a later run can tell whether its owner is dead."""
    return f"{kind}{os.getpid()}-"


def reclaim_temp_dirs(base: str | None = None) -> list[str]:
    """Remove devlane temp dirs whose owning process is gone (a render killed with SIGKILL leaves them)."""
    base = base or tempfile.gettempdir()
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            prefix = next((p for p in TEMP_PREFIXES if entry.name.startswith(p)), None)
            if prefix is None or not entry.is_dir(follow_symlinks=False):
                continue
            pid = entry.name[len(prefix):].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(entry.path)
    reclaim_cgroups()
    return removed


# --------------------------------------------------------------------------------------------------
# The probe: run a check inside each wrapper and record what it really saw

_VERIFY = r"""
import ctypes, json, os, resource, socket, sys
parent, outside, hidden = int(sys.argv[1]), sys.argv[2], sys.argv[3]
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
    "hiddenVisible": os.path.exists(hidden), "caps": caps, "pdeathsig": sig.value,
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


def probe(method: str, cgroups: tuple[tuple[str, str], ...] = ()) -> Confinement:
    """Run the check inside `method`'s wrapper and turn what it saw into layers."""
    tool = TOOLS[method]
    if not sys.platform.startswith("linux"):
        return _unconfined(method, f"namespaces are Linux-only; this is {sys.platform}")
    if not sys.executable:
        return _unconfined(method, "no Python executable to verify the sandbox with (sys.executable is empty)")
    if method in ("bwrap", "unshare") and not shutil.which(method):
        return _unconfined(method, f"{method} is not installed"
                           + (" (Debian/Ubuntu: apt-get install bubblewrap)" if method == "bwrap" else ""))
    limits = Limits()
    candidate = Confinement(method, tool, (), cgroups=cgroups)
    # mkdtemp, not TemporaryDirectory: the probe runs on a daemon thread, and a command that ends meanwhile would
    # run TemporaryDirectory's exit-time finalizer against a directory the sandbox is still writing to, printing a
    # traceback after the command's own message; a directory left that way is reclaimed by the next run.
    tmp = tempfile.mkdtemp(prefix=temp_prefix("devlane-probe-"))
    try:
        work, outside = os.path.join(tmp, "work"), os.path.join(tmp, "outside")
        hidden = os.path.join(_home() or tmp, ".devlane-probe-hidden") if _home() else os.path.join(tmp, "x")
        os.mkdir(work)
        os.mkdir(outside)
        jail = candidate.wrap([sys.executable, "-I", "-S", "-c", _VERIFY, str(os.getpid()), outside, hidden],
                              writable=[work], limits=limits)
        try:
            if _home():
                with contextlib.suppress(OSError):
                    Path(hidden).touch()
            proc = subprocess.run(jail.argv, capture_output=True, text=True, cwd=work, env=plugin_env(work),
                                  timeout=PROBE_TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return _unconfined(method, f"{tool}: {exc}")
        finally:
            jail.end()
            with contextlib.suppress(OSError):
                os.unlink(hidden)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return _unconfined(method, f"{tool}: {msg.removeprefix('devlane-sandbox: ')}")
    try:
        facts = json.loads(proc.stdout)
    except ValueError:
        return _unconfined(method, f"{tool}: unexpected probe output {proc.stdout[:200]!r}")
    if facts.get("uid") != os.getuid():
        return _unconfined(method, f"{tool}: the uid is not kept inside the namespace")
    return Confinement(method, tool, _layers(method, facts, limits, cgroups, home_hidden=bool(_home())),
                       cgroups=cgroups)


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
        ok = facts.get(key) == want
        return Layer(name, ok, what.format(want) + " (prlimit)" if ok else "prlimit is not installed" if not
                     shutil.which("prlimit") else f"not applied ({key}={facts.get(key)})")

    net_ok = facts.get("interfaces") == ["lo"] and seen.get("net") != mine.get("net")
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
              "the plugin can write wherever devlane's user can (install bubblewrap)"),
        Layer("private-proc", not facts.get("parentVisible"),
              "a fresh /proc: devlane's environ, cmdline and fds are not there" if not facts.get("parentVisible")
              else "devlane's /proc entries are visible (needs a PID namespace with its own /proc)"),
        Layer("hidden-secrets", home_hidden and not facts.get("hiddenVisible"),
              "HOME, .git and mounted secrets are hidden" if home_hidden and not facts.get("hiddenVisible") else
              "HOME (cloud and kube credentials) is readable (install bubblewrap)"),
        Layer("no-capabilities", facts.get("caps", "").strip("0") == "",
              "all capabilities dropped" if facts.get("caps", "").strip("0") == "" else
              f"capabilities {facts.get('caps')} inside its user namespace"),
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
    except OSError:
        return None


def _blocked_reason(errors: list[str]) -> str:
    """Why no namespace could be made, naming the kernel switch when one is known to be off."""
    if _read_sysctl("/proc/sys/user/max_user_namespaces") == "0":
        return "user namespaces are disabled (user.max_user_namespaces=0)"
    privileged = os.geteuid() == 0
    if not privileged and _read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)"
    if not privileged and _read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"
    last = errors[-1] if errors else "no way to create a namespace was found"
    return (f"no network namespace could be created ({last}); a container seccomp profile or a missing "
            "CAP_SYS_ADMIN usually causes this")
