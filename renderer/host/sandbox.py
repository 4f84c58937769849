"""The plugin sandbox: scrubbed environment, no network where the OS allows it, secret scrubbing.

Render must be pure and reproducible, so a plugin process sees only an allowlisted environment
(`plugin_env`), runs without network (`sandboxed_argv`, probed once by `network_isolation`), has its
network failures explained (`network_hint`), and never gets its secret args echoed back in logs or
errors (`secret_values`, `scrub`). Output caps and the bounded stderr tail live in `process`.

Network isolation wraps the command line instead of using ``preexec_fn``: the runtimes start
plugins from worker threads, and ``preexec_fn`` runs Python between ``fork`` and ``exec``, which can
deadlock on locks held by other threads. A wrapped argv is plain ``fork``/``exec`` and safe from any
thread. The wrapper is util-linux ``unshare`` (a few ms) when it is present and works, otherwise a
tiny Python helper (``python -I -S -c ...``, about 20-30 ms) that calls ``unshare(2)`` and then
``exec``s; both exec in place, so the plugin keeps the pid and process group the runtime kills.
The child gets a fresh network namespace holding only a loopback that is down: no connection
leaves it, not even to the host's 127.0.0.1. As root (or with CAP_SYS_ADMIN) that is a plain
``CLONE_NEWNET``; otherwise ``CLONE_NEWUSER | CLONE_NEWNET`` with the current uid/gid mapped to
themselves, so files keep their owners. This stops accidental network use; it is not a security
boundary against a plugin that runs as root and deliberately re-enters the host namespace.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, quote_plus, unquote

# --------------------------------------------------------------------------------------------------
# Environment

#: What a plugin process may see; `DEVLANE_*` is copied from the host, SOURCE_DATE_EPOCH only when given.
ENV_ALLOWLIST = (
    "DEVLANE_*",
    "HOME",
    "LANG",
    "LC_ALL",
    "PATH",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "SOURCE_DATE_EPOCH",
    "TMPDIR",
    "TZ",
)
ENV_PREFIX = "DEVLANE_"
_WINDOWS_ENV = ("SYSTEMROOT", "COMSPEC", "PATHEXT")  # Windows processes cannot start without these


def plugin_env(home: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a plugin process: an allowlist, so host secrets and proxies never leak.

    HOME and TMPDIR point at the per-call scratch directory; locale, time zone and hash seed are
    fixed so output does not depend on the machine. `extra` (e.g. SOURCE_DATE_EPOCH or runtime
    variables) is applied last.
    """
    env = {
        "PATH": os.environ.get("PATH") or os.defpath,
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if os.name == "nt":
        env.update({k: os.environ[k] for k in _WINDOWS_ENV if k in os.environ})
    env.update({k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIX)})
    if extra:
        env.update(extra)
    return env


# --------------------------------------------------------------------------------------------------
# Network isolation

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PROBE_TIMEOUT_SECONDS = 10.0
_SETUP_FAILED = 125  # the helper itself failed (as with env(1) / docker), before the plugin ran

# Runs as `python -I -S -c _HELPER MODE -- ARGV...`: enters a new network namespace, then execs ARGV.
# Standard library only and no site import, so it starts fast and works with any interpreter.
_HELPER = r"""
import os, signal, sys

def die(code, msg):
    os.write(2, ("devlane-sandbox: " + msg + "\n").encode("utf-8", "replace"))
    os._exit(code)

def unshare(flags):
    if hasattr(os, "unshare"):
        try:
            os.unshare(flags)
        except OSError as exc:
            die({failed}, "unshare failed: %s (errno %d)" % (exc.strerror, exc.errno))
        return
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
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

if len(sys.argv) < 4 or sys.argv[2] != "--" or sys.argv[1] not in ("netns", "userns"):
    die({failed}, "usage: MODE -- ARGV...")
mode, argv = sys.argv[1], sys.argv[3:]
uid, gid = os.getuid(), os.getgid()
if mode == "netns":
    unshare({newnet})
else:
    unshare({newuser} | {newnet})
    write("setgroups", "deny")
    write("uid_map", "%d %d 1" % (uid, uid))
    write("gid_map", "%d %d 1" % (gid, gid))
# Python ignores these at startup and exec keeps ignored signals; restore them as Popen does.
for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
try:
    os.execvp(argv[0], argv)
except FileNotFoundError:
    die(127, "cannot run %s: no such file or directory" % argv[0])
except OSError as exc:
    die(126, "cannot run %s: %s" % (argv[0], exc.strerror))
""".format(failed=_SETUP_FAILED, newnet=hex(CLONE_NEWNET), newuser=hex(CLONE_NEWUSER))

# Runs inside a candidate wrapper during the probe: proves the namespace has only `lo` and the uid is kept.
_VERIFY = r"""
import json, os, socket
print(json.dumps({"interfaces": sorted(n for _, n in socket.if_nameindex()), "uid": os.getuid()}))
"""


@dataclass(frozen=True)
class Isolation:
    """Whether plugins run without network here, how, and if not, why not (shown by `plugins describe`)."""

    enforced: bool
    method: str  # "netns" (root / CAP_SYS_ADMIN), "userns+netns" (unprivileged) or "none"
    reason: str = ""  # why it cannot be enforced; empty when enforced
    tool: str = ""  # "util-linux unshare" or "python helper"
    wrapper: tuple[str, ...] = field(default=(), repr=False)  # argv prefix that starts a command in the sandbox

    def describe(self) -> str:
        """One line for humans: what a plugin can reach during render."""
        if self.enforced:
            return (f"no network: each plugin process gets its own network namespace with only a down "
                    f"loopback ({self.method} via {self.tool})")
        return f"not enforced: plugins can reach the network during render ({self.reason})"


_probe_lock = threading.Lock()
_probed: Isolation | None = None


def network_isolation() -> Isolation:
    """Which way, if any, plugins are kept off the network here; probed once per process (tens of ms), then cached."""
    global _probed
    with _probe_lock:
        if _probed is None:
            _probed = _probe(_candidates())
        return _probed


def sandboxed_argv(argv: list[str], network: bool = False) -> list[str]:
    """`argv` wrapped to run without network; unchanged when `network` is allowed or isolation is unavailable.

    Safe to call and spawn from any thread (no ``preexec_fn``). The wrapped command keeps the pid,
    stdio, inherited descriptors, cwd and environment of the plain one. A plugin that cannot be
    started exits with 127 (not found) or 126 (not executable) and says so on stderr, instead of
    Popen raising, so resolve argv[0] first if that distinction matters.
    """
    if network:
        return list(argv)
    iso = network_isolation()
    return [*iso.wrapper, *argv] if iso.enforced else list(argv)


def _helper_prefix(mode: str) -> tuple[str, ...]:
    return (sys.executable, "-I", "-S", "-c", _HELPER, mode, "--")


def _candidates() -> list[tuple[str, str, tuple[str, ...]]]:
    """(method, tool, argv prefix) to try in order: util-linux first (fastest), then the Python helper."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    unshare = shutil.which("unshare")
    if unshare:
        out.append(("netns", "util-linux unshare", (unshare, "--net", "--")))
        out.append(("userns+netns", "util-linux unshare", (unshare, "--user", "--map-current-user", "--net", "--")))
    if sys.executable:
        out.append(("netns", "python helper", _helper_prefix("netns")))
        out.append(("userns+netns", "python helper", _helper_prefix("userns")))
    return out


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


def _probe(candidates: list[tuple[str, str, tuple[str, ...]]]) -> Isolation:
    """Run a tiny check inside each candidate wrapper; the first that really isolates wins."""
    if not sys.platform.startswith("linux"):
        return Isolation(False, "none", f"network namespaces are Linux-only; this is {sys.platform}")
    if not sys.executable:
        return Isolation(False, "none", "no Python executable to verify the sandbox with (sys.executable is empty)")
    errors: list[str] = []
    verify = [sys.executable, "-I", "-S", "-c", _VERIFY]
    with tempfile.TemporaryDirectory(prefix="devlane-probe-") as tmp:
        for method, tool, prefix in candidates:
            try:
                proc = subprocess.run([*prefix, *verify], capture_output=True, text=True, cwd=tmp,
                                      env=plugin_env(tmp), timeout=PROBE_TIMEOUT_SECONDS, check=False)
            except (OSError, subprocess.SubprocessError) as exc:
                errors.append(f"{tool}: {exc}")
                continue
            if proc.returncode != 0:
                msg = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
                errors.append(f"{tool}: {msg.removeprefix('devlane-sandbox: ')}")
                continue
            try:
                facts = json.loads(proc.stdout)
            except ValueError:
                errors.append(f"{tool}: unexpected probe output {proc.stdout[:200]!r}")
                continue
            if facts.get("interfaces") != ["lo"]:
                errors.append(f"{tool}: namespace still has interfaces {facts.get('interfaces')}")
            elif facts.get("uid") != os.getuid():
                errors.append(f"{tool}: the uid is not kept inside the namespace")
            else:
                return Isolation(True, method, "", tool, prefix)
    return Isolation(False, "none", _blocked_reason(errors))


# --------------------------------------------------------------------------------------------------
# Network-attempt hints

NETWORK_HINT = (
    "plugins run without network during render; if this plugin must call an API, declare it External "
    "(`sideEffects: External` in its plugin.yaml or in the plugin definition) and run `devlane provision` in CI"
)

# Lower-case phrases that only a network attempt produces (Python, urllib3/requests/httpx/aiohttp,
# curl, wget, git, ssh, Node, Java, gRPC). Substring checks keep a 1 MiB stderr tail cheap to scan.
_NETWORK_PHRASES = (
    "network is unreachable",
    "enetunreach",
    "no route to host",
    "ehostunreach",
    "cannot assign requested address",
    "eaddrnotavail",
    "temporary failure in name resolution",
    "name or service not known",
    "no address associated with hostname",
    "nodename nor servname provided",
    "gaierror",
    "nameresolutionerror",
    "failed to resolve '",
    "could not resolve host",
    "couldn't resolve host",
    "could not resolve proxy",
    "couldn't resolve proxy",
    "unable to resolve host address",
    "getaddrinfo enotfound",
    "getaddrinfo eai_again",
    "connection timed out",
    "requests.exceptions.connectionerror",
    "requests.exceptions.connecttimeout",
    "requests.exceptions.proxyerror",
    "urllib3.exceptions.newconnectionerror",
    "urllib3.exceptions.maxretryerror",
    "urllib3.exceptions.connecttimeouterror",
    "failed to establish a new connection",
    "urllib.error.urlerror",
    "<urlopen error",
    "httpx.connecterror",
    "httpx.connecttimeout",
    "httpcore.connecterror",
    "httpcore.connecttimeout",
    "clientconnectorerror",
    "cannot connect to host ",
    "curl: (5)",
    "curl: (6)",
    "curl: (7)",
    "java.net.unknownhostexception",
    "java.net.noroutetohostexception",
    "failed to connect to all addresses",
    "dns resolution failed",
)
# Go's resolver and dialer name the operation on the same line as the failure.
_GO_FAILURES = {
    ": no such host": re.compile(r"\blookup \S{1,255}(?: on \S{1,255})?: no such host"),
    "i/o timeout": re.compile(r"\bdial (?:tcp|udp)\b[^\n]{0,500}\bi/o timeout"),
}
_REFUSED_PHRASES = ("connection refused", "econnrefused", "connectionrefusederror")
# Where a refused connection went: urllib3 pools, Go dialers, Node, curl, ssh, then any URL (text is lower-case).
_TARGET_HOST = re.compile(
    r"host='(?P<a>[^']{1,255})'"
    r"|\bdial tcp \[?(?P<b>[0-9a-z.:\-]{1,255}?)\]?:\d+"
    r"|\beconnrefused \[?(?P<c>[0-9a-f.:]{1,64}?)\]?:\d+"
    r"|failed to connect to (?P<d>[^\s:]{1,255}|\[[^\]]{1,64}\]) port"
    r"|connect to host (?P<e>\S{1,255}) port"
    r"|\b[a-z][a-z0-9+.\-]{0,31}://(?:[^/\s@]{0,255}@)?(?P<f>\[[^\]]{1,64}\]|[^/\s:'\"]{1,255})"
)
_LOOPBACK = re.compile(r"^(?:localhost|.*\.localhost|127(?:\.\d+){3}|::1|0\.0\.0\.0|::|0:0:0:0:0:0:0:1)$")


def _lines_with(text: str, needle: str) -> Iterable[str]:
    """Each line of `text` that contains `needle` (once per line), without splitting the whole text."""
    pos = text.find(needle)
    while pos != -1:
        start, end = text.rfind("\n", 0, pos) + 1, text.find("\n", pos)
        end = len(text) if end == -1 else end
        yield text[start:end]
        pos = text.find(needle, end)


def _refused_remote(line: str) -> bool:
    """A refused connection counts only when it names a non-loopback host (a local helper is not the network)."""
    for m in _TARGET_HOST.finditer(line):
        host = next(v for v in m.groupdict().values() if v).strip("[]").rstrip(".")
        if not _LOOPBACK.match(host):
            return True
    return False


def network_hint(text: str) -> str | None:
    """`NETWORK_HINT` when a plugin's stderr or error text shows a network attempt, else None."""
    if not text:
        return None
    low = text.lower()
    if any(p in low for p in _NETWORK_PHRASES):
        return NETWORK_HINT
    for needle, pattern in _GO_FAILURES.items():
        if any(pattern.search(line) for line in _lines_with(low, needle)):
            return NETWORK_HINT
    for needle in _REFUSED_PHRASES:
        if any(_refused_remote(line) for line in _lines_with(low, needle)):
            return NETWORK_HINT
    return None


# --------------------------------------------------------------------------------------------------
# Secrets

SECRET_NAME_WORDS = ("key", "token", "secret", "password", "passwd", "pwd", "passphrase", "credential")
MIN_SECRET_LENGTH = 3  # shorter values are left alone: replacing "a" or "1" everywhere would mangle output
MASK = "***"
_NOT_SECRET = {"true", "false", "yes", "no", "on", "off", "null", "none"}  # flags such as USE_TOKEN: "true"
_URL_PASSWORD = re.compile(r"\b[a-z][a-z0-9+.\-]{0,31}://[^/\s:@]{0,255}:(?P<pw>[^/\s@]{1,1024})@", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """True when an arg name suggests a secret (API_KEY, githubToken, db_password, ...)."""
    low = name.lower()
    return any(w in low for w in SECRET_NAME_WORDS)


def _schema_mark(schema: Any) -> bool | None:
    """True/False when the schema says whether a value is secret, None when it does not say."""
    if not isinstance(schema, dict):
        return None
    if "x-devlane-secret" in schema:
        return bool(schema["x-devlane-secret"])
    if schema.get("writeOnly") is True or schema.get("format") == "password":
        return True
    return None


def _sub_schema(schema: Any, key: str | None) -> Any:
    if not isinstance(schema, dict):
        return None
    if key is None:
        return schema.get("items")
    props = schema.get("properties")
    if isinstance(props, dict) and key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _leaves(value: Any, numbers: bool) -> Iterable[str]:
    """Every string under `value`; numbers too when the schema itself marked it secret (a PIN)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v, numbers)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v, numbers)
    elif isinstance(value, str):
        yield value
    elif numbers and isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)


def secret_values(args: dict, schema: dict | None = None) -> list[str]:
    """Values to hide in logs and errors: args the schema marks secret or whose names look secret.

    Marks: `writeOnly: true`, `format: password` or `x-devlane-secret: true` (a marked object hides
    everything under it); `x-devlane-secret: false` overrides the name heuristic. Passwords inside
    URLs (``scheme://user:pass@host``) are hidden wherever they appear. Longest first, no duplicates.
    """
    found: set[str] = set()

    def add(value: str, from_name: bool) -> None:
        bare = value.strip()
        if len(bare) < MIN_SECRET_LENGTH or (from_name and bare.lower() in _NOT_SECRET):
            return
        found.update((value, bare))
        if "\n" in value:  # a PEM key or a config file: single lines can leak on their own
            found.update(line.strip() for line in value.splitlines() if len(line.strip()) >= 8)

    def walk(value: Any, schema: Any, name: str | None) -> None:
        mark = _schema_mark(schema)
        if mark or (mark is None and name is not None and is_secret_name(name)):
            for leaf in _leaves(value, numbers=bool(mark)):
                add(leaf, from_name=not mark)
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, _sub_schema(schema, str(k)), str(k))
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v, _sub_schema(schema, None), None)
        elif isinstance(value, str):
            for m in _URL_PASSWORD.finditer(value):
                add(m["pw"], from_name=False)
                add(unquote(m["pw"]), from_name=False)

    walk(args, schema, None)
    return sorted(found, key=lambda s: (-len(s), s))


def _variants(secret: str) -> set[str]:
    """The secret as it may appear in text: raw, JSON- or repr-escaped, percent-encoded."""
    out = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
           repr(secret)[1:-1], quote(secret, safe=""), quote_plus(secret, safe="")}
    return {v for v in out if len(v) >= MIN_SECRET_LENGTH}


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of every secret replaced by ``***``.

    Occurrences are found in the original text and overlapping or adjacent ones merge into one
    mask, so no fragment of a secret survives whatever order the secrets come in.
    """
    if not text:
        return text
    needles = {v for s in secrets if s and len(s) >= MIN_SECRET_LENGTH for v in _variants(s)}
    spans: list[tuple[int, int]] = []
    for needle in needles:
        start = text.find(needle)
        while start != -1:
            spans.append((start, start + len(needle)))
            start = text.find(needle, start + 1)
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    pos, (cur_start, cur_end) = 0, spans[0]
    for s, e in spans[1:]:
        if s <= cur_end:
            cur_end = max(cur_end, e)
            continue
        out += [text[pos:cur_start], MASK]
        pos, cur_start, cur_end = cur_end, s, e
    out += [text[pos:cur_start], MASK, text[cur_end:]]
    return "".join(out)
