"""The lane's reach (`render/checks/reach.py`, issue 41), part 3, each case rendering in its own test (a module-scoped
render is credited by mutmut to its first test only): the fix a baseline store's warning carries, for each state of
its annotations (stateful or not, listed or not in the dependencies of the dev services that name it); the stores
the Dapr Components a dev pod's sidecar loads address, `sharedStores` covering a host outside the repository there
as in the pod; and a registry outside the repository listed in `sharedStores`. Read from what a render warns."""

from __future__ import annotations

import pytest
from unit.render.test_reach_siblings import deployment, render, secret, service

SHARED = 'or mark it kardinal.dev.service/shared: "true" if lanes may use the baseline\'s on purpose'


def app(name: str, env: list[dict], dapr: bool = False) -> dict:
    doc = deployment(name, [{"name": "main", "image": f"acme/{name}:1", "env": env}])
    if dapr:
        doc["spec"]["template"]["metadata"]["annotations"] = {"dapr.io/enabled": "true", "dapr.io/app-id": name}
    return doc


def store(name: str, **annotations: str) -> list[dict]:
    return [deployment(name, [{"name": "main", "image": "redis:7"}]), service(name, 6379, **annotations)]


def warned(result) -> dict[str, tuple[str, str]]:
    """Each reach warning, by its first words up to the target's `(`: (its code, its hint)."""
    return {w.message.split(" (")[0]: (w.code, w.hint) for w in result.warnings if w.code.startswith("reach-")}


SESSIONS = [{"name": "SESSIONS", "value": "redis://sessions:6379/0"}]
IN_SECRET = [{"name": "SESSIONS", "valueFrom": {"secretKeyRef": {"name": "api-sec", "key": "SESSIONS"}}}]


@pytest.mark.parametrize(("annotations", "web", "env", "fix"), [
    ({}, True, SESSIONS, 'annotate sessions kardinal.dev.service/stateful: "true" and add it to the '
     "kardinal.dev.service/dependencies of api, web (the lane then gets a dev copy, or a plugin's), "),
    ({}, False, SESSIONS, 'annotate sessions kardinal.dev.service/stateful: "true" (the lane then gets a dev copy, '
     "or a plugin's), "),  # listed in api's dependencies: nothing to add there
    ({"stateful": "true"}, True, SESSIONS, "add sessions (already stateful) to the kardinal.dev.service/dependencies "
     "of api, web: the lane then gives them its dev copy, "),
    ({"stateful": "true"}, False, IN_SECRET, "sessions is stateful and a declared dependency, yet the dev pod names "
     "the baseline's: a value devlane does not rewrite (another namespace's name, an address built at run time) or "
     "a plugin that keeps it (a read-through overlay); write the Service's own name, "),  # a Secret is never rewritten
], ids=["callers-lack-it", "declared-not-stateful", "stateful-callers-lack-it", "stateful-declared"])  # fmt: skip
def test_a_baseline_stores_fix_proposes_only_the_annotations_it_lacks(tmp_path, annotations, web, env, fix):
    """`api` (and `web` when given) name the baseline's `sessions`; `api` lists it in its dependencies unless `web`
    names it too: the hint adds what the store's and its callers' annotations lack, callers named, or says why
    a stateful declared dependency is still reached."""
    docs = [app("api", env), service("api", **({} if web else {"dependencies": "sessions:tcp"}))]
    docs += [secret("api-sec", {"SESSIONS": "redis://sessions:6379/0"}), *store("sessions", **annotations)]
    if web:
        docs += [app("web", SESSIONS), service("web")]
    images = {"api": "acme/api:2", **({"web": "acme/web:2"} if web else {})}
    said = warned(render(tmp_path / "repo", docs, images))
    assert said == {"the lane reaches the baseline store sessions": ("reach-baseline-store", fix + SHARED)}


def component(name: str, kind: str, host: str) -> dict:
    return {"apiVersion": "dapr.io/v1alpha1", "kind": "Component", "metadata": {"name": name},
            "spec": {"type": kind, "version": "v1", "metadata": [{"name": "redisHost", "value": host}]}}  # fmt: skip


# (Component, type, redisHost, the target reached, its class)
COMPONENTS = [
    ("statestore", "state.redis", "cache.example.com:6379", "cache.example.com:6379", "shared"),
    ("pubsub", "pubsub.redis", "broker.example.com:6379", "broker.example.com:6379", "outside-store"),
    ("orders", "state.redis", "redis:6379", "redis", "baseline-store"),
]


def dapr_lane(tmp_path):
    """`api`'s sidecar loads three Components: a state store on a host listed in `sharedStores`, a pub/sub broker
    on a host not listed, and a state store on the repository's `redis`, whose name `sharedStores` lists too (it
    lists hosts outside the repository: a repository Service is shared by its own annotation)."""
    docs = [app("api", [], dapr=True), service("api"), *store("redis")]
    docs += [component(name, kind, host) for name, kind, host, *_ in COMPONENTS]
    return render(tmp_path / "repo", docs, {"api": "acme/api:2"}, config="sharedStores: [cache.example.com, redis]\n")


def test_a_dapr_components_store_is_reached_and_shared_only_when_listed_outside_the_repository(tmp_path):
    """Each store once, with its class, and the Component entry that names it as the evidence."""
    got = {r.target: (r.cls, [(e.object, e.container, e.field, e.value) for e in r.evidence])
           for r in dapr_lane(tmp_path).reach}  # fmt: skip
    assert got == {
        target: (cls, [(f"Component/{name}", None, "metadata redisHost", host)])
        for name, _, host, target, cls in COMPONENTS
    }


def test_a_dapr_components_store_is_warned_about_unless_shared(tmp_path):
    said = warned(dapr_lane(tmp_path))
    assert {k: code for k, (code, _) in said.items()} == {
        "the lane reaches the store outside the repository broker.example.com:6379": "reach-outside-store",
        "the lane reaches the baseline store redis": "reach-baseline-store",
    }
    assert all("dapr: {isolation: app-id}" in hint for _, hint in said.values())


def test_a_registry_outside_the_repository_listed_in_shared_stores_is_shared(tmp_path):
    """The listed registry is shared, not warned about; one on another host still is."""
    env = [{"name": "EUREKA_URL", "value": "http://discovery.example.com:8761/eureka/"},
           {"name": "OTHER_EUREKA_URL", "value": "http://other.example.com:8761/eureka/"}]  # fmt: skip
    result = render(tmp_path / "repo", [app("api", env), service("api")], {"api": "acme/api:2"},
                    config="sharedStores: [discovery.example.com]\n")  # fmt: skip
    assert {r.target: r.cls for r in result.reach} == {
        "discovery.example.com:8761": "shared",
        "other.example.com:8761": "registry",
    }
    assert {k: code for k, (code, _) in warned(result).items()} == {
        "the lane reaches the registry other.example.com:8761": "reach-registry"
    }
