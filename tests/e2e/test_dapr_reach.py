"""Dapr is a state boundary devlane sees (issue 44, point 1, first half): a dev copy keeps its app-id, so its Dapr
sidecar loads the baseline's Components (unscoped, or scoped to that app-id) and reaches the stores they address;
render names each (warning; error under --strict), with the Component and the app-id. On Dapr's own quickstarts
(dapr/quickstarts, read from a fetched snapshot into a temporary copy: never copied into the project), and on
scoped Components, computed from the rendered objects and the repository's Components."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from support.mirror import export, snapshot

from renderer import api
from renderer.render.plan.flow_spec import FlowRequest

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def quickstarts(tmp_path_factory) -> Path:
    """The quickstarts' Kubernetes manifests, from a fetched snapshot of dapr/quickstarts, in a temporary copy."""
    git_dir = snapshot("dapr+quickstarts", "DEVLANE_DAPR_QUICKSTARTS")
    out = tmp_path_factory.mktemp("quickstarts")
    for part in ("tutorials/hello-kubernetes/deploy", "tutorials/pub-sub/deploy"):
        export(git_dir, part, out)
    return out / "tutorials"


def render(repo: Path, target: str, strict: bool = False):
    flow = api.resolve(FlowRequest(flow_id="pr-1", images={target: f"example.com/{target}:2"}))
    return api.render(api.Options(repo=repo, strict=strict), flow)


def loaded_components(repo: Path, app_id: str) -> dict[str, dict]:
    """Independent eyes: the Components of the repository a sidecar with `app_id` loads (unscoped or scoped to it),
    read from the manifests with PyYAML."""
    found = {}
    for path in repo.rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "Component" and (
                    not doc.get("scopes") or app_id in doc["scopes"]):
                found[doc["metadata"]["name"]] = doc
    return found


@pytest.mark.parametrize(("app", "target", "app_id"), [("hello-kubernetes/deploy", "pythonapp", "pythonapp"),
                                                      ("hello-kubernetes/deploy", "nodeapp", "nodeapp"),
                                                      ("pub-sub/deploy", "node-subscriber", "node-subscriber")])
def test_a_dev_copy_that_loads_the_baselines_components_reaches_their_stores(quickstarts, app, target, app_id):
    repo = quickstarts / app
    result = render(repo, target)
    objects = [o for f in result.flows for o in f.objects]
    [dev] = [o for o in objects if o["kind"] == "Deployment"]
    # the dev pod runs a Dapr sidecar under the baseline's app-id, beside the baseline's Components
    annotations = dev["spec"]["template"]["metadata"]["annotations"]
    assert annotations["dapr.io/enabled"] == "true" and annotations["dapr.io/app-id"] == app_id
    expected = {}
    for name, c in loaded_components(repo, app_id).items():
        host = next(m["value"] for m in c["spec"]["metadata"] if m["name"] == "redisHost")
        expected[host] = name
    assert expected  # the quickstart's state store or pub/sub
    reached = {r.target: r for r in result.reach}
    for host, name in expected.items():
        r = reached[host]
        assert r.cls == "outside-store" and r.kind == "redis"
        assert f"Dapr Component {name}" in r.sign and f"app-id {app_id}" in r.sign
        assert r.evidence[0].object == f"Component/{name}" and r.evidence[0].field == "metadata redisHost"
    with pytest.raises(Exception, match="the lane reaches the store outside the repository"):
        render(repo, target, strict=True)


APPS = ("orders", "cart")


def _app(tmp_path: Path, scopes: list[str] | None) -> Path:
    docs = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": name}}, "template": {"metadata": {
            "labels": {"app": name}, "annotations": {"dapr.io/enabled": "true", "dapr.io/app-id": name}},
            "spec": {"containers": [{"name": "main", "image": f"example.com/{name}:1"}]}}}} for name in APPS]
    docs += [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
              "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80}]}} for name in APPS]
    docs.append({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "redis"}, "spec": {
        "serviceName": "redis", "selector": {"matchLabels": {"app": "redis"}}, "template": {
            "metadata": {"labels": {"app": "redis"}}, "spec": {"containers": [{"name": "r", "image": "redis:7.4"}]}}}})
    docs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "redis"},
                 "spec": {"selector": {"app": "redis"}, "ports": [{"name": "tcp", "port": 6379}]}})
    component = {"apiVersion": "dapr.io/v1alpha1", "kind": "Component", "metadata": {"name": "statestore"},
                 "spec": {"type": "state.redis", "version": "v1",
                          "metadata": [{"name": "redisHost", "value": "redis:6379"}]}}
    if scopes is not None:
        component["scopes"] = scopes
    docs.append(component)
    (tmp_path / "app.yaml").write_text("---\n".join(yaml.safe_dump(d) for d in docs))
    return tmp_path


@pytest.mark.parametrize(("scopes", "reached"), [(None, True), (["orders"], True), (["cart"], False), ([], True)])
def test_scopes_decide_which_dev_copies_load_a_component(tmp_path, scopes, reached):
    result = render(_app(tmp_path, scopes), "orders")
    hits = [r for r in result.reach if r.target == "redis" and "Dapr Component statestore" in r.sign]
    assert bool(hits) == reached, result.reach
    if reached:  # the repository's Redis is the baseline's store: named by its Service
        assert hits[0].cls == "baseline-store" and hits[0].evidence[0].value == "redis:6379"
        assert "dapr: {isolation: app-id}" in hits[0].fix


def test_a_lane_in_its_own_namespace_loads_none_of_the_baselines_components(tmp_path):
    repo = _app(tmp_path, None)
    (repo / ".devlane.yaml").write_text("namespace: shop\n")
    flow = api.resolve(FlowRequest(flow_id="pr-1", images={"orders": "example.com/orders:2"}))
    result = api.render(api.Options(repo=repo, isolation="namespace"), flow)
    assert not [r for r in result.reach if "Dapr" in r.sign]
    # ... so its sidecar finds no Component at all: its state calls would fail, and that is said, with the fix
    [warning] = [p for p in result.warnings if "Dapr sidecar" in p.message]
    assert "(app-id orders) that loads Component statestore in shop: Components are namespaced, so the flow " \
           "namespace has none" in warning.message and "dapr: {isolation: app-id}" in warning.hint


# -- the Dapr way: `dapr: {isolation: app-id}` (issue 44, point 1, second half) ----------------------------------


def _isolated(repo: Path, isolation: str = "suffix") -> Path:
    config = repo / ".devlane.yaml"
    text = config.read_text() if config.exists() else ""
    config.write_text(text + "dapr: {isolation: app-id}\n")
    return repo


def _objects(result) -> list[dict]:
    return [o for f in result.flows for o in f.objects]


def test_a_lane_of_its_own_app_id_and_state_store_passes_strict_on_the_quickstart(quickstarts, tmp_path):
    """hello-kubernetes: pythonapp's dev copy runs as app-id pythonapp-pr-1, and the lane's copy of statestore is
    scoped to it and keyed by it; the baseline's statestore, unscoped, is keyed by the app-id too (Dapr's default):
    the lane's keys are its own, so --strict renders. Checked from the rendered objects against Dapr's CRD, and
    built by kubectl kustomize."""
    from support import kubectl_kustomize, validate_strict

    repo = tmp_path / "hello"
    subprocess.run(["cp", "-r", str(quickstarts / "hello-kubernetes" / "deploy"), str(repo)], check=True)
    result = render(_isolated(repo), "pythonapp", strict=True)
    objects = _objects(result)
    [dev] = [o for o in objects if o["kind"] == "Deployment"]
    assert dev["spec"]["template"]["metadata"]["annotations"]["dapr.io/app-id"] == "pythonapp-pr-1"
    [component] = [o for o in objects if o["kind"] == "Component"]
    validate_strict(component)  # against ../shared/crds/dapr
    assert component["metadata"]["name"] == "statestore-pr-1" and component["scopes"] == ["pythonapp-pr-1"]
    metadata = {m["name"]: m.get("value") for m in component["spec"]["metadata"]}
    assert metadata["keyPrefix"] == "appid" and metadata["redisHost"] == "dapr-dev-redis-master:6379"
    assert all(r.cls == "shared" for r in result.reach if "Dapr" in r.sign)
    from renderer.cli import main

    assert main(["render", str(repo), "--flow", "pr-1", "--service", "pythonapp=example.com/pythonapp:2", "--strict",
                 "--out", str(tmp_path / "out")]) == 0
    assert {"Component", "Deployment"} <= {o["kind"] for o in kubectl_kustomize(tmp_path / "out" / "flows" / "pr-1")}


def test_a_baseline_state_store_shared_by_name_stays_reached(tmp_path):
    """keyPrefix name (every app's keys under the store's name): a lane app-id changes nothing in the baseline's
    Component, which the dev copy still loads: named; the lane's own copy is keyed by its app-id."""
    repo = _app(tmp_path, None)
    text = (repo / "app.yaml").read_text().replace("value: redis:6379", "value: redis:6379\n  - name: keyPrefix\n"
                                                                       "    value: name")
    (repo / "app.yaml").write_text(text)
    result = render(_isolated(repo), "orders")
    reached = {(r.cls, r.evidence[0].object) for r in result.reach if "Dapr" in r.sign}
    assert reached == {("baseline-store", "Component/statestore"), ("shared", "Component/statestore-pr-1")}


def test_pubsub_gets_the_lanes_consumer_group_and_the_shared_topics_stay_named(quickstarts, tmp_path):
    repo = tmp_path / "pubsub"
    subprocess.run(["cp", "-r", str(quickstarts / "pub-sub" / "deploy"), str(repo)], check=True)
    result = render(_isolated(repo), "node-subscriber")
    [component] = [o for o in _objects(result) if o["kind"] == "Component"]
    metadata = {m["name"]: m.get("value") for m in component["spec"]["metadata"]}
    assert metadata["consumerID"] == "{appID}" and component["scopes"] == ["node-subscriber-pr-1"]
    signs = [r.sign for r in result.reach if r.cls != "shared"]
    assert signs and all("what the lane publishes reaches the baseline's topics" in s for s in signs)


def test_callers_in_the_lane_invoke_the_lanes_app_ids_and_components(tmp_path):
    repo = _app(tmp_path, None)
    text = (repo / "app.yaml").read_text().replace(
        "image: example.com/cart:1", "image: example.com/cart:1\n        env:\n        - name: ORDERS_APP_ID\n"
        "          value: orders\n        - name: STATE_STORE\n          value: statestore\n        - name: NOTE\n"
        "          value: orders are shipped")
    (repo / "app.yaml").write_text(text)
    flow = api.resolve(FlowRequest(flow_id="pr-1", images={"orders": "example.com/orders:2",
                                                          "cart": "example.com/cart:2"}))
    result = api.render(api.Options(repo=_isolated(repo)), flow)
    cart = next(o for o in _objects(result) if o["kind"] == "Deployment" and o["metadata"]["name"] == "cart-pr-1")
    env = {e["name"]: e["value"] for e in cart["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env == {"ORDERS_APP_ID": "orders-pr-1", "STATE_STORE": "statestore-pr-1", "NOTE": "orders are shipped"}


def test_in_its_own_namespace_a_lane_gets_the_components_under_their_names(tmp_path):
    repo = _app(tmp_path, ["orders", "cart"])
    (repo / ".devlane.yaml").write_text("namespace: shop\n")
    flow = api.resolve(FlowRequest(flow_id="pr-1", images={"orders": "example.com/orders:2"}))
    result = api.render(api.Options(repo=_isolated(repo), isolation="namespace"), flow)
    objects = _objects(result)
    [dev] = [o for o in objects if o["kind"] == "Deployment"]
    [component] = [o for o in objects if o["kind"] == "Component"]
    assert dev["spec"]["template"]["metadata"]["annotations"]["dapr.io/app-id"] == "orders"
    assert component["metadata"]["name"] == "statestore"
    assert component["metadata"]["namespace"] == dev["metadata"]["namespace"] != "shop"
    assert component["scopes"] == ["orders", "cart"]
    metadata = {m["name"]: m.get("value") for m in component["spec"]["metadata"]}
    assert metadata["keyPrefix"] == "namespace"
    assert [r.cls for r in result.reach if "Dapr" in r.sign] == ["shared"]


def test_the_quickstart_in_a_flow_namespace_names_the_components_its_sidecar_cannot_find(quickstarts, tmp_path):
    """hello-kubernetes under `--isolation namespace` without the lane's own Dapr: nodeapp's dev sidecar in
    default-pr-1 finds no statestore (Components are namespaced) — a warning, and with `dapr.isolation` the copy
    is there and the warning gone."""
    repo = tmp_path / "hello"
    subprocess.run(["cp", "-r", str(quickstarts / "hello-kubernetes" / "deploy"), str(repo)], check=True)
    (repo / ".devlane.yaml").write_text("namespace: default\nisolation: namespace\n")
    flow = api.resolve(FlowRequest(flow_id="pr-1", images={"nodeapp": "example.com/nodeapp:2"}))
    before = api.render(api.Options(repo=repo), flow)
    assert not [o for o in _objects(before) if o["kind"] == "Component"]
    [warning] = [p for p in before.warnings if "Dapr sidecar" in p.message]
    assert "nodeapp in default-pr-1 runs a Dapr sidecar (app-id nodeapp) that loads Component statestore in " \
           "default" in warning.message
    after = api.render(api.Options(repo=_isolated(repo)), flow)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in _objects(after)
            if o["kind"] == "Component"] == [("default-pr-1", "statestore")]
    assert not [p for p in after.warnings if "Dapr sidecar" in p.message]
