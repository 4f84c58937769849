"""What a plugin process sees and what is said about it: a scrubbed environment, explained network
failures, secret scrubbing.

Render must be pure and reproducible, so a plugin process sees only an allowlisted environment
(`plugin_env`), has its network failures explained (`network_hint`), and never gets its secret args
echoed back in logs or errors (`secret_values`, `scrub`). The namespaces, filesystem view and
resource limits are built by `confine`; output caps and the bounded stderr tail live in `process`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus, unquote

from ..core.secrets_mask import MASK, secrets_in

# --------------------------------------------------------------------------------------------------
# Environment

#: What a plugin process may see; `DEVLANE_*` is copied from the host, SOURCE_DATE_EPOCH only when given.
ENV_ALLOWLIST = (
    "DEVLANE_*",
    "HOME",
    "LANG",
    "LC_ALL",
    "PATH",
    "PWD",
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


def network_hint(text: str, sandboxed: bool = False) -> str | None:
    """`NETWORK_HINT` when a plugin's stderr or error text shows a network attempt, else None.

    `sandboxed`: the plugin ran in a network namespace of its own, where nothing listens on
    loopback but what the plugin started, so a refused loopback connection also means "outside".
    """
    if not text:
        return None
    low = text.lower()
    if any(p in low for p in _NETWORK_PHRASES):
        return NETWORK_HINT
    for needle, pattern in _GO_FAILURES.items():
        if any(pattern.search(line) for line in _lines_with(low, needle)):
            return NETWORK_HINT
    for needle in _REFUSED_PHRASES:
        if any(sandboxed or _refused_remote(line) for line in _lines_with(low, needle)):
            return NETWORK_HINT
    return None


# --------------------------------------------------------------------------------------------------
# Secrets

SECRET_NAME_WORDS = ("key", "token", "secret", "password", "passwd", "pwd", "passphrase", "credential")
MIN_SECRET_LENGTH = 3  # shorter values are left alone: replacing "a" or "1" everywhere would mangle output
_NOT_SECRET = {"true", "false", "yes", "no", "on", "off", "null", "none"}  # flags such as USE_TOKEN: "true"


def is_secret_name(name: str) -> bool:
    """True when an arg name suggests a secret (API_KEY, githubToken, db_password, ...)."""
    low = name.lower()
    return any(w in low for w in SECRET_NAME_WORDS)


def schema_mark(schema: Any) -> bool | None:
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
    URLs and connection strings (``scheme://user:pass@host``, ``password=...``: `core.secrets_mask`) are hidden
    wherever they appear. Longest first, no duplicates.
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
        mark = schema_mark(schema)
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
            for found in secrets_in(value):  # what every report masks: URL passwords, `password=` values, ...
                add(found, from_name=True)
                add(unquote(found), from_name=True)

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
