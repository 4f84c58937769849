"""Every dev copy gets its own stores (issue 44, point 2): whatever made a service a dev copy (the target, the path
from an entry with routing none, a cycle), the stateful services it depends on get dev versions, so `--strict` is
satisfiable on any correctly annotated app. Checked over generated apps (an entry, services calling each other and
their stores by name, every store annotated stateful and listed in its callers' dependencies): the render under
`--strict` succeeds, and, computed from the rendered objects alone, every dev pod names only dev copies of the
stores it calls. Once, a caller copied for the path kept the baseline's stores and `--strict` could never pass."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from renderer import api
from renderer.render.plan.flow_spec import FlowRequest

pytestmark = pytest.mark.e2e

FLOW = "pr-1"


def _app(edges: dict[str, list[str]], stores: dict[str, list[str]]) -> list[dict]:
    docs: list[dict] = []
    names = sorted(set(edges) | {s for ss in stores.values() for s in ss})
    for name in names:
        store = name.startswith("db")
        calls = edges.get(name, [])
        own = stores.get(name, [])
        env = [{"name": f"{c.upper()}_URL", "value": f"http://{c}:80"} for c in calls]
        env += [{"name": f"{s.upper()}_URL", "value": f"postgres://app@{s}:5432/app"} for s in own]
        deps = [f"{c}:http" for c in calls] + [f"{s}:tcp" for s in own]
        annotations = {"kardinal.dev.service/stateful": "true"} if store else {}
        if deps:
            annotations["kardinal.dev.service/dependencies"] = ",".join(deps)
        image = "postgres:17" if store else f"acme/{name}:1"
        port = {"name": "tcp", "port": 5432} if store else {"name": "http", "port": 80}
        docs.append({"apiVersion": "apps/v1", "kind": "StatefulSet" if store else "Deployment",
                     "metadata": {"name": name}, "spec": {
                         "selector": {"matchLabels": {"app": name}}, **({"serviceName": name} if store else {}),
                         "template": {"metadata": {"labels": {"app": name}},
                                      "spec": {"containers": [{"name": "main", "image": image, "env": env}]}}}})
        docs.append({"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": name, **({"annotations": annotations} if annotations else {})},
                     "spec": {"selector": {"app": name}, "ports": [port]}})
    docs.append({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                 "metadata": {"name": "entry", "annotations": {"kardinal.dev.service/ingress": "true"}},
                 "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [{
                     "path": "/", "pathType": "Prefix",
                     "backend": {"service": {"name": "s0", "port": {"number": 80}}}}]}}]}})
    return docs


@st.composite
def apps(draw):
    """s0 (behind the entry) .. sN-1: each calls later ones (a DAG), some use stores db0..; a target among them."""
    n = draw(st.integers(2, 5))
    services = [f"s{i}" for i in range(n)]
    edges = {s: sorted(draw(st.sets(st.sampled_from(services[i + 1:]), max_size=2)) if i + 1 < n else [])
             for i, s in enumerate(services)}
    for i in range(1, n):  # every service is reachable from the entry
        if not any(services[i] in e for e in edges.values()):
            edges[services[i - 1]] = sorted({*edges[services[i - 1]], services[i]})
    dbs = [f"db{i}" for i in range(draw(st.integers(1, 3)))]
    stores = {s: sorted(draw(st.sets(st.sampled_from(dbs), max_size=2))) for s in services}
    return edges, stores, draw(st.sampled_from(services[1:]))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@example(app=({"s0": ["s1"], "s1": []}, {"s0": ["db0"], "s1": ["db1"]}, "s1"))  # the shape: s0 on the path
@given(app=apps())
def test_every_dev_copy_names_only_dev_copies_of_its_stores_and_strict_passes(tmp_path_factory, app):
    edges, stores, target = app
    root = tmp_path_factory.mktemp("app")
    (root / "app.yaml").write_text("---\n".join(yaml.safe_dump(d, sort_keys=False) for d in _app(edges, stores)))
    flow = api.resolve(FlowRequest(flow_id=FLOW, images={target: f"acme/{target}:2"}))
    result = api.render(api.Options(repo=root, strict=True, routing="none"), flow)
    objects = [o for f in result.flows for o in f.objects]
    pods = {o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in objects
            if o["kind"] in ("Deployment", "StatefulSet")}
    store_names = {s for ss in stores.values() for s in ss}
    for name, spec in pods.items():
        for e in spec["containers"][0].get("env") or []:
            host = e["value"].split("@")[-1].split("/")[2 if "://" in e["value"] and "@" not in e["value"] else 0]
            host = host.split(":")[0].split(".")[0]
            base = host.removesuffix(f"-{FLOW}")
            if base in store_names:
                assert host == f"{base}-{FLOW}", (name, e, sorted(pods))
