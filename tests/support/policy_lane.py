"""One flow's output policy in-process (`renderer.render.plugins.output_policy.OutputPolicy`), for the per-item tests
of the policy and of the references it follows: flow `pr-7` in namespace `shop`, beside a baseline that holds one
object of each kind a reference can name (and Service `orders` with its pods in namespace `prod`), and the outcome
of one plugin call (its refusals, each `(rule <rule>): <why>`; [] when it is accepted).

No process, no file: each call is a few milliseconds, so a test may have one case per item of every list the
policy checks, and a mutation tool (which runs in-process tests against mutated code) sees them all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

from renderer.core.k8s import identity
from renderer.errors import PluginError, Problem
from renderer.render.copies.dev_set import DevSet
from renderer.render.inputs.document import Document
from renderer.render.model.records import Model
from renderer.render.model.topology import build_model
from renderer.render.plugins.output_policy import Caller, OutputPolicy
from renderer.render.settings.grants import Grants
from renderer.render.settings.repo_config import PluginAllow
from renderer.render.settings.trust import Trusted

FLOW = "pr-7"
NS = "shop"
OTHER_NS = "prod"
RBAC = "rbac.authorization.k8s.io/v1"
OWN = {"app": "x-pr-7"}  # the labels of a case's own pods
BASE = {"app": "db"}  # the labels of the baseline's pods (Deployment/db), which Service/db selects


def obj(api: str, kind: str, name: str, **rest) -> dict:
    """An object; `meta` goes into its metadata."""
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, **rest.pop("meta", {})}, **rest}


def flow_deployment(containers: list[dict] | None = None, annotations: dict | None = None, **pod) -> dict:
    """A Deployment of the flow (`x-pr-7`, selecting the flow's own labels): its pod spec `pod` with `containers`
    (one plain container `c` unless given) and pod `annotations`."""
    meta = {"labels": OWN, **({"annotations": annotations} if annotations else {})}
    return obj("apps/v1", "Deployment", "x-pr-7", spec={
        "selector": {"matchLabels": OWN},
        "template": {"metadata": meta, "spec": {"containers": containers or [{"name": "c"}], **pod}}})


BASELINE = [
    obj("v1", "Service", "db", spec={"selector": BASE, "ports": [{"port": 5432}]}),
    obj("apps/v1", "Deployment", "db", spec={"selector": {"matchLabels": BASE}, "template": {
        "metadata": {"labels": BASE}, "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}}}),
    obj("v1", "PersistentVolumeClaim", "data", spec={"accessModes": ["ReadWriteOnce"]}),
    obj("v1", "ConfigMap", "cfg", data={"a": "b"}),
    obj("v1", "Secret", "creds", type="Opaque"),
    obj("v1", "ServiceAccount", "api-sa"),
    obj("v1", "Service", "metrics", meta={"labels": {"monitor": "db"}}, spec={"selector": BASE}),
    obj("gateway.networking.k8s.io/v1", "Gateway", "web", spec={"gatewayClassName": "istio"}),
    obj("autoscaling/v2", "HorizontalPodAutoscaler", "hpa", spec={"scaleTargetRef": {"kind": "Deployment",
                                                                                     "name": "db"}}),
    obj("keda.sh/v1alpha1", "TriggerAuthentication", "auth", spec={}),
    obj("v1", "Service", "orders", meta={"namespace": OTHER_NS}, spec={"selector": {"app": "orders"}}),
    obj("apps/v1", "Deployment", "orders", meta={"namespace": OTHER_NS}, spec={
        "selector": {"matchLabels": {"app": "orders"}}, "template": {"metadata": {"labels": {"app": "orders"}},
                                                                     "spec": {"containers": [{"name": "o"}]}}}),
]


@cache
def model() -> Model:
    return build_model([Document(o, "app.yaml", i) for i, o in enumerate(BASELINE)], NS)


@cache
def _grants() -> Grants:
    return Grants(Trusted({}), {}, Path("/no-repo"))


def policy() -> OutputPolicy:
    return OutputPolicy(model(), DevSet(), FLOW, _grants())


def full_kind(o: dict) -> str:
    """`group/Kind` (`Kind` in the core group), as `spec.emits` and `policy.plugins.<p>.kinds` list it."""
    group = str(o.get("apiVersion", "")).rpartition("/")[0]
    return f"{group}/{o['kind']}" if group else str(o["kind"])


NOTHING = PluginAllow()  # no trusted grant


def caller(*objs: dict, allow: PluginAllow = NOTHING, plugin: str = "seed", builtin: bool = False,
           emits: tuple[str, ...] | None = None) -> Caller:
    """Plugin `plugin` (instance `seed`), declaring `emits` in its `spec.emits` (default: the kinds of `objs`)."""
    kinds = tuple(dict.fromkeys(full_kind(o) for o in objs)) if emits is None else emits
    return Caller("seed", plugin, kinds, allow, builtin)


def said(problems: list[Problem]) -> list[str]:
    return [p.message.removeprefix("refused by the output policy ") for p in problems]


def outcome(call: Callable[[OutputPolicy], None]) -> tuple[OutputPolicy, list[Problem]]:
    """The policy after `call` (one plugin call checked by a fresh policy) and the problems it refused it with."""
    pol = policy()
    try:
        call(pol)
    except PluginError as e:
        return pol, e.problems
    return pol, []


def added(*objs: dict, **kw) -> list[str]:
    """The refusals of a plugin call adding `objs` (a CreateFlow); [] when accepted, and then each is the plugin's."""
    pol, problems = outcome(lambda p: p.created(caller(*objs, **kw), [], list(objs), NS))
    assert pol.owners == ({} if problems else {identity(o, NS): "seed" for o in objs})
    return said(problems)


def problems_of(*objs: dict, **kw) -> list[Problem]:
    """The problems of a refused plugin call adding `objs`."""
    problems = outcome(lambda p: p.created(caller(*objs, **kw), [], list(objs), NS))[1]
    assert problems, "accepted"
    return problems


def changed(before: dict, after: dict, **kw) -> list[str]:
    """The refusals of a CreateFlow that changed a dev workload from `before` to `after`; [] when accepted."""
    return said(outcome(lambda p: p.created(caller(after, **kw), [(before, after)], [], NS))[1])


def transformed(before: list[dict], after: list[dict], **kw) -> list[str]:
    """The refusals of a post-render step that turned `before` into `after`; [] when accepted."""
    return said(outcome(lambda p: p.transformed(caller(*after, **kw), before, after))[1])


def hook_problems(before: list[dict], after: list[dict], **kw) -> list[Problem]:
    """The problems of a lifecycle hook that patched `before` into `after`; [] when accepted."""
    return outcome(lambda p: p.hooked(caller(*after, **kw), before, after))[1]


def hooked(before: list[dict], after: list[dict], **kw) -> list[str]:
    return said(hook_problems(before, after, **kw))
