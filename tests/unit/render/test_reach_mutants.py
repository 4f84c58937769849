"""The lane's reach (`render/checks/reach.py`, issue 41): what the check reports for a rendered lane, read through
its public functions (`lane_reach` by way of a render, `problems`, `line`, `undeclared` by way of `lint`): each
piece of evidence names its object, container and field and shows the value around the address (a Secret's as
`(secret)`); only the keys a pod reads count; a pod's own store container, a declared external service and a
Service or host marked shared are never warned about; each warning names the object and carries its fix."""

from __future__ import annotations

import pytest
import yaml
from unit.render.test_reach_siblings import classes, configmap, deployment, render, secret, service

from renderer import api
from renderer.errors import Where
from renderer.render.checks import reach

PAD = "a" * 200  # before the address, longer than an excerpt (120 characters): the excerpt around it shows it


def env_from(name: str, key: str, var: str) -> dict:
    return {"name": var, "valueFrom": {"secretKeyRef": {"name": name, "key": key}}}


def external(name: str, host: str, port: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "annotations": {"kardinal.dev.service/external": "true"}},
        "spec": {"type": "ExternalName", "externalName": host, "ports": [{"port": port}]},
    }


@pytest.fixture(scope="module")
def lane(tmp_path_factory):
    """`api` (its own redis container beside it) reads stores from env, args, a ConfigMap (envFrom) and two keys of
    a Secret whose first key, not read, names another address; `events` has a dev version but is named by its
    baseline name in the Secret (a Secret is never rewritten)."""
    env = [
        {"name": "SESSIONS_URL", "value": "redis://sessions:6379/0"},
        {"name": "LOCAL_CACHE", "value": "redis://localhost:6379/0"},
        {"name": "LONG", "value": f"{PAD} redis://orders-db:6379/2"},
        {"name": "LEGACY_PG", "value": "postgres://legacy-pg:5432/x"},
        {"name": "EUREKA_URL", "value": "http://discovery.example.com:8761/eureka/"},
        {"name": "CATALOG", "value": "mysql://catalog:3306/x"},
        env_from("api-sec", "Z_STORE", "VAULT"),
        env_from("api-sec", "Z_DB", "SECRET_DB"),
        env_from("api-sec", "Z_EVENTS", "EVENTS"),
    ]
    docs = [
        deployment(
            "api",
            [
                {
                    "name": "main",
                    "image": "acme/api:1",
                    "env": env,
                    "args": ["--orders-db=redis://orders-db:6379/0"],
                    "envFrom": [{"configMapRef": {"name": "api-conf"}}],
                },
                {"name": "cache", "image": "redis:7"},
            ],
        ),
        service("api"),
        configmap(
            "api-conf",
            {
                "DB_HOST": "legacy-db.example.com",
                "LOCAL_REDIS": "redis://localhost:6379/1",
                "ORDERS": f"{PAD} redis://orders-db:6379/3",
            },
        ),
        secret(
            "api-sec",
            {
                "A_UNREAD": "redis://sessions:6379/9 mysql://unread.example.com:3306/x",
                "Z_STORE": "redis://vault-cache:6379/0",
                "Z_DB": "mysql://app:pw@secret-db.example.com:3306/x",
                "Z_EVENTS": "redis://events:6379/0",
            },
        ),
        external("legacy-pg", "legacy.example.com", 5432),
        deployment("catalog", [{"name": "main", "image": "mysql:8"}]),
        service("catalog", 3306, shared="true"),
    ]
    for name in ("sessions", "orders-db", "vault-cache", "events"):
        docs += [deployment(name, [{"name": "main", "image": "redis:7"}]), service(name, 6379)]
    return render(
        tmp_path_factory.mktemp("lane") / "repo",
        docs,
        {"api": "acme/api:2", "events": "redis:8"},
        config="sharedStores: [discovery.example.com]\n",
    )


@pytest.mark.parametrize(("target", "cls", "kind"), [
    ("sessions", "baseline-store", "redis"),
    ("orders-db", "baseline-store", "redis"),
    ("vault-cache", "baseline-store", "redis"),  # named only in a key the pod reads
    ("events", "baseline-store", "redis"),  # it has a dev version, but the Secret names the baseline's
    ("legacy-db.example.com", "outside-store", "database"),  # a bare host, a store by its key DB_HOST
    ("secret-db.example.com:3306", "outside-store", "mysql"),  # in the Secret's second read key
    ("discovery.example.com:8761", "shared", "eureka"),  # a registry listed in sharedStores
    ("catalog", "shared", "mysql"),  # marked shared on its Service
])  # fmt: skip
def test_each_target_and_its_class(lane, target, cls, kind):
    assert classes(lane)[target] == (cls, kind)


def test_what_is_not_reached(lane):
    """The pod's own redis at localhost (env or ConfigMap), a declared external service, an unread Secret key."""
    assert set(classes(lane)) == {
        "sessions",
        "orders-db",
        "vault-cache",
        "events",
        "legacy-db.example.com",
        "secret-db.example.com:3306",
        "discovery.example.com:8761",
        "catalog",
    }


@pytest.mark.parametrize(("target", "evidence"), [
    ("sessions", {("Deployment/api-pr-1", "main", "env SESSIONS_URL", "redis://sessions:6379/0")}),
    ("orders-db", {("Deployment/api-pr-1", "main", "args[0]", "--orders-db=redis://orders-db:6379/0"),
                   ("Deployment/api-pr-1", "main", "env LONG", f"...{PAD[:92]} redis://orders-db:6379/2"),
                   ("ConfigMap/api-conf", None, "key ORDERS", f"...{PAD[:92]} redis://orders-db:6379/3")}),
    ("vault-cache", {("Secret/api-sec", None, "key Z_STORE", "(secret)")}),
    ("events", {("Secret/api-sec", None, "key Z_EVENTS", "(secret)")}),
    ("legacy-db.example.com", {("ConfigMap/api-conf", None, "key DB_HOST", "legacy-db.example.com")}),
    ("secret-db.example.com:3306", {("Secret/api-sec", None, "key Z_DB", "(secret)")}),
])  # fmt: skip
def test_each_evidence_names_object_container_field_and_value(lane, target, evidence):
    [r] = [r for r in lane.reach if r.target == target]
    assert {(e.object, e.container, e.field, e.value) for e in r.evidence} == evidence


def test_evidence_as_dict_names_a_container_only_for_a_pod(lane):
    [orders] = [r for r in lane.reach if r.target == "orders-db"]
    by_object = {e["object"]: e for e in orders.as_dict()["evidence"]}
    assert set(by_object["ConfigMap/api-conf"]) == {"object", "field", "value"}
    assert by_object["Deployment/api-pr-1"]["container"] == "main"


def test_line_of_a_configmap_entry(lane):
    [legacy] = [r for r in lane.reach if r.target == "legacy-db.example.com"]
    assert reach.line(legacy.as_dict()) == (
        "store outside the repository legacy-db.example.com (database: key "
        "DB_HOST): ConfigMap/api-conf key DB_HOST = legacy-db.example.com"
    )


@pytest.mark.parametrize(("strict", "severity"), [(None, "warning"), (False, "warning"), (True, "error")])
def test_problems_one_per_unshared_reach_naming_object_fix_and_class(lane, strict, severity):
    got = reach.problems(lane.reach) if strict is None else reach.problems(lane.reach, strict)
    reached = [r for r in lane.reach if r.cls != "shared"]
    assert len(got) == len(reached) == 6
    for p, r in zip(got, reached, strict=True):
        assert p.message == (
            f"the lane reaches the {reach.line(r.as_dict())}; a dev pod could read or write the baseline's state"
        )
        assert (p.where, p.hint, p.code, p.severity) == (
            Where(object=r.evidence[0].object),
            r.fix,
            f"reach-{r.cls}",
            severity,
        )


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """`api` in namespace `shop` names `orders-db` by its short name (another namespace has one too) and reads a
    ConfigMap whose lane copy names the dev copy of its stateful dependency `sessions` by its full name."""
    api_pod = {
        "name": "main",
        "image": "acme/api:1",
        "env": [{"name": "ORDERS", "value": "redis://orders-db:6379/0"}],
        "envFrom": [{"configMapRef": {"name": "api-conf"}}],
    }
    docs = [
        deployment("api", [api_pod]),
        service("api", dependencies="sessions:tcp"),
        configmap(
            "api-conf",
            {
                "SESSIONS_URL": "redis://sessions.shop.svc.cluster.local:6379/0",
                "CACHE_URL": "redis://cache.example.com:6379/0",
            },
        ),
        deployment("sessions", [{"name": "main", "image": "redis:7"}]),
        service("sessions", 6379, stateful="true"),
        deployment("orders-db", [{"name": "main", "image": "redis:7"}]),
        service("orders-db", 6379),
    ]
    for d in docs:
        d["metadata"]["namespace"] = "shop"
    other = [deployment("orders-db", [{"name": "main", "image": "redis:7"}]), service("orders-db", 6379)]
    for d in other:
        d["metadata"]["namespace"] = "other"
    return render(tmp_path_factory.mktemp("shop") / "repo", docs + other, {"api": "acme/api:2"})


def test_a_short_name_resolves_in_the_pods_namespace_and_the_lanes_copy_is_not_reached(shop):
    """What the pod reads from the lane's ConfigMap copy is reached from that copy; the dev `sessions` is not."""
    assert classes(shop) == {
        "shop/orders-db": ("baseline-store", "redis"),
        "cache.example.com:6379": ("outside-store", "redis"),
    }
    [cache] = [r for r in shop.reach if r.target == "cache.example.com:6379"]
    assert [(e.object, e.field) for e in cache.evidence] == [("ConfigMap/api-conf-pr-1", "key CACHE_URL")]


def test_lint_names_each_undeclared_store_with_its_object_and_fix(tmp_path):
    """`lint` reads every service's pods, after one with no workload (`a-front`, an ExternalName) and one whose
    workload another service selects already (`api-admin`): each warning names the object and carries the fix."""
    docs = [
        external("a-front", "front.example.com", 80),
        deployment(
            "api",
            [
                {
                    "name": "main",
                    "image": "acme/api:1",
                    "env": [{"name": "CACHE", "value": "redis://cache.example.com:6379/0"}],
                }
            ],
        ),
        service("api"),
        {**service("api-admin"), "spec": {"selector": {"app": "api"}, "ports": [{"name": "http", "port": 81}]}},
        deployment(
            "web",
            [
                {
                    "name": "main",
                    "image": "acme/web:1",
                    "env": [{"name": "SESSIONS", "value": "redis://sessions:6379/0"}],
                }
            ],
        ),
        service("web"),
        deployment("sessions", [{"name": "main", "image": "redis:7"}]),
        service("sessions", 6379),
    ]
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.yaml").write_text("---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs))
    said = {p.code: p for p in api.lint(api.Options(repo=root)) if p.code.startswith("undeclared-")}
    assert set(said) == {"undeclared-outside-store", "undeclared-baseline-store"}
    outside, store = said["undeclared-outside-store"], said["undeclared-baseline-store"]
    assert outside.message.startswith("api reads the store outside the repository cache.example.com:6379 (")
    assert store.message.startswith("web reads the baseline store sessions (redis: image redis:7): Deployment/web ")
    assert (outside.where.file, outside.where.object) == ("app.yaml", "Deployment/api")
    assert (store.where.file, store.where.object) == ("app.yaml", "Deployment/web")
    assert outside.hint.startswith("declare cache.example.com:6379 as a kardinal.dev.service/external Service")
    assert store.hint.startswith('annotate sessions kardinal.dev.service/stateful: "true"')


def test_a_target_several_pods_reach_is_named_as_the_first_pod_in_namespace_order_names_it(tmp_path):
    """Dev pods are read in (namespace, name) order, one with no namespace first (before `0web`, a valid name): the
    first to name a host gives its kind and sign, the others add evidence."""
    docs = [
        deployment(
            "api",
            [{"name": "main", "image": "acme/api:1", "env": [{"name": "REDIS_HOST", "value": "both.example.com"}]}],
        ),
        service("api"),
    ]
    web = [
        deployment(
            "web", [{"name": "main", "image": "acme/web:1", "env": [{"name": "DB_HOST", "value": "both.example.com"}]}]
        ),
        service("web"),
    ]
    for d in web:
        d["metadata"]["namespace"] = "0web"
    [r] = render(tmp_path / "repo", docs + web, {"api": "acme/api:2", "web": "acme/web:2"}).reach
    assert (r.cls, r.target, r.kind, r.sign) == ("outside-store", "both.example.com", "redis", "key REDIS_HOST")
    assert [(e.object, e.field) for e in r.evidence] == [
        ("Deployment/api-pr-1", "env REDIS_HOST"),
        ("Deployment/web-pr-1", "env DB_HOST"),
    ]
