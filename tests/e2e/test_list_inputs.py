"""An input `kind: List` (and a typed list, `ServiceList`) is read as kubectl, Argo CD and Flux read it (issue 44,
point 5): its items are the repository's objects. Once, a List was skipped with a warning and its Services were
invisible: `--service` named a service "not in the repository"."""

from __future__ import annotations

import yaml
from support.harness import tree


def objects(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def as_list(kind: str, items: list[dict], typed_items: bool = False) -> str:
    if typed_items:  # a typed list's items carry no apiVersion/kind (as `kubectl get svc -o yaml` may give them)
        items = [{k: v for k, v in i.items() if k not in ("apiVersion", "kind")} for i in items]
    return yaml.safe_dump({"apiVersion": "v1", "kind": kind, "items": items}, sort_keys=False)


def test_the_items_of_a_list_are_services_and_workloads_of_the_repository(harness, tmp_path):
    from support.builders import app_yaml

    api = objects(app_yaml("api"))
    web = objects(app_yaml("web"))
    harness.write("k8s/list.yaml", as_list("List", [api[0], api[1], {"not": "an object"}]))
    harness.write("k8s/deploy.yaml", yaml.safe_dump(web[0]))
    harness.write("k8s/services.yaml", as_list("ServiceList", [web[1]], typed_items=True))
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--service", "web=web:2",
                       "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "an item of this List is not a Kubernetes object" in done.stderr and "k8s/list.yaml" in done.stderr
    files = tree(tmp_path / "out" / "flows" / "pr-1")
    rendered = [o for name, data in files.items() if name.endswith((".yaml", ".yml"))
                for o in yaml.safe_load_all(data) if isinstance(o, dict) and "metadata" in o]
    names = {(o["kind"], o["metadata"]["name"]) for o in rendered}
    assert {("Deployment", "api-pr-1"), ("Deployment", "web-pr-1")} <= names
    dev_services = {o["metadata"]["name"]: o["spec"]["selector"] for o in rendered if o["kind"] == "Service"}
    # the dev Services select the dev pods: computed from the rendered objects
    pods = {o["metadata"]["name"]: o["spec"]["template"]["metadata"]["labels"] for o in rendered
            if o["kind"] == "Deployment"}
    for service, selector in dev_services.items():
        chosen = [d for d, labels in pods.items() if selector.items() <= labels.items()]
        assert chosen and all(d.endswith("-pr-1") for d in chosen), (service, selector, chosen)
