"""`core.stores`: datastore and registry addresses found in values as real apps write them (the strings are from
../shared/realworld: ftgo, booksapp, jhipster-eureka, eShop, wordpress+Cloud SQL), whatever defines the host;
and what an image or a port says."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from renderer.core.stores import SCHEMES, find_addresses, image_kind, key_kind, port_kind

CASES = [
    # settings about a store or registry, not its address (JHipster's registry env)
    ("EUREKA_SERVER_ENABLE_SELF_PRESERVATION", "false", []), ("EUREKA_SERVER_PEER_NODE_CONNECT_TIMEOUT_MS", "1000", []),
    ("REDIS_HOST", "none", []), ("DB_SERVER_PORT", "orders", []),
    ("SPRING_DATASOURCE_URL", "jdbc:mysql://customers-db-mysql.ns.svc.cluster.local:3306/petclinic?useSSL=false",
     [("customers-db-mysql.ns.svc.cluster.local", "3306", "mysql")]),
    ("SPRING_DATASOURCE_URL", "jdbc:mysql://ftgo-mysql/eventuate", [("ftgo-mysql", None, "mysql")]),
    ("DATABASE_URL", "mysql2://booksapp:booksapp@mysql:3306/booksapp_production", [("mysql", "3306", "mysql")]),
    ("MONGO_URL", "mongodb+srv://u:p@a.example.com,b.example.com/db",
     [("a.example.com", None, "mongodb"), ("b.example.com", None, "mongodb")]),
    ("ConnectionString", "Server=sql-data;Database=CatalogDb;User Id=sa;Password=Pass@word",
     [("sql-data", None, "database")]),
    ("EUREKA_CLIENT_SERVICE_URL_DEFAULTZONE",
     "http://admin:${jhipster.registry.password}@jhipster-registry.jhipster.svc.cluster.local:8761/eureka",
     [("jhipster-registry.jhipster.svc.cluster.local", "8761", "eureka")]),
    ("EVENTUATELOCAL_KAFKA_BOOTSTRAP_SERVERS", "ftgo-kafka:9092,other:9092",
     [("ftgo-kafka", "9092", "kafka"), ("other", "9092", "kafka")]),
    ("EVENTUATELOCAL_ZOOKEEPER_CONNECTION_STRING", "ftgo-zookeeper:2181", [("ftgo-zookeeper", "2181", "zookeeper")]),
    ("REDIS_HOST", "cache", [("cache", None, "redis")]),
    ("REGISTRY_HOST", "teastore-registry", [("teastore-registry", None, "registry")]),
    ("WORDPRESS_DB_HOST", "127.0.0.1:3306", [("127.0.0.1", "3306", "mysql")]),
    ("X", "amqp://guest:guest@rabbitmq:5672/", [("rabbitmq", "5672", "rabbitmq")]),
    # not a store: a web backend, a version, a time, a self-address, a bare word under a key naming no store
    ("BACKEND", "http://backend:8080", []),
    ("VERSION", "1.2.3", []),
    ("TIME", "10:30", []),
    ("HOST_NAME", "teastore-auth", []),
    ("all__EventBusConnection", "rabbitmq", [("rabbitmq", None, "queue")]),  # eShop's event bus
    ("basket__ConnectionString", "basket-data", [("basket-data", None, "database")]),
    ("REDIS_PASSWORD", "secret", []),
]


@pytest.mark.parametrize("key,value,expected", CASES)
def test_addresses_as_real_apps_write_them(key, value, expected):
    found = find_addresses(value, key)
    assert [(a.host, a.port, a.kind) for a in found] == expected
    for a in found:
        assert value[a.start:a.end].lower() == a.host


@pytest.mark.parametrize("image,kind", [
    ("mysql:8", "mysql"), ("bitnami/postgresql:16", "postgres"), ("mongo", "mongodb"), ("redis:7-alpine", "redis"),
    ("confluentinc/cp-kafka:5.2.4", "kafka"), ("confluentinc/cp-zookeeper:5.2.4", "zookeeper"),
    ("jhipster/jhipster-registry:v7.3.0", "eureka"), ("descartesresearch/teastore-db", "database"),
    ("descartesresearch/teastore-registry", "registry"), ("msapatterns/mysql:latest", "mysql"),
    ("amazon/dynamodb-local", "dynamodb"), ("nginx", None), ("ghcr.io/acme/orders:pr-1", None), ("dbus", None),
    ("registry:2", None),  # a container image registry holds images, not addresses
    ("mreferre/yelb-db:0.6", "database"), ("acme/orders-mysql-db", "mysql"), ("bitnami/mariadb:11", "mysql"),
    ("mcr.microsoft.com/mssql/server:2019-latest", "sqlserver"), ("nacos/nacos-server:v2", "nacos"),
    ("springcloud/discovery-server", "eureka"), ("apachepulsar/pulsar:3", "queue"), ("robotshop/rs-mongodb", "mongodb"),
    # a tool around a store, a substring of another word, a tag: no store
    ("oliver006/redis_exporter:v1", None), ("provectuslabs/kafka-ui", None), ("confluentinc/cp-schema-registry", None),
    ("acme/predisposition:1", None), ("acme/orders:redis", None), ("bitnami/pgbouncer", None),
])
def test_images(image, kind):
    assert image_kind(image) == kind


def test_ports_and_keys():
    assert port_kind(3306) == "mysql" and port_kind("8761") == "eureka" and port_kind(8080) is None
    assert port_kind(9000) is None and port_kind(9000, beside=True) == "clickhouse"  # a web port, unless another sign
    assert key_kind("spring.redis.host") == "redis" and key_kind("SPRING_DATASOURCE_URL") == "database"
    assert key_kind("MONGO_DB_URL") == "mongodb" and key_kind("DB_HOST") == "database"
    assert key_kind("LOG_LEVEL") is None


# The grammar of a host: an RFC 1123 name (labels of letters, digits and inner `-`, any case) that is not digits and
# dots alone (RFC 3696: a top-level label is never all-numeric; `1.2.3` is a version), or an IPv4 address. Every
# such host in a store URL is an address, whatever word it spells: a Service may be named `on`, `no` or `null`
# (a flag word is no host only where it stands alone: `REDIS_HOST=none`).
label = st.from_regex(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", fullmatch=True)
name = st.lists(label, min_size=1, max_size=4).map(".".join).filter(lambda h: not h.replace(".", "").isdigit())
hosts = st.one_of(name, name, st.ip_addresses(v=4).map(str))
FLAG_WORDS = ("on", "no", "yes", "null", "off", "true", "false", "none", "nil", "enabled", "disabled", "ON", "Null")


@given(st.sampled_from(("", "jdbc:", "r2dbc:")), st.sampled_from(sorted(SCHEMES)), hosts,
       st.one_of(st.none(), st.integers(1, 65535)), st.booleans())
@example("", "redis", "on", None, False)  # found failing once each (issue 41): a flag word as a host
@example("", "redis", "no", 6379, True)
@example("", "redis", "null", None, True)
@example("", "redis", "yes", None, False)
@example("jdbc:", "mysql", "off.example.com", 3306, False)
@example("", "mongodb+srv", "a", None, False)  # one character, digits first, an IPv4 address, upper case
@example("r2dbc:", "postgres", "1db", None, False)
@example("", "amqp", "10.0.0.7", 5672, True)
@example("", "rediss", "Cache.Example.COM", 6380, True)
def test_every_host_of_a_store_url_is_found_where_it_stands(prefix, scheme, host, port, credentials):
    auth = "user:p%40ss@" if credentials else ""
    value = f"{prefix}{scheme}://{auth}{host}{f':{port}' if port else ''}/db?x=1"
    [found] = find_addresses(value)
    assert (found.host, found.port, found.kind) == (host.lower(), str(port) if port else None, SCHEMES[scheme])
    assert value[found.start:found.end] == host


@pytest.mark.parametrize("word", FLAG_WORDS)
def test_a_flag_word_is_a_host_in_a_url_or_before_a_port_and_no_host_alone(word):
    """`redis://on/db` names a host `on`; `REDIS_HOST=on` and `Server=none;` say there is none."""
    assert [(a.host, a.kind) for a in find_addresses(f"redis://{word}/0")] == [(word.lower(), "redis")]
    assert [(a.host, a.port) for a in find_addresses(f"{word}:6379")] == [(word.lower(), "6379")]
    assert [(a.host, a.port) for a in find_addresses(f"Server={word},1433;Database=x")] == [(word.lower(), "1433")]
    assert find_addresses(word, "REDIS_HOST") == ()
    assert find_addresses(f"Server={word};Database=x") == ()


@given(st.text(alphabet="abcdefghij0123456789 .-_/", max_size=40))
def test_text_without_a_store_sign_has_no_address(text):
    assert find_addresses(text, "MESSAGE") == ()
