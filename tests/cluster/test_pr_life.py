"""The pull request's whole life on the real control plane (issue 43, point 6): the shipped action's devlane step
(pr.sh, through tests/support/pr_life.py) commits lanes to the lanes branch, and after each job the branch is applied
the way examples/argocd/applicationset-lanes.yaml makes Argo CD apply it: an Application per flows/<id>/ (its
kustomization built and server-side applied), and a lane that left the branch pruned (its Application goes, the
finalizer deletes everything it labelled). The lane's objects appear, change with a push, and disappear on close;
the baseline is never touched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.harness import git
from support.isolation import load_yaml_files
from support.lane_apps import baseline_objects
from support.lane_server import Server, meta
from support.pr_life import LANES, Life

NAMESPACE = "bookshop-life"  # not the bookshop other tests of the cluster apply


@pytest.fixture
def server(cluster) -> Iterator[Server]:
    s = Server(cluster)
    try:
        yield s
    finally:
        s.close()
        cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false", check=False)


class ArgoLanes:
    """Argo CD with the lanes ApplicationSet: one Application per lane directory on the branch, pruned when it goes."""

    def __init__(self, server: Server, life: Life, work: Path):
        self.server, self.life, self.work = server, life, work
        self.applied: set[str] = set()
        self.syncs = 0

    def sync(self) -> set[str]:
        """The branch's lanes applied, the lanes no longer on it pruned; returns the lanes applied."""
        self.syncs += 1
        lanes: set[str] = set()
        if self.life.tip(LANES):
            checkout = self.work / f"sync-{self.syncs}"
            git(self.work, "clone", "-q", "--branch", LANES, str(self.life.remote), str(checkout))
            for flow_dir in sorted((checkout / "flows").iterdir()) if (checkout / "flows").is_dir() else []:
                if flow_dir.name.startswith(("_", ".")) or not (flow_dir / "kustomization.yaml").is_file():
                    continue
                self.server.apply_directory(flow_dir, None, kustomize=True)
                lanes.add(flow_dir.name)
        for gone in sorted(self.applied - lanes):
            self.server.prune(gone)
        self.applied = lanes
        return lanes


def _lane_objects(server: Server, flow: str) -> list[dict]:
    kinds = [server.resource(g, k) for g, k in (("apps", "Deployment"), ("apps", "StatefulSet"), ("", "Service"),
                                                 ("", "ConfigMap"), ("networking.k8s.io", "Ingress"))]
    return [o for r in kinds for o in server.list(r, f"devlane.dev/flow={flow}", NAMESPACE)
            if meta(o).get("deletionTimestamp") is None]


def _desired(obj: dict | None) -> tuple:
    """What an object asks for (its controllers change only its status): spec, data, labels and generation."""
    assert obj is not None
    return meta(obj).get("generation"), obj.get("spec"), obj.get("data"), meta(obj).get("labels")


def _image(deployment: dict | None, container: str) -> str:
    assert deployment is not None
    (c,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == container]
    return c["image"]


def test_the_lanes_branch_drives_the_cluster_as_argo_cd_would(server, harness, tmp_path):
    life = Life(harness, tmp_path, NAMESPACE)
    baseline = baseline_objects(load_yaml_files(sorted((life.work / "k8s").glob("*.yaml"))))
    server.install_crds(baseline)
    keys = server.apply_objects(baseline, None, "gitops-baseline")
    versions = {k: _desired(server.get(k)) for k in keys}
    argo = ArgoLanes(server, life, tmp_path)
    orders = ("apps", "Deployment", NAMESPACE, "orders-pr-7")

    head = life.open_pr(7, {"src/orders/main.py": "print('orders')\n"})
    assert life.job("open", 7).code == 0
    assert argo.sync() == {"pr-7"}
    assert _image(server.get(orders), "app") == f"ghcr.io/acme/bookshop-orders:{head[:7]}"

    head = life.push(7, {"src/orders/main.py": "print('orders, again')\n"})  # CI built a new image
    assert life.job("open", 7).code == 0
    assert argo.sync() == {"pr-7"}
    assert _image(server.get(orders), "app") == f"ghcr.io/acme/bookshop-orders:{head[:7]}"

    life.open_pr(8, {"docs/guide.md": "# guide\n"})  # no service changed: no lane, nothing applied
    assert life.job("open", 8).code == 0
    assert argo.sync() == {"pr-7"} and _lane_objects(server, "pr-8") == []

    life.close(7)
    assert life.job("close", 7).code == 0
    assert argo.sync() == set()
    server.cluster.wait_for(lambda: _lane_objects(server, "pr-7") == [], what="lane pr-7 to be pruned")
    assert {k: _desired(server.get(k)) for k in keys} == versions  # the baseline, untouched
