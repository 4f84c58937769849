"""The lane's reach (`render/checks/reach.py`, issue 41), part 4: the stores a dev pod's Dapr sidecar reaches through
the Components it loads (the baseline's, and the lane's own copies under `dapr: {isolation: app-id}`), and the fix a
baseline store's warning carries, which reads the store's annotations as they are: whether it is stateful already,
and which dev services name it without listing it in their dependencies. Each case renders in its own test (a
module-scoped render is credited by mutmut to its first test only); read from the render's warnings and reach."""

from __future__ import annotations

import pytest
from unit.render.test_reach_siblings import deployment, render, service

DAPR = {"dapr.io/enabled": "true", "dapr.io/app-id": "api"}
SHARED = 'or mark it kardinal.dev.service/shared: "true" if lanes may use the baseline\'s on purpose'


def dapr_app(namespace: str | None = None) -> list[dict]:
    """`api` with a Dapr sidecar (app-id `api`), the repository's `redis` and an unscoped state store addressing it."""
    api = deployment("api", [{"name": "main", "image": "acme/api:1"}])
    api["spec"]["template"]["metadata"]["annotations"] = DAPR
    store = {"apiVersion": "dapr.io/v1alpha1", "kind": "Component", "metadata": {"name": "statestore"},
             "spec": {"type": "state.redis", "version": "v1",
                      "metadata": [{"name": "redisHost", "value": "redis:6379"}]}}  # fmt: skip
    docs = [api, service("api"), deployment("redis", [{"name": "main", "image": "redis:7"}]), service("redis", 6379)]
    for d in [*docs, store]:
        if namespace:
            d["metadata"]["namespace"] = namespace
    return [*docs, store]


def test_a_dev_sidecar_that_loads_the_baselines_component_reaches_its_store(tmp_path):
    """The dev copy keeps app-id `api`: its sidecar loads the baseline's `statestore`, whose keys are then the
    baseline's (not the lane's own copy): the repository's `redis` is a baseline store, warned about with the
    Component as evidence."""
    result = render(tmp_path / "repo", dapr_app(), {"api": "acme/api:2"})
    [r] = result.reach
    sign = "Dapr Component statestore (state.redis), which the sidecar of Deployment/api-pr-1 loads as app-id api"
    assert (r.cls, r.target, r.kind, r.sign) == ("baseline-store", "redis", "redis", sign)
    assert [(e.object, e.container, e.field, e.value) for e in r.evidence] == [
        ("Component/statestore", None, "metadata redisHost", "redis:6379")
    ]
    [warning] = [w for w in result.warnings if w.code.startswith("reach-")]
    assert warning.code == "reach-baseline-store"
    assert warning.message.startswith(
        f"the lane reaches the baseline store redis (redis: {sign}): Component/statestore metadata redisHost = "
        "redis:6379;"
    )


def test_the_lanes_own_copy_of_a_state_store_in_a_flow_namespace_holds_the_lanes_keys(tmp_path):
    """Namespace isolation with the lane's own Dapr: the app-id stays `api`, and the sidecar loads the lane's copy of
    `statestore` in the flow namespace (keyed by namespace and app-id): shared on purpose, never warned about."""
    config = "isolation: namespace\ndapr: {isolation: app-id}\n"
    result = render(tmp_path / "repo", dapr_app("shop"), {"api": "acme/api:2"}, config=config)
    [r] = result.reach
    assert (r.cls, r.target) == ("shared", "shop/redis")
    assert r.sign.endswith("; the lane's own copy: its keys are prefixed by its namespace and app-id")
    assert not [w for w in result.warnings if w.code.startswith("reach-")]


@pytest.mark.parametrize(("sessions", "api", "fix"), [
    ({}, {}, 'annotate sessions kardinal.dev.service/stateful: "true" and add it to the kardinal.dev.service/'
             "dependencies of api (the lane then gets a dev copy, or a plugin's), "),
    ({}, {"dependencies": "sessions:tcp"},
     'annotate sessions kardinal.dev.service/stateful: "true" (the lane then gets a dev copy, or a plugin\'s), '),
    ({"stateful": "true"}, {}, "add sessions (already stateful) to the kardinal.dev.service/dependencies of api: the "
                               "lane then gives them its dev copy, "),
], ids=["neither", "a dependency only", "stateful only"])  # fmt: skip
def test_a_baseline_stores_fix_proposes_only_the_annotations_it_lacks(tmp_path, sessions, api, fix):
    """`api` names the baseline's `sessions`; `web`, also a dev service, names nothing: the fix names `api` alone as
    the service to declare the dependency, and only when it does not, and asks for `stateful` only when it lacks."""
    env = [{"name": "SESSIONS", "value": "redis://sessions:6379/0"}]
    docs = [
        deployment("api", [{"name": "main", "image": "acme/api:1", "env": env}]),
        service("api", **api),
        deployment("web", [{"name": "main", "image": "acme/web:1"}]),
        service("web"),
        deployment("sessions", [{"name": "main", "image": "redis:7"}]),
        service("sessions", 6379, **sessions),
    ]
    result = render(tmp_path / "repo", docs, {"api": "acme/api:2", "web": "acme/web:2"})
    [warning] = [w for w in result.warnings if w.code.startswith("reach-")]
    assert warning.code == "reach-baseline-store"
    assert warning.message.startswith(
        "the lane reaches the baseline store sessions (redis: image redis:7): Deployment/api-pr-1 container main "
        "env SESSIONS = redis://sessions:6379/0;"
    )
    assert warning.hint == fix + SHARED
