"""What state looks like from outside: the signs that a host, an image or a port is a datastore or a service
registry, and every datastore or registry address in a value, whether or not the repository defines its host.

A lane's reach (which baseline state its dev pods can use) is computed from these signs and nothing else, so
`render`, `plan`, `lint` and `init` agree on what a store is. Two roles: a *store* holds state a dev pod could
write (a database, a cache, a queue); a *registry* hands out addresses (Consul, Eureka, ZooKeeper, etcd, Nacos),
so a dev pod that registers with a baseline registry is reached by baseline callers.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Role = Literal["store", "registry"]

# kind -> role; a kind is what the user would call the thing ("mysql", "kafka", "eureka")
ROLES: dict[str, Role] = {
    **dict.fromkeys(("mysql", "postgres", "mongodb", "redis", "memcached", "kafka", "rabbitmq", "cassandra",
                     "elasticsearch", "sqlserver", "oracle", "couchdb", "neo4j", "influxdb", "dynamodb", "nats",
                     "minio", "cockroachdb", "clickhouse", "database", "queue"), "store"),
    **dict.fromkeys(("consul", "eureka", "zookeeper", "etcd", "nacos", "registry"), "registry"),
}

# well-known ports: what a host on this port most likely is
PORTS: dict[int, str] = {
    3306: "mysql", 5432: "postgres", 27017: "mongodb", 6379: "redis", 11211: "memcached", 9092: "kafka",
    29092: "kafka", 5672: "rabbitmq", 5671: "rabbitmq", 9042: "cassandra", 9200: "elasticsearch",
    1433: "sqlserver", 1521: "oracle", 5984: "couchdb", 7687: "neo4j", 8086: "influxdb", 4222: "nats",
    26257: "cockroachdb", 9000: "clickhouse", 8000: "dynamodb",
    8500: "consul", 8761: "eureka", 2181: "zookeeper", 2379: "etcd", 8848: "nacos",
}
_AMBIGUOUS_PORTS = frozenset({9000, 8000})  # also every other web server's: a sign only beside another one

# URL schemes (the last part of `jdbc:mysql`, `r2dbc:postgresql`, `mongodb+srv`)
SCHEMES: dict[str, str] = {
    "mysql": "mysql", "mysql2": "mysql", "mariadb": "mysql", "postgres": "postgres", "postgresql": "postgres",
    "pgsql": "postgres", "mongodb": "mongodb", "mongodb+srv": "mongodb", "redis": "redis", "rediss": "redis",
    "memcached": "memcached", "kafka": "kafka", "amqp": "rabbitmq", "amqps": "rabbitmq", "cassandra": "cassandra",
    "sqlserver": "sqlserver", "mssql": "sqlserver", "oracle": "oracle", "couchdb": "couchdb", "bolt": "neo4j",
    "neo4j": "neo4j", "nats": "nats", "cockroachdb": "cockroachdb", "clickhouse": "clickhouse",
    "consul": "consul", "zk": "zookeeper", "zookeeper": "zookeeper", "etcd": "etcd", "nacos": "nacos",
}

# image names, read word by word in the last path segment without tag or digest (`bitnami/postgresql:16` ->
# postgresql): a word names the kind, never a substring of another word (`predisposition` is no redis)
_IMAGE_WORDS: dict[str, str] = {
    **dict.fromkeys(("mysql", "mariadb", "percona"), "mysql"),
    **dict.fromkeys(("postgres", "postgresql", "postgis", "timescaledb", "pgvector"), "postgres"),
    **dict.fromkeys(("mongo", "mongodb"), "mongodb"), **dict.fromkeys(("redis", "valkey", "keydb", "dragonfly",
                                                                      "dragonflydb", "redict"), "redis"),
    **dict.fromkeys(("memcached", "memcache"), "memcached"), **dict.fromkeys(("kafka", "redpanda"), "kafka"),
    "rabbitmq": "rabbitmq", **dict.fromkeys(("cassandra", "scylla", "scylladb"), "cassandra"),
    **dict.fromkeys(("elasticsearch", "opensearch"), "elasticsearch"), **dict.fromkeys(("mssql", "sqlserver"),
                                                                                      "sqlserver"),
    **dict.fromkeys(("oracledb", "oracle"), "oracle"), **dict.fromkeys(("couchdb", "couchbase"), "couchdb"),
    "neo4j": "neo4j", "influxdb": "influxdb", "dynamodb": "dynamodb", "nats": "nats", "minio": "minio",
    **dict.fromkeys(("cockroach", "cockroachdb"), "cockroachdb"), "clickhouse": "clickhouse",
    **dict.fromkeys(("activemq", "artemis", "pulsar"), "queue"),
    "consul": "consul", "eureka": "eureka", "zookeeper": "zookeeper", "etcd": "etcd", "nacos": "nacos",
    **dict.fromkeys(("db", "database"), "database"),  # orders-db, teastore-db, yelb-db
}
# an image that is a tool around a store, not the store (`redis_exporter`, `kafka-ui`, `pgbouncer`)
_TOOL_WORDS = frozenset({"exporter", "ui", "operator", "proxy", "admin", "console", "commander", "insight", "insights",
                         "dashboard", "client", "cli", "sidecar", "connect", "manager", "backup", "init", "migrate",
                         "migrations", "migration", "pgbouncer", "sentinel", "metrics", "bridge", "rest", "schema",
                         "adminer", "browser", "gui", "web"})
# a service registry (it hands out addresses): `jhipster-registry`, `service-registry`, `discovery-server`
_REGISTRY_WORDS = {"jhipster": "eureka", "service": "eureka", "discovery": "eureka"}
_IMAGE_WORD = re.compile(r"[a-z0-9]+")
# words of a key (env name, config key, flag) that name a store or a registry: `SPRING_DATASOURCE_URL`,
# `spring.redis.host`, `EUREKA_CLIENT_SERVICE_URL_DEFAULTZONE`, `bootstrap.servers`
_KEY_KINDS: dict[str, str] = {
    "MYSQL": "mysql", "MARIADB": "mysql", "POSTGRES": "postgres", "POSTGRESQL": "postgres", "PG": "postgres",
    "MONGO": "mongodb", "MONGODB": "mongodb", "REDIS": "redis", "MEMCACHE": "memcached", "MEMCACHED": "memcached",
    "KAFKA": "kafka", "BOOTSTRAP": "kafka", "RABBIT": "rabbitmq", "RABBITMQ": "rabbitmq", "AMQP": "rabbitmq",
    "CASSANDRA": "cassandra", "ELASTICSEARCH": "elasticsearch", "ELASTIC": "elasticsearch", "MSSQL": "sqlserver",
    "DATASOURCE": "database", "DB": "database", "DATABASE": "database", "JDBC": "database", "SQL": "database",
    "DYNAMODB": "dynamodb", "NATS": "nats", "CONNECTION": "database", "BUS": "queue",
    "CONSUL": "consul", "EUREKA": "eureka", "ZOOKEEPER": "zookeeper", "ZK": "zookeeper", "ETCD": "etcd",
    "NACOS": "nacos", "REGISTRY": "registry", "DISCOVERY": "registry",
}
_KEY_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _image_kind_uncached(image: str) -> str | None:
    """The store or registry an image runs, from the words of its name (`docker.io/library/mongo:7` -> mongodb,
    `mcr.microsoft.com/mssql/server` -> sqlserver); None for a tool around a store (`oliver006/redis_exporter`)."""
    path = image.split("@", 1)[0].lower().split("/")
    name = path[-1].split(":", 1)[0]
    words = _IMAGE_WORD.findall(name)
    if name == "server" and len(path) > 1:  # a vendor's `<store>/server`
        words = _IMAGE_WORD.findall(path[-2])
    if not words or any(w in _TOOL_WORDS for w in words):
        return None
    if words[-1] == "registry" and len(words) > 1:  # `registry:2` alone stores images, not addresses
        return next((_REGISTRY_WORDS[w] for w in words if w in _REGISTRY_WORDS), "registry")
    if words[-1] == "server" and len(words) > 1 and words[0] in _REGISTRY_WORDS:
        return _REGISTRY_WORDS[words[0]]  # discovery-server
    kinds = [_IMAGE_WORDS[w] for w in words if w in _IMAGE_WORDS]
    return next((k for k in kinds if k != "database"), kinds[0] if kinds else None)  # `mysql-db`: mysql


# cached without a decorator, since mutation testing (mutmut) leaves decorated functions unmutated
image_kind = lru_cache(maxsize=1 << 12)(_image_kind_uncached)


def port_kind(port: object, beside: bool = False) -> str | None:
    """The store or registry a well-known port says (`beside`: another sign agrees, so an ambiguous port counts)."""
    try:
        number = int(str(port))
    except ValueError:
        return None
    if number in _AMBIGUOUS_PORTS and not beside:
        return None
    return PORTS.get(number)


def _key_kind_uncached(key: str) -> str | None:
    """The store or registry a key names, its last word that names one winning (`SPRING_REDIS_HOST` -> redis), a
    word naming a kind over one that says only "a database" (`EventBusConnection` -> queue)."""
    words = [w.upper() for w in _KEY_WORD.findall(key.replace(".", "_").replace("-", "_"))]
    kinds = [_KEY_KINDS[w] for w in reversed(words) if w in _KEY_KINDS]
    return next((k for k in kinds if k != "database"), kinds[0] if kinds else None)  # `MONGO_DB_URL`: mongodb


# cached without a decorator, since mutation testing (mutmut) leaves decorated functions unmutated
key_kind = lru_cache(maxsize=1 << 12)(_key_kind_uncached)


def role_of(kind: str) -> Role:
    return ROLES.get(kind, "store")


@dataclass(frozen=True)
class Address:
    """A datastore or registry address found in a value: where in the value, the host, and what it is."""

    start: int  # span of the host inside the value
    end: int
    host: str
    port: str | None
    kind: str
    evidence: str  # what said so: "scheme jdbc:mysql", "port 3306", "key REDIS_HOST"

    @property
    def role(self) -> Role:
        return role_of(self.kind)


_AUTHORITY = re.compile(r"[^/?#\s;'\"<>]*+")
_URL_REST = re.compile(r"[^\s'\"<>]*+")
SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")  # of a URL scheme


@dataclass(frozen=True)
class _Url:
    start: int
    end: int
    scheme: str  # `jdbc:mysql`, `mongodb+srv`
    at: int  # where the authority starts
    authority: str  # `u:p@host:port,host2`
    rest: str  # path, query, fragment


def _urls(value: str) -> Iterator[_Url]:
    """Every `scheme://authority...` in `value`, left to right and not overlapping, as the regular expression
    `([A-Za-z][A-Za-z0-9+.-]*(?::[A-Za-z][A-Za-z0-9+.-]*)*)://([^/?#\\s;'"<>]*)([^\\s'"<>]*)` would find them, in
    linear time: each `://` is found with `find` and its scheme read backwards (a scheme holds no `/`, so no
    character is read twice), where the expression tries every position of a long word and backtracks."""
    lo = search = 0
    while (i := value.find("://", search)) >= 0:
        search = i + 1
        start = _scheme_start(value, i, lo)
        if start < 0:
            continue
        b = _AUTHORITY.match(value, i + 3).end()
        end = _URL_REST.match(value, b).end()
        yield _Url(start, end, value[start:i], i + 3, value[i + 3 : b], value[b:end])
        lo = search = end


def _scheme_start(value: str, i: int, lo: int) -> int:
    """Where the scheme that ends at `i` starts (-1: none): colon-separated parts, each from a letter on, the first
    one from its first letter (`1a://` is scheme `a`), none before `lo`."""
    start, j = -1, i
    while True:
        k = j
        while k > lo and value[k - 1] in SCHEME_CHARS:
            k -= 1
        letter = next((p for p in range(k, j) if value[p].isascii() and value[p].isalpha()), -1)
        if letter < 0:
            return start
        start = letter
        if letter != k or k - 1 <= lo or value[k - 1] != ":":
            return start
        j = k - 1


_HOSTPORT = re.compile(r"(?<![\w.\-@/:])([A-Za-z0-9][A-Za-z0-9.\-]*[A-Za-z0-9]|[A-Za-z0-9]):([0-9]{2,5})\b")
_ADO = re.compile(r"(?i)(?:^|;)\s*(?:server|host|data source|address|addr)\s*=\s*(?:tcp:)?([A-Za-z0-9][A-Za-z0-9.\-]*)"
                  r"(?:\s*[,:]\s*([0-9]{2,5}))?")
_BARE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9.\-]*)\s*$")
_HOST_WORDS = frozenset({"HOST", "HOSTS", "HOSTNAME", "ADDR", "ADDRESS", "SERVER", "SERVERS", "ENDPOINT",
                         "ENDPOINTS", "URL", "URI", "URLS", "DEFAULTZONE", "CONNECT", "NODES", "BROKERS",
                         "CONNECTION"})


# words of a key that make its value a setting, not a host
_SETTING_WORDS = frozenset({"ENABLE", "ENABLED", "DISABLE", "DISABLED", "INTERVAL", "TIMEOUT", "RETRIES", "RETRY",
                            "PORT", "USER", "USERNAME", "PASSWORD", "PASS", "NAME", "MS", "SECONDS", "SIZE", "COUNT",
                            "THRESHOLD", "MAX", "MIN", "PROTOCOL", "MODE", "LEVEL", "PATH", "TYPE", "ID", "KEY",
                            "SECRET", "TOKEN", "VERSION", "PRESERVATION", "TTL", "LIMIT"})
# a value that says "no host" (`REDIS_HOST=none`, `Server=false`) where a word stands alone; in a URL's authority or
# before a port it is a host like any other (a Service may be named `on` or `null`: both are DNS labels)
_NOT_HOSTS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "nil", "enabled", "disabled"})


def _host_ok(host: str, alone: bool) -> bool:
    """A host, not a version (`1.2.3`), a time (`10:30`) or a word that cannot be a DNS name, nor, `alone` (where
    no scheme or port says it is a host), a flag (`false`). Digits and dots alone are no host name (RFC 3696: a
    top-level label is never all-numeric) but for an IPv4 address."""
    if not host or host.startswith(("-", ".")) or host.endswith("-") or (alone and host.lower() in _NOT_HOSTS):
        return False
    return not host.replace(".", "").isdigit() or host.count(".") == 3  # an IPv4 address counts


def _find_addresses_uncached(value: str, key: str = "") -> tuple[Address, ...]:
    """Every datastore or registry address in `value` (found under `key`, which may name the kind):
    URLs (`jdbc:mysql://h:3306/db`, `mongodb+srv://u:p@a,b/db`, `amqp://h`, `http://h:8761/eureka`),
    ADO.NET pairs (`Server=h,1433;...`), `host:port` on a well-known port (lists too: Kafka bootstrap servers),
    and a bare host under a key that names a store (`REDIS_HOST=cache`). Each host once, first sign wins.
    Cached: a wide flow's dev pods hold the same values many times over."""
    out: dict[tuple[int, int], Address] = {}
    by_key = key_kind(key) if key else None

    def add(start: int, host: str, port: str | None, kind: str | None, evidence: str, alone: bool = False) -> None:
        if kind is None or not _host_ok(host, alone) or (start, start + len(host)) in out:
            return
        out[start, start + len(host)] = Address(start, start + len(host), host.lower(), port, kind, evidence)

    covered: list[tuple[int, int]] = []
    for url in _urls(value) if "://" in value else ():
        covered.append((url.start, url.end))
        scheme = url.scheme.lower()
        last = scheme.rsplit(":", 1)[-1]
        authority, base = url.authority, url.at
        if "@" in authority:
            at = authority.rindex("@") + 1
            authority, base = authority[at:], base + at
        offset = 0
        for part in authority.split(","):
            host, _, port = part.partition(":")
            start = base + offset
            if part.startswith("[") and "]" in part:  # an IPv6 literal: `[::1]:6379` is host `::1`, port 6379
                host, _, port = part[1:].partition("]")
                start, port = start + 1, port[1:] if port.startswith(":") else ""
            offset += len(part) + 1
            port = port or None
            kind = SCHEMES.get(last)
            evidence = f"scheme {scheme}"
            if kind is None and "/eureka" in url.rest.lower():
                kind, evidence = "eureka", "path /eureka"
            if kind is None and port:
                kind, evidence = port_kind(port, beside=by_key is not None), f"port {port}"
            if kind is None and last in ("http", "https", "tcp", "grpc") and by_key is not None and \
                    role_of(by_key) == "registry":
                kind, evidence = by_key, f"key {key}"
            add(start, host, port, kind, evidence)
    connections: list[tuple[int, int]] = []
    for m in _ADO.finditer(value) if "=" in value else ():
        if not _inside(covered, m.start(1)):
            kind = by_key or ("sqlserver" if m.group(2) == "1433" else port_kind(m.group(2) or "") or "database")
            add(m.start(1), m.group(1), m.group(2), kind, "connection string", alone=m.group(2) is None)
            connections.append(m.span())
    for m in _HOSTPORT.finditer(value) if ":" in value else ():
        if _inside(covered, m.start()) or _inside(connections, m.start()):
            continue
        kind = port_kind(m.group(2), beside=by_key is not None)
        add(m.start(1), m.group(1), m.group(2), kind, f"port {m.group(2)}")
    if not out and by_key is not None and _names_a_host(key):
        bare = _BARE.match(value)
        if bare:
            add(bare.start(1), bare.group(1), None, by_key, f"key {key}", alone=True)
    return tuple(out[k] for k in sorted(out))


# cached without a decorator, since mutation testing (mutmut) leaves decorated functions unmutated
find_addresses = lru_cache(maxsize=1 << 16)(_find_addresses_uncached)


def _inside(spans: list[tuple[int, int]], pos: int) -> bool:
    """Whether `pos` is inside one of `spans` (sorted, not overlapping): a bisection, not a walk, so that a value
    with many URLs and many `host:port` stays linear."""
    i = bisect.bisect_right(spans, (pos, _AFTER)) - 1
    return i >= 0 and spans[i][0] <= pos < spans[i][1]


_AFTER = 1 << 62  # sorts after every end: (pos, _AFTER) follows every span that starts at pos


def _names_a_host(key: str) -> bool:
    """A key whose value is a host (`REDIS_HOST`), not a setting about one (`EUREKA_SERVER_ENABLE_SELF_PRESERVATION`,
    `KAFKA_CONNECT_TIMEOUT_MS`, `DB_SERVER_PORT`)."""
    words = {w.upper() for w in _KEY_WORD.findall(key.replace(".", "_").replace("-", "_"))}
    return bool(words & _HOST_WORDS) and not words & _SETTING_WORDS
