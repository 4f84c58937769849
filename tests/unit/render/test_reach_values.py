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
