"""Plugins stage: Model + Plan + DevSet + Choices -> `PluginResults` (the plugin host runs the calls).

- Order and concurrency: instances that share a dependent run in plan order (a later one sees an
  earlier one's changes); independent instances run concurrently, and results are applied in plan
  order, so the output is the same as a serial run.
- Behaviour (kops): `enforce` fails the render; `bypass` turns the failure into a warning and
  drops that plugin's changes.
- Kardinal plugins edit `containers[0]`, so the target container (`devlane.dev/container`) is
  moved to the front for the call and put back afterwards. What a plugin returns is final, once the
  output policy (`output_policy`) has accepted it; a refusal fails the call like any plugin failure.
"""

from __future__ import annotations

import base64
import copy
import json
import posixpath
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...core import progress
from ...core.k8s import with_pod_spec
from ...core.source import Source
from ...errors import DevlaneError, Problem, Where, fail
from ...host.choose import Candidate, Choice, PluginUse
from ...host.invoke import Invocation, Outcome
from ...host.plugin_host import Created, PluginHost
from ...host.resolve import PluginSource
from ...host.state import FlowState, Record
from ..copies.config_edits import ConfigEdits
from ..copies.dev_set import DevSet, DevWorkload
from ..model.address_reads import config_reads
from ..model.plugin_definitions import PluginDef
from ..model.records import Model
from ..plan.planner import Plan, PluginInstance
from .output_policy import OutputPolicy, emitted

Status = Literal["ok", "replayed", "bypassed", "provisioned", "not provisioned", "replayed (recorded for other inputs)"]
FILE_ANNOTATION = "devlane.dev/file"  # on the ConfigMap an `extensions` file entry becomes: the file's path
_CONFIGMAP_KEY = re.compile(r"[-._a-zA-Z0-9]+\Z")
WorkKey = tuple[str | None, str]


@dataclass(frozen=True)
class InstanceResult:
    servicename: str
    flow_id: str
    flow_uuid: str
    source: PluginSource
    dependents: list[str]
    config_map: Any
    resources: list[dict] = field(default_factory=list)
    status: Status = "ok"
    choice: Choice | None = None
    record: Record | None = None


@dataclass(frozen=True)
class PluginResults:
    """What the plugins did to a flow: per instance, the messages, the bypassed, the records to write."""

    results: list[InstanceResult] = field(default_factory=list)
    messages: list[Problem] = field(default_factory=list)
    bypassed: list[dict] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)  # provision mode: what to write
    pod_specs: dict[WorkKey, dict] = field(default_factory=dict)  # dev workload -> its pod spec after plugins
    configs: ConfigEdits | None = None  # what the plugins changed in the ConfigMaps dev pods read

    def patched(self, dev: DevSet) -> DevSet:
        """`dev` (its pod specs already the plugins') with the plugins' ConfigMap edits."""
        return dev if self.configs is None else self.configs.apply(dev)

    @property
    def resources(self) -> list[dict]:
        """Every object the plugin calls made (their `resources`), in call order."""
        return [o for r in self.results for o in r.resources]

    @property
    def instances(self) -> list[tuple[str, list[str]]]:
        """(plugin instance, dependents) of each call that ran."""
        return [(r.servicename, r.dependents) for r in self.results]

    def used(self, flow_id: str) -> list[Choice]:
        """The implementations that ran for `flow_id`."""
        return [r.choice for r in self.results if r.choice is not None and r.flow_id == flow_id]


Work = tuple[PluginInstance, Choice, str]  # an instance, its implementation, its behaviour


def plugin_use(pdef: PluginDef) -> PluginUse:
    """What the plugin host needs of a plugin definition to choose its implementation."""
    return PluginUse(pdef.servicename, tuple(Candidate(c["name"], c["args"]) for c in pdef.candidates),
                     pdef.side_effects, pdef.where)


def choose_all(host: PluginHost, model: Model, plan: Plan) -> dict[str, Choice]:
    """Every instance's implementation before any plugin runs, so a missing plugin fails fast."""
    return {i.servicename: host.choose(plugin_use(model.plugin_defs[i.servicename]), plan.flow_id)
            for i in plan.instances}


def _to_front(pod_spec: dict, container: str | None) -> tuple[dict, int]:
    containers = pod_spec.get("containers") or []
    idx = next((i for i, c in enumerate(containers) if c.get("name") == container), 0)
    if idx:
        containers.insert(0, containers.pop(idx))
    return pod_spec, idx


def _back(pod_spec: dict, idx: int) -> dict:
    containers = pod_spec.get("containers") or []
    if idx and containers:
        containers.insert(idx, containers.pop(0))
    return pod_spec


def target_first(pod_spec: dict, container: str | None) -> tuple[dict, int]:
    """A copy of the pod spec with the target container first (Kardinal plugins edit `containers[0]`)."""
    return _to_front(copy.deepcopy(pod_spec), container)


def target_back(pod_spec: dict, index: int) -> dict:
    """A copy of a pod spec a plugin returned, with the target container back at `index`."""
    return _back(copy.deepcopy(pod_spec), index)


def file_object(source: Source | None, path: str, where: Where) -> dict:
    """A repository file named in `extensions` ({file: PATH}), handed over as kustomize's configMapGenerator
    would build it: a ConfigMap whose one key is the file's name (in binaryData when it is not UTF-8 text)."""
    if source is None or not source.exists(path):
        raise fail(f"extension file {path} is not in the repository", where,
                   "give the path from the repository root, e.g. {file: db/seed.sql}", code="plugin-extension")
    data = source.read(path)
    key = posixpath.basename(path)
    if not _CONFIGMAP_KEY.match(key):
        raise fail(f"extension file {path}: its name is not a ConfigMap key (letters, digits, '-', '_', '.')", where,
                   "rename the file", code="plugin-extension")
    try:
        content: dict = {"data": {key: data.decode("utf-8")}}
    except UnicodeDecodeError:
        content = {"binaryData": {key: base64.b64encode(data).decode()}}
    name = re.sub(r"[^a-z0-9.-]+", "-", path.lower()).strip("-.")[:253].rstrip("-.") or "file"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": {FILE_ANNOTATION: path}},
            **content}


def _extension_objects(model: Model, pdef: PluginDef, source: Source | None, receives: tuple[str, ...] = ()
                       ) -> list[dict]:
    """The definition's `extensions`, then every repository object of a kind the plugin `receives` (plugin.yaml)
    that is not listed already, in repository order."""
    out = []
    for ref in pdef.extensions:
        if "file" in ref:
            out.append(file_object(source, ref["file"], pdef.instance_where))
            continue
        matches = [d for d in model.documents if d.kind == ref["kind"] and d.name == ref["name"]
                   and (not ref.get("namespace") or model.namespace_of(d) == ref["namespace"])
                   and (not ref.get("apiVersion") or d.api_version == ref["apiVersion"])]
        if len(matches) != 1:
            what = "no object" if not matches else f"{len(matches)} objects"
            raise fail(f"extension {ref['kind']}/{ref['name']} matches {what} in the repository",
                       pdef.instance_where, "list an object of the repository (add namespace: to pick one of several)",
                       code="plugin-extension")
        out.append(copy.deepcopy(matches[0].obj))
    listed = {(o["kind"], (o.get("metadata") or {}).get("namespace"), o["metadata"]["name"]) for o in out}
    for doc in model.documents if receives else ():
        if emitted(doc.obj, receives) and (doc.kind, doc.namespace, doc.name) not in listed:
            out.append(copy.deepcopy(doc.obj))
    return out


def _service_object(model: Model, name: str) -> dict:
    """A copy of a dependent's baseline Service, with the namespace it lives in (`.devlane.yaml` `namespace` when
    it names none): a plugin that addresses the baseline (a Redis overlay) must not resolve to the dev copy, which
    keeps the name in a flow namespace."""
    doc = model.services[name].doc
    obj = copy.deepcopy(doc.obj)
    namespace = model.namespace_of(doc)
    if namespace and not (obj.get("metadata") or {}).get("namespace"):
        obj.setdefault("metadata", {})["namespace"] = namespace
    return obj


def invocation_for(model: Model, inst: PluginInstance, workloads: list[DevWorkload], current: dict[WorkKey, dict],
                   choice: Choice, source: Source | None = None, configs: ConfigEdits | None = None) -> Invocation:
    """The CreateFlow of one instance, with each dependent's current pod spec (target container first) and, given
    `configs`, the ConfigMaps each reads as it reads them now."""
    pdef = model.plugin_defs.get(inst.servicename)
    moved = []
    for w in workloads:
        spec = target_first(current.get(w.key, w.pod_spec), w.container)[0]
        moved.append(with_pod_spec(w.obj, spec))
    handed = [(w.service, obj) for w in workloads for obj in configs.handed(w, current.get(w.key, w.pod_spec))] \
        if configs is not None else []
    return Invocation(operation="CreateFlow", instance=inst.servicename, flow_id=inst.flow_id, plugin=choice.name,
                      args=dict(choice.args), dependents=[w.service for w in workloads], workloads=copy.deepcopy(moved),
                      services=[_service_object(model, w.service) for w in workloads],
                      extensions=_extension_objects(model, pdef, source, choice.manifest.receives)
                      if pdef is not None else [],
                      configs=handed)


def _levels(instances: list[PluginInstance], touches: list[set] | None = None) -> list[list[int]]:
    """Group instances into waves: one waits for every earlier instance that shares a dependent, or (`touches`,
    per instance) a ConfigMap its dependents read: a later one then sees the earlier one's edits."""
    level: list[int] = []
    sets = touches or [set(inst.dependents) for inst in instances]
    for i in range(len(instances)):
        level.append(1 + max([level[j] for j in range(i) if sets[i] & sets[j]], default=-1))
    waves: dict[int, list[int]] = {}
    for i, lv in enumerate(level):
        waves.setdefault(lv, []).append(i)
    return [waves[k] for k in sorted(waves)]


def check_outcome(policy: OutputPolicy, inst: PluginInstance, choice: Choice, workloads: list[DevWorkload],
                  outcome: Outcome, current: dict[WorkKey, dict]) -> None:
    """The output policy on one CreateFlow: each dev workload before and after, and the objects it added (which
    get the first dependent's namespace when they name none, as `emit.collect` gives them)."""
    pairs = [(with_pod_spec(w.obj, current.get(w.key, w.pod_spec)), with_pod_spec(w.obj, spec))
             for w, spec in zip(workloads, outcome.pod_specs, strict=False)]
    policy.created(policy.caller(inst.servicename, choice), pairs, outcome.resources,
                   workloads[0].namespace or policy.model.default_namespace)


def run(host: PluginHost, model: Model, plan: Plan, dev: DevSet, choices: dict[str, Choice],
        extra: list[Work] | None = None, policy: OutputPolicy | None = None) -> PluginResults:
    """Run every instance (plus pipeline `per-flow` steps in `extra`, with their behaviour); `policy` checks
    what each call returns, and a refusal is the call's failure (`bypass` drops its changes)."""
    with Calls(host, model, plan, dev, choices, extra) as calls:
        return calls.results(policy)


class Calls:
    """The plugin calls of one render, started as soon as they can be: `start` sends the first wave (its inputs
    are the dev copies as cloned), so the plugin processes run on another core while the render checks those
    copies and builds the output policy; `results` applies every wave in plan order. Leaving the block waits for
    calls still running (a render that stops on an error before `results` does not apply them), unless the command
    is stopping (its deadline, a signal)."""

    def __init__(self, host: PluginHost, model: Model, plan: Plan, dev: DevSet, choices: dict[str, Choice],
                 extra: list[Work] | None = None):
        self.host, self.model, self.dev = host, model, dev
        self.work: list[Work] = [(i, choices[i.servicename], model.plugin_defs[i.servicename].behavior)
                                 for i in plan.instances]
        self.work += extra or []
        self.waves = _levels([w[0] for w in self.work], [self._touches(w[0]) for w in self.work])
        self.acc = _Accumulator(ConfigEdits(model, dev))
        self.pool = ThreadPoolExecutor(max_workers=max(1, host.jobs))
        self.first: dict[int, tuple] | None = None
        self.failed: DevlaneError | None = None

    def _touches(self, inst: PluginInstance) -> set:
        """What an instance's call reads and may change: its dependents, and the ConfigMaps their pods read."""
        out: set = {("service", d) for d in inst.dependents}
        for d in inst.dependents:
            w = self.dev.workloads.get(d)
            if w is not None:
                out |= {("ConfigMap", w.namespace, r.name, w.version) for r in config_reads(w.pod_spec)
                        if r.kind == "ConfigMap"}
        return out

    def __enter__(self) -> Calls:
        return self

    def __exit__(self, _type: object, exc: BaseException | None, _tb: object) -> None:
        # Stopped by the deadline or a signal (no Exception): the calls still running are abandoned, not waited for;
        # their processes die with the plugin host, and a built-in's thread ends on its own after the command
        self.pool.shutdown(wait=exc is None or isinstance(exc, Exception), cancel_futures=True)

    def start(self) -> None:
        """Send the first wave now; a failure to build a call is raised by `results`, in its order."""
        if self.waves and self.first is None:
            try:
                self.first = self._send(self.waves[0])
            except DevlaneError as exc:
                self.failed = exc

    def _send(self, wave: list[int]) -> dict[int, tuple]:
        calls = {}
        for i in wave:
            inst, choice, _ = self.work[i]
            workloads = [self.dev.workloads[d] for d in inst.dependents if d in self.dev.workloads]
            if workloads:
                inv = invocation_for(self.model, inst, workloads, self.acc.pod_specs, choice, self.host.source,
                                     self.acc.configs)
                calls[i] = (inv, workloads, self.pool.submit(self.host.create, inv, choice))
        return calls

    def results(self, policy: OutputPolicy | None = None) -> PluginResults:
        """Every call's outcome, applied in plan order (the same output as a serial run)."""
        if self.failed is not None:
            raise self.failed
        acc = self.acc
        with progress.task("plugins", len(self.work) or None) as step:
            for n, wave in enumerate(self.waves):
                calls = self.first if n == 0 and self.first is not None else self._send(wave)
                for i in sorted(calls):
                    inv, workloads, future = calls[i]
                    inst, choice, behavior = self.work[i]
                    try:
                        created: Created = future.result()
                        if policy is not None:
                            check_outcome(policy, inst, choice, workloads, created.outcome, acc.pod_specs)
                    except DevlaneError as exc:
                        exc = self.host.budget.explain(exc)
                        if behavior != "bypass":
                            raise exc from None
                        acc.bypass(inst, choice, exc)
                        continue
                    finally:
                        step()
                    acc.apply(inst, choice, inv, workloads, created)
        return acc.results(self.work)


class _Accumulator:
    """Applies each instance's outcome in plan order; the plugins stage's working state."""

    def __init__(self, configs: ConfigEdits) -> None:
        self.configs = configs
        self.pod_specs: dict[WorkKey, dict] = {}
        self.instances: list[InstanceResult] = []
        self.messages: list[Problem] = []
        self.bypassed: list[dict] = []
        self.records: list[Record] = []

    def bypass(self, inst: PluginInstance, choice: Choice, exc: DevlaneError) -> None:
        first = exc.problems[0]
        self.messages.append(Problem(f"plugin failed and was bypassed (behavior: bypass); its changes were dropped: "
                                     f"{first.message}", Where(plugin=inst.servicename), first.hint,
                                     severity="warning", code="plugin-bypassed"))
        self.bypassed.append({"instance": inst.servicename, "name": choice.name, "error": first.message})

    def apply(self, inst: PluginInstance, choice: Choice, inv: Invocation, workloads: list[DevWorkload],
              created: Created) -> None:
        outcome: Outcome = created.outcome
        if len(outcome.pod_specs) != len(workloads):
            raise fail(f"the result has {len(outcome.pod_specs)} pod specs for {len(workloads)} dependents",
                       Where(plugin=inst.servicename), "re-provision the flow", code="plugin-pod-spec-count")
        for w, new_spec in zip(workloads, outcome.pod_specs, strict=True):
            before = self.pod_specs.get(w.key, w.pod_spec)
            moved_idx = target_first(before, w.container)[1]
            for container, name in sorted(_duplicate_env(new_spec) - _duplicate_env(before)):
                self.messages.append(Problem(
                    f"the plugin left env {name} twice in container {container} of {w.obj['kind']}/{w.name}; the last "
                    "one wins in the pod, but server-side apply (Flux, Argo CD with ServerSideApply) rejects duplicate "
                    "keys", Where(plugin=inst.servicename),
                    "set the variable once (replace it rather than append), or remove it from the manifest",
                    severity="warning", code="plugin-duplicate-env"))
            self.pod_specs[w.key] = target_back(new_spec, moved_idx)
        by_service = {w.service: w for w in workloads}
        handed = {(dep, obj["metadata"]["name"]): obj.get("data") or {} for dep, obj in inv.configs}
        for change in outcome.configs:
            if change["dependent"] in by_service:
                self.configs.record(by_service[change["dependent"]], change["name"], change["data"],
                                    handed.get((change["dependent"], change["name"]), {}))
        try:
            json.dumps(outcome.config_map)
        except (TypeError, ValueError):
            raise fail("config_map is not JSON", Where(plugin=inst.servicename)) from None
        self.messages += outcome.messages
        if created.record is not None:
            self.records.append(created.record)
        self.instances.append(InstanceResult(inst.servicename, inst.flow_id, inv.flow_uuid, choice.source,
                                             list(inv.dependents), outcome.config_map, list(outcome.resources),
                                             created.status, choice, created.record))

    def results(self, work: list[Work]) -> PluginResults:
        # waves finish out of plan order: list results (flow.metadata) as a serial run would
        position = {(w[0].servicename, w[0].flow_id): i for i, w in enumerate(work)}
        results = sorted(self.instances, key=lambda r: position.get((r.servicename, r.flow_id), len(work)))
        first: dict[str, int] = {}
        for i, w in enumerate(work):
            first.setdefault(w[0].servicename, i)
        bypassed = sorted(self.bypassed, key=lambda b: first.get(b["instance"], len(work)))
        return PluginResults(results, self.messages, bypassed, self.records, self.pod_specs, self.configs)


def _duplicate_env(pod_spec: dict) -> set[tuple[str, str]]:
    """(container, env name) pairs set more than once."""
    out = set()
    for key in ("initContainers", "containers"):
        for c in pod_spec.get(key) or []:
            names = [e.get("name") for e in (c.get("env") or []) if isinstance(e, dict)]
            out |= {(str(c.get("name")), str(n)) for n in names if names.count(n) > 1}
    return out


def delete_flows(host: PluginHost, model: Model, states: list[FlowState], flow_id: str,
                 flow_dir: Path) -> tuple[list[str], list[Problem]]:
    """`delete_flow` of every stored plugin state, newest first: (instances done, messages); every failure
    is reported, and then the flow is kept."""
    deleted: list[str] = []
    messages: list[Problem] = []
    failures: list[Problem] = []
    for st in reversed(states):
        pdef = model.plugin_defs.get(st.instance)
        args = dict(pdef.args) if pdef and pdef.name == st.plugin else {}
        try:
            messages += host.delete(st, flow_id, args, pdef.side_effects if pdef else None,
                                    dict(pdef.args) if pdef else {})
            deleted.append(st.instance)
        except DevlaneError as exc:
            failures += [Problem(f"delete_flow failed: {p.message}", p.where, p.hint, code=p.code)
                         for p in exc.problems]
    if failures:
        failures.append(Problem(f"kept {flow_dir} and the flow's state: run `devlane delete` again once fixed",
                                code="delete-kept"))
        raise DevlaneError(failures)
    return deleted, messages
