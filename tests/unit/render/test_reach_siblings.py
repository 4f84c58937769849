"""The lane's reach (`render/checks/reach.py`), one case per item (issue 41, point 3): each way a dev pod reads a
value (env, args, each way a ConfigMap or a Secret reaches it: `valueFrom`, `envFrom`, a volume, a projected
volume), each class (a baseline store, a registry, a store outside the repository, shared on purpose), each word
that is a listener rather than a host, each local address, each SQL kind a lane's own database overrides. What a
Secret holds is never shown: its evidence is `(secret)` whatever the form. Read from what the user sees: the
render's warnings, and `--strict`'s refusal. The lists are written here, independently of the module's own."""

from __future__ import annotations

import base64
import textwrap

import pytest
import yaml

from renderer import api
from renderer.render.plan.flow_spec import FlowRequest

FLOW = "pr-1"
PASSWORD = "Zx9Qw8Rt4Vb"  # in every store URL below: never in any output


def render(root, docs: list[dict], images: dict[str, str], env: list | None = None, config: str | None = None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.yaml").write_text("---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs))
    if config is not None:
        (root / ".devlane.yaml").write_text(textwrap.dedent(config))
    return api.render(api.Options(repo=root), api.resolve(FlowRequest(flow_id=FLOW, images=images, env=env or [])))


def deployment(name: str, containers: list[dict], volumes: list[dict] | None = None) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": containers, **({"volumes": volumes} if volumes else {})}}}}


def service(name: str, port: int = 80, **annotations: str) -> dict:
    meta: dict = {"name": name}
    if annotations:
        meta["annotations"] = {f"kardinal.dev.service/{k}": v for k, v in annotations.items()}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"selector": {"app": name}, "ports": [{"name": "tcp", "port": port}]}}


def secret(name: str, data: dict[str, str], encoded: bool = True) -> dict:
    if encoded:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data}


def configmap(name: str, data: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def url(host: str, scheme: str = "postgres", port: int = 5432) -> str:
    return f"{scheme}://appuser:{PASSWORD}@{host}:{port}/orders_db"


# Each way a value reaches a dev pod from a Secret or a ConfigMap: (how, the pod spec's part, the object).
SOURCES = {
    "env valueFrom": lambda kind, name: {"env": [{"name": "FROM", "valueFrom": {
        ("secretKeyRef" if kind == "Secret" else "configMapKeyRef"): {"name": name, "key": "DATABASE_URL"}}}]},
    "envFrom": lambda kind, name: {"envFrom": [{("secretRef" if kind == "Secret" else "configMapRef"): {
        "name": name}}]},
    "volume": lambda kind, name: {"volume": {"name": "v", **({"secret": {"secretName": name}} if kind == "Secret"
                                                             else {"configMap": {"name": name}})}},
    "projected volume": lambda kind, name: {"volume": {"name": "v", "projected": {"sources": [
        {("secret" if kind == "Secret" else "configMap"): {"name": name}}]}}},
}


def reading(how: str, kind: str, name: str) -> tuple[dict, list[dict]]:
    part = SOURCES[how](kind, name)
    volume = part.pop("volume", None)
    return {"name": "main", "image": "acme/api:1", **part}, [volume] if volume else []


@pytest.fixture(scope="module")
def sourced(tmp_path_factory):
    """One dev pod per (source, kind), each reading one outside store and one baseline store from it, plus a key it
    does not read."""
    docs = [deployment("sessions", [{"name": "main", "image": "redis:7"}]), service("sessions", 6379)]
    images = {}
    for i, how in enumerate(SOURCES):
        for kind in ("Secret", "ConfigMap"):
            name = f"app-{i}-{kind.lower()}"
            data = {"DATABASE_URL": url(f"{name}.example.com"),
                    "SESSIONS_URL": f"redis://:{PASSWORD}@sessions:6379/0"}
            if how == "env valueFrom":  # only DATABASE_URL is read: SESSIONS_URL must not be reported
                data["SESSIONS_URL"] = f"redis://:{PASSWORD}@unread.example.com:6379/0"
            container, volumes = reading(how, kind, name)
            docs += [deployment(name, [container], volumes), service(name),
                     secret(name, data, encoded=i % 2 == 0) if kind == "Secret" else configmap(name, data)]
            images[name] = f"acme/{name}:2"
    result = render(tmp_path_factory.mktemp("sourced") / "repo", docs, images)
    return result


def reached_by(result, obj: str) -> dict[str, tuple[str, str, object]]:
    """target -> (class, kind, evidence) of what `obj` (the Secret or ConfigMap read) shows."""
    return {r.target: (r.cls, r.kind, e) for r in result.reach for e in r.evidence if e.object == obj}


@pytest.mark.parametrize("how", list(SOURCES))
def test_a_secret_sourced_value_is_shown_as_secret(sourced, how):
    i = list(SOURCES).index(how)
    name = f"app-{i}-secret"
    got = reached_by(sourced, f"Secret/{name}")
    assert got[f"{name}.example.com:5432"][:2] == ("outside-store", "postgres")
    assert got[f"{name}.example.com:5432"][2].value == "(secret)"
    if how == "env valueFrom":
        assert set(got) == {f"{name}.example.com:5432"}  # the keys the pod does not read are not read
        return
    assert got["sessions"][:2] == ("baseline-store", "redis") and got["sessions"][2].value == "(secret)"
    [said] = [w.message for w in sourced.warnings if f"{name}.example.com" in w.message]
    assert f"Secret/{name} key DATABASE_URL = (secret);" in said


@pytest.mark.parametrize("how", list(SOURCES))
def test_a_configmap_sourced_value_is_shown_masked(sourced, how):
    i = list(SOURCES).index(how)
    name = f"app-{i}-configmap"
    got = reached_by(sourced, f"ConfigMap/{name}")
    assert got[f"{name}.example.com:5432"][2].value == f"postgres://appuser:***@{name}.example.com:5432/orders_db"
    if how != "env valueFrom":
        assert got["sessions"][2].value == "redis://:***@sessions:6379/0"


def test_no_secret_shows_anywhere(sourced):
    text = "\n".join([*(w.message + (w.hint or "") for w in sourced.warnings), sourced.stream()])
    assert PASSWORD not in text and "unread.example.com" not in text
    for i in range(len(SOURCES)):  # nothing of a Secret's value but the address reported
        for w in sourced.warnings:
            if f"Secret/app-{i}-secret " in w.message:
                assert "appuser" not in w.message and "orders_db" not in w.message


# ---------------------------------------------------------------------------------------------------------------
# Classes, listeners, local addresses, env and args

LISTENERS = ["tcp", "udp", "unix", "http", "https", "grpc"]
LOCAL = ["localhost", "127.0.0.1", "0.0.0.0", "[::1]"]


@pytest.fixture(scope="module")
def lane(tmp_path_factory):
    env = [
        {"name": "CACHE_URL", "value": f"rediss://:{PASSWORD}@cache.example.com:6380/0"},
        {"name": "EUREKA_URL", "value": "http://discovery.example.com:8080/eureka/"},
        {"name": "SESSIONS_URL", "value": "redis://sessions:6379/0"},
        {"name": "REGISTRY_HOST", "value": "registry"},
        {"name": "SHARED_A", "value": url("shared-a.example.com")},
        {"name": "SHARED_B", "value": url("shared-b.example.com")},
        {"name": "SHARED_B_OTHER_PORT", "value": url("shared-b.example.com", port=6543)},
        {"name": "MARKED_SHARED", "value": "mysql://catalog:3306/x"},
        *({"name": f"LISTEN_{w.upper()}", "value": f"{w}:3306"} for w in LISTENERS),
        *({"name": f"LOCAL_{i}", "value": f"redis://{h}:6379/0"} for i, h in enumerate(LOCAL)),
        *({"name": f"LOCAL_MYSQL_{i}", "value": f"mysql://{h}:3306/x"} for i, h in enumerate(LOCAL)),
    ]
    docs = [
        deployment("api", [{"name": "main", "image": "acme/api:1", "env": env,
                            "args": [f"--db=mysql://app:{PASSWORD}@args.example.com:3306/x", "--verbose"]},
                           {"name": "cache", "image": "redis:7"}]),  # its own redis: local redis is the pod's
        service("api"),
        deployment("sessions", [{"name": "main", "image": "redis:7"}]), service("sessions", 6379),
        deployment("registry", [{"name": "main", "image": "acme/service-registry:1"}]), service("registry", 8080),
        deployment("catalog", [{"name": "main", "image": "mysql:8"}]), service("catalog", 3306, shared="true"),
    ]
    config = "sharedStores: [shared-a.example.com, 'shared-b.example.com:5432']\n"
    return render(tmp_path_factory.mktemp("lane") / "repo", docs, {"api": "acme/api:2"}, config=config)


def classes(result) -> dict[str, tuple[str, str]]:
    return {r.target: (r.cls, r.kind) for r in result.reach}


@pytest.mark.parametrize(("target", "cls", "kind"), [
    ("cache.example.com:6380", "outside-store", "redis"),  # `rediss://`
    ("discovery.example.com:8080", "registry", "eureka"),  # Eureka on another port than 8761
    ("sessions", "baseline-store", "redis"),
    ("registry", "registry", "eureka"),
    ("shared-a.example.com:5432", "shared", "postgres"),  # listed alone: every port
    ("shared-b.example.com:5432", "shared", "postgres"),  # listed with its port
    ("shared-b.example.com:6543", "outside-store", "postgres"),  # another port than the one listed
    ("catalog", "shared", "mysql"),  # marked shared on its Service
    ("args.example.com:3306", "outside-store", "mysql"),  # in args, as `--flag=VALUE`
])  # fmt: skip
def test_each_class(lane, target, cls, kind):
    assert classes(lane)[target] == (cls, kind)


@pytest.mark.parametrize(("cls", "target", "said", "fix"), [
    ("outside-store", "cache.example.com:6380", "store outside the repository",
     "declare cache.example.com:6380 as a kardinal.dev.service/external Service with a plugin"),
    ("registry", "discovery.example.com:8080", "registry",
     "copy the registry into the lane (annotate discovery.example.com:8080 kardinal.dev.service/stateful"),
    ("baseline-store", "sessions", "baseline store", "annotate sessions kardinal.dev.service/stateful: \"true\""),
])  # fmt: skip
def test_each_class_but_shared_is_a_warning_naming_it(lane, cls, target, said, fix):
    [warning] = [w for w in lane.warnings if w.message.startswith(f"the lane reaches the {said} {target} (")]
    assert warning.code == f"reach-{cls}" and warning.severity == "warning" and warning.hint.startswith(fix)
    assert "reach-shared" not in {w.code for w in lane.warnings}
    for w in lane.warnings:
        assert "shared-a.example.com" not in w.message and "catalog" not in w.message


def test_the_flow_readme_names_each_class_in_words(lane):
    """The README written beside the flow's objects: every class, the shared one without a fix."""
    readme = lane.flows[0].readme
    for line in ("- shared on purpose shared-a.example.com:5432 (postgres: scheme postgres): Deployment/api-pr-1 "
                 "container main env SHARED_A = postgres://appuser:***@shared-a.example.com:5432/orders_db\n",
                 "- baseline store sessions (redis: image redis:7): Deployment/api-pr-1 container main env "
                 "SESSIONS_URL = redis://sessions:6379/0  \n  Fix: annotate sessions",
                 "- registry registry (eureka: image acme/service-registry:1): Deployment/api-pr-1 container main env "
                 "REGISTRY_HOST = registry  \n  Fix: copy the registry into the lane",
                 "- store outside the repository cache.example.com:6380 (redis: scheme rediss): Deployment/api-pr-1 "
                 "container main env CACHE_URL = rediss://:***@cache.example.com:6380/0  \n  Fix: declare"):
        assert line in readme, line
    assert PASSWORD not in readme
    fixes = {r["target"]: r["fix"] for r in lane.flows[0].metadata["reach"]}  # flow.metadata, written beside it
    assert fixes["shared-a.example.com:5432"] == fixes["catalog"] == "none: marked shared (an intended shared read)"
    assert fixes["cache.example.com:6380"].startswith("declare cache.example.com:6380 as a kardinal.dev.service/")


def test_the_flow_readme_shows_a_secrets_value_as_secret(sourced):
    readme = sourced.flows[0].readme
    for i in range(len(SOURCES)):
        assert f"(postgres: scheme postgres): Secret/app-{i}-secret key DATABASE_URL = (secret)  \n" in readme
    assert PASSWORD not in readme and "appuser" not in readme.replace("appuser:***", "")


@pytest.mark.parametrize("word", LISTENERS)
def test_a_listener_is_no_host(lane, word):
    """`tcp:3306` is where a server listens, not a MySQL host named `tcp`."""
    assert f"{word}:3306" not in classes(lane)


@pytest.mark.parametrize("host", LOCAL)
def test_a_local_address_of_the_pods_own_store_is_the_pods(lane, host):
    """A local Redis is the pod's own sidecar (copied with the pod); a local MySQL it does not run is not."""
    assert not [t for t in classes(lane) if t.startswith(f"{host}:6379")]
    assert classes(lane)[f"{host}:3306"] == ("outside-store", "mysql")


def test_the_evidence_names_the_container_and_field_and_masks_the_value(lane):
    [cache] = [r for r in lane.reach if r.target == "cache.example.com:6380"]
    [e] = cache.evidence
    assert (e.object, e.container, e.field, e.value) == ("Deployment/api-pr-1", "main", "env CACHE_URL",
                                                         "rediss://:***@cache.example.com:6380/0")
    [args] = [r for r in lane.reach if r.target == "args.example.com:3306"]
    assert args.evidence[0].field == "args[0]" and args.evidence[0].value == "mysql://app:***@args.example.com:3306/x"


def test_strict_refuses_the_lane_naming_what_it_reaches(tmp_path, monkeypatch):
    import contextlib
    import io

    from renderer.cli import main

    root = tmp_path / "repo"
    render(root, [deployment("api", [{"name": "main", "image": "acme/api:1", "env": [
        {"name": "CACHE_URL", "value": f"redis://:{PASSWORD}@cache.example.com:6379/0"}]}]), service("api")],
        {"api": "acme/api:2"})
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["render", str(root), "--flow", FLOW, "--service", "api=acme/api:2", "--strict",
                     "--out", str(tmp_path / "out")])
    assert code == 1 and not (tmp_path / "out").exists()
    assert "store outside the repository cache.example.com:6379" in err.getvalue()
    assert PASSWORD not in err.getvalue() + out.getvalue()


# ---------------------------------------------------------------------------------------------------------------
# A lane given its own database: every other address beside it is still judged on its own (issue 44, point 3).
# Once, a value the flow set (the lane's own SQL database) hid every SQL address beside it as the app's fallback:
# `LEGACY_DB=jdbc:mysql://legacy-mysql...` passed render and --strict beside a rewritten DATABASE_URL.

SQL = ["mysql", "postgres", "sqlserver", "oracle", "cockroachdb"]
SQL_URL = {"mysql": "mysql://{}:3306/x", "postgres": "postgres://{}:5432/x", "sqlserver": "sqlserver://{}:1433",
           "oracle": "oracle://{}:1521/x", "cockroachdb": "cockroachdb://{}:26257/x"}


def fallback(tmp_path, given: tuple[str, str], kept: tuple[str, str]) -> dict[str, tuple[str, str]]:
    """A pod whose `given` (key, value) the flow set (the lane's own store), beside a `kept` (key, value)."""
    containers = [{"name": "main", "image": "acme/api:1", "env": [
        {"name": given[0], "value": "placeholder"}, {"name": kept[0], "value": kept[1]}]}]
    result = render(tmp_path / "repo", [deployment("api", containers), service("api")], {"api": "acme/api:2"},
                    env=[("api", *given)])
    return classes(result)


@pytest.mark.parametrize("kind", SQL)
def test_a_database_host_beside_the_lanes_own_sql_database_is_still_reached(tmp_path, kind):
    got = fallback(tmp_path, ("OWN", SQL_URL[kind].format("lane-db.example.com")), ("DB_HOST", "legacy-db.example.com"))
    assert got["legacy-db.example.com"] == ("outside-store", "database")


@pytest.mark.parametrize("kind", SQL)
def test_an_sql_address_of_any_kind_beside_the_lanes_own_database_is_still_reached(tmp_path, kind):
    got = fallback(tmp_path, ("OWN_DB_HOST", "lane-db.example.com"), ("LEGACY", SQL_URL[kind].format("legacy.x")))
    assert [c for t, c in got.items() if t.startswith("legacy.x")] == [("outside-store", kind)]


@pytest.mark.parametrize("kind", SQL)
def test_an_sql_database_of_another_kind_is_still_reached(tmp_path, kind):
    other = "postgres" if kind != "postgres" else "mysql"
    got = fallback(tmp_path, ("OWN", SQL_URL[other].format("lane-db.example.com")),
                   ("LEGACY", SQL_URL[kind].format("legacy.x")))
    assert [c for t, c in got.items() if t.startswith("legacy.x")] == [("outside-store", kind)]


@pytest.mark.parametrize("kind", SQL)
def test_an_address_of_the_same_kind_beside_the_lanes_own_store_is_still_reached(tmp_path, kind):
    got = fallback(tmp_path, ("OWN", SQL_URL[kind].format("lane-db.example.com")),
                   ("LEGACY", SQL_URL[kind].format("legacy.x")))
    assert [c for t, c in got.items() if t.startswith("legacy.x")] == [("outside-store", kind)]
    assert not [t for t in got if t.startswith("lane-db")]  # the value the flow set is the lane's own


def test_a_store_of_another_kind_is_still_reached(tmp_path):
    got = fallback(tmp_path, ("OWN", "redis://lane-cache.example.com:6379"), ("DB_HOST", "legacy-db.example.com"))
    assert got["legacy-db.example.com"] == ("outside-store", "database")
    got = fallback(tmp_path / "2", ("OWN", "redis://lane-cache.example.com:6379"),
                   ("KAFKA_BROKERS", "legacy-kafka.example.com:9092"))
    assert got["legacy-kafka.example.com:9092"] == ("outside-store", "kafka")


# ---------------------------------------------------------------------------------------------------------------
# `lint`: what a service's pods read that its annotations do not declare

def test_lint_names_each_undeclared_store_once_per_service(tmp_path):
    api_env = [{"name": "SESSIONS", "value": "redis://sessions:6379/0"},
               {"name": "ORDERS_DB", "value": "redis://orders-db:6379/0"},
               {"name": "CATALOG", "value": "mysql://catalog:3306/x"},
               {"name": "CACHE", "value": "redis://cache.example.com:6379/0"},
               {"name": "CACHE_AGAIN", "value": "redis://cache.example.com:6379/1"},
               {"name": "REPORTS", "value": url("reports.example.com")}]
    docs = [deployment("api", [{"name": "main", "image": "acme/api:1", "env": api_env}]),
            service("api", dependencies="orders-db:tcp,catalog:tcp"),
            {**service("api-admin"), "spec": {"selector": {"app": "api"}, "ports": [{"name": "http", "port": 81}]}},
            deployment("sessions", [{"name": "main", "image": "redis:7", "env": [
                {"name": "SELF", "value": "redis://sessions:6379/0"}]}]), service("sessions", 6379),
            deployment("orders-db", [{"name": "main", "image": "redis:7"}]), service("orders-db", 6379),
            deployment("catalog", [{"name": "main", "image": "mysql:8"}]), service("catalog", 3306, stateful="true")]
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.yaml").write_text("---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs))
    (root / ".devlane.yaml").write_text("sharedStores: [reports.example.com]\n")
    said = [(p.code, p.message) for p in api.lint(api.Options(repo=root)) if p.code.startswith("undeclared-")]
    assert sorted(said) == [
        ("undeclared-baseline-store", "api reads the baseline store orders-db (redis: image redis:7): Deployment/api "
         "container main env ORDERS_DB = redis://orders-db:6379/0, which its annotations list as a dependency but not "
         "as stateful or with a plugin: a lane that gives api a dev version would reach it"),
        ("undeclared-baseline-store", "api reads the baseline store sessions (redis: image redis:7): Deployment/api "
         "container main env SESSIONS = redis://sessions:6379/0, which its annotations do not declare: a lane that "
         "gives api a dev version would reach it"),
        ("undeclared-outside-store", "api reads the store outside the repository cache.example.com:6379 (redis: "
         "scheme redis): Deployment/api container main env CACHE = redis://cache.example.com:6379/0 (and 1 more), "
         "which its annotations do not declare: a lane that gives api a dev version would reach it"),
    ]


def test_plan_leaves_to_render_only_the_variables_a_bound_plugin_names(harness):
    """Before the plugin runs (`plan`), the variable its definition names (`env_var: CACHE_URL`) is not the lane's
    reach yet; `render` reads it. Every other address of the pod plan judges as render does (issue 44: once, a
    plugin bound to a service hid all its pods' addresses from plan)."""
    harness.builtin("mark", """
        def create_flow(service_specs, pod_specs, flow_uuid, env_var=""):
            return {"pod_specs": pod_specs, "config_map": {}}
    """)
    docs = [deployment("api", [{"name": "main", "image": "acme/api:1", "env": [
        {"name": "CACHE_URL", "value": "redis://cache.example.com:6379/0"},
        {"name": "LEGACY_DB", "value": "jdbc:mysql://legacy-mysql.example.com:3306/orders"}]}]),
        service("api", plugins="mark"),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "mark", "annotations": {
            "kardinal.dev.service/plugin-definition":
                "[{name: mark, type: external, servicename: mark, args: {env_var: CACHE_URL}}]"}},
         "spec": {"ports": [{"port": 1}]}},
        deployment("web", [{"name": "main", "image": "acme/web:1", "env": [
            {"name": "CACHE_URL", "value": "redis://web-cache.example.com:6379/0"}]}]), service("web")]
    harness.write("app.yaml", "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs))
    flow = harness.flow(FLOW, {"api": "acme/api:2", "web": "acme/web:2"})
    planned = {r.target for r in api.plan(harness.options(), flow).reach}
    assert planned == {"web-cache.example.com:6379", "legacy-mysql.example.com:3306"}
    rendered = {r.target for r in harness.render(FLOW, {"api": "acme/api:2", "web": "acme/web:2"}).reach}
    assert rendered == {"cache.example.com:6379", "web-cache.example.com:6379", "legacy-mysql.example.com:3306"}


# ---------------------------------------------------------------------------------------------------------------
# Where a pod's values and files name things: flags, lists of objects, the lane's copies, external services

@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """`api` in namespace `shop`, with a dev copy of its `sessions` store (a dependency) and an external service."""
    config = {"config.json": '{\n  "redis": [\n    {\n      "host": "list-cache.example.com"\n    }\n  ]\n}\n',
              "sessions.url": "redis://sessions.shop.svc.cluster.local:6379/0",
              "quoted.ini": "[redis]\nhost = 'Xcache.example.com'\n",
              "legacy.conf": "# url = redis://hash.example.com:6379\n; url = redis://semicolon.example.com:6379\n"
                             "// url = redis://slashes.example.com:6379\nlevel = info\n"}
    api_pod = {"name": "main", "image": "acme/api:1",
               "command": ["api", "--redis-host=cmd-cache.example.com", "--verbose"],
               "args": ["--memcached-servers=args-cache.example.com", "--orders-db=redis://orders-db:6379/0"],
               "env": [{"name": "PAYMENTS_DB", "value": "postgres://payments.example.com:5432/x"},
                       {"name": "EUREKA_URL", "value": "http://eureka-shared.example.com:8761/eureka"}],
               "volumeMounts": [{"name": "conf", "mountPath": "/conf"}]}
    docs = [deployment("api", [api_pod], [{"name": "conf", "configMap": {"name": "api-conf"}}]),
            service("api", dependencies="sessions:tcp"),
            configmap("api-conf", config),
            deployment("sessions", [{"name": "main", "image": "redis:7"}]), service("sessions", 6379, stateful="true"),
            deployment("orders-db", [{"name": "main", "image": "redis:7"}]), service("orders-db", 6379),
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "payments", "annotations": {
                "kardinal.dev.service/external": "true"}},
             "spec": {"type": "ExternalName", "externalName": "Payments.Example.com."}}]
    for d in docs:
        d["metadata"]["namespace"] = "shop"
    config = "sharedStores: [eureka-shared.example.com]\n"
    return render(tmp_path_factory.mktemp("shop") / "repo", docs, {"api": "acme/api:2"}, config=config)


def test_a_flag_in_command_or_args_is_read_as_its_key(shop):
    """`--redis-host=cache` names a Redis as `REDIS_HOST=cache` does, in `command` as in `args`."""
    got = {r.target: (r.cls, r.kind, r.evidence[0].field) for r in shop.reach}
    assert got["cmd-cache.example.com"] == ("outside-store", "redis", "command[1]")
    assert got["args-cache.example.com"] == ("outside-store", "memcached", "args[0]")


@pytest.mark.parametrize("comment", ["hash", "semicolon", "slashes"])
def test_a_commented_out_line_of_a_file_is_not_read(shop, comment):
    """`#`, `;` and `//` comments: the address of a store the app no longer uses."""
    assert not [r.target for r in shop.reach if comment in r.target]


def test_a_store_named_by_the_key_of_a_list_of_objects(shop):
    got = {r.target: (r.cls, r.kind, r.evidence[0].field) for r in shop.reach}
    assert got["list-cache.example.com"] == ("outside-store", "redis", "key config.json")
    assert got["xcache.example.com"] == ("outside-store", "redis", "key quoted.ini")  # its quotes dropped


def test_a_baseline_store_in_the_pods_namespace_named_in_args(shop):
    [orders] = [r for r in shop.reach if r.target == "shop/orders-db"]
    assert orders.cls == "baseline-store" and orders.evidence[0].field == "args[1]"


def test_the_lanes_copy_and_an_external_services_host_are_not_reached(shop):
    """The ConfigMap copy names the lane's `sessions-pr-1` by its full name; `payments.example.com` is the
    ExternalName of a declared external service (its plugin gives the lane its own); a registry listed in
    sharedStores is shared."""
    got = {r.target: r.cls for r in shop.reach}
    assert not [t for t in got if "sessions" in t or "payments" in t]
    assert got["eureka-shared.example.com:8761"] == "shared"
    conf = next(o for f in shop.flows for o in f.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"]
                == "api-conf-pr-1")
    assert conf["data"]["sessions.url"] == "redis://sessions-pr-1.shop.svc.cluster.local:6379/0"


def test_in_a_flow_namespace_only_a_name_of_the_baselines_namespace_reaches_it(tmp_path):
    """A short name resolves to the lane's copy in the flow namespace; `sessions.shop` names the baseline's."""
    values = {"SHORT": "redis://sessions:6379/0", "QUALIFIED": "redis://sessions.shop:6379/0",
              "FULL": "redis://sessions.shop.svc.cluster.local:6379/0"}
    docs = [deployment("api", [{"name": "main", "image": "acme/api:1",
                                "envFrom": [{"secretRef": {"name": "api-urls"}}]}]),
            service("api", dependencies="sessions:tcp"), secret("api-urls", values),
            deployment("sessions", [{"name": "main", "image": "redis:7"}]), service("sessions", 6379, stateful="true")]
    for d in docs:
        d["metadata"]["namespace"] = "shop"
    result = render(tmp_path / "repo", docs, {"api": "acme/api:2"}, config="isolation: namespace\n")
    [reached] = [r for r in result.reach if r.cls == "baseline-store"]
    assert reached.target == "shop/sessions"
    assert sorted(e.field for e in reached.evidence) == ["key FULL", "key QUALIFIED"]
    assert {e.value for e in reached.evidence} == {"(secret)"}


@pytest.mark.parametrize(("bootstrap", "target"), [("events-kafka:9092", "events-kafka"),
                                                   ("kafka.example.com:9092", "kafka.example.com:9092")])
def test_a_store_a_plugin_gives_the_lane_its_own_state_in_is_shared(tmp_path, bootstrap, target):
    """kafka-topic isolates Kafka (`spec.isolates`): the lane's topics on the shared cluster, in the repository or
    outside it, are the lane's own on purpose: listed as shared, with the plugin named, and never warned about."""
    args = {"cluster": "events", "topics": "orders.created", "groups": "g", "partitions": "1",
            "retention_ms": "86400000"}
    docs = [deployment("orders", [{"name": "main", "image": "acme/orders:1", "env": [
        {"name": "KAFKA_BOOTSTRAP_SERVERS", "value": bootstrap}]}]), service("orders", plugins="order-topics"),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "plugins", "annotations": {
            "kardinal.dev.service/plugin-definition": yaml.safe_dump(
                [{"name": "kafka-topic", "type": "external", "servicename": "order-topics", "args": args}])}},
         "spec": {"ports": [{"port": 1}]}},
        deployment("events-kafka", [{"name": "main", "image": "bitnami/kafka:3"}]), service("events-kafka", 9092)]
    result = render(tmp_path / "repo", docs, {"orders": "acme/orders:2"})
    [reached] = [r for r in result.reach if r.target == target]
    assert reached.cls == "shared" and reached.sign.endswith("; plugin kafka-topic gives the lane its own kafka "
                                                             "state there")
    assert not [w for w in result.warnings if w.code.startswith("reach-")]
