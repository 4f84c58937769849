"""The lane's reach (`render/checks/reach.py`, issue 41), part 5, each case rendering in its own test (a module-scoped
render is credited by mutmut to its first test only): where a dev pod's own values name a store (each flag or
`KEY=VALUE` argument read under its key, the evidence's field and the value around the address), the pod's own
store container at a local address, the entries of a ConfigMap it reads (only the keys it reads, shown as they
are), a baseline name a dev pod keeps (a shared copy naming a per-flow store, its own address kept while it
registers with a shared registry), and a Dapr Component's short host resolved in the pod's namespace. Read from
what a render warns: the problem's code and its message naming the target and the evidence."""

from __future__ import annotations

from unit.render.test_reach_mutants4 import dapr_app
from unit.render.test_reach_siblings import configmap, deployment, render, service

PAD = "a" * 200  # before the address, longer than an excerpt (120 characters): the excerpt around it shows it


def warned(result) -> dict[str, str]:
    """Each reach warning's message up to its closing clause, with its code."""
    return {w.message.split("; a dev pod could")[0]: w.code for w in result.warnings if w.code.startswith("reach-")}


def store(name: str, **annotations: str) -> list[dict]:
    return [deployment(name, [{"name": "main", "image": "redis:7"}]), service(name, 6379, **annotations)]


def test_a_flag_or_key_value_argument_is_read_under_its_key_and_a_bare_argument_as_it_is(tmp_path):
    """`--db-host=h` is `db-host` (dashes dropped, only leading ones), `X_REDIS_HOST=h` keeps its `X`, a URL with a
    `=` in its query splits at the first `=`, and an argument with no `=` is read whole."""
    args = ["--redis-url=redis://query.example.com:6379/0?db=1", "--db-host=flag.example.com",
            "X_REDIS_HOST=xflag.example.com", "redis://bare.example.com:6379"]  # fmt: skip
    docs = [deployment("api", [{"name": "main", "image": "acme/api:1", "args": args}]), service("api")]
    pod = "Deployment/api-pr-1 container main"
    assert warned(render(tmp_path / "repo", docs, {"api": "acme/api:2"})) == {
        f"the lane reaches the store outside the repository {target} ({sign}): {pod} {field} = {value}":
            "reach-outside-store"
        for target, sign, field, value in [
            ("query.example.com:6379", "redis: scheme redis", "args[0]", "redis://query.example.com:6379/0?db=1"),
            ("flag.example.com", "database: key db-host", "args[1]", "flag.example.com"),
            ("xflag.example.com", "redis: key X_REDIS_HOST", "args[2]", "xflag.example.com"),
            ("bare.example.com:6379", "redis: scheme redis", "args[3]", "redis://bare.example.com:6379"),
        ]
    }  # fmt: skip


def test_a_local_address_is_the_pods_own_store_container_only_of_its_kind(tmp_path):
    """`api` runs a redis container beside it: redis at localhost is its own, mysql at localhost is reached."""
    env = [{"name": "LOCAL_REDIS", "value": "redis://localhost:6379/0"},
           {"name": "LOCAL_DB", "value": "mysql://localhost:3306/x"}]  # fmt: skip
    containers = [{"name": "main", "image": "acme/api:1", "env": env}, {"name": "cache", "image": "redis:7"}]
    docs = [deployment("api", containers), service("api")]
    assert warned(render(tmp_path / "repo", docs, {"api": "acme/api:2"})) == {
        "the lane reaches the store outside the repository localhost:3306 (mysql: scheme mysql): Deployment/api-pr-1 "
        "container main env LOCAL_DB = mysql://localhost:3306/x": "reach-outside-store"
    }


def test_a_pods_own_value_shows_its_field_and_the_value_around_the_baseline_store(tmp_path):
    """An argument is named `args[i]`, an env variable `env NAME`; a long value is shown around the address."""
    env = [{"name": "LONG", "value": f"{PAD} redis://orders-db:6379/2"}]
    docs = [deployment("api", [{"name": "main", "image": "acme/api:1", "env": env,
                                "args": ["--orders-db=redis://orders-db:6379/0"]}]),
            service("api"), *store("orders-db")]  # fmt: skip
    [r] = render(tmp_path / "repo", docs, {"api": "acme/api:2"}).reach
    assert (r.cls, r.target) == ("baseline-store", "orders-db")
    assert [(e.object, e.container, e.field, e.value) for e in r.evidence] == [
        ("Deployment/api-pr-1", "main", "args[0]", "--orders-db=redis://orders-db:6379/0"),
        ("Deployment/api-pr-1", "main", "env LONG", f"...{PAD[:92]} redis://orders-db:6379/2"),
    ]


def test_only_the_configmap_keys_a_pod_reads_count_each_shown_around_its_address(tmp_path):
    """`api` reads two keys of `api-conf` after one it does not read (`A_UNREAD`, which names `sessions`, a store
    `api` names in its env too): `sessions` is reached from the env alone. A ConfigMap's value is shown (not hidden
    as a Secret's is), around the address; a bare host is a store by its key."""
    data = {"A_UNREAD": "redis://sessions:6379/9", "ORDERS": f"{PAD} redis://orders-db:6379/3",
            "DB_HOST": "legacy-db.example.com"}  # fmt: skip
    env = [{"name": k, "valueFrom": {"configMapKeyRef": {"name": "api-conf", "key": k}}} for k in ("ORDERS", "DB_HOST")]
    env.append({"name": "SESSIONS", "value": "redis://sessions:6379/0"})
    docs = [deployment("api", [{"name": "main", "image": "acme/api:1", "env": env}]), service("api"),
            configmap("api-conf", data), *store("sessions"), *store("orders-db")]  # fmt: skip
    assert warned(render(tmp_path / "repo", docs, {"api": "acme/api:2"})) == {
        f"the lane reaches the baseline store orders-db (redis: image redis:7): ConfigMap/api-conf key ORDERS = "
        f"...{PAD[:92]} redis://orders-db:6379/3": "reach-baseline-store",
        "the lane reaches the store outside the repository legacy-db.example.com (database: key DB_HOST): "
        "ConfigMap/api-conf key DB_HOST = legacy-db.example.com": "reach-outside-store",
        "the lane reaches the baseline store sessions (redis: image redis:7): Deployment/api-pr-1 container main env "
        "SESSIONS = redis://sessions:6379/0": "reach-baseline-store",
    }


def test_a_shared_copy_naming_a_per_flow_store_reaches_the_baselines(tmp_path):
    """`db` is stateful and shared: its copy serves every flow, so it keeps naming the baseline's `cache`, though
    the lane has its own copy of `cache`."""
    env = [{"name": "CACHE", "value": "redis://cache:6379/0"}]
    docs = [deployment("api", [{"name": "main", "image": "acme/api:1"}]),
            service("api", dependencies="db:tcp,cache:tcp"),
            deployment("db", [{"name": "main", "image": "acme/db:1", "env": env}]),
            service("db", 5432, stateful="true", shared="true"), *store("cache", stateful="true")]  # fmt: skip
    assert warned(render(tmp_path / "repo", docs, {"api": "acme/api:2"})) == {
        "the lane reaches the baseline store cache (redis: image redis:7): Deployment/db-shared container main env "
        "CACHE = redis://cache:6379/0": "reach-baseline-store"
    }


def test_an_own_address_kept_for_a_shared_registry_names_the_baselines_namespace(tmp_path):
    """Namespace isolation: `events` registers with a registry the lane shares, so its own address `events.shop`
    is kept as the baseline's: it names the baseline's `events` (in `shop`, not the flow namespace)."""
    env = [{"name": "EUREKA_URL", "value": "http://eureka.example.com:8761/eureka/"},
           {"name": "HOST_NAME", "value": "events.shop"}]  # fmt: skip
    docs = [deployment("events", [{"name": "main", "image": "redis:7", "env": env}]), service("events", 6379)]
    for d in docs:
        d["metadata"]["namespace"] = "shop"
    config = "isolation: namespace\nsharedStores: [eureka.example.com]\n"
    assert warned(render(tmp_path / "repo", docs, {"events": "redis:8"}, config=config)) == {
        "the lane reaches the baseline store shop/events (redis: image redis:7): Deployment/events container main "
        "env HOST_NAME = events.shop": "reach-baseline-store"
    }


def test_a_dapr_components_short_host_resolves_in_the_pods_namespace(tmp_path):
    """`redis` is defined in `shop` and in `other`: the Component of `api` (in `shop`) names `shop/redis`."""
    other = store("redis")
    for d in other:
        d["metadata"]["namespace"] = "other"
    [r] = render(tmp_path / "repo", dapr_app("shop") + other, {"api": "acme/api:2"}).reach
    assert (r.cls, r.target, r.kind) == ("baseline-store", "shop/redis", "redis")
    assert [(e.object, e.field, e.value) for e in r.evidence] == [
        ("Component/statestore", "metadata redisHost", "redis:6379")
    ]
