"""Names that are another flow's, in-process: with a flow `hotfix-pr-7` rendered beside `pr-7` (the output
directory's other flows, given to the policy), `cfg-hotfix-pr-7` is hotfix-pr-7's copy of the repository's ConfigMap
`cfg`; a plugin of `pr-7` may neither add an object so named nor point its objects at one. Without that flow beside
it, or for a kind of which the repository has no `cfg`, the name is pr-7's own. (tests/security covers the same
through a real plugin; these are what the mutation run of the policy reaches.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from renderer.errors import PluginError
from renderer.render.copies.dev_set import DevSet
from renderer.render.inputs.document import Document
from renderer.render.model.topology import build_model
from renderer.render.plugins.output_policy import OutputPolicy
from renderer.render.settings.grants import Grants
from renderer.render.settings.trust import Trusted

from .test_output_policy import BASELINE, FLOW, choice, refusals

OTHER = "hotfix-pr-7"


def policy(flows: frozenset[str]) -> OutputPolicy:
    model = build_model([Document(o, "app.yaml", i) for i, o in enumerate(BASELINE)], "shop")
    return OutputPolicy(model, DevSet(), FLOW, Grants(Trusted({}), {}, Path("/no-repo")), flows)


def config_map(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop"}}


def reader(config: str) -> dict:
    """A Deployment of the flow whose pod reads the ConfigMap `config`."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "seed-pr-7", "namespace": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "seed-pr-7"}},
                     "template": {"metadata": {"labels": {"app": "seed-pr-7"}}, "spec": {"containers": [
                         {"name": "m", "envFrom": [{"configMapRef": {"name": config}}]}]}}}}


@pytest.mark.parametrize("flows", [frozenset({OTHER}), frozenset({OTHER, FLOW})])  # its own id is no other flow
def test_an_object_named_as_another_flows_copy_is_refused_while_that_flow_is_beside(flows):
    pol = policy(flows)
    assert refusals(lambda: pol.created(pol.caller("seed", choice()), [], [config_map(f"cfg-{OTHER}")], "shop")) == [
        (f"ConfigMap/cfg-{OTHER} in namespace shop", "seed", "other-flow")]


def workload(name: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "x-pr-7"}},
                     "template": {"metadata": {"labels": {"app": "x-pr-7"}}, "spec": {"containers": [{"name": "m"}]}}}}


@pytest.mark.parametrize(("flows", "obj"), [
    (frozenset(), config_map(f"cfg-{OTHER}")),  # no such flow: cfg-hotfix is pr-7's own name
    (frozenset({"hotfix-pr-8"}), config_map(f"cfg-{OTHER}")),  # another flow, not that one
    (frozenset({OTHER}), config_map("cfg-pr-7")),  # the flow's own copy of cfg
    (frozenset({OTHER}), workload(f"cfg-{OTHER}")),  # the repository's cfg is a ConfigMap: no copy of it
])
def test_the_same_name_is_the_flows_own_otherwise(flows, obj):
    pol = policy(flows)
    pol.created(pol.caller("seed", choice()), [], [obj], "shop")
    assert pol.owners == {(obj["kind"], "shop", obj["metadata"]["name"]): "seed"}


def test_a_reference_to_another_flows_copy_is_refused_while_that_flow_is_beside():
    pol = policy(frozenset({OTHER}))
    caller = pol.caller("seed", choice())
    with pytest.raises(PluginError) as info:
        pol.created(caller, [], [reader(f"cfg-{OTHER}")], "shop")
    (problem,) = info.value.problems
    assert problem.where.object == "Deployment/seed-pr-7 in namespace shop"
    assert problem.message.startswith("refused by the output policy (rule reference): ")
    assert f"names ConfigMap/cfg-{OTHER}, which is not an object of the flow" in problem.message


@pytest.mark.parametrize("flows", [frozenset(), frozenset({"hotfix-pr-8"})])
def test_a_reference_to_that_name_is_the_flows_own_without_that_flow(flows):
    pol = policy(flows)
    pol.created(pol.caller("seed", choice()), [], [reader(f"cfg-{OTHER}")], "shop")
    assert pol.owners == {("Deployment", "shop", "seed-pr-7"): "seed"}
