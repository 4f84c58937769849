"""The lane's reach (`render/checks/reach.py`, issue 41), part 2: where an address outside the repository is read
(a flag, a `KEY=VALUE` argument, a line of a mounted file under its sections and parent keys), what makes it the
lane's own or the pod's own (a lane copy's full name, a declared external service's ExternalName, the pod's own
container at a local address) and what each reported one shows: its class, its kind and the sign that says so,
its target (an IPv6 address in brackets) and the value around it. Read from what a render returns and warns."""

from __future__ import annotations

import pytest
from unit.render.test_reach_siblings import configmap, deployment, render, service

from renderer.render.checks import reach
from renderer.render.inputs.document import Document
from renderer.render.model.topology import build_model

OPTS = "-Xmx512m " + "-Dlog.level=info " * 12  # before the address, longer than an excerpt (120 characters)

COMMENTS = [("#", "hash"), (";", "semicolon"), ("//", "slashes")]  # commented-out lines: no address read
ENV = {
    "EUREKA_URL": "http://discovery.example.com:8080/eureka/",  # a registry outside the repository
    "LOCAL_DB": "mysql://localhost:3306/x",  # local, but the pod runs no mysql: reached
    "LOCAL_REDIS": "redis://localhost:6379/0",  # the pod's own redis container
    "REDIS_NODES": "localhost:6379,nodes.example.com:6379",  # the pod's own first, then one outside
    "PG_HOSTS": "ledger.acme.tax:5432,pg.example.com:5432",  # a declared external service's first, then one outside
    "V6": "postgres://[fd00::6]:5432/x",
    "ARCHIVE_DB": "mysql://xxxx.example.com:3306/x",  # `archive`, external with no ExternalName: no host
    "JAVA_OPTS": f"{OPTS}-Dspring.redis.url=redis://opts.example.com:6379",
}
ARGS = [
    "--redis-host=flag.example.com",
    "X_REDIS_HOST=xflag.example.com",
    "--spring.datasource.url=jdbc:mysql://jdbc.example.com:3306/x?useSSL=false",
    "redis://bare-arg.example.com:6379",
]
FILES = {
    "blank.yml": "redis:\n\n  host: blank.example.com\n",  # a blank line inside a mapping closes nothing
    "after.properties": "# a comment\nredis.host = after-comment.example.com\n",
    "list.ini": 'urls = ["redis://list.example.com:6379"]\n',  # a value in brackets is no section
    "siblings.yml": "redis:\n  port: 6379\ndatabase:\n  host: sql.example.com\n",
    "longer.yml": "redis:\n  port: 6379\ndatabase_host: sql2.example.com\n",
    "quoted.ini": "[redis]\nhost = 'Xcache.example.com'\n",  # its quotes dropped, not its letters
    "servers.ini": "[redis-servers]\nsection.example.com\n",  # a line with no key stands under its section
    "legacy.conf": "\n".join(f"{c} url = redis://{name}.example.com:6379" for c, name in COMMENTS) + "\nlevel = info\n",
    "sessions.url": "redis://sessions.default.svc.cluster.local:6379/0\n",  # the copy names the lane's sessions
}


def external(name: str, host: str | None) -> dict:
    spec = {"type": "ExternalName", "externalName": host} if host else {"ports": [{"port": 3306}]}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "annotations": {"kardinal.dev.service/external": "true"}},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def lane(tmp_path_factory):
    """`api` (its own redis container beside it) with a dev copy of its stateful `sessions`, reading addresses from
    env, args and a mounted ConfigMap; `billing` is declared external at `Ledger.Acme.Tax.`."""
    main = {
        "name": "main",
        "image": "acme/api:1",
        "args": ARGS,
        "env": [{"name": k, "value": v} for k, v in ENV.items()],
        "volumeMounts": [{"name": "conf", "mountPath": "/conf"}],
    }
    docs = [
        deployment(
            "api", [main, {"name": "cache", "image": "redis:7"}], [{"name": "conf", "configMap": {"name": "api-conf"}}]
        ),
        service("api", dependencies="sessions:tcp"),
        configmap("api-conf", FILES),
        deployment("sessions", [{"name": "main", "image": "redis:7"}]),
        service("sessions", 6379, stateful="true"),
        external("billing", "Ledger.Acme.Tax."),
        external("archive", None),
    ]
    return render(tmp_path_factory.mktemp("lane") / "repo", docs, {"api": "acme/api:2"})


def reached(result) -> dict[str, tuple[str, str, str, str, str]]:
    """target -> (class, kind, sign, field, value) of its first evidence."""
    return {r.target: (r.cls, r.kind, r.sign, r.evidence[0].field, r.evidence[0].value) for r in result.reach}


# fmt: off
REACHED = [
    ("discovery.example.com:8080", "registry", "eureka", "path /eureka", "env EUREKA_URL", ENV["EUREKA_URL"]),
    ("localhost:3306", "outside-store", "mysql", "scheme mysql", "env LOCAL_DB", ENV["LOCAL_DB"]),
    ("nodes.example.com:6379", "outside-store", "redis", "port 6379", "env REDIS_NODES", ENV["REDIS_NODES"]),
    ("pg.example.com:5432", "outside-store", "postgres", "port 5432", "env PG_HOSTS", ENV["PG_HOSTS"]),
    ("[fd00::6]:5432", "outside-store", "postgres", "scheme postgres", "env V6", ENV["V6"]),
    ("xxxx.example.com:3306", "outside-store", "mysql", "scheme mysql", "env ARCHIVE_DB", ENV["ARCHIVE_DB"]),
    ("opts.example.com:6379", "outside-store", "redis", "scheme redis", "env JAVA_OPTS",
     "... -Dlog.level=info -Dlog.level=info -Dlog.level=info -Dlog.level=info "
     "-Dspring.redis.url=redis://opts.example.com:6379"),  # the value around the address, not the value's start
    ("flag.example.com", "outside-store", "redis", "key redis-host", "args[0]", "flag.example.com"),
    ("xflag.example.com", "outside-store", "redis", "key X_REDIS_HOST", "args[1]", "xflag.example.com"),
    ("jdbc.example.com:3306", "outside-store", "mysql", "scheme jdbc:mysql", "args[2]",
     "jdbc:mysql://jdbc.example.com:3306/x?useSSL=false"),  # split at the first `=`
    ("bare-arg.example.com:6379", "outside-store", "redis", "scheme redis", "args[3]", ARGS[3]),
    ("blank.example.com", "outside-store", "redis", "key redis.host", "key blank.yml", "blank.example.com"),
    ("after-comment.example.com", "outside-store", "redis", "key redis.host", "key after.properties",
     "after-comment.example.com"),
    ("list.example.com:6379", "outside-store", "redis", "scheme redis", "key list.ini",
     '["redis://list.example.com:6379"]'),
    ("xcache.example.com", "outside-store", "redis", "key redis.host", "key quoted.ini", "Xcache.example.com"),
    ("sql.example.com", "outside-store", "database", "key database.host", "key siblings.yml", "sql.example.com"),
    ("sql2.example.com", "outside-store", "database", "key database_host", "key longer.yml", "sql2.example.com"),
    ("section.example.com", "outside-store", "redis", "key redis-servers", "key servers.ini", "section.example.com"),
]
# fmt: on


@pytest.mark.parametrize(("target", "cls", "kind", "sign", "field", "value"), REACHED, ids=[r[0] for r in REACHED])
def test_each_address_its_class_sign_and_evidence(lane, target, cls, kind, sign, field, value):
    """The sign names the key as written, its flag's dashes dropped and under the file's own parent keys only."""
    assert reached(lane)[target] == (cls, kind, sign, field, value)


def test_nothing_else_is_reached(lane):
    """Not the pod's own redis at localhost, the lane copy's full name, the external service's ExternalName (its
    case and root dot aside), nor a commented-out line."""
    assert set(reached(lane)) == {target for target, *_ in REACHED}


@pytest.mark.parametrize(("target", "said"), [
    ("[fd00::6]:5432", "store outside the repository [fd00::6]:5432 (postgres: scheme postgres): Deployment/api-pr-1 "
                       "container main env V6 = postgres://[fd00::6]:5432/x;"),
    ("discovery.example.com:8080", "registry discovery.example.com:8080 (eureka: path /eureka): Deployment/api-pr-1 "
                                   "container main env EUREKA_URL = http://discovery.example.com:8080/eureka/;"),
])  # fmt: skip
def test_the_warning_names_the_target_and_the_fix(lane, target, said):
    [warning] = [w for w in lane.warnings if target in w.message]
    assert warning.message.startswith(f"the lane reaches the {said}")
    assert target in warning.hint and warning.code in ("reach-outside-store", "reach-registry")


def test_a_shared_ipv6_host_listed_alone_covers_every_port():
    """`lint`'s check (`undeclared`) given an IPv6 host alone as shared: its address is shared, another's is not."""
    env = [{"name": f"V6_{n}", "value": f"postgres://[fd00::{n}]:5432/x"} for n in (5, 6)]
    docs = [deployment("api", [{"name": "main", "image": "acme/api:1", "env": env}]), service("api")]
    model = build_model([Document(d, "app.yaml", i) for i, d in enumerate(docs)])
    said = reach.undeclared(model, frozenset({"[fd00::5]"}))
    assert [(p.code, p.message.split(" (")[0]) for p in said] == [
        ("undeclared-outside-store", "api reads the store outside the repository [fd00::6]:5432")
    ]
