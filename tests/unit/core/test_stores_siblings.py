"""Every sign `core.stores` reads, one case each (issue 41, point 3): each URL scheme, well-known port, image word,
tool word, key word, host word, setting word, ADO.NET keyword and URL form, so that dropping one item of any list
fails a test. The tables are written here, independently of the module's own (importing them would drop a case
with its item)."""

from __future__ import annotations

import re

import pytest

from renderer.core.stores import find_addresses, image_kind, key_kind, port_kind, role_of

REGISTRIES = {"consul", "eureka", "zookeeper", "etcd", "nacos", "registry"}


def found(value: str, key: str = "") -> list[tuple[str, str | None, str, str]]:
    """(host, port, kind, evidence) of every address, each checked to stand where it says in `value`."""
    out = find_addresses(value, key)
    for a in out:
        assert value[a.start : a.end].lower() == a.host
    return [(a.host, a.port, a.kind, a.evidence) for a in out]


# ---------------------------------------------------------------------------------------------------------------
# URL schemes: every scheme of a store or registry, with no port that would say the kind by itself

SCHEMES = [
    ("mysql", "mysql"), ("mysql2", "mysql"), ("mariadb", "mysql"), ("postgres", "postgres"),
    ("postgresql", "postgres"), ("pgsql", "postgres"), ("mongodb", "mongodb"), ("mongodb+srv", "mongodb"),
    ("redis", "redis"), ("rediss", "redis"), ("memcached", "memcached"), ("kafka", "kafka"), ("amqp", "rabbitmq"),
    ("amqps", "rabbitmq"), ("cassandra", "cassandra"), ("sqlserver", "sqlserver"), ("mssql", "sqlserver"),
    ("oracle", "oracle"), ("couchdb", "couchdb"), ("bolt", "neo4j"), ("neo4j", "neo4j"), ("nats", "nats"),
    ("cockroachdb", "cockroachdb"), ("clickhouse", "clickhouse"), ("consul", "consul"), ("zk", "zookeeper"),
    ("zookeeper", "zookeeper"), ("etcd", "etcd"), ("nacos", "nacos"),
]  # fmt: skip


@pytest.mark.parametrize(("scheme", "kind"), SCHEMES)
def test_each_store_scheme_names_its_kind(scheme, kind):
    assert found(f"{scheme}://u:pw@state-7:1/x") == [("state-7", "1", kind, f"scheme {scheme}")]
    assert found(f"jdbc:{scheme}://state-7/x") == [("state-7", None, kind, f"scheme jdbc:{scheme}")]
    assert found(f"{scheme.upper()}://a.example.com,b.example.com:2/x") == [
        ("a.example.com", None, kind, f"scheme {scheme}"),
        ("b.example.com", "2", kind, f"scheme {scheme}"),
    ]
    role = "registry" if kind in REGISTRIES else "store"
    assert [a.role for a in find_addresses(f"{scheme}://state-7/x")] == [role]


@pytest.mark.parametrize("scheme", ["http", "https", "ftp", "ws", "file", "s3", "git"])
def test_a_web_scheme_alone_names_no_store(scheme):
    assert found(f"{scheme}://state-7:1/x") == []


# ---------------------------------------------------------------------------------------------------------------
# Well-known ports, in a URL of no store scheme and as `host:port`

PORTS = [
    (3306, "mysql"), (5432, "postgres"), (27017, "mongodb"), (6379, "redis"), (11211, "memcached"), (9092, "kafka"),
    (29092, "kafka"), (5672, "rabbitmq"), (5671, "rabbitmq"), (9042, "cassandra"), (9200, "elasticsearch"),
    (1433, "sqlserver"), (1521, "oracle"), (5984, "couchdb"), (7687, "neo4j"), (8086, "influxdb"), (4222, "nats"),
    (26257, "cockroachdb"), (8500, "consul"), (8761, "eureka"), (2181, "zookeeper"), (2379, "etcd"), (8848, "nacos"),
]  # fmt: skip
AMBIGUOUS = [(9000, "clickhouse"), (8000, "dynamodb")]  # every other web server's too


@pytest.mark.parametrize(("port", "kind"), PORTS)
def test_each_well_known_port_names_its_kind(port, kind):
    assert port_kind(port) == kind and port_kind(str(port)) == kind
    assert found(f"state-7:{port}") == [("state-7", str(port), kind, f"port {port}")]
    assert found(f"http://state-7:{port}/x") == [("state-7", str(port), kind, f"port {port}")]
    assert found(f"a:1,state-7:{port} b") == [("state-7", str(port), kind, f"port {port}")]  # in a list


@pytest.mark.parametrize(("port", "kind"), AMBIGUOUS)
def test_an_ambiguous_port_counts_only_beside_another_sign(port, kind):
    assert port_kind(port) is None and port_kind(port, beside=True) == kind
    assert found(f"state-7:{port}") == [] and found(f"http://state-7:{port}/") == []
    assert found(f"state-7:{port}", "DB_HOST") == [("state-7", str(port), kind, f"port {port}")]
    assert found(f"http://state-7:{port}/", "DB_URL") == [("state-7", str(port), kind, f"port {port}")]


@pytest.mark.parametrize("port", [80, 8080, 443, "http", "", "33o6"])
def test_other_ports_name_nothing(port):
    assert port_kind(port) is None and port_kind(port, beside=True) is None


# ---------------------------------------------------------------------------------------------------------------
# Roles: a registry hands out addresses, everything else holds state

KINDS = [
    ("mysql", "store"), ("postgres", "store"), ("mongodb", "store"), ("redis", "store"), ("memcached", "store"),
    ("kafka", "store"), ("rabbitmq", "store"), ("cassandra", "store"), ("elasticsearch", "store"),
    ("sqlserver", "store"), ("oracle", "store"), ("couchdb", "store"), ("neo4j", "store"), ("influxdb", "store"),
    ("dynamodb", "store"), ("nats", "store"), ("minio", "store"), ("cockroachdb", "store"), ("clickhouse", "store"),
    ("database", "store"), ("queue", "store"), ("consul", "registry"), ("eureka", "registry"),
    ("zookeeper", "registry"), ("etcd", "registry"), ("nacos", "registry"), ("registry", "registry"),
    ("volume", "store"),  # a kind no table names: state, to be safe
]  # fmt: skip


@pytest.mark.parametrize(("kind", "role"), KINDS)
def test_each_kind_has_its_role(kind, role):
    assert role_of(kind) == role


# ---------------------------------------------------------------------------------------------------------------
# Images: each word of a store's or registry's image; each word of a tool around one

IMAGE_WORDS = [
    ("mysql", "mysql"), ("mariadb", "mysql"), ("percona", "mysql"), ("postgres", "postgres"),
    ("postgresql", "postgres"), ("postgis", "postgres"), ("timescaledb", "postgres"), ("pgvector", "postgres"),
    ("mongo", "mongodb"), ("mongodb", "mongodb"), ("redis", "redis"), ("valkey", "redis"), ("keydb", "redis"),
    ("dragonfly", "redis"), ("dragonflydb", "redis"), ("redict", "redis"), ("memcached", "memcached"),
    ("memcache", "memcached"), ("kafka", "kafka"), ("redpanda", "kafka"), ("rabbitmq", "rabbitmq"),
    ("cassandra", "cassandra"), ("scylla", "cassandra"), ("scylladb", "cassandra"), ("elasticsearch", "elasticsearch"),
    ("opensearch", "elasticsearch"), ("mssql", "sqlserver"), ("sqlserver", "sqlserver"), ("oracledb", "oracle"),
    ("oracle", "oracle"), ("couchdb", "couchdb"), ("couchbase", "couchdb"), ("neo4j", "neo4j"),
    ("influxdb", "influxdb"), ("dynamodb", "dynamodb"), ("nats", "nats"), ("minio", "minio"),
    ("cockroach", "cockroachdb"), ("cockroachdb", "cockroachdb"), ("clickhouse", "clickhouse"),
    ("activemq", "queue"), ("artemis", "queue"), ("pulsar", "queue"), ("consul", "consul"), ("eureka", "eureka"),
    ("zookeeper", "zookeeper"), ("etcd", "etcd"), ("nacos", "nacos"), ("db", "database"), ("database", "database"),
]  # fmt: skip
TOOL_WORDS = ["exporter", "ui", "operator", "proxy", "admin", "console", "commander", "insight", "insights",
              "dashboard", "client", "cli", "sidecar", "connect", "manager", "backup", "init", "migrate", "migrations",
              "migration", "pgbouncer", "sentinel", "metrics", "bridge", "rest", "schema", "adminer", "browser",
              "gui", "web"]  # fmt: skip


@pytest.mark.parametrize(("word", "kind"), IMAGE_WORDS)
def test_each_image_word_names_its_kind(word, kind):
    assert image_kind(word) == kind
    assert image_kind(f"registry.example.com:5000/acme/{word}:1.2@sha256:{'a' * 64}") == kind
    assert image_kind(f"acme/orders-{word}") == kind  # a word of the name, wherever it stands
    assert image_kind(f"acme/{word}x") is None  # never part of another word


@pytest.mark.parametrize("tool", TOOL_WORDS)
def test_each_tool_word_makes_an_image_no_store(tool):
    assert image_kind(f"acme/mysql-{tool}:1") is None
    assert image_kind(f"acme/{tool}_redis") is None


@pytest.mark.parametrize(("image", "kind"), [
    ("acme/jhipster-registry", "eureka"), ("acme/service-registry", "eureka"), ("acme/discovery-registry", "eureka"),
    ("acme/orders-registry", "registry"), ("registry", None), ("registry:2", None),
    ("acme/discovery-server", "eureka"), ("acme/jhipster-server", "eureka"), ("acme/service-server", "eureka"),
    ("acme/orders-server", None), ("server", None), ("acme/server", None), ("postgres/server:1", "postgres"),
    ("redis/server", "redis"), ("acme/mysql-db", "mysql"), ("acme/db-mysql", "mysql"), ("", None),
])  # fmt: skip
def test_registries_vendor_servers_and_database_words(image, kind):
    assert image_kind(image) == kind


@pytest.mark.parametrize("image", [
    "redis/server@sha256:abc",  # a digest off a vendor's `<store>/server`
    "redis/server@sha256:a@b",  # the name ends at the first `@`, not the last
    "redis/server:7:1",  # and at the first `:` of its last segment
    "acme/redis@sha256:a/b@c",  # a `/` past the first `@` starts no segment of the name
])  # fmt: skip
def test_the_name_ends_at_the_first_at_and_the_first_colon(image):
    assert image_kind(image) == "redis"


# ---------------------------------------------------------------------------------------------------------------
# Keys: each word that names a kind; each word that makes a value a host; each that makes it a setting

KEY_WORDS = [
    ("MYSQL", "mysql"), ("MARIADB", "mysql"), ("POSTGRES", "postgres"), ("POSTGRESQL", "postgres"), ("PG", "postgres"),
    ("MONGO", "mongodb"), ("MONGODB", "mongodb"), ("REDIS", "redis"), ("MEMCACHE", "memcached"),
    ("MEMCACHED", "memcached"), ("KAFKA", "kafka"), ("BOOTSTRAP", "kafka"), ("RABBIT", "rabbitmq"),
    ("RABBITMQ", "rabbitmq"), ("AMQP", "rabbitmq"), ("CASSANDRA", "cassandra"), ("ELASTICSEARCH", "elasticsearch"),
    ("ELASTIC", "elasticsearch"), ("MSSQL", "sqlserver"), ("DATASOURCE", "database"), ("DB", "database"),
    ("DATABASE", "database"), ("JDBC", "database"), ("SQL", "database"), ("DYNAMODB", "dynamodb"), ("NATS", "nats"),
    ("CONNECTION", "database"), ("BUS", "queue"), ("CONSUL", "consul"), ("EUREKA", "eureka"),
    ("ZOOKEEPER", "zookeeper"), ("ZK", "zookeeper"), ("ETCD", "etcd"), ("NACOS", "nacos"), ("REGISTRY", "registry"),
    ("DISCOVERY", "registry"),
]  # fmt: skip
HOST_WORDS = ["HOST", "HOSTS", "HOSTNAME", "ADDR", "ADDRESS", "SERVER", "SERVERS", "ENDPOINT", "ENDPOINTS", "URL",
              "URI", "URLS", "DEFAULTZONE", "CONNECT", "NODES", "BROKERS", "CONNECTION"]  # fmt: skip
SETTING_WORDS = ["ENABLE", "ENABLED", "DISABLE", "DISABLED", "INTERVAL", "TIMEOUT", "RETRIES", "RETRY", "PORT",
                 "USER", "USERNAME", "PASSWORD", "PASS", "NAME", "MS", "SECONDS", "SIZE", "COUNT", "THRESHOLD", "MAX",
                 "MIN", "PROTOCOL", "MODE", "LEVEL", "PATH", "TYPE", "ID", "KEY", "SECRET", "TOKEN", "VERSION",
                 "PRESERVATION", "TTL", "LIMIT"]  # fmt: skip


@pytest.mark.parametrize(("word", "kind"), KEY_WORDS)
def test_each_key_word_names_its_kind(word, kind):
    assert key_kind(f"APP_{word}") == kind
    assert key_kind(f"app.{word.lower()}.x") == kind and key_kind(f"my-{word.lower()}") == kind
    assert key_kind(f"app{word.capitalize()}Thing") == kind  # camelCase: a word of its own
    assert found("state-7", f"APP_{word}_HOST") == [("state-7", None, kind, f"key APP_{word}_HOST")]


def test_the_last_kind_word_wins_and_a_kind_over_a_database():
    assert key_kind("MYSQL_REDIS_HOST") == "redis" and key_kind("REDIS_MYSQL_HOST") == "mysql"
    assert key_kind("REDIS_DB") == "redis" and key_kind("DB_REDIS") == "redis" and key_kind("DB_JDBC") == "database"
    assert key_kind("APP_HOST") is None and key_kind("") is None


@pytest.mark.parametrize("key", ["XX.XXREDIS", "XX-XXREDIS", "XX_XXREDIS"])
def test_each_dot_and_dash_parts_words_so_a_word_glued_to_a_kind_word_is_none(key):
    """`XX.XXREDIS` is the words XX and XXREDIS: no redis."""
    assert key_kind(key) is None


@pytest.mark.parametrize("word", HOST_WORDS)
def test_each_host_word_makes_a_bare_value_a_host(word):
    assert found("state-7", f"REDIS_{word}") == [("state-7", None, "redis", f"key REDIS_{word}")]
    assert found("  state-7  ", f"spring.redis.{word.lower()}") == [
        ("state-7", None, "redis", f"key spring.redis.{word.lower()}")
    ]


def test_a_key_without_a_host_word_makes_no_bare_host():
    assert found("state-7", "REDIS_THING") == [] and found("state-7", "REDIS") == []
    assert found("state-7", "APP_HOST") == []  # a host, of no store
    assert found("state-7 other", "REDIS_HOST") == []  # not one bare word


@pytest.mark.parametrize("word", SETTING_WORDS)
def test_each_setting_word_makes_a_value_a_setting(word):
    assert found("state-7", f"REDIS_HOST_{word}") == []
    assert found("state-7", f"EUREKA_{word}_URL") == []


# ---------------------------------------------------------------------------------------------------------------
# URLs of no store scheme: a path to Eureka, a registry's key


@pytest.mark.parametrize("scheme", ["http", "https", "tcp", "grpc", "ftp"])
def test_a_eureka_path_names_eureka_on_any_port(scheme):
    for port in ("8761", "8080", "80", ""):  # on Eureka's own port too, the path says it first
        value = f"{scheme}://admin:pw@disco-1{':' + port if port else ''}/eureka/apps"
        assert found(value) == [("disco-1", port or None, "eureka", "path /eureka")]
    assert found(f"{scheme}://disco-1:8080/EUREKA/") == [("disco-1", "8080", "eureka", "path /eureka")]
    assert found(f"{scheme}://disco-1:8080/apps") == []


REGISTRY_KEYS = [("CONSUL_URL", "consul"), ("EUREKA_CLIENT_SERVICEURL_DEFAULTZONE", "eureka"),
                 ("ZOOKEEPER_CONNECT", "zookeeper"), ("ZK_HOSTS", "zookeeper"), ("ETCD_ENDPOINTS", "etcd"),
                 ("NACOS_SERVER_ADDR", "nacos"), ("REGISTRY_URL", "registry"), ("DISCOVERY_URI", "registry"),
                 ("spring.cloud.consul.host", "consul")]  # fmt: skip


@pytest.mark.parametrize("scheme", ["http", "https", "tcp", "grpc"])
@pytest.mark.parametrize(("key", "kind"), REGISTRY_KEYS)
def test_a_registry_url_under_a_registry_key_is_the_registry(scheme, key, kind):
    value = f"{scheme}://reg-1:8080/v1"
    assert found(value, key) == [("reg-1", "8080", kind, f"key {key}")]
    assert found(f"{scheme}://reg-1/v1", key) == [("reg-1", None, kind, f"key {key}")]
    assert found(value, "BACKEND_URL") == [] and found(value) == []  # no registry's key
    assert found(value, "REDIS_URL") == []  # a store's key does not make a web URL its address


@pytest.mark.parametrize("scheme", ["ftp", "ws", "udp", "s3"])
def test_a_registry_key_takes_only_the_schemes_a_registry_speaks(scheme):
    assert found(f"{scheme}://reg-1:8080/v1", "CONSUL_URL") == []


# ---------------------------------------------------------------------------------------------------------------
# ADO.NET and ODBC connection strings: each keyword, in any position, with or without a port

ADO_KEYWORDS = ["Server", "server", "SERVER", "Host", "Data Source", "data source", "Address", "Addr"]


@pytest.mark.parametrize("keyword", ADO_KEYWORDS)
def test_each_connection_string_keyword_names_the_host(keyword):
    first = f"{keyword}=sql-data;Database=app;User Id=sa"
    assert found(first) == [("sql-data", None, "database", "connection string")]
    after = f"Database=app; {keyword} = sql-data ;User Id=sa"  # after the first pair, blanks around
    assert found(after) == [("sql-data", None, "database", "connection string")]
    assert found(f"Database=app;{keyword}=tcp:sql-data,1433") == [
        ("sql-data", "1433", "sqlserver", "connection string")
    ]
    assert found(f"Database=app;{keyword}=sql-data:5432") == [("sql-data", "5432", "postgres", "connection string")]
    assert found(f"Database=app;{keyword}=sql-data , 6379") == [("sql-data", "6379", "redis", "connection string")]
    assert found(f"Database=app;{keyword}=sql-data", "REDIS_CONNECTION") == [
        ("sql-data", None, "redis", "connection string")
    ]  # the key's kind first


def test_a_keyword_inside_another_word_or_value_is_no_connection_string():
    assert found("Database=app;MyServer=sql-data") == [] and found("Name=Server=sql-data") == []


# ---------------------------------------------------------------------------------------------------------------
# What is no host: each shape the scanner refuses, and the shapes it keeps


@pytest.mark.parametrize(
    "value",
    [
        "redis://-cache/0",
        "redis://cache-/0",
        "redis://.cache/0",
        "redis://1.2.3/0",
        "redis://12/0",
        "redis://1.2.3.4.5/0",
        "redis:///0",
        "1.2:6379",
        "10:30",
        "user@cache:6379",
        ".cache:6379",
        "-cache:6379",
        "/cache:6379",
        "a:cache:6379",
        "redis://-cache]/0",  # a `]` without a leading `[` makes no IPv6 literal: the `-` stays
    ],
)
def test_shapes_that_are_no_host(value):
    assert found(value) == []


@pytest.mark.parametrize(
    ("value", "host"),
    [
        ("redis://10.0.0.7/0", "10.0.0.7"),
        ("redis://a/0", "a"),
        ("redis://1a/0", "1a"),
        ("10.0.0.7:6379", "10.0.0.7"),
        ("c:6379", "c"),
        ("(cache:6379)", "cache"),
        ("=cache:6379", "cache"),
        ("redis://u:p@[fd00::1]/0", "fd00::1"),
        ("redis://[::1]:6379/0", "::1"),
    ],
)
def test_shapes_that_are_hosts(value, host):
    assert [a.host for a in find_addresses(value)] == [host]
    [a] = find_addresses(value)
    assert value[a.start : a.end].lower() == host


def test_an_ipv6_literal_is_one_host_with_its_port():
    assert found("redis://[fd00::7]:6380,[::1],cache:1/0") == [
        ("fd00::7", "6380", "redis", "scheme redis"),
        ("::1", None, "redis", "scheme redis"),
        ("cache", "1", "redis", "scheme redis"),
    ]


@pytest.mark.parametrize("value", ["redis://[::1]]/0", "redis://[::1]6379/0"])
def test_an_ipv6_literal_ends_at_its_first_bracket_and_only_a_colon_brings_a_port(value):
    assert found(value) == [("::1", None, "redis", "scheme redis")]


def test_each_host_once_the_first_sign_winning():
    """A URL's host is not found again as `host:port`; a connection string's neither; a bare host only when the
    value holds no other address."""
    assert found("redis://cache:6379/0") == [("cache", "6379", "redis", "scheme redis")]
    assert found("Server=cache:6379;x=y") == [("cache", "6379", "redis", "connection string")]
    assert found("cache:6379", "REDIS_HOST") == [("cache", "6379", "redis", "port 6379")]
    assert found("redis://a:1/0 b:3306") == [("a", "1", "redis", "scheme redis"), ("b", "3306", "mysql", "port 3306")]


@pytest.mark.parametrize(("first", "address"), [
    ("redis://cache-7/0?fallback=other:6379", ("cache-7", None, "redis", "scheme redis")),
    ("Server=cache-7:6379;", ("cache-7", "6379", "redis", "connection string")),
])  # fmt: skip
def test_a_host_port_after_one_a_url_or_connection_string_holds_is_still_found(first, address):
    """The scan skips the `host:port` inside the first and goes on to the next."""
    assert found(f"{first} more:3306") == [address, ("more", "3306", "mysql", "port 3306")]


@pytest.mark.parametrize("end", ["/", "?", "#", " ", "\t", ";", "'", '"', "<", ">"])
def test_each_end_of_a_urls_authority(end):
    assert found(f"redis://u:pw@cache-7:1{end}x") == [("cache-7", "1", "redis", "scheme redis")]
    assert found(f"redis://cache-7{end}x") == [("cache-7", None, "redis", "scheme redis")]


@pytest.mark.parametrize("end", [" ", "\n", "'", '"', "<", ">"])
def test_a_eureka_path_past_the_end_of_a_url_is_not_its_own(end):
    assert found(f"http://disco-1:8080/x{end}/eureka") == []


@pytest.mark.parametrize("char", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
def test_a_scheme_is_read_back_to_its_first_character(char):
    """`x.redis://` is scheme `x.redis`, which no store has, not `redis`."""
    assert found(f"a{char}redis://cache-7/0") == []
    assert found(f"jdbc:a{char}redis://cache-7/0") == []
    assert found("1redis://cache-7/0") == [("cache-7", None, "redis", "scheme redis")]  # from its first letter


@pytest.mark.parametrize(
    ("value", "host"),
    [
        ("CACHE-7.Example.COM:6379", "cache-7.example.com"),
        ("C:6379", "c"),
        ("cache-7.EXAMPLE.com:6379", "cache-7.example.com"),
        ("9cache:6379", "9cache"),
        ("cache9:6379", "cache9"),
    ],
)
def test_a_host_before_a_port_in_any_case(value, host):
    assert found(value) == [(host, "6379", "redis", "port 6379")]


@pytest.mark.parametrize("host", ["SQL-Data", "10.0.0.5", "2db", "db-2.example.com", "DB.EXAMPLE.COM"])
def test_a_connection_strings_host_in_any_case_and_digits(host):
    assert found(f"Database=app;Server={host};User Id=sa") == [(host.lower(), None, "database", "connection string")]
    assert found(f"Server=tcp:{host},1433") == [(host.lower(), "1433", "sqlserver", "connection string")]


@pytest.mark.parametrize("host", ["CACHE", "10.0.0.9", "2cache", "cache-2.example.com", "Cache.Example.COM"])
def test_a_bare_host_in_any_case_and_digits(host):
    assert found(f" {host} ", "REDIS_HOST") == [(host.lower(), None, "redis", "key REDIS_HOST")]


def test_a_double_slash_without_a_scheme_is_no_url():
    """`://cache:6379` has no scheme: no URL, and no `host:port` either (a `/` stands before it)."""
    assert found("://cache-7:6379") == [] and found("1://cache-7:6379") == []
    assert found("a ://b -://c redis://cache-7/0") == [("cache-7", None, "redis", "scheme redis")]


def test_a_host_port_in_a_urls_query_is_the_urls_not_another_address():
    assert found("redis://cache-7/0?fallback=other:6379,more:3306") == [("cache-7", None, "redis", "scheme redis")]
    assert found("x redis://cache-7/0 other:6379") == [
        ("cache-7", None, "redis", "scheme redis"),
        ("other", "6379", "redis", "port 6379"),
    ]


# ---------------------------------------------------------------------------------------------------------------
# URLs found as the expression `core.stores` documents finds them (its scanner is written without it, for speed)

URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*(?::[A-Za-z][A-Za-z0-9+.-]*)*)://([^/?#\s;'\"<>]*)([^\s'\"<>]*)")
CACHE = ("cache-7", None, "redis", "scheme redis")


@pytest.mark.parametrize(("value", "addresses"), [
    ("redis://a-1/0 mysql://b-2/0", [("a-1", None, "redis", "scheme redis"), ("b-2", None, "mysql", "scheme mysql")]),
    ("://a-1 redis://cache-7/0", [CACHE]),  # a `://` at the very start has no scheme: the search goes on
    ("jdbc:1redis://cache-7/0", [CACHE]),  # `1redis` is no part of `jdbc:`'s scheme: the scheme is `redis`
    ("x:redis://cache-7/0", [("cache-7", None, "redis", "scheme x:redis")]),  # a first part of one letter
    ("1a:redis://cache-7/0", [("cache-7", None, "redis", "scheme a:redis")]),  # a first part from its first letter
    ("x/:redis://cache-7/0", [CACHE]),  # no part across a `/`
    ("Server=redis://cache-7:6379/0", [("cache-7", "6379", "redis", "scheme redis")]),  # not host `redis`
    ("jdbc:p6spy:mysql://orders-db/o", [("orders-db", None, "mysql", "scheme jdbc:p6spy:mysql")]),  # its last part
    ("redis://u:p@ss@cache-7/0", [CACHE]),  # the host follows the last `@` (a password may hold one)
])  # fmt: skip
def test_each_url_and_its_scheme_as_the_expression_finds_them(value, addresses):
    assert found(value) == addresses
    assert [evidence for *_, evidence in addresses] == [f"scheme {m.group(1)}" for m in URL.finditer(value)]
