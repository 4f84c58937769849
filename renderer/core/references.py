"""References to services: what counts as one, and where it is, in every place a pod reads an address.

A reference is the *host* of an address: only the service's DNS label is ever a reference (the span that
`apply` replaces), never a user name, a password, a database name, a path or a port, even when they are
spelled like a service. The host may be spelled `svc`, `svc.ns`, `svc.ns.svc` or `svc.ns.svc.cluster.local`
(`Targets.resolve` decides which service that is, as DNS would from the pod's namespace).

Forms recognised wherever a value is read (env values, ConfigMap values, flag values, config file values):
- `scheme://[user[:pass]@]host[:port][/...]` for any scheme (`mongodb+srv`, `jdbc:postgresql`, `PLAINTEXT`...),
  with host lists in the authority (`mongodb://u:p@a:27017,b:27017/db`) and gRPC's `dns:///host:port`;
- `host:port` (port numeric, 1-65535, or a named port of the Service), comma/space lists of them,
  `id@host:port` lists (`1@kafka:9093,2@kafka-2:9093`), `jdbc:oracle:thin:@host:port`;
- key-value strings: ADO.NET (`Host=x;Port=5432;Username=u`, `Server=tcp:x,1433`, `Data Source=x`), libpq
  (`host=x port=5432 user=u`), `--flag=VALUE`, `-Dkey=VALUE`, `KEY=VALUE`: each value is read under its own key;
- a *bare* host (`redis`, `svc.ns`, `svc/path`) only where the key it is found under says it is a host
  (`bare_value_is_host`: `DB_HOST`, `REDIS_ADDR`, `--redis-host`, `Server=`...) or in a host position of one
  of the forms above. `POSTGRES_DB=postgres`, `Username=postgres`, `CACHE_DRIVER=redis` are not references;
  user names, passwords and image names (`IMAGE=postgres:16`) are never references, whatever they look like.

`find_in_args` adds what command lines say: `--flag VALUE` / `-h VALUE` pairs, `HOST PORT` pairs
(`nc -z rabbitmq 5672`), and shell strings (`sh -c "until pg_isready -h postgres; do ...; done"`, `export
DB_HOST=postgres`), where `echo`/`printf` arguments are messages, not addresses. `find_in_data` reads a
ConfigMap/Secret entry: a single value, or a mounted file (YAML, JSON, INI/TOML, Java properties, .env,
nginx/redis/haproxy-like configs, shell scripts, plain text), line by line with each line's own key.

A value used as a host through Kubernetes' dependent variables (`http://$(OTEL_COLLECTOR_NAME):4317`) is found
by `host_variables` and read with `find_in_value(..., as_host=True)`.

Not recognised (a dev pod relying on these is caught by the wiring check, not rewritten): StatefulSet pod names
(`kafka-0.kafka-headless:9093`, whose service is the second label and whose pod label changes too), hosts
assembled at run time, JSON-escaped URLs (`http:\\/\\/svc`), XML element text (`<host>svc</host>`), IPv6 literals.

The rewriter, the wiring check and the isolation invariant share this one definition. Everything here is
linear in the text, and every regular expression is compiled once, at import.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Target:
    """A service that references may name."""

    key: str  # its identity in the model: what the new names are keyed by
    name: str  # its DNS label (metadata.name)
    namespace: str | None  # None: the manifest names none (the destination namespace)
    ports: frozenset[str] = frozenset()


class Targets:
    """The services a pod in namespace `home` may name, resolved from a host as DNS would."""

    def __init__(self, targets: Iterable[Target], home: str | None = None):
        self.home = home
        self._by_name: dict[str, list[Target]] = {}
        for t in targets:
            self._by_name.setdefault(t.name, []).append(t)

    def at(self, home: str | None) -> Targets:
        """The same services seen from a pod in `home`: shares the index, so a flow builds it once, not per pod."""
        view = Targets((), home)
        view._by_name = self._by_name
        return view

    def __bool__(self) -> bool:
        return bool(self._by_name)

    def resolve(self, host: str) -> Target | None:
        """The target `host` names: `svc` in the pod's namespace, or `svc.ns[.svc[.cluster.local]]`."""
        first, _, suffix = host.rstrip(".").partition(".")
        candidates = self._by_name.get(first)
        if not candidates:
            return None
        if not suffix:
            return _one(candidates, self.home)
        parts = suffix.split(".")
        if parts[1:] not in ([], ["svc"], ["svc", "cluster", "local"]):
            return None
        exact = [t for t in candidates if t.namespace == parts[0]]
        if exact:
            return exact[0]
        unknown = [t for t in candidates if t.namespace is None]
        return unknown[0] if len(unknown) == 1 else None

    def mentioned_in(self, text: str) -> bool:
        """Whether `text` may hold a reference at all (a cheap, conservative pre-filter)."""
        names = self._by_name
        if len(names) <= _FEW_NAMES:
            return any(n in text for n in names)
        return any(w in names or (w[:2] == "-h" and w[2:] in names) for w in _LABEL_RUN.findall(text))


_FEW_NAMES = 8  # up to this many targets, substring tests beat a word scan
_LABEL_RUN = re.compile(r"[A-Za-z0-9-]+")


def _one(candidates: list[Target], home: str | None) -> Target | None:
    """A short name resolves in the pod's own namespace; with no namespace known, only if unambiguous."""
    same = [t for t in candidates if t.namespace == home]
    if same:
        return same[0]
    if home is None or all(t.namespace is None for t in candidates):
        return candidates[0] if len(candidates) == 1 else None
    unknown = [t for t in candidates if t.namespace is None]
    return unknown[0] if len(unknown) == 1 else None


@dataclass(frozen=True)
class Reference:
    start: int  # span of the service label inside the text
    end: int
    target: Target
    namespace: tuple[int, int] | None = None  # span of the namespace label that follows (`svc.ns...`), if any


# ---------------------------------------------------------------------------------------------
# Keys: what the name a value is found under says about a bare word in it

# A key is read word by word (`DB_HOST`, `redisHost`, `spring.redis.host`, `--backend-url`); the last word
# that says something decides (`DB_HOST` is a host, `REDIS_HOST_PASSWORD` a password).
HOST_WORDS = frozenset({
    "HOST", "HOSTS", "HOSTNAME", "HOSTADDR", "ADDR", "ADDRS", "ADDRESS", "ADDRESSES", "SERVER", "SERVERS",
    "ENDPOINT", "ENDPOINTS", "URL", "URLS", "URI", "URIS", "DSN", "BROKER", "BROKERS", "BOOTSTRAP", "UPSTREAM",
    "UPSTREAMS", "PEER", "PEERS", "PROXY", "SEEDS", "SLAVEOF", "REPLICAOF", "MASTER", "CONTACTPOINTS",
})  # fmt: skip
NOT_HOST_WORDS = frozenset({
    "NAME", "NAMES", "DB", "DATABASE", "DATABASES", "DBNAME", "ID", "IDS", "TABLE", "SCHEMA", "CATALOG", "BUCKET",
    "TOPIC", "TOPICS", "QUEUE", "QUEUES", "REGION", "ENV", "ENVIRONMENT", "LEVEL", "MODE", "APP", "REALM", "TENANT",
    "STREAM", "INDEX", "KEYSPACE", "PROVIDER", "DRIVER", "TYPE", "KIND", "ENGINE", "DIALECT", "ADAPTER", "PROFILE",
    "PROFILES", "FORMAT", "PROTOCOL", "SCHEME", "FILE", "FILES", "PATH", "DIR", "DIRECTORY", "HOME", "DATA", "VOLUME",
    "MOUNT", "CLASS", "COMMAND", "CMD", "PREFIX", "SUFFIX", "NAMESPACE", "GROUP", "ROLE", "ROLES", "METHOD",
    "STRATEGY", "IMPL", "FLAVOR", "VENDOR", "PLATFORM", "COMPONENT", "CONTAINER", "OWNER", "TEAM", "CHANNEL",
    "SUBJECT", "EXCHANGE", "COLLECTION", "LOCALE", "LANG", "DOMAIN", "STORE", "CACHE", "ALIAS",
    "AUDIENCE", "SCOPE", "CLUSTER", "EMAIL", "SENDER", "SELECTOR", "ACTIVE",
})  # fmt: skip
# Credentials and prose: nothing in them is an address, whatever it looks like.
CREDENTIAL_WORDS = frozenset({
    "USER", "USERS", "USERNAME", "LOGIN", "PASSWORD", "PASS", "PASSWD", "PWD", "KEY", "SECRET", "TOKEN",
    "CREDENTIAL", "CREDENTIALS", "AUTH", "ACCOUNT", "PRINCIPAL", "COOKIE", "SALT", "MESSAGE", "MSG", "TEXT",
    "TITLE", "DESCRIPTION", "LABEL", "LABELS", "COMMENT", "GREETING", "BANNER", "LOG", "LOGGER",
})  # fmt: skip
IMAGE_WORDS = frozenset({"IMAGE", "IMAGES", "TAG", "TAGS", "VERSION", "REPO", "REPOSITORY", "DIGEST", "CHART"})
# Keys that are hosts whatever their words say (connection-string keys), spelled lower-case, alphanumeric;
# and `-h` (but not `-H`, curl's header).
HOST_KEYS = frozenset({
    "host", "hostname", "hostaddr", "server", "servers", "datasource", "address", "addr", "networkaddress",
    "endpoint", "contactpoints", "bootstrapservers", "brokers", "slaveof", "replicaof",
})  # fmt: skip
# `HOST_NAME`, and nginx's `proxy_pass` / `fastcgi_pass` / `grpc_pass`... (a PASS that is not a password)
_HOST_PAIRS = frozenset({("NAME", "HOST"), *(("PASS", p) for p in ("PROXY", "FASTCGI", "GRPC", "UWSGI", "SCGI"))})
# Words that may follow a host word and keep it one (`REDIS_HOST_PRIMARY`, `KAFKA_BROKERS_LIST`).
_HOST_QUALIFIERS = frozenset({
    "LIST", "PRIMARY", "SECONDARY", "MAIN", "INTERNAL", "EXTERNAL", "OVERRIDE", "DEFAULT", "READ", "WRITE",
    "REPLICA", "RW", "RO", "HTTP", "HTTPS", "GRPC", "TCP", "OVERRIDES",
})  # fmt: skip
_HOST_SUFFIXES = ("HOST", "HOSTS", "HOSTNAME", "ADDR")  # CARTSERVICEHOST, PGHOST, REDISADDR
_NOT_SUFFIXES = ("NAME", "DATABASE")  # DBNAME, NODENAME, PGDATABASE
_CRED_SUFFIXES = ("USER", "PASSWORD", "PASSWD", "TOKEN", "SECRET")  # PGUSER, DBPASSWORD

_HOST, _NEUTRAL, _NOT, _VETO = range(4)  # _VETO: credentials and images, where nothing is a reference
_KEY_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=8192)
def _key_class(key: str) -> int:
    if not key:
        return _NEUTRAL
    if key == "h" or _NOT_ALNUM.sub("", key.lower()) in HOST_KEYS:
        return _HOST
    cls, prev = _NEUTRAL, ""
    for word in _KEY_WORD.findall(key):
        w = word.upper()
        if w in HOST_WORDS or w.endswith(_HOST_SUFFIXES) or (w, prev) in _HOST_PAIRS:
            cls = _HOST
        elif w in CREDENTIAL_WORDS or w in IMAGE_WORDS or w.endswith(_CRED_SUFFIXES) or w.endswith("IMAGE"):
            cls = _VETO
        elif w in NOT_HOST_WORDS or w.endswith(_NOT_SUFFIXES):
            cls = _NOT
        elif cls == _HOST and not w.isdigit() and w not in _HOST_QUALIFIERS:
            cls = _NEUTRAL  # BROKER_TRANSPORT=redis, SERVER_SOFTWARE=nginx: a kind, not a host
        prev = w
    return cls


def _names_service(key: str, host: str) -> bool:
    """Whether the key's own words name the service (`REDIS=redis-prod`, `ORDERS=orders`)."""
    parts = {p for p in host.upper().split("-") if len(p) >= 3}
    joined = host.replace("-", "").upper()
    return any(w.upper() in parts or w.upper() == joined for w in _KEY_WORD.findall(key) if len(w) >= 3)


def bare_value_is_host(key: str, *, host: str | None = None) -> bool:
    """Whether a bare `svc` value found under this key (env variable, config key, flag) is a host.

    True when the key says it holds a host (`DB_HOST`, `REDIS_ADDR`, `UPSTREAM`, `--redis-host`, `Server`);
    for a key that says nothing either way (`REDIS`), only when its words name the service `host`
    (`REDIS=redis-prod`). A key that says it holds something else (a name, a user, a db, a driver, an image)
    never holds a bare host.
    """
    cls = _key_class(key)
    if cls == _HOST:
        return True
    return cls == _NEUTRAL and host is not None and _names_service(key, host)


# ---------------------------------------------------------------------------------------------
# Values

_WORD = re.compile(r"""(?:[^\s;'"]+|'[^']*'|"[^"]*")+""")  # whitespace/`;`-separated, quotes kept whole
_ASSIGN = re.compile(r"-{0,2}([A-Za-z_][\w.\-]*)=")  # KEY=, --flag=, -Dkey=
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*(?::[A-Za-z][A-Za-z0-9+.\-]*)*)://([^/?#;\s]*)")
_HOSTPORT = re.compile(r"([A-Za-z0-9][A-Za-z0-9.\-]*)(?::([A-Za-z0-9\-]*))?")
_HOST_LIST_ITEM = re.compile(r"([A-Za-z0-9][A-Za-z0-9.\-]*)(?::([A-Za-z0-9\-]*))?([/?#].*)?")
_PLAIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9.\-]*)(?::([A-Za-z0-9\-]+))?([/?#]\S*)?")
_ID_AT = re.compile(r"[\w.+\-]+@([A-Za-z0-9][A-Za-z0-9.\-]*):([A-Za-z0-9\-]+)(?:[/?#]\S*)?")
_ORACLE = re.compile(r"jdbc:oracle:\w+:@(?://)?([A-Za-z0-9][A-Za-z0-9.\-]*)", re.IGNORECASE)
_SQLSERVER_PREFIX = re.compile(r"(?:tcp|np|lpc|admin):", re.IGNORECASE)
_PATH_HOST_SCHEMES = frozenset({"dns", "kubernetes", "k8s"})  # gRPC targets: `dns:///svc:port`
_ADO_PAIR = re.compile(  # Key=Value; with "quoted" or 'quoted' values that may hold `;`
    r"""\s*([A-Za-z][A-Za-z0-9 _.\-]*)=\s*("(?:[^"]|"")*"(?=\s*(?:;|$))|'(?:[^']|'')*'(?=\s*(?:;|$))|[^;]*)\s*;?"""
)
_TRIM = "\"'()[]{}<>`"
_BLANK = re.compile(r"\s")
_BLANK_OR_SEMICOLON = re.compile(r"[\s;]")
_TRAIL = ".,;:!?"


def find_in_value(value: str, targets: Targets, key: str = "", *, as_host: bool = False) -> list[Reference]:
    """Spans of `value` (an env value, a config value, a flag's value) that name a target as a host.

    `key` is the variable, config key or flag name the value was found under (empty: none): it decides
    whether a bare word is a host (`bare_value_is_host`); the structural forms (`scheme://`, `host:port`,
    `id@host:port`, key-value strings) count under any key but a credential's or an image's. `as_host`:
    the value is used as a host elsewhere (see `host_variables`), whatever its key says.
    """
    if not value or not targets or not targets.mentioned_in(value):
        return []
    out: list[Reference] = []
    _scan_value(value, 0, "host" if as_host else key, targets, out)
    return _finish(out)


_VAR_USE = re.compile(r"\$\(([A-Za-z_][\w.\-]*)\)|\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")


def host_variables(env: Mapping[str, str], args: Iterable[str] = ()) -> frozenset[str]:
    """The variables that env values or the command line use as a host, through Kubernetes' `$(VAR)` (or a
    shell's `${VAR}` / `$VAR`): `OTEL_EXPORTER_OTLP_ENDPOINT=http://$(OTEL_COLLECTOR_NAME):4317` makes
    `OTEL_COLLECTOR_NAME=otel-collector` a host whatever its name says. Read those values with
    `find_in_value(value, targets, name, as_host=True)`."""
    texts = [(k, v) for k, v in env.items() if isinstance(v, str) and "$" in v]
    argv = [a if isinstance(a, str) and "$" in a else "" for a in args]
    if not texts and not any(argv):
        return frozenset()
    labels: dict[str, str] = {}

    def placeholder(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        return labels.setdefault(name, f"devlane-var-{len(labels)}")

    texts = [(k, _VAR_USE.sub(placeholder, v)) for k, v in texts]
    argv = [_VAR_USE.sub(placeholder, a) for a in argv]
    if not labels:
        return frozenset()
    variables = Targets(Target(name, label, None) for name, label in labels.items())
    found = {r.target.key for k, v in texts for r in find_in_value(v, variables, k)}
    found.update(r.target.key for refs in find_in_args(argv, variables) for r in refs)
    return frozenset(found)


_MAX_NESTING = 32  # values inside values (brackets, quotes, `k=v`, `sh -c`) are read this deep
_nesting = threading.local()


def _bounded(scan: Callable[..., None]) -> Callable[..., None]:
    """Every way a value nests another (`[[...]]`, quotes in quotes, `a=b=c`, a connection string's values,
    `sh -c "sh -c ..."`) comes back through `_scan_value` or `_scan_shell`, so bounding their nesting
    bounds the recursion: nothing real nests `_MAX_NESTING` levels deep, and a crafted value must not
    exhaust the stack (what lies deeper is not read)."""

    @functools.wraps(scan)
    def bounded(*args: Any) -> None:
        depth = getattr(_nesting, "depth", 0)
        if depth >= _MAX_NESTING:
            return
        _nesting.depth = depth + 1
        try:
            scan(*args)
        finally:
            _nesting.depth = depth

    return bounded


@_bounded
def _scan_value(text: str, base: int, key: str, targets: Targets, out: list[Reference]) -> None:
    if "\n" in text:
        _scan_lines(text, base, key, targets, out, _MODE_VALUE)
        return
    stripped = text.strip()
    if not stripped:
        return
    if stripped[0] == "{" and stripped[-1] == "}" and '"' in stripped:
        _scan_json(text, base, targets, out)
        return
    if stripped[0] == "[" and stripped[-1] == "]":
        lead = len(text) - len(text.lstrip())
        _scan_config_value(stripped, base + lead, key, targets, out)
        return
    if ";" in text and "=" in text:
        pairs = _ado_pairs(text)
        if pairs is not None:  # a connection string: only its host keys hold hosts
            for k, v, at in pairs:
                if _key_class(k) == _HOST:
                    _scan_value(v, base + at, k, targets, out)
            return
    words = [(m.group(), base + m.start(), out, False) for m in _WORD.finditer(text)]
    if len(words) == 1:
        _scan_word(words[0][0], words[0][1], key, targets, out, split=False)
    elif words:
        _scan_argv(words, targets, key, pairs=False)


def _ado_pairs(text: str) -> list[tuple[str, str, int]] | None:
    """`Key=Value;Key=Value` pairs (value text and its offset, quotes removed), or None if `text` is not one."""
    pairs, pos, n = [], 0, len(text)
    while pos < n:
        m = _ADO_PAIR.match(text, pos)
        if not m or m.end() == pos:
            return None
        value, at = m.group(2).rstrip(), m.start(2)
        if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
            value, at = value[1:-1], at + 1
        pairs.append((m.group(1).rstrip(), value, at))
        pos = m.end()
    return pairs or None


def _scan_word(word: str, base: int, key: str, targets: Targets, out: list[Reference], split: bool = True) -> None:
    """One word (a comma-separated list of addresses at most) read under `key`; a quoted word, or one with
    blanks (`split`), is read as a value of its own."""
    if len(word) >= 2 and word[0] in "\"'" and word[-1] == word[0]:
        word, base, split = word[1:-1], base + 1, True
        if not word:
            return
    if split and _BLANK_OR_SEMICOLON.search(word):
        _scan_value(word, base, key, targets, out)
        return
    m = _ASSIGN.match(word)
    if m:
        _scan_value(word[m.end() :], base + m.end(), m.group(1), targets, out)
        return
    cls = _key_class(key)
    if cls == _VETO:
        return
    host_pos = cls == _HOST
    pos, cont = 0, False
    for item in word.split(","):
        cont = _scan_item(item, base + pos, key, cls, host_pos, cont, targets, out)
        pos += len(item) + 1


def _scan_item(
    item: str, base: int, key: str, cls: int, host_pos: bool, cont: bool, targets: Targets, out: list[Reference]
) -> bool:
    """One address (an element of a comma-separated list). Returns whether a URL authority is still open,
    so that the next items are more hosts of it (`mongodb://a:1,b:2/db`)."""
    lead = len(item) - len(item.lstrip(_TRIM))
    item = item.strip(_TRIM)
    base += lead
    if not item:
        return False
    m = _ASSIGN.match(item)
    if m:  # `password=x,ssl=true` options in a host list
        if _key_class(m.group(1)) != _VETO:
            _scan_value(item[m.end() :], base + m.end(), m.group(1), targets, out)
        return False
    m = _URL.match(item)
    if m:
        authority, at = m.group(2), m.start(2)
        userinfo_end = authority.rfind("@") + 1
        hp = _HOSTPORT.fullmatch(authority, userinfo_end)
        if hp:
            _emit(hp.group(1), base + at + userinfo_end, targets, out)
        elif m.group(1).lower() in _PATH_HOST_SCHEMES and item.startswith("/", m.end()):
            hp = _HOSTPORT.match(item, m.end() + 1)
            if hp and hp.end() in (len(item), item.find("/", hp.end())):
                _emit(hp.group(1), base + hp.start(1), targets, out)
        return m.end() == len(item)
    if cont:
        hp = _HOST_LIST_ITEM.fullmatch(item)
        target = targets.resolve(hp.group(1)) if hp else None
        if target is not None and (not hp.group(2) or _port_ok(hp.group(2), target)):
            _add(target, base, out, hp.group(1))
        return hp is not None and hp.group(3) is None
    m = _ID_AT.fullmatch(item)
    if m:
        target = targets.resolve(m.group(1))
        if target and _port_ok(m.group(2), target):
            _add(target, base + m.start(1), out, m.group(1))
        return False
    m = _ORACLE.match(item)
    if m:
        _emit(m.group(1), base + m.start(1), targets, out)
        return False
    if host_pos:
        m = _SQLSERVER_PREFIX.match(item)
        if m:
            item, base = item[m.end() :], base + m.end()
        item = item.split("\\", 1)[0]  # `Server=host\INSTANCE`
    item = item.rstrip(_TRAIL)
    m = _PLAIN.fullmatch(item)
    if not m:
        return False
    host, port, path = m.group(1), m.group(2), m.group(3)
    target = targets.resolve(host)
    if target is None:
        return False
    if port is not None:
        if _port_ok(port, target):
            _add(target, base, out, host)
        return False  # `orders:orders` is user:password, not svc:port
    if host_pos or (
        cls == _NEUTRAL and (_spelled_as_host(host, target) or (path is None and _names_service(key, host)))
    ):
        _add(target, base, out, host)
    return False


def _spelled_as_host(host: str, target: Target) -> bool:
    """`svc.ns.svc[.cluster.local]`, or `svc.ns` with the service's own namespace: spelled as nothing but a host
    (`orders.created`, `orders.Main`, `orders.wsgi` name a topic, a class, a module)."""
    labels = host.rstrip(".").split(".")
    return len(labels) > 2 or (len(labels) == 2 and labels[1] == target.namespace)


def _port_ok(port: str, target: Target) -> bool:
    if port.isdigit():
        return 0 < int(port) < 65536
    return port in target.ports and port != target.name


def _emit(host: str, start: int, targets: Targets, out: list[Reference]) -> None:
    target = targets.resolve(host)
    if target is not None:
        _add(target, start, out, host)


def _add(target: Target, start: int, out: list[Reference], host: str = "") -> None:
    """A reference to `target` at `start`; `host` as written there, so that its namespace label is known."""
    end = start + len(target.name)
    label = host.split(".")[1] if host.count(".") >= 1 and host.startswith(target.name + ".") else ""
    out.append(Reference(start, end, target, (end + 1, end + 1 + len(label)) if label else None))


def _finish(out: list[Reference]) -> list[Reference]:
    """Sorted by position, without duplicates or overlaps."""
    if len(out) < 2:
        return out
    done: list[Reference] = []
    for ref in sorted(out, key=lambda r: (r.start, r.end)):
        if not done or ref.start >= done[-1].end:
            done.append(ref)
    return done


# ---------------------------------------------------------------------------------------------
# Command lines

_FLAG_ASSIGN = re.compile(r"-{1,2}([A-Za-z0-9][\w.\-]*)=")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_PORT_WORD = re.compile(r"[0-9]{1,5}")
_HOST_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*")
_C_FLAG = re.compile(r"-[a-zA-Z]*c")  # sh -c, -ec, -xc
_SHELL_OPS = re.compile(r"&&|\|\||[;|\n`]|\$\(|^\s*(?:\S*/)?(?:ba|da|z|k|a)?sh\s+-[a-zA-Z]*c\s")
_SH = re.compile(
    r"""(?P<comment>\#[^\n]*)
      | (?P<redir>\d*(?:>>|>&|<&|&>|>\||<<<|<<-?|<>|[<>]))
      | (?P<op>\|\||&&|;;|[;&|()\n`])
      | (?P<word>(?:[^\s;&|()<>`'"\\]+|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+)
      | (?P<space>\s+)""",
    re.VERBOSE,
)
_SH_ASSIGN = re.compile(r"([A-Za-z_]\w*)=")
_SH_KEYWORDS = frozenset({
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "case", "esac", "!", "{", "}",
    "[[", "]]", "time", "exec", "nohup", "command", "builtin", "sudo", "env", "xargs",
})  # fmt: skip
_MESSAGES = frozenset({"echo", "printf", "logger", "print", ":", "log", "info", "warn", "warning", "error", "die"})
_DECLARE = frozenset({"export", "local", "declare", "readonly", "typeset", "set"})
_SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh", "ksh"})

_Word = tuple[str, int, list[Reference], bool]  # text, offset, where its references go, whether it is a script


def find_in_args(argv: list[str], targets: Targets) -> list[list[Reference]]:
    """References in each element of a container's `command` or `args`, spans relative to each element.

    Elements are read as a command line: `--flag=VALUE` and `--flag VALUE` / `-h VALUE` (the value is read
    under the flag's name), `HOST PORT` pairs, `KEY=VALUE`, and the structural forms of `find_in_value`
    anywhere. An element with spaces is a shell script when it comes first, follows `-c`, holds shell
    operators or starts with `sh -c`; otherwise it is one value (of the flag before it).
    """
    outs: list[list[Reference]] = [[] for _ in argv]
    if not targets or not any(isinstance(a, str) and targets.mentioned_in(a) for a in argv):
        return outs
    words: list[_Word] = []
    prev = ""
    for a, out in zip(argv, outs, strict=True):
        if not isinstance(a, str):
            prev = ""
            continue
        script = _BLANK.search(a) is not None and (
            not words or _C_FLAG.fullmatch(prev) is not None or _SHELL_OPS.search(a) is not None
        )
        if script and _ado_pairs(a) is not None:
            script = False
        words.append((a, 0, out, script))
        prev = a
    _scan_argv(words, targets, "", pairs=True)
    for i, out in enumerate(outs):
        outs[i] = _finish(out)
    return outs


def _scan_argv(words: list[_Word], targets: Targets, default_key: str, pairs: bool) -> None:
    """A command line: flags, their values, positional words and `HOST PORT` pairs."""
    flag: str | None = None
    n = len(words)
    for i, (w, b, out, script) in enumerate(words):
        key, flag = (default_key if flag is None else flag), None
        if script:
            _scan_shell(w, b, targets, out)
            continue
        if len(w) > 1 and w[0] == "-" and not _NUMBER.fullmatch(w):
            m = _FLAG_ASSIGN.match(w)
            if m:
                _scan_value(w[m.end() :], b + m.end(), m.group(1), targets, out)
                continue
            if w[1] == "h" and len(w) > 2 and _glued_host(w, b, targets, out):
                continue  # mysql -hmysql
            flag = w.lstrip("-")
            continue
        before = len(out)
        _scan_word(w, b, key, targets, out)
        if (
            pairs
            and len(out) == before
            and i + 1 < n
            and _key_class(key) in (_HOST, _NEUTRAL)
            and _PORT_WORD.fullmatch(words[i + 1][0])
            and 0 < int(words[i + 1][0]) < 65536
            and _HOST_WORD.fullmatch(w)
        ):
            target = targets.resolve(w)  # nc -z rabbitmq 5672
            if target and ("." not in w or _spelled_as_host(w, target)):
                _add(target, b, out, w)


def _glued_host(w: str, b: int, targets: Targets, out: list[Reference]) -> bool:
    host, at = w[2:], 2
    if len(host) >= 2 and host[0] in "\"'" and host[-1] == host[0]:
        host, at = host[1:-1], 3
    m = _HOSTPORT.fullmatch(host)
    target = targets.resolve(m.group(1)) if m else None
    if target is None:
        return False
    _add(target, b + at, out, m.group(1))
    return True


@_bounded
def _scan_shell(text: str, base: int, targets: Targets, out: list[Reference]) -> None:
    """A shell script: each simple command is a command line; `VAR=value` assignments are values of VAR."""
    cmd: list[tuple[str, int]] = []
    redirect = False
    for m in _SH.finditer(text):
        kind = m.lastgroup
        if kind == "word":
            if redirect:
                redirect = False
            else:
                cmd.append((m.group(), base + m.start()))
        elif kind == "redir":
            redirect = True
        elif kind == "op":
            _scan_command(cmd, targets, out)
            cmd = []
    _scan_command(cmd, targets, out)


def _scan_command(cmd: list[tuple[str, int]], targets: Targets, out: list[Reference]) -> None:
    i, n = 0, len(cmd)
    while i < n and cmd[i][0] in _SH_KEYWORDS:
        i += 1
    while i < n:
        m = _SH_ASSIGN.match(cmd[i][0])
        if not m:
            break
        w, b = cmd[i]
        _scan_value(_unquote(w[m.end() :]), b + m.end() + _quote_len(w[m.end() :]), m.group(1), targets, out)
        i += 1
    if i >= n:
        return
    name = cmd[i][0].rsplit("/", 1)[-1]
    args = cmd[i + 1 :]
    if name in _MESSAGES:
        return  # a message: words in it are not addresses
    if name in _DECLARE:
        for w, b in args:
            _scan_word(w, b, "", targets, out)
        return
    if name in _SHELLS:
        for j, (w, _) in enumerate(args[:-1]):
            if _C_FLAG.fullmatch(w):
                script, b = args[j + 1]
                _scan_shell(_unquote(script), b + _quote_len(script), targets, out)
                return
    _scan_argv([(w, b, out, False) for w, b in args], targets, "", pairs=True)


def _unquote(word: str) -> str:
    return word[1:-1] if len(word) >= 2 and word[0] in "\"'" and word[-1] == word[0] else word


def _quote_len(word: str) -> int:
    return 1 if len(word) >= 2 and word[0] in "\"'" and word[-1] == word[0] else 0


# ---------------------------------------------------------------------------------------------
# ConfigMap / Secret data: single values and mounted files

_MODE_VALUE, _MODE_YAML, _MODE_PROPS, _MODE_KV, _MODE_CONF, _MODE_TEXT = range(6)
_EXT_MODES = {
    ".yaml": _MODE_YAML, ".yml": _MODE_YAML, ".properties": _MODE_PROPS, ".env": _MODE_KV, ".ini": _MODE_KV,
    ".toml": _MODE_KV, ".conf": _MODE_CONF, ".cfg": _MODE_CONF, ".cnf": _MODE_CONF, ".config": _MODE_CONF,
    ".txt": _MODE_TEXT, ".md": _MODE_TEXT, ".html": _MODE_TEXT, ".htm": _MODE_TEXT, ".log": _MODE_TEXT,
    ".csv": _MODE_TEXT, ".sql": _MODE_TEXT, ".xml": _MODE_TEXT,
}  # fmt: skip
_JSON_EXTS = frozenset({".json"})
_SHELL_EXTS = frozenset({".sh", ".bash"})
_TEMPLATE_EXTS = (".template", ".tpl", ".tmpl", ".j2", ".in", ".sample", ".example")
_CONF_NAMES = frozenset({"caddyfile", "dockerfile", "containerfile", "nginx", "haproxy"})

_COMMENTS = ("#", ";", "//", "<!--")
_SECTION = re.compile(r"\[\[?\s*+([^\[\]]*[^\[\]\s])\s*\]\]?")  # greedy: a lazy name before `\s*` is quadratic
_KV_LINE = re.compile(
    r"""(?:export\s+)?(?P<key>"[^"\n]*"|'[^'\n]*'|[A-Za-z0-9_$@][\w.\-/$@]*)\s*(?::(?=\s|$)|=)[ \t]*(?P<val>.*)"""
)
_KV_PROPS = re.compile(r"""(?P<key>[A-Za-z0-9_$@][\w.\-/$@]*)\s*[:=][ \t]*(?P<val>.*)""")
_DIRECTIVE = re.compile(r"(?P<name>[A-Za-z_][\w.\-]*)\s+(?P<args>.*)")
_UPSTREAM = re.compile(r"^[ \t]*upstream\s+([A-Za-z0-9][\w.\-]*)\s*\{", re.MULTILINE)  # `^\s*` spans lines: quadratic
_BLOCK = frozenset({"|", ">", "|-", ">-", "|+", ">+"})
# Directives whose argument is a name, a path or an image, never an address (nginx, haproxy, Dockerfile).
_NAME_DIRECTIVES = frozenset({
    "upstream", "server_name", "location", "map", "backend", "frontend", "listen", "defaults", "global", "from",
    "userlist", "include", "root", "alias", "copy", "add", "workdir", "label", "user", "maintainer", "entrypoint",
    "run", "cmd", *_MESSAGES,
})  # fmt: skip
_FLOW_PAIR = re.compile(r"""["']?([\w.\-]+)["']?\s*:\s+(.+)""")
# JSON read as a lexer does, string by string: each quote starts one string, which runs to its closing quote, or to
# the end of the line when it has none (then it is no key). Possessive, and never started again inside a string: a
# pattern tried at every quote re-read the rest of an unclosed string once per quote in it (`a\"a\"...`: quadratic).
_JSON_TOKEN = re.compile(r'"((?:[^"\\\n]|\\.)*+)("?)')
_JSON_VALUE = re.compile(r'\s*:\s*(?:"((?:[^"\\\n]|\\.)*+)"|\[([^\[\]{}]*+)\])')


def find_in_data(key: str, value: str, targets: Targets) -> list[Reference]:
    """References in one ConfigMap (or Secret) entry: a single value, or the content of a mounted file.

    `key` is the entry's key: the variable name when the entry is read through `envFrom` or a key ref, the
    file name when it is mounted. A file (by its extension, or any multi-line value) is read line by line
    (YAML, JSON, INI/TOML, properties, .env, nginx-like `directive args;`, shell scripts, plain text), each
    value under its own key (`spring.redis.host`, `[redis] host`, `"Host"`).
    """
    if not value or not targets or not targets.mentioned_in(value):
        return []
    out: list[Reference] = []
    ext = _extension(key)
    if ext in _JSON_EXTS:
        _scan_json(value, 0, targets, out)
    elif ext in _SHELL_EXTS:
        _scan_shell(value, 0, targets, out)
    elif ext in _EXT_MODES:
        _scan_lines(value, 0, "", targets, out, _EXT_MODES[ext])
    elif "\n" in value.strip():
        stripped = value.strip()
        if stripped[0] in "{[" and stripped[-1] in "}]" and '"' in stripped:
            _scan_json(value, 0, targets, out)
        elif stripped.startswith("#!") and "sh" in stripped.split("\n", 1)[0]:
            _scan_shell(value, 0, targets, out)
        else:
            conf = key.rsplit("/", 1)[-1].lower() in _CONF_NAMES
            _scan_lines(value, 0, key, targets, out, _MODE_CONF if conf else _MODE_VALUE)
    else:
        _scan_value(value, 0, key, targets, out)
    return _finish(out)


def _extension(key: str) -> str:
    name = key.rsplit("/", 1)[-1].lower()
    for suffix in _TEMPLATE_EXTS:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def _scan_json(text: str, base: int, targets: Targets, out: list[Reference]) -> None:
    """`"key": "value"` and `"key": ["value", ...]` anywhere in JSON text, each value read under its key."""
    pos = 0
    while (m := _JSON_TOKEN.search(text, pos)) is not None:
        pos = m.end()
        value = _JSON_VALUE.match(text, pos) if m.group(2) else None
        if value is None:
            continue
        pos = value.end()
        if value.group(1) is not None:
            _scan_value(value.group(1), base + value.start(1), m.group(1), targets, out)
            continue
        for s in _JSON_TOKEN.finditer(value.group(2)):
            if s.group(2):
                _scan_value(s.group(1), base + value.start(2) + s.start(1), m.group(1), targets, out)


def _scan_lines(text: str, base: int, key: str, targets: Targets, out: list[Reference], mode: int) -> None:
    """A config file, line by line: `key: value` (YAML, with the keys of its parents), `key = value`,
    `key=value`, `[section]`, `directive args;` (nginx-like), and plain text."""
    upstreams = frozenset(_UPSTREAM.findall(text)) if "upstream" in text else frozenset()
    kv = _KV_PROPS if mode == _MODE_PROPS else _KV_LINE
    parents: list[tuple[int, str]] = []  # (indent, key) of the YAML mappings the line is in
    section = ""
    pos = 0
    for line in text.split("\n"):
        at, pos = base + pos, pos + len(line) + 1
        body = line.strip()
        if not body or body.startswith(_COMMENTS):
            continue
        indent = len(line) - len(line.lstrip())
        if body[0] == "[" and mode != _MODE_YAML:
            m = _SECTION.fullmatch(body)
            if m:
                section, parents = m.group(1), []
                continue
        while parents and parents[-1][0] >= indent:
            parents.pop()
        col, item = indent, False
        if body[0] == "-" and (len(body) == 1 or body[1] in " \t") and mode in (_MODE_YAML, _MODE_VALUE):
            rest = body[1:].lstrip()
            col, body, item = col + len(body) - len(rest), rest, True
            if not body:
                continue
        context = ".".join(k for k in (section, *(k for _, k in parents)) if k) or key
        m = kv.match(body)
        if m:
            k = _unquote(m.group("key"))
            val, vat = _strip_comment(m.group("val"), m.start("val"))
            full = f"{context}.{k}" if context and context != key else k
            if not val or val in _BLOCK:
                parents.append((col, k))
            else:
                _scan_config_value(val, at + col + vat, full, targets, out)
            continue
        if item:
            _scan_config_value(body, at + col, context, targets, out)
            continue
        if mode == _MODE_CONF or body.endswith((";", "{")):
            m = _DIRECTIVE.fullmatch(body)
            if m:
                _scan_directive(m, at + col, targets, out, upstreams)
                continue
        _scan_argv([(w.group(), at + col + w.start(), out, False) for w in _WORD.finditer(body)], targets, "", False)


def _strip_comment(val: str, at: int) -> tuple[str, int]:
    """The value without a trailing ` # comment` (outside quotes) and surrounding blanks."""
    if val[:1] in ("'", '"'):
        close = val.find(val[0], 1)
        if close > 0:
            return val[: close + 1], at
    cut = val.find(" #")
    if cut >= 0:
        val = val[:cut]
    return val.rstrip(), at


def _scan_config_value(val: str, at: int, key: str, targets: Targets, out: list[Reference]) -> None:
    """A value in a config file: a scalar, `[a, b]` (a flow sequence, a TOML array) or `{k: v, k2: v2}` (a flow
    mapping, each value read under its own key)."""
    if len(val) >= 2 and ((val[0], val[-1]) == ("[", "]") or ((val[0], val[-1]) == ("{", "}") and '"' not in val)):
        offset = 1
        for item in val[1:-1].split(","):
            stripped = item.strip()
            lead = item.find(stripped) if stripped else 0
            item_key = key
            if val[0] == "{":
                m = _FLOW_PAIR.fullmatch(stripped)
                if not m:
                    offset += len(item) + 1
                    continue
                item_key, stripped, lead = m.group(1), m.group(2), lead + m.start(2)
            q = _quote_len(stripped)
            if stripped:
                _scan_value(_unquote(stripped), at + offset + lead + q, item_key, targets, out)
            offset += len(item) + 1
        return
    q = _quote_len(val)
    _scan_value(_unquote(val), at + q, key, targets, out)


def _scan_directive(
    m: re.Match[str], at: int, targets: Targets, out: list[Reference], upstreams: frozenset[str]
) -> None:
    """`server backend:8080 weight=5;`, `proxy_pass http://backend;`, `replicaof redis-master 6379`."""
    name = m.group("name")
    if name.lower() in _NAME_DIRECTIVES:
        return
    args_at = at + m.start("args")
    args = m.group("args").rstrip(" \t;{")
    words = [(w.group(), args_at + w.start(), out, False) for w in _WORD.finditer(args)]
    positional = [w for w in words if not w[0].startswith("-") and "=" not in w[0]]
    before = len(out)
    _scan_argv(words, targets, name if len(positional) == 1 else "", pairs=True)
    if upstreams and name.endswith("_pass"):  # proxy_pass http://NAME names an upstream block, not a service
        text = m.string
        kept = [r for r in out[before:] if text[r.start - at : r.end - at] not in upstreams]
        del out[before:]
        out.extend(kept)


# ---------------------------------------------------------------------------------------------
# Rewriting


def apply_namespaces(text: str, refs: list[Reference], namespaces: Mapping[str, str]) -> str:
    """Replace the namespace label of every reference that names one (`svc.ns`, `svc.ns.svc.cluster.local`)
    by the new namespace of its target; short names are left alone (they resolve in the pod's namespace)."""
    parts: list[str] = []
    pos = 0
    for ref in sorted(refs, key=lambda r: r.start):
        if ref.namespace is None or ref.start < pos or ref.target.key not in namespaces:
            continue
        start, end = ref.namespace
        parts.append(text[pos:start])
        parts.append(namespaces[ref.target.key])
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def apply(text: str, refs: list[Reference], new_names: Mapping[str, str]) -> str:
    """Replace the service label of every reference by its new name, keeping the rest."""
    if not refs:
        return text
    parts: list[str] = []
    pos = 0
    for ref in sorted(refs, key=lambda r: r.start):
        if ref.start < pos:
            continue  # the same span found twice
        parts.append(text[pos : ref.start])
        parts.append(new_names[ref.target.key])
        pos = ref.end
    parts.append(text[pos:])
    return "".join(parts)
