"""What the lane's reach says of a dev pod's own env values (`reach._outside`, `reach._baseline`, issue 41): every
address in a value is judged on its own (one that the repository defines, or the pod's own sidecar on localhost,
does not hide the next one); the evidence shows the value around the address, however far into the value it is;
a repository store marked shared is "shared", not a baseline store; a Service marked external is not the
baseline's store. Read from the render's reach records, as `render`, `lint` and the PR comment show them."""

from __future__ import annotations

from support import app_yaml, yaml_doc

FAR = "redis://far.example.com:6379"


def reach(harness, env: dict[str, str], sidecars: tuple[dict, ...] = ()) -> dict[str, tuple[str, str, str]]:
    """{target: (class, kind, evidence shown)} of dev pod `api` with `env` (and `sidecars` beside its container)."""
    main = {"name": "main", "image": "acme/api:1", "env": [{"name": k, "value": v} for k, v in env.items()]}
    harness.write("api.yaml", app_yaml("api", containers=[main, *sidecars]))
    result = harness.render("pr-1", {"api": "acme/api:2"})
    return {r.target: (r.cls, r.kind, r.evidence[0].value) for r in result.reach}


def test_an_address_the_repository_defines_does_not_hide_the_next_one(harness):
    harness.write("web.yaml", app_yaml("web"))
    value = f"redis://web:6379 {FAR}"
    assert reach(harness, {"CACHES": value}) == {"far.example.com:6379": ("outside-store", "redis", value)}


def test_the_pods_own_sidecar_on_localhost_does_not_hide_the_next_address(harness):
    value = f"redis://localhost:6379 {FAR}"
    got = reach(harness, {"CACHES": value}, ({"name": "cache", "image": "redis:7"},))
    assert got == {"far.example.com:6379": ("outside-store", "redis", value)}


def test_the_evidence_is_the_value_around_the_address_far_into_it(harness):
    value = "-Dlog.level=info " * 12 + f"-Dcache.url={FAR}"
    [(cls, kind, shown)] = reach(harness, {"JAVA_OPTS": value}).values()
    assert (cls, kind) == ("outside-store", "redis")
    assert shown.startswith("...") and shown.endswith(f"-Dcache.url={FAR}")


def test_a_store_marked_shared_is_shared(harness):
    harness.write("db.yaml", app_yaml("db", containers=[{"name": "main", "image": "postgres:16"}], port=5432)
                  .replace("annotations: {}", "annotations: {kardinal.dev.service/shared: 'true'}"))
    value = "postgres://db:5432/orders"
    assert reach(harness, {"DATABASE_URL": value}) == {"db": ("shared", "postgres", value)}


def test_a_service_marked_external_is_not_the_baselines_store(harness):
    harness.write("billing.yaml", yaml_doc({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "billing-db", "annotations": {"kardinal.dev.service/external": "true"}},
        "spec": {"type": "ExternalName", "externalName": "billing.example.com",
                 "ports": [{"name": "pg", "port": 5432}]}}))
    assert reach(harness, {"DATABASE_URL": "postgres://billing-db:5432/billing"}) == {}


def test_in_a_flow_namespace_a_full_name_of_the_lanes_own_copy_is_not_the_baseline(harness):
    """Namespace isolation: the dev pod's `sessions.shop.svc.cluster.local` is rewritten to the flow namespace, where
    the lane's copy of the stateful `sessions` runs: that copy is the lane's own, not the baseline's store."""
    docs = app_yaml("api", containers=[{"name": "main", "image": "acme/api:1", "env": [
        {"name": "SESSIONS_URL", "value": "redis://sessions.shop.svc.cluster.local:6379/0"}]}]).replace(
        "annotations: {}", "annotations: {kardinal.dev.service/dependencies: 'sessions:http'}")
    docs += app_yaml("sessions", containers=[{"name": "main", "image": "redis:7"}], port=6379).replace(
        "annotations: {}", "annotations: {kardinal.dev.service/stateful: 'true'}")
    harness.write("app.yaml", docs.replace("metadata: {name: ", "metadata: {namespace: shop, name: ").replace(
        "metadata:\n  name: ", "metadata:\n  namespace: shop\n  name: "))
    harness.config({"isolation": "namespace"})
    result = harness.render("pr-1", {"api": "acme/api:2"})
    [env] = [c["env"] for o in result.main.objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "api"
             for c in o["spec"]["template"]["spec"]["containers"]]
    assert env == [{"name": "SESSIONS_URL", "value": "redis://sessions.shop-pr-1.svc.cluster.local:6379/0"}]
    assert [r.target for r in result.reach] == []
