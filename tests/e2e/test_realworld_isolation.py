"""Isolation holds on real public apps (../shared/realworld, used in place; skipped when absent).

For every app there, each test builds a temporary repository the way an adopting platform engineer would, renders a
realistic flow with the real CLI, and checks the output with
`support.isolation`, which computes the properties from the rendered files and never from devlane's report:
no baseline selector matches a dev pod; no dev pod reads a reference to a baseline Service that has a dev
version; every dev->dev edge is wired or named in a warning; no dev pod mounts a baseline PVC; dev copies sit
in their baseline's namespace; every ConfigMap, Secret and claim a dev pod reads exists (generated names
followed); the flow builds with `kubectl kustomize` and passes strict validation (1.31).

Two repositories per app that upstream builds with kustomize or Helm:
- flattened: the objects the tools build, written out as plain YAML files carrying Kardinal's annotations;
- built (`... (kustomize)`, `... (helm)`): the app's own tree copied as it is, read through `inputs:` in
  `.devlane.yaml` (devlane runs kustomize and Helm itself), the annotations kept in `.devlane.yaml services:`
  by the built names, and the entry Ingress added as a plain-YAML input. The baseline the checker compares
  with is what `kubectl kustomize` / `helm template` build from that tree, independently of devlane.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import kubectl_kustomize, validate_strict
from support.dns import check_namespace_flow
from support.isolation import check_flow, config_map_copy_changes, edge_warned, pod_spec, show
from support.realworld_apps import APPS, BUILT, FLOW, App, dev_service, edge, image, render


@pytest.mark.parametrize("app", APPS + BUILT, ids=[a.id for a in APPS + BUILT])
def test_a_flow_on_a_real_app_is_isolated(app: App, tmp_path: Path):
    r = render(app, tmp_path)
    assert r.returncode == 0, r.stderr
    images = {c.get("image") for o in r.objects for c in pod_spec(o).get("containers") or []}
    assert all(image(t) in images for t in app.targets), f"a target was not rendered with its image: {sorted(images)}"

    violations = check_flow(r.baseline, r.objects, FLOW) + config_map_copy_changes(r.baseline, r.objects, FLOW)
    broken = [str(v) for v in violations if v.kind != "unwired"]
    assert not broken, "isolation broken:\n" + "\n".join(broken)

    unwired = {v.edge: v for v in violations if v.kind == "unwired"}
    silent = [str(v) for e, v in unwired.items() if not edge_warned(r.stderr, e, FLOW)]
    assert not silent, "unwired and not warned:\n" + "\n".join(silent) + "\n--- stderr:\n" + r.stderr
    for text in app.wired:
        a, b = edge(text)
        assert dev_service(r.objects, a) and dev_service(r.objects, b), f"{text}: not both dev versions in the flow"
        assert (a, b) not in unwired, f"{text}: the address is in the manifests, so the edge must be wired"
    for text in app.unwired:
        a, b = edge(text)
        assert (a, b) in unwired, f"{text}: expected a dev->dev edge that no manifest wires ({show(a)} hard-codes it)"

    built = kubectl_kustomize(r.flow_dir)
    assert len(built) == len(r.objects)
    for obj in built:
        validate_strict(obj)


@pytest.mark.parametrize("how", ["--strict", "policy.strict"])
def test_an_unwired_edge_fails_a_strict_render(how: str, tmp_path: Path):
    """Addresses hard-coded in the guestbook's images: a warning by default (above), an error under strict."""
    app = next(a for a in APPS if a.id == "k8s-guestbook")
    if how == "--strict":
        r = render(app, tmp_path, "--strict")
    else:
        r = render(app, tmp_path, config="apiVersion: devlane.dev/v1alpha1\nkind: Config\npolicy:\n  strict: true\n")
    assert r.returncode == 1, r.stderr
    assert edge_warned(r.stderr, edge("frontend -> redis-master"), FLOW, severity="error"), r.stderr
    assert not r.flow_dir.exists()


# -- isolation namespace: the same flows, every name resolved by DNS ------------------------------------------------

LANE_NAMESPACE = "demo"  # for the apps whose manifests name no namespace


@pytest.mark.parametrize("app", APPS + BUILT, ids=[a.id for a in APPS + BUILT])
def test_a_flow_in_namespace_isolation_resolves_every_edge_by_dns(app: App, tmp_path: Path):
    """In a flow namespace every dependency edge, hard-coded short names included (the guestbooks, robot-shop,
    skaffold-microservices), resolves to the dev copy or, through an alias, to the baseline: computed with
    `support.dns`, a model of cluster DNS, from the rendered objects."""
    r = render(app, tmp_path, settings={"isolation": "namespace", "namespace": LANE_NAMESPACE})
    assert r.returncode == 0, r.stderr
    violations = check_namespace_flow(r.baseline, r.objects, FLOW, default_namespace=LANE_NAMESPACE)
    assert not violations, "\n".join(str(v) for v in violations) + "\n--- stderr:\n" + r.stderr
    assert "is not wired" not in r.stderr, r.stderr  # short names need no rewriting in a flow namespace
    for text in (*app.wired, *app.unwired):  # both ends are dev copies beside each other
        a, b = edge(text)
        for ns, name in (a, b):
            lane = f"{ns or LANE_NAMESPACE}-{FLOW}"
            assert any(o["metadata"]["name"] == name and o["metadata"]["namespace"] == lane and pod_spec(o)
                       for o in r.objects), f"{text}: no dev copy of {name} in {lane}"
    built = kubectl_kustomize(r.flow_dir)
    assert len(built) == len(r.objects)
    for obj in built:
        validate_strict(obj)


MESH_APPS = ["bank-of-anthos", "eks-workshop-retail-store", "retail-store-sample-app (helm)"]


@pytest.mark.parametrize("routing", ["gateway-api", "istio"])
@pytest.mark.parametrize("app_id", MESH_APPS)
def test_a_flow_on_a_mesh_routes_every_hop_by_the_header(app_id: str, routing: str, tmp_path: Path):
    """On a mesh a real app's flow copies only what changed (and its stateful stores), and `support.mesh_model`, a
    model of GAMMA and Istio routing, finds from the rendered routes (and `flows/_mesh/`) that the flow's baggage
    member reaches every dev copy and anything else the baseline. Routes pass the upstream CRDs (strict)."""
    from support import CRDS
    from support.mesh_model import check_mesh_flow, entry_adds_member

    if not (CRDS / "gateway-api").is_dir() or not (CRDS / "istio").is_dir():
        pytest.skip("upstream Gateway API / Istio CRDs not available")
    app = next(a for a in APPS + BUILT if a.id == app_id)
    crds = ["--validate", "strict", "--crds", str(CRDS / "gateway-api"), "--crds", str(CRDS / "istio")]
    r = render(app, tmp_path, *crds, settings={"routing": routing, "mesh": {"gateway": "gateways/public"}})
    assert r.returncode == 0, r.stderr
    assert "not validated" not in r.stderr, r.stderr
    shared: list[dict] = []
    if routing == "istio":
        shared = kubectl_kustomize(r.flow_dir.parent / "_mesh")
        assert shared
    built = kubectl_kustomize(r.flow_dir)
    assert len(built) == len(r.objects)
    for obj in [*built, *shared]:
        validate_strict(obj)
    producers = [o for o in r.objects
                 if o["kind"] == "HTTPRoute" and o["spec"]["parentRefs"][0].get("kind") == "Service"]
    assert bool(producers) == (routing == "gateway-api"), "gateway-api routes each dev Service; istio in _mesh"
    violations = check_mesh_flow(r.baseline, [*r.objects, *shared], FLOW)
    assert not violations, "\n".join(violations)
    assert entry_adds_member(r.objects, FLOW)
    none = render(app, tmp_path / "none")
    copies = {key for key in (o["metadata"]["name"] for o in r.objects if o["kind"] == "Service")}
    assert len(copies) < len([o for o in none.objects if o["kind"] == "Service"]), \
        "a mesh flow copies fewer services than routing none"  # the entry path stays baseline
    for target in app.targets:
        assert any(n == f"{target.rsplit('/', 1)[-1]}-{FLOW}" for n in copies), f"no dev copy of {target}"
