"""The dev copies (`renderer.render.copies.clone`) where their siblings' tests left a rule unchecked (issue 41,
surviving mutants): which NetworkPolicies a flow copies and how each copy's pod selector and peers select the dev
pods (`matchExpressions` values of the keys a selector reads, and only of those; peers in another namespace, an
`ipBlock` peer and a peer of other pods left alone; egress peers as well as ingress ones), the copy's metadata (in
the baseline's namespace, its labels and the flow's), and the volume mode of a claim: a Service that names only
other claims does not decide it, and an unknown mode is a claim copy (the one a missing claim makes a flow fail).

In-process: a repository of a few objects in namespace `shop` (the `.devlane.yaml` default, no object names
one), its model, plan and dev copies (`clone.make`) for flow `pr-1` giving `api` a dev version.
"""

from __future__ import annotations

import pytest

from renderer.core.names import FLOW_LABEL, MANAGED_BY, dev_label_value
from renderer.render.checks.invariants import flow_risks
from renderer.render.copies import clone
from renderer.render.inputs.document import Document
from renderer.render.model.topology import build_model
from renderer.render.plan.flow_spec import build_flow
from renderer.render.plan.planner import make_plan
from renderer.render.settings.isolation import Lane
from renderer.render.settings.render_settings import CopySettings

FLOW = "pr-1"
NS = "shop"
API = {"podSelector": {"matchLabels": {"app": "api"}}}
OTHER_NS = {**API, "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "other"}}}
LB = {"podSelector": {"matchLabels": {"app": "lb"}}}
BLOCK = {"ipBlock": {"cidr": "10.0.0.0/8"}}


def dev(value: str) -> str:
    return dev_label_value(value, FLOW)


def app(name: str, annotations: dict | None = None, volumes: list | None = None) -> list[dict]:
    """Deployment `name` (pods `app: name, team: shop`) and its Service."""
    pod = {"containers": [{"name": "main", "image": f"{name}:1"}], **({"volumes": volumes} if volumes else {})}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name, "team": "shop"}}, "spec": pod}}},
        service(name, annotations),
    ]  # fmt: skip


def service(name: str, annotations: dict | None = None, selects: str | None = None) -> dict:
    meta = {"name": name, **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"selector": {"app": selects or name}, "ports": [{"name": "http", "port": 80}]}}  # fmt: skip


def policy(name: str, pods: dict, ingress: list | None = None, egress: list | None = None) -> dict:
    spec = {"podSelector": pods, **({"ingress": [{"from": ingress}]} if ingress else {}),
            **({"egress": [{"to": egress}]} if egress else {})}  # fmt: skip
    meta = {"name": name, "labels": {"team": "shop"}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta, "spec": spec}


def exprs(*items: tuple[str, str, list | None]) -> dict:
    """A selector of `matchExpressions` (key, operator, values)."""
    return {"matchExpressions": [{"key": k, "operator": op, **({"values": v} if v else {})} for k, op, v in items]}


POLICIES = [
    policy("api-in", {"matchLabels": {"team": "shop"}, **exprs(("app", "In", ["api", "web"]),
                                                               ("team", "In", ["shop"]))},
           ingress=[{"podSelector": exprs(("app", "In", ["api"]))}, OTHER_NS, BLOCK, LB], egress=[API]),
    policy("db-out", {"matchLabels": {"app": "db"}}, egress=[API, BLOCK]),
    policy("web-in", {"matchLabels": {"app": "web"}}, ingress=[LB]),
    policy("other-ns-in", {"matchLabels": {"app": "db"}}, ingress=[OTHER_NS]),
    policy("web-by-expression", exprs(("app", "In", ["web"]))),
    policy("any-app", exprs(("app", "Exists", None))),
    policy("db-from-block", {"matchLabels": {"app": "db"}}, ingress=[BLOCK]),
    policy("team-list", {"matchLabels": ["team"]}),  # only `team`, which dev pods keep: not matched
]  # fmt: skip


@pytest.fixture(scope="module")
def copies() -> dict[tuple[str, str], dict]:
    """The flow's per-flow copies of repository objects, by (kind, name) (a fixture, not a cache: a mutation tool
    runs each mutant in a fork of one process)."""
    docs = [*app("api"), *app("db"), *POLICIES]
    model = build_model([Document(o, "app.yaml", i) for i, o in enumerate(docs)], NS)
    plan = make_plan(model, build_flow(FLOW, {"api": "api:2"}, []), "none")[0]
    dev = clone.make(model, plan, CopySettings(Lane(), 1, False))[0]
    return {(o.obj["kind"], o.obj["metadata"]["name"]): o.obj for o in dev.objects}


COPIED = {  # policy -> its copy's spec
    "api-in": {
        "podSelector": {"matchLabels": {"team": "shop"}, **exprs(("app", "In", [dev("api"), dev("web")]),
                                                                 ("team", "In", ["shop"]))},
        "ingress": [{"from": [{"podSelector": exprs(("app", "In", ["api"]))}, OTHER_NS, BLOCK, LB,
                              {"podSelector": exprs(("app", "In", [dev("api")]))}]}],
        "egress": [{"to": [API, {"podSelector": {"matchLabels": {"app": dev("api")}}}]}],
    },
    "db-out": {"podSelector": {"matchLabels": {"app": "db"}},
               "egress": [{"to": [API, BLOCK, {"podSelector": {"matchLabels": {"app": dev("api")}}}]}]},
}  # fmt: skip


@pytest.mark.parametrize("name", [p["metadata"]["name"] for p in POLICIES])
def test_a_policy_is_copied_only_where_it_selects_or_admits_a_dev_pods_baseline_and_then_the_dev_pods(copies, name):
    """Only `api-in` (selecting the api pods) and `db-out` (letting db reach them) miss the dev pods; the others
    select other pods, pods of another namespace, an IP block, the dev pods as well (`Exists`), or read only labels
    the dev pods keep (`team`, even in a `matchLabels` the API server would refuse). In a copy the
    `matchExpressions` of `app` (a key a selector reads) name the dev values, `team` (none reads) keeps its, and
    every peer of the dev pods, ingress and egress, gets a dev twin; no other peer does."""
    got = copies.get(("NetworkPolicy", f"{name}-{FLOW}"))
    assert (got and got["spec"]) == COPIED.get(name)


def test_a_policy_copy_is_in_the_baselines_namespace_with_its_labels_and_the_flows(copies):
    assert copies["NetworkPolicy", f"api-in-{FLOW}"]["metadata"] == {
        "name": f"api-in-{FLOW}", "namespace": NS,
        "labels": {"team": "shop", FLOW_LABEL: FLOW, MANAGED_BY: "devlane"}}  # fmt: skip


CLAIM = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]


@pytest.mark.parametrize(("modes", "codes"), [
    (["bogus"], ["bad-annotation", "volume"]),  # an unknown mode: a copy, and the claim to copy is missing
    (["other=emptyDir"], ["volume"]),
    (["other=emptyDir", "data=emptyDir"], []),  # the second Service says the mode of `data`
])  # fmt: skip
def test_the_volume_mode_of_a_claim_is_the_first_that_names_it(modes, codes):
    """`data` is not in the repository: a flow of `api` fails unless `data` gets no copy (emptyDir or shared)."""
    docs = [
        app("api", volumes=CLAIM)[0],
        *(service(f"api-{i}", {"devlane.dev/volume": m}, selects="api") for i, m in enumerate(modes)),
    ]
    model = build_model([Document(o, "app.yaml", i) for i, o in enumerate(docs)], NS)
    assert [p.code for p in flow_risks(model)] == codes
