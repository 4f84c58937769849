"""The one definition of "a reference to a service" (`renderer.core.references`), driven by two corpora taken
from the shapes real apps use: every true positive is rewritten exactly on the service's label (the expected
text after `apply`), and every look-alike (user names, passwords, database names, paths, image names,
drivers, topics, log messages...) is left alone. Values, command lines and ConfigMap files alike."""

from __future__ import annotations

import re
import time

import pytest

from renderer.core import references
from renderer.core.references import (
    Reference,
    Target,
    Targets,
    apply,
    bare_value_is_host,
    find_in_args,
    find_in_data,
    find_in_value,
    host_variables,
)

# The services of the corpus, all with a dev version `<name>-pr1`. `orders` and `catalog` live in named
# namespaces; the others in the destination namespace (no namespace in their manifests).
NAMESPACED = {"orders": "shop", "catalog": "catalog"}
NAMES = [
    "accounts-db", "backend", "broker", "cartservice", "carts-dynamodb", "catalog", "catalog-mysql", "checkout-redis",
    "frontend", "kafka", "kafka-2", "ledger-db", "ledgerwriter", "mongo-0", "mongo-1", "mongodb", "mssql", "mysql",
    "nats", "orders", "orders-db", "otel-collector", "postgres", "postgresql", "rabbitmq", "redis", "redis-leader",
    "redis-master", "redis-prod", "whereami-backend",
]  # fmt: skip
PORTS = {"orders": frozenset({"http"}), "redis": frozenset({"tcp-redis"})}
TARGETS = Targets([Target(n, n, NAMESPACED.get(n), PORTS.get(n, frozenset())) for n in NAMES])
NEW = {n: f"{n}-pr1" for n in NAMES}


def rewrite_value(key: str, value: str) -> str:
    refs = find_in_value(value, TARGETS, key)
    assert all(value[r.start : r.end] == r.target.name for r in refs), refs  # spans sit on the label
    return apply(value, refs, NEW)


def rewrite_args(argv: list[str]) -> list[str]:
    per_element = find_in_args(argv, TARGETS)
    assert len(per_element) == len(argv)
    for element, refs in zip(argv, per_element, strict=True):
        assert all(element[r.start : r.end] == r.target.name for r in refs), refs
    return [apply(a, refs, NEW) for a, refs in zip(argv, per_element, strict=True)]


def rewrite_data(key: str, value: str) -> str:
    refs = find_in_data(key, value, TARGETS)
    assert all(value[r.start : r.end] == r.target.name for r in refs), refs
    return apply(value, refs, NEW)


# --- values: env values, ConfigMap values read through envFrom / configMapKeyRef, flag values ------------------

VALUE_TRUE_POSITIVES = [
    # bank-of-anthos: the db name equals the host, only the host moves
    ("ACCOUNTS_DB_URI", "postgresql://accounts-admin:accounts-pwd@accounts-db:5432/accounts-db",
     "postgresql://accounts-admin:accounts-pwd@accounts-db-pr1:5432/accounts-db"),
    ("SPRING_DATASOURCE_URL", "jdbc:postgresql://ledger-db:5432/postgresdb",
     "jdbc:postgresql://ledger-db-pr1:5432/postgresdb"),
    ("TRANSACTIONS_API_ADDR", "ledgerwriter:8080", "ledgerwriter-pr1:8080"),
    ("FRONTEND_ADDR", "frontend:80", "frontend-pr1:80"),
    # OpenTelemetry demo (ADO.NET / Npgsql)
    ("DB_CONNECTION_STRING", "Host=postgresql;Username=otelu;Password=otelp;Database=otel",
     "Host=postgresql-pr1;Username=otelu;Password=otelp;Database=otel"),
    ("ConnectionStrings__Default", "Host=postgres;Port=5432;Username=postgres;Password=postgres;Database=postgres",
     "Host=postgres-pr1;Port=5432;Username=postgres;Password=postgres;Database=postgres"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel-collector:4317", "http://otel-collector-pr1:4317"),
    ("KAFKA_ADDR", "kafka:9092", "kafka-pr1:9092"),
    # Kafka KRaft
    ("KAFKA_CONTROLLER_QUORUM_VOTERS", "1@kafka:9093,2@kafka-2:9093", "1@kafka-pr1:9093,2@kafka-2-pr1:9093"),
    ("KAFKA_ADVERTISED_LISTENERS", "PLAINTEXT://kafka:9092,CONTROLLER://kafka:9093",
     "PLAINTEXT://kafka-pr1:9092,CONTROLLER://kafka-pr1:9093"),
    ("KAFKA_BOOTSTRAP_SERVERS", "kafka:9092,kafka-2:9092", "kafka-pr1:9092,kafka-2-pr1:9092"),
    ("KAFKA_BROKERS", "kafka:9092 kafka-2:9092", "kafka-pr1:9092 kafka-2-pr1:9092"),
    ("KAFKA_URL", "kafka://kafka:9092", "kafka://kafka-pr1:9092"),
    # RabbitMQ, NATS, Redis, MongoDB, MySQL, SQL Server, Oracle
    ("RABBITMQ_URL", "amqp://guest:guest@rabbitmq:5672", "amqp://guest:guest@rabbitmq-pr1:5672"),
    ("AMQP_URL", "amqps://orders:orders@rabbitmq:5671/orders", "amqps://orders:orders@rabbitmq-pr1:5671/orders"),
    ("NATS_URL", "nats://nats:4222", "nats://nats-pr1:4222"),
    ("REDIS_URL", "redis://:redis@redis:6379/0", "redis://:redis@redis-pr1:6379/0"),
    ("REDIS_TLS_URL", "rediss://default:pw@redis:6380", "rediss://default:pw@redis-pr1:6380"),
    ("RETAIL_CHECKOUT_PERSISTENCE_REDIS_URL", "redis://checkout-redis:6379", "redis://checkout-redis-pr1:6379"),
    ("ConnectionStrings__Redis", "redis:6379,password=redis,abortConnect=false",
     "redis-pr1:6379,password=redis,abortConnect=false"),
    ("MONGO_URL", "mongodb://u:p@mongo-0:27017,mongo-1:27017/db?replicaSet=rs0",
     "mongodb://u:p@mongo-0-pr1:27017,mongo-1-pr1:27017/db?replicaSet=rs0"),
    ("MONGO_URI", "mongodb://mongo-0,mongo-1/orders", "mongodb://mongo-0-pr1,mongo-1-pr1/orders"),
    ("MONGODB_URI", "mongodb+srv://mongodb:mongodb@mongodb.shop.svc.cluster.local/mongodb",
     "mongodb+srv://mongodb:mongodb@mongodb-pr1.shop.svc.cluster.local/mongodb"),
    ("DATABASE_URL", "postgres://postgres:postgres@postgres:5432/postgres",
     "postgres://postgres:postgres@postgres-pr1:5432/postgres"),
    ("DATABASE_URL", "postgres://orders:orders@orders-db:5432/orders",
     "postgres://orders:orders@orders-db-pr1:5432/orders"),
    ("MYSQL_URL", "mysql://mysql:mysql@mysql/mysql", "mysql://mysql:mysql@mysql-pr1/mysql"),
    ("JDBC_URL", "jdbc:mysql://mysql/orders?useSSL=false", "jdbc:mysql://mysql-pr1/orders?useSSL=false"),
    ("JDBC_URL", "jdbc:sqlserver://mssql:1433;databaseName=orders", "jdbc:sqlserver://mssql-pr1:1433;databaseName=orders"),
    ("JDBC_URL", "jdbc:oracle:thin:@orders-db:1521:XE", "jdbc:oracle:thin:@orders-db-pr1:1521:XE"),
    ("SQL", "Server=tcp:mssql,1433;Database=orders;User Id=sa;Password=mssql",
     "Server=tcp:mssql-pr1,1433;Database=orders;User Id=sa;Password=mssql"),
    ("SQL", "Data Source=orders-db:1521/XE;User Id=app", "Data Source=orders-db-pr1:1521/XE;User Id=app"),
    ("SQL", 'Server=mysql;Database=mysql;Uid=mysql;Pwd="a;b";', 'Server=mysql-pr1;Database=mysql;Uid=mysql;Pwd="a;b";'),
    # libpq key-value
    ("PG_DSN", "host=postgres port=5432 user=postgres dbname=postgres",
     "host=postgres-pr1 port=5432 user=postgres dbname=postgres"),
    ("PG_DSN", "host='postgres' dbname=orders", "host='postgres-pr1' dbname=orders"),
    # retail-store / eks-workshop, gke-whereami
    ("RETAIL_CATALOG_PERSISTENCE_ENDPOINT", "catalog-mysql:3306", "catalog-mysql-pr1:3306"),
    ("RETAIL_UI_ENDPOINTS_CATALOG", "http://catalog.catalog.svc:80", "http://catalog-pr1.catalog.svc:80"),
    ("RETAIL_CART_PERSISTENCE_DYNAMODB_ENDPOINT", "http://carts-dynamodb:8000", "http://carts-dynamodb-pr1:8000"),
    ("BACKEND_SERVICE", "http://whereami-backend", "http://whereami-backend-pr1"),
    # Kardinal's demo and the forms handled before
    ("CARTSERVICEHOST", "cartservice", "cartservice-pr1"),
    ("REDIS", "redis-prod", "redis-prod-pr1"),
    ("DB_HOST", "postgres", "postgres-pr1"),
    ("DATABASE_HOST", "orders-db", "orders-db-pr1"),
    ("ORDERS_URL", "http://orders.shop.svc.cluster.local:8080/api", "http://orders-pr1.shop.svc.cluster.local:8080/api"),
    ("UPSTREAM", "orders/api", "orders-pr1/api"),
    ("ORDERS_API", "orders.shop", "orders-pr1.shop"),
    ("X", "orders.shop.svc", "orders-pr1.shop.svc"),
    ("X", "orders:http", "orders-pr1:http"),
    ("X", "redis:tcp-redis", "redis-pr1:tcp-redis"),
    ("X", "backend:8080", "backend-pr1:8080"),
    ("REDIS_HOST_NAME", "redis", "redis-pr1"),
    ("REDIS_HOST_PRIMARY", "redis-master", "redis-master-pr1"),
    ("DB_HOST_1", "postgres", "postgres-pr1"),
    ("REDIS_SENTINELS", "redis-master redis-leader", "redis-master-pr1 redis-leader-pr1"),
    ("NO_PROXY", "localhost,backend,.svc", "localhost,backend-pr1,.svc"),
    ("GRPC_TARGET", "dns:///orders:8080", "dns:///orders-pr1:8080"),
    ("TRACING", "grpc://otel-collector:4317", "grpc://otel-collector-pr1:4317"),
    ("STATSD", "tcp://otel-collector:8125", "tcp://otel-collector-pr1:8125"),
    ("LINKS", "see https://backend:8443/docs", "see https://backend-pr1:8443/docs"),
    # a value that holds flags or settings of its own
    ("JAVA_OPTS", "-Xmx512m -Dspring.redis.host=redis -Dspring.datasource.username=redis",
     "-Xmx512m -Dspring.redis.host=redis-pr1 -Dspring.datasource.username=redis"),
    ("EXTRA_ARGS", "--backend-url=http://backend:9898 --level=info",
     "--backend-url=http://backend-pr1:9898 --level=info"),
    ("SPRING_APPLICATION_JSON", '{"spring.redis.host":"redis","spring.redis.password":"redis"}',
     '{"spring.redis.host":"redis-pr1","spring.redis.password":"redis"}'),
    ("ELASTICSEARCH_HOSTS", '["http://backend:9200", "http://frontend:9200"]',
     '["http://backend-pr1:9200", "http://frontend-pr1:9200"]'),
]  # fmt: skip

VALUE_FALSE_POSITIVES = [
    # database names, users, passwords (bank-of-anthos, Postgres/MySQL/Mongo/RabbitMQ images)
    ("POSTGRES_DB", "accounts-db"), ("POSTGRES_DB", "postgres"), ("POSTGRES_USER", "postgres"),
    ("POSTGRES_PASSWORD", "postgres"), ("MYSQL_DATABASE", "mysql"), ("MYSQL_USER", "mysql"),
    ("MONGO_INITDB_DATABASE", "mongodb"), ("RABBITMQ_DEFAULT_USER", "rabbitmq"),
    ("RABBITMQ_DEFAULT_PASS", "rabbitmq"), ("RABBITMQ_NODENAME", "rabbit@rabbitmq"),
    ("RETAIL_ORDERS_PERSISTENCE_NAME", "orders"), ("RETAIL_CATALOG_PERSISTENCE_DB_NAME", "catalog"),
    ("DB_USERNAME", "orders:orders"), ("REDIS_PASSWORD", "redis:6379"), ("API_KEY", "backend:9898"),
    ("SPRING_DATASOURCE_USERNAME", "postgres"), ("KAFKA_CLUSTER_ID", "kafka"),
    # paths
    ("PGDATA", "/var/lib/postgresql/data"), ("DATA_DIR", "/var/lib/postgres"), ("HEALTH_PATH", "/orders/health"),
    ("REDIS_DATA", "redis/data"), ("POSTGRES_DATA", "postgres/data"), ("CONFIG_FILE", "orders.yaml"),
    # images
    ("IMAGE", "postgres:16"), ("REDIS_IMAGE", "redis:7"), ("TAG", "kafka:3"), ("VERSION", "7"),
    ("DOCKER_IMAGE", "docker.io/library/postgres:16-alpine"), ("SIDECAR_IMAGE", "redis/redis-stack:7"),
    # drivers, providers, profiles: what kind of store, not where (Laravel, Spring, retail-store)
    ("CACHE_DRIVER", "redis"), ("SESSION_DRIVER", "redis"), ("QUEUE_CONNECTION", "redis"), ("DB_CONNECTION", "mysql"),
    ("BROADCAST_CONNECTION", "redis"), ("RETAIL_CHECKOUT_PERSISTENCE_PROVIDER", "redis"), ("CACHE_TYPE", "redis"),
    ("SPRING_PROFILES_ACTIVE", "postgres,kafka"), ("DB_ENGINE", "postgres"), ("STORAGE_BACKEND", "redis"),
    ("SESSION_STORE", "redis"), ("DATABASE_ENGINE", "django.db.backends.postgresql"), ("BROKER_TRANSPORT", "redis"),
    ("SERVER_SOFTWARE", "backend"), ("PROXY_ENABLED", "frontend"),
    ("KAFKA_PROCESS_ROLES", "broker,controller"), ("POSTGRES_HOST_AUTH_METHOD", "trust"),
    # names, labels, topics, classes, modules
    ("OTEL_SERVICE_NAME", "orders"), ("APP", "backend"), ("LABEL", "app=orders"), ("KAFKA_TOPIC", "orders.created"),
    ("JAVA_MAIN", "orders.Main"), ("MODULE", "kafka.consumer"), ("SERVICE", "orders"),
    ("OTEL_RESOURCE_ATTRIBUTES", "service.name=orders,service.namespace=shop"),
    ("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"),
    # messages and prose
    ("MESSAGE", "cannot reach orders:8080"), ("GREETING", "hello backend"), ("LOG_FORMAT", "frontend %s"),
    # other hosts, near misses, not ports
    ("URL", "https://orders.example.com/"), ("EMAIL", "orders@example.com"), ("ADMIN", "admin@orders"),
    ("DB_HOST", "orders-dbx"), ("DB_HOST", "xorders"), ("DB_HOST", "orders_db"), ("REDIS_HOST", "redis.example.com"),
    ("X", "orders:orders"), ("X", "orders:99999"), ("X", "orders:0"), ("X", "backend:latest"),
    ("X", "redis"), ("", "postgres"), ("DB_HOST", "orders.other-ns.svc.cluster.local"),
    ("ACCOUNTS_DB_URI", "postgresql://admin:admin@127.0.0.1:5432/accounts-db"),
    ("DSN", "Username=postgres;Password=postgres;Database=postgres"),
    ("PG_DSN", "user=postgres dbname=postgres"),
    ("ConnectionStrings__Db", "Server=db.example.com;Initial Catalog=catalog;User ID=catalog"),
]  # fmt: skip


@pytest.mark.parametrize(("key", "value", "expected"), VALUE_TRUE_POSITIVES)
def test_values_true_positives(key, value, expected):
    assert rewrite_value(key, value) == expected


@pytest.mark.parametrize(("key", "value"), VALUE_FALSE_POSITIVES)
def test_values_false_positives(key, value):
    assert find_in_value(value, TARGETS, key) == []


# --- command lines: container `command` / `args`, init containers ---------------------------------------------

ARGS_TRUE_POSITIVES = [
    # podinfo / stefanprodan's frontend -> backend
    (["--backend-url=http://backend:9898"], ["--backend-url=http://backend-pr1:9898"]),
    (["--port=9898", "--backend-url", "http://backend:9898/echo"], ["--port=9898", "--backend-url", "http://backend-pr1:9898/echo"]),
    # k8s / gke guestbook
    (["redis-server", "--slaveof", "redis-master", "6379"], ["redis-server", "--slaveof", "redis-master-pr1", "6379"]),
    (["redis-server", "--replicaof", "redis-leader", "6379"],
     ["redis-server", "--replicaof", "redis-leader-pr1", "6379"]),
    # flags naming a host, `-h`, glued `-hHOST`, Go's single-dash flags, Spring's --a.b.c=
    (["--redis-host", "redis", "--redis-port", "6379"], ["--redis-host", "redis-pr1", "--redis-port", "6379"]),
    (["psql", "-h", "postgres", "-U", "postgres", "-d", "postgres"],
     ["psql", "-h", "postgres-pr1", "-U", "postgres", "-d", "postgres"]),
    (["mysqladmin", "ping", "-hmysql", "-umysql"], ["mysqladmin", "ping", "-hmysql-pr1", "-umysql"]),
    (["-addr=:8080", "-upstream=orders:8080"], ["-addr=:8080", "-upstream=orders-pr1:8080"]),
    (["--bootstrap-server", "kafka:9092", "--topic", "orders"],
     ["--bootstrap-server", "kafka-pr1:9092", "--topic", "orders"]),
    (["--kafka.brokers=kafka:9092,kafka-2:9092"], ["--kafka.brokers=kafka-pr1:9092,kafka-2-pr1:9092"]),
    (["-jar", "app.jar", "--spring.datasource.url=jdbc:postgresql://postgres:5432/postgres",
      "--spring.datasource.username=postgres"],
     ["-jar", "app.jar", "--spring.datasource.url=jdbc:postgresql://postgres-pr1:5432/postgres",
      "--spring.datasource.username=postgres"]),
    (["--dsn", "host=postgres port=5432 user=postgres"], ["--dsn", "host=postgres-pr1 port=5432 user=postgres"]),
    (["--conn", "Host=postgresql;Username=postgresql"], ["--conn", "Host=postgresql-pr1;Username=postgresql"]),
    (["wait-for-it", "orders-db:5432", "--", "npm", "start"],
     ["wait-for-it", "orders-db-pr1:5432", "--", "npm", "start"]),
    (["nc", "-z", "rabbitmq", "5672"], ["nc", "-z", "rabbitmq-pr1", "5672"]),
    (["DB_HOST=postgres", "./run"], ["DB_HOST=postgres-pr1", "./run"]),
    # shell strings (init containers waiting for their dependencies)
    (["sh", "-c", "until nc -z rabbitmq 5672; do echo waiting for rabbitmq; sleep 2; done"],
     ["sh", "-c", "until nc -z rabbitmq-pr1 5672; do echo waiting for rabbitmq; sleep 2; done"]),
    (["sh", "-c", "until pg_isready -h postgres -p 5432; do sleep 1; done"],
     ["sh", "-c", "until pg_isready -h postgres-pr1 -p 5432; do sleep 1; done"]),
    (["/bin/sh", "-c", "redis-cli -h redis ping"], ["/bin/sh", "-c", "redis-cli -h redis-pr1 ping"]),
    (["sh", "-c", "wget -qO- http://catalog:8080/health"], ["sh", "-c", "wget -qO- http://catalog-pr1:8080/health"]),
    (["sh", "-c", "export DB_HOST=postgres && exec ./app"], ["sh", "-c", "export DB_HOST=postgres-pr1 && exec ./app"]),
    (["bash", "-ec", 'REDIS_ADDR="redis:6379" ./app --db "host=postgres dbname=postgres" 2>&1'],
     ["bash", "-ec", 'REDIS_ADDR="redis-pr1:6379" ./app --db "host=postgres-pr1 dbname=postgres" 2>&1']),
    (["sh", "-c", "mongosh \"mongodb://mongo-0:27017/admin\" --eval 'rs.status()'"],
     ["sh", "-c", "mongosh \"mongodb://mongo-0-pr1:27017/admin\" --eval 'rs.status()'"]),
    (["sh", "-c", "sh -c 'nc -z kafka 9092' && kafka-topics --bootstrap-server=kafka:9092 --list"],
     ["sh", "-c", "sh -c 'nc -z kafka-pr1 9092' && kafka-topics --bootstrap-server=kafka-pr1:9092 --list"]),
    (["nc -z rabbitmq 5672 && ./start"], ["nc -z rabbitmq-pr1 5672 && ./start"]),  # `args` after command [sh, -c]
    (["sh", "-c", "for i in 1 2 3; do\n  curl -sf http://backend:8080/ready && break\n  sleep 5\ndone"],
     ["sh", "-c", "for i in 1 2 3; do\n  curl -sf http://backend-pr1:8080/ready && break\n  sleep 5\ndone"]),
]  # fmt: skip

ARGS_FALSE_POSITIVES = [
    ["postgres", "-c", "max_connections=200"],  # the postgres image's own args
    ["redis-server", "/etc/redis/redis.conf"],
    ["redis-server", "--requirepass", "redis"],
    ["--name", "orders", "--image", "redis:7"],
    ["--db-user", "postgres", "--db-password", "postgres", "--db-name", "postgres"],
    ["kafka-topics", "--create", "--topic", "orders", "--partitions", "3"],
    ["celery", "-A", "orders", "worker", "-l", "info"],
    ["--log-level", "debug", "--service-name", "backend"],
    ["python", "-m", "kafka.consumer", "5"],
    ["gunicorn", "orders.wsgi:application", "--workers", "4"],
    ["curl", "-H", "Host: backend", "http://localhost:8080/"],
    ["--message", "waiting for orders 10 seconds"],
    ["sh", "-c", "echo connecting to postgres:5432; sleep 5"],
    ["sh", "-c", "printf 'redis 6379 is up\\n'"],
    ["sh", "-c", "cp /config/orders.yaml /app/ && ls /var/lib/postgres"],
    ["sh", "-c", "psql -U postgres -d postgres -c 'select 1'"],
    ["sh", "-c", "export POSTGRES_DB=postgres PGUSER=postgres; exec docker-entrypoint.sh postgres"],
    ["sh", "-c", "# connect to redis 6379 later\nsleep 1"],
    ["psql", "-c", "INSERT INTO orders VALUES (1)"],
    ["--topic=orders", "--group=backend", "--user=mysql"],
]


@pytest.mark.parametrize(("argv", "expected"), ARGS_TRUE_POSITIVES)
def test_args_true_positives(argv, expected):
    assert rewrite_args(argv) == expected


@pytest.mark.parametrize("argv", ARGS_FALSE_POSITIVES)
def test_args_false_positives(argv):
    assert find_in_args(argv, TARGETS) == [[] for _ in argv]


# --- ConfigMap / Secret data: single values and mounted files -------------------------------------------------

SPRING_YAML = """\
spring:
  datasource:
    url: jdbc:postgresql://postgres:5432/postgres   # the orders db
    username: postgres
    password: postgres
  redis:
    host: redis
    port: 6379
  kafka:
    bootstrap-servers:
      - kafka:9092
      - kafka-2:9092
image: redis:7
app:
  name: orders
  queue: rabbitmq
  log: "connecting to orders:8080"
hosts: [redis, "backend"]
"""
PROPERTIES = """\
# redis:6379 is the cache
spring.redis.host=redis
spring.datasource.url=jdbc:mysql://mysql/orders
spring.datasource.username=mysql
spring.rabbitmq.host:rabbitmq
app.name=orders
logging.file.name=/var/log/orders.log
"""
APPSETTINGS = """\
{
  "ConnectionStrings": {"Default": "Host=postgresql;Username=postgres;Password=x;Database=postgres"},
  "Redis": {"Host": "redis", "InstanceName": "redis"},
  "Kafka": {"Brokers": ["kafka:9092", "kafka-2:9092"], "Topic": "orders"},
  "Image": "postgres:16",
  "Service": "orders"
}
"""
INI = """\
[database]
host = postgres
name = postgres
user = postgres
[cache]
server = redis:6379
type = redis
"""
DOTENV = """\
export DB_HOST=postgres
POSTGRES_DB=postgres
IMAGE=postgres:16
REDIS_URL="redis://redis:6379/0"
CACHE_DRIVER=redis
"""
NGINX = """\
upstream backend {
    server backend:8080 weight=5;
    server orders;
}
server {
    listen 80;
    server_name orders;
    location /orders {
        proxy_pass http://backend;
    }
    location /catalog/ {
        proxy_pass http://catalog:8080/;
        root /var/lib/postgres;
    }
}
"""
SENTINEL = """\
sentinel monitor mymaster redis-master 6379 2
replicaof redis-master 6379
masterauth redis
"""
HAPROXY = """\
backend orders
    server orders orders:8080 check
"""
SCRIPT = """\
#!/bin/sh
set -e
echo "waiting for postgres:5432"
until nc -z postgres 5432; do sleep 1; done
exec java -jar app.jar --spring.redis.host=redis
"""
MY_CNF = "[client]\nhost=mysql\nuser=mysql\ndatabase=mysql\n"
TOML = '[kafka]\nbrokers = ["kafka:9092", "kafka-2:9092"]\ntopic = "orders"\n'
COMPOSE_LIKE = "environment:\n  - DB_HOST=postgres\n  - POSTGRES_USER=postgres\ndepends_on: [postgres, redis]\n"

DATA_TRUE_POSITIVES = [
    # single values (envFrom / configMapKeyRef): bank-of-anthos' service-api-config, retail-store, whereami
    ("TRANSACTIONS_API_ADDR", "ledgerwriter:8080", "ledgerwriter-pr1:8080"),
    ("ACCOUNTS_DB_URI", "postgresql://accounts-admin:accounts-pwd@accounts-db:5432/accounts-db",
     "postgresql://accounts-admin:accounts-pwd@accounts-db-pr1:5432/accounts-db"),
    ("RETAIL_CHECKOUT_ENDPOINTS_ORDERS", "http://orders.orders.svc:80", "http://orders.orders.svc:80"),  # other ns
    ("RETAIL_UI_ENDPOINTS_CATALOG", "http://catalog.catalog.svc:80", "http://catalog-pr1.catalog.svc:80"),
    ("BACKEND_SERVICE", "http://whereami-backend", "http://whereami-backend-pr1"),
    ("REDIS_HOST", "redis", "redis-pr1"),
    # mounted files
    ("application.yaml", SPRING_YAML, SPRING_YAML.replace("//postgres:", "//postgres-pr1:")
     .replace("host: redis", "host: redis-pr1").replace("- kafka:", "- kafka-pr1:")
     .replace("- kafka-2:", "- kafka-2-pr1:").replace('[redis, "backend"]', '[redis-pr1, "backend-pr1"]')),
    ("application.properties", PROPERTIES, PROPERTIES.replace("host=redis", "host=redis-pr1")
     .replace("//mysql/", "//mysql-pr1/").replace("host:rabbitmq", "host:rabbitmq-pr1")),
    ("appsettings.json", APPSETTINGS, APPSETTINGS.replace("Host=postgresql", "Host=postgresql-pr1")
     .replace('"Host": "redis"', '"Host": "redis-pr1"').replace('"kafka:', '"kafka-pr1:')
     .replace('"kafka-2:', '"kafka-2-pr1:')),
    ("config.ini", INI, INI.replace("host = postgres", "host = postgres-pr1").replace("= redis:", "= redis-pr1:")),
    (".env", DOTENV, DOTENV.replace("DB_HOST=postgres", "DB_HOST=postgres-pr1").replace("//redis:", "//redis-pr1:")),
    ("default.conf", NGINX, NGINX.replace("server backend:", "server backend-pr1:")
     .replace("server orders;", "server orders-pr1;").replace("//catalog:", "//catalog-pr1:")),
    ("sentinel.conf", SENTINEL, SENTINEL.replace("redis-master ", "redis-master-pr1 ")),
    ("haproxy.cfg", HAPROXY, HAPROXY.replace("orders:8080", "orders-pr1:8080")),
    ("entrypoint.sh", SCRIPT, SCRIPT.replace("-z postgres", "-z postgres-pr1").replace("host=redis", "host=redis-pr1")),
    ("my.cnf", MY_CNF, MY_CNF.replace("host=mysql", "host=mysql-pr1")),
    ("config.toml", TOML, TOML.replace('"kafka:', '"kafka-pr1:').replace('"kafka-2:', '"kafka-2-pr1:')),
    ("compose.yaml", COMPOSE_LIKE, COMPOSE_LIKE.replace("DB_HOST=postgres", "DB_HOST=postgres-pr1")),
    ("nginx.conf.template", "location / {\n  proxy_pass http://frontend:80;\n}\n",
     "location / {\n  proxy_pass http://frontend-pr1:80;\n}\n"),
    ("notes.txt", "The backend lives at backend:8080.\n", "The backend lives at backend-pr1:8080.\n"),
    ("cache.yaml", "cache: {host: redis, port: 6379, name: redis}\nselector: {app: redis}\n",
     "cache: {host: redis-pr1, port: 6379, name: redis}\nselector: {app: redis}\n"),
    ("values.yml", "endpoints:\n  orders: orders\n  catalog: http://catalog:80\nredis:\n  host:\n    primary: redis\n",
     "endpoints:\n  orders: orders-pr1\n  catalog: http://catalog-pr1:80\nredis:\n  host:\n    primary: redis-pr1\n"),
    ("SCRIPT", "#!/bin/bash\nredis-cli -h redis ping\n", "#!/bin/bash\nredis-cli -h redis-pr1 ping\n"),
    ("settings.json", '{"brokers": "kafka:9092", "user": "kafka"}', '{"brokers": "kafka-pr1:9092", "user": "kafka"}'),
]  # fmt: skip

DATA_FALSE_POSITIVES = [
    ("POSTGRES_DB", "accounts-db"),
    ("POSTGRES_USER", "accounts-admin"),
    ("RETAIL_CHECKOUT_PERSISTENCE_PROVIDER", "redis"),
    ("RETAIL_ORDERS_PERSISTENCE_NAME", "orders"),
    ("values.yaml", 'image: redis:7\nname: orders\nqueue: rabbitmq\nlog: "connecting to orders:8080"\n'),
    ("app.yaml", "app.kubernetes.io/name: orders\nselector: {app: orders}\ndepends_on: [postgres, redis]\n"),
    ("app.yaml", "# redis:6379\nlogging:\n  level:\n    orders: DEBUG\npath: /var/lib/postgres\n"),
    ("application.properties", "spring.datasource.username=postgres\nspring.jpa.database=postgres\napp.name=orders\n"),
    ("appsettings.json", '{"Image": "postgres:16", "Service": "orders", "Database": "postgres", "User": "redis:6379"}'),
    ("nginx.conf", "server {\n  server_name orders;\n  location /orders {\n    root /var/lib/postgres;\n  }\n}\n"),
    ("nginx.conf", "upstream backend {\n  server 10.0.0.1:8080;\n}\nlocation / {\n  proxy_pass http://backend;\n}\n"),
    ("notes.txt", "Welcome to orders 2024! Data lives in /var/lib/postgres; the redis image is redis:7-alpine.\n"),
    ("Dockerfile", "FROM postgres:16\nCOPY init.sql /docker-entrypoint-initdb.d/\nUSER postgres\n"),
    (".env", "POSTGRES_DB=postgres\nCACHE_DRIVER=redis\nIMAGE=postgres:16\nDB_PASSWORD=redis:6379\n"),
    ("init.sh", '#!/bin/sh\necho "waiting for postgres:5432"\npsql -U postgres -d postgres -f /init.sql\n'),
    ("init.sql", "CREATE DATABASE orders;\nGRANT ALL ON DATABASE orders TO postgres;\n"),
    ("MOTD", "hello from backend\nwelcome to orders 8080 times\n"),
    ("config.ini", "[postgres]\nuser = postgres\ndbname = postgres\n[redis]\ndb = 0\n"),
]


@pytest.mark.parametrize(("key", "value", "expected"), DATA_TRUE_POSITIVES)
def test_data_true_positives(key, value, expected):
    assert value != expected or "orders.orders.svc" in value  # the corpus really rewrites (but the cross-ns one)
    assert rewrite_data(key, value) == expected


@pytest.mark.parametrize(("key", "value"), DATA_FALSE_POSITIVES)
def test_data_false_positives(key, value):
    assert find_in_data(key, value, TARGETS) == []


def test_the_corpora_are_large():
    true_positives = len(VALUE_TRUE_POSITIVES) + len(ARGS_TRUE_POSITIVES) + len(DATA_TRUE_POSITIVES)
    false_positives = len(VALUE_FALSE_POSITIVES) + len(ARGS_FALSE_POSITIVES) + len(DATA_FALSE_POSITIVES)
    assert true_positives >= 100 and false_positives >= 100, (true_positives, false_positives)


# --- keys -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [
    "DB_HOST", "REDIS_HOST", "CARTSERVICEHOST", "PGHOST", "REDIS_ADDR", "API_URL", "DATABASE_URI", "KAFKA_BROKERS",
    "UPSTREAM", "redisHost", "spring.redis.host", "bootstrap-servers", "Host", "Server", "Data Source", "hostaddr",
    "h", "slaveof", "redis-host", "HOST_NAME", "proxy_pass", "NO_PROXY", "CASSANDRA_SEEDS",
])  # fmt: skip
def test_host_keys(key):
    assert bare_value_is_host(key)


@pytest.mark.parametrize("key", [
    "POSTGRES_DB", "DB_NAME", "APP_USER", "SERVICE_NAME", "KAFKA_TOPIC", "Username", "Password", "Database",
    "dbname", "user", "CACHE_DRIVER", "IMAGE", "REDIS_HOST_PASSWORD", "SERVER_NAME", "server_name", "H", "",
    "REDIS", "ORDERS", "LOG_MESSAGE", "PGDATA", "DATA_PATH",
])  # fmt: skip
def test_not_host_keys(key):
    assert not bare_value_is_host(key)


def test_a_neutral_key_holds_a_bare_host_only_when_it_names_the_service():
    assert bare_value_is_host("REDIS", host="redis-prod")
    assert bare_value_is_host("ORDERS", host="orders")
    assert not bare_value_is_host("REDIS", host="orders")
    assert not bare_value_is_host("POSTGRES_DB", host="postgres")


def test_variables_used_as_hosts_through_dependent_env_vars_are_hosts():
    """The OpenTelemetry demo names its collector in `OTEL_COLLECTOR_NAME` and uses it as `$(OTEL_COLLECTOR_NAME)`."""
    env = {
        "OTEL_COLLECTOR_NAME": "otel-collector",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://$(OTEL_COLLECTOR_NAME):4317",
        "DB_NAME": "postgres",
        "POSTGRES_DB": "$(DB_NAME)",
        "DSN": "Host=$(PG_SERVER);Username=$(PG_USERNAME)",
        "GREETING": "hello $(REDIS_NAME)",
    }
    args = ["sh", "-c", "nc -z ${QUEUE_NAME} 5672 && echo ${MSG_NAME}:80", "--backend=$(BACKEND_NAME):9898"]
    assert host_variables(env, args) == {"OTEL_COLLECTOR_NAME", "PG_SERVER", "QUEUE_NAME", "BACKEND_NAME"}
    assert host_variables({"A": "no variables"}) == frozenset()
    assert find_in_value("otel-collector", TARGETS, "OTEL_COLLECTOR_NAME") == []  # a name, read alone
    refs = find_in_value("otel-collector", TARGETS, "OTEL_COLLECTOR_NAME", as_host=True)
    assert apply("otel-collector", refs, NEW) == "otel-collector-pr1"


# --- resolution, spans, apply ---------------------------------------------------------------------------------


def test_short_names_resolve_in_the_pods_namespace_and_qualified_names_in_theirs():
    ui_catalog, catalog = Target("ui/catalog", "catalog", "ui"), Target("catalog/catalog", "catalog", "catalog")
    targets = Targets([ui_catalog, catalog], home="ui")
    new = {"ui/catalog": "catalog-pr1", "catalog/catalog": "catalog-pr1"}
    value = "http://catalog:80,http://catalog.catalog.svc:80"
    refs = find_in_value(value, targets, "ENDPOINTS")
    assert [r.target for r in refs] == [ui_catalog, catalog]
    assert apply(value, refs, new) == "http://catalog-pr1:80,http://catalog-pr1.catalog.svc:80"
    assert find_in_value("http://catalog.other.svc:80", targets, "URL") == []


def test_spans_are_relative_to_each_argument():
    argv = ["--upstream", "backend:8080", "sh -c 'nc -z redis 6379'"]
    refs = find_in_args(argv, TARGETS)
    assert [[(r.start, r.end, r.target.name) for r in element] for element in refs] == [
        [], [(0, 7, "backend")], [(13, 18, "redis")]]  # fmt: skip


def test_apply_replaces_only_the_spans():
    target = Target("k", "redis", None)
    assert apply("a redis b redis", [Reference(10, 15, target), Reference(2, 7, target)], {"k": "r2"}) == "a r2 b r2"
    assert apply("redis", [Reference(0, 5, target), Reference(0, 5, target)], {"k": "r2"}) == "r2"
    assert apply("redis", [], {}) == "redis"


def test_no_targets_no_references():
    empty = Targets([])
    assert find_in_value("redis:6379", empty, "REDIS_ADDR") == []
    assert find_in_args(["-h", "redis"], empty) == [[], []]
    assert find_in_data("app.yaml", "host: redis\n", empty) == []


def test_a_wide_flow_is_read_the_same_way():
    """Many targets take the word-scan pre-filter instead of substring tests: same answers."""
    ours = [Target(n, n, NAMESPACED.get(n), PORTS.get(n, frozenset())) for n in NAMES]
    many = Targets([*ours, *(Target(f"s{i}", f"s{i}", None) for i in range(50))])
    for key, value, expected in VALUE_TRUE_POSITIVES:
        assert apply(value, find_in_value(value, many, key), NEW) == expected
    assert apply("-hmysql", find_in_args(["-hmysql"], many)[0], NEW) == "-hmysql-pr1"


# --- cost -----------------------------------------------------------------------------------------------------


def test_no_regular_expression_is_compiled_per_call(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a regular expression compiled or looked up per call")

    for name in ("compile", "match", "fullmatch", "search", "sub", "split", "findall", "finditer"):
        monkeypatch.setattr(re, name, refuse)
    references._key_class.cache_clear()
    for key, value, _ in VALUE_TRUE_POSITIVES:
        find_in_value(value, TARGETS, key)
    for argv, _ in ARGS_TRUE_POSITIVES:
        find_in_args(argv, TARGETS)
    for key, value, _ in DATA_TRUE_POSITIVES:
        find_in_data(key, value, TARGETS)
    host_variables({"A": "http://$(B):80", "C": "${D}"}, ["nc -z $E 80"])


@pytest.mark.parametrize("text", [
    "a" * 50_000 + ";=", " " * 50_000 + "x=;", "redis:" * 10_000, "x=" + "a " * 25_000 + ";y=1",
    "-" * 50_000, "http://" + "a:" * 20_000, '"' * 50_000, "'a' " * 12_000 + "redis 6379",
    "host=redis " * 5_000, "1@kafka:9093," * 5_000,
])  # fmt: skip
def test_pathological_values_stay_linear(text):
    """CPU time of this thread, not wall time: a loaded machine (the suite on every core) stretches the latter."""
    started = time.thread_time()
    find_in_value(text, TARGETS, "X")
    find_in_args([text, text], TARGETS)
    find_in_data("app.yaml", text.replace(" ", "\n"), TARGETS)
    find_in_data("nginx.conf", text, TARGETS)
    assert time.thread_time() - started < 2.0
