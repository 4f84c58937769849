"""References to services inside env values: what counts as one, and where it is.

A reference is the host part of a token: `svc`, `svc:port`, `svc/path`, `scheme://[user@]svc[:port][/...]`,
with the host spelled `svc`, `svc.ns`, `svc.ns.svc` or `svc.ns.svc.cluster.local`. Only the host is
ever a reference: user names, passwords and paths that happen to equal a service name are not.

A bare value (`DB_HOST=postgres`) is ambiguous (`POSTGRES_DB=postgres` names a database), so it
counts only when the variable's name does not say it holds something else (a name, user, db...).
The rewriter and the isolation invariant share this one definition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"[^\s,;]+")
_PLAIN = re.compile(r"(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*)(?::(?P<port>[A-Za-z0-9-]+))?(?P<path>/\S*)?")
HOST_WORDS = ("HOST", "ADDR", "SERVER", "ENDPOINT", "URL", "URI", "DSN", "BROKER", "UPSTREAM", "BACKEND", "PEER")
NOT_HOST_WORDS = {
    "NAME", "DB", "DATABASE", "USER", "USERNAME", "LOGIN", "PASSWORD", "PASS", "PASSWD", "PWD", "KEY",
    "SECRET", "TOKEN", "ID", "TABLE", "SCHEMA", "BUCKET", "TOPIC", "QUEUE", "REGION", "ENV", "LEVEL",
    "MODE", "LABEL", "TAG", "VERSION", "APP", "REALM", "TENANT", "STREAM", "INDEX", "KEYSPACE",
}


@dataclass(frozen=True)
class Target:
    """A service that references may name: its namespace (None: unknown) and port names."""

    namespace: str | None
    ports: frozenset[str]


@dataclass(frozen=True)
class Reference:
    start: int  # span of the service label inside the value
    end: int
    service: str


def bare_value_is_host(env_name: str) -> bool:
    """Whether a bare `svc` value of this variable is a host (by the variable's name)."""
    upper = env_name.upper()
    if any(w in upper for w in HOST_WORDS):
        return True
    return not any(tok in NOT_HOST_WORDS for tok in re.split(r"[_\-.]+", upper))


def _service_of(host: str, targets: dict[str, Target]) -> str | None:
    first, _, suffix = host.partition(".")
    target = targets.get(first)
    if target is None:
        return None
    if not suffix:
        return first
    parts = suffix.split(".")
    if parts[1:] not in ([], ["svc"], ["svc", "cluster", "local"]):
        return None
    if target.namespace is not None and parts[0] != target.namespace:
        return None
    return first


def find_references(env_name: str, value: str, targets: dict[str, Target]) -> list[Reference]:
    """Spans of `value` that name a service in `targets` as a host."""
    out: list[Reference] = []
    for m in _TOKEN.finditer(value):
        tok, base = m.group(0), m.start()
        if "://" in tok:
            head = tok.index("://") + 3
            rest = tok[head:]
            authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
            host_at = authority.rfind("@") + 1
            host = authority[host_at:].split(":", 1)[0]
            svc = _service_of(host, targets)
            if svc:
                start = base + head + host_at
                out.append(Reference(start, start + len(svc), svc))
            continue
        plain = _PLAIN.fullmatch(tok)
        if not plain:
            continue
        host, port, path = plain.group("host"), plain.group("port"), plain.group("path")
        svc = _service_of(host, targets)
        if not svc:
            continue
        if port and not (port.isdigit() or port in targets[svc].ports):
            continue  # `orders:orders` is user:password, not svc:port
        if not port and not path and "." not in host and not bare_value_is_host(env_name):
            continue
        out.append(Reference(base, base + len(svc), svc))
    return out


def rewrite(env_name: str, value: str, targets: dict[str, Target], new_names: dict[str, str]) -> str:
    """Replace the service label of every reference by its dev name, keeping the rest."""
    refs = find_references(env_name, value, targets)
    for ref in reversed(refs):
        value = value[: ref.start] + new_names[ref.service] + value[ref.end :]
    return value
