"""Library API: each command is a short script of typed stages (kustomize's `Kustomizer.Run` style).

    load -> (--services auto) -> template, pre-render steps -> model -> plan -> choose implementations
         -> dev copies -> plugins -> routing -> collect, post-render steps -> checks -> emit

Each stage is a function of a stage package of `renderer/render/` (in that order) that takes the records the
stages before it made and its settings record, and returns a record and the problems it found; the script keeps
the problems and stops where an error would mislead the next stage. The `Session` holds what every stage shares
(the source, the plugin host, the settings). The CLI and the front doors (`renderer/views/`) call these
functions; tests call them in-process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .core import deadline, progress
from .errors import DevlaneError, Problem, UsageError, Where, fail
from .host import process
from .host.choose import Choice, RunMode
from .host.resolve import git_specs, plugin_digest
from .host.resolve import prepare_targets as resolve_prepare_targets
from .host.state import STATE_DIR, STATE_HINT, read_flow_states, recorded, recorded_states, write_records
from .host.supply.gitspec import GitSpec
from .host.supply.lock import (
    LOCK_FILE,
    FetchReport,
    Lock,
    LockReport,
    Log,
    fetch_plugins,
    lock_plugins,
    parse_lock,
    stale_pins,
)
from .host.supply.venvs import Target
from .lanes.branch import Checkout, LanesRef, Published
from .linting import lint
from .render.checks import budget, footprint, invariants, propagation, reach, route_proof
from .render.copies import clone, flow_namespace
from .render.copies.dev_set import DevSet
from .render.inputs.load import Loaded, read_back
from .render.model.plugin_definitions import PluginDef, changed_args, used_plugin_names
from .render.model.records import Model
from .render.model.topology import build_model
from .render.output import emit, lifecycle
from .render.output.emit import RenderedFlow
from .render.output.write import Output, remove_dir
from .render.plan import targets
from .render.plan.flow_spec import FLOW_ID, FlowRequest, FlowSpec, apply_template, resolve, validate_flow_id
from .render.plan.neighbourhood import Neighbour, neighbours
from .render.plan.planner import Plan, make_plan
from .render.plan.targets import AutoFlow, Change, Targeted
from .render.plugins import calls, output_policy, pipeline_steps
from .render.plugins.calls import PluginResults
from .render.routing import mesh
from .render.routing.entries import Entries, route_entries
from .render.settings.lifecycle import Prices, parse_time
from .render.settings.render_settings import RenderSettings, RouteSettings
from .render.stored.memo import model_for
from .session import Options, Session, retain_until_exit

if TYPE_CHECKING:  # the live commands' modules load with them, never with `render` (renderer/live/__init__.py)
    from collections.abc import Callable

    from .live.dryrun import VerifyReport
    from .live.kube import KubeOptions
    from .live.lane import LaneObject
    from .live.status import StatusReport
    from .live.sweep import SweepReport

FlowInput = FlowSpec | AutoFlow  # a flow as given, or `--services auto`: data either way, resolved once loaded

__all__ = ["AutoFlow", "FlowInput", "FlowRequest", "Options", "RenderResult", "Session", "check_changes", "delete",
           "fetch", "lint", "lock", "open_session", "plan", "prepare_targets", "provision", "read", "render",
           "render_and_write", "render_in", "rendering", "resolve", "retain_until_exit", "targeted", "write"]


@dataclass(frozen=True)
class RenderResult:
    """Everything one render knows: what the front doors read instead of loading the repository again."""

    root: Path
    loaded: Loaded
    model: Model
    plan: Plan
    choices: dict[str, Choice]
    plugins: PluginResults
    flows: list[RenderedFlow]
    messages: list[Problem]  # warnings, and `info` messages such as plugin stderr (shown with --debug)
    dev: DevSet = field(default_factory=DevSet)  # the dev copies after plugins (namespaces, aliases)
    mesh: RenderedFlow | None = None  # istio: `flows/_mesh/` as this flow alone needs it (writing merges every flow)
    targets: list[Change] = field(default_factory=list)  # `--services auto`: each target and why
    reach: list[reach.Reached] = field(default_factory=list)  # the state outside the lane its dev pods can use

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.messages if p.severity == "warning"]

    @property
    def main(self) -> RenderedFlow:
        return self.flows[0]

    def stream(self) -> str:
        return "".join(f.stream() for f in self.flows)


@dataclass(frozen=True)
class PlanReport:
    plan: Plan
    choices: dict[str, Choice]
    steps: list[dict]  # `.devlane.yaml` pipeline steps and their implementations
    warnings: list[Problem]
    isolation: dict | None = None  # isolation namespace: flow namespaces, aliases, what the lane still needs
    copies: dict[str, int] = field(default_factory=dict)  # routing mode -> dev copies the flow needs in it
    proof: dict | None = None  # mesh modes: the routing proof (header, paths walked, violations, routes)
    targets: list[Change] = field(default_factory=list)  # `--services auto`: each target and why
    reach: list[reach.Reached] = field(default_factory=list)  # the state outside the lane, before plugins run
    footprint: dict | None = None  # the dev copies' footprint, before plugins add theirs
    neighbours: dict[str, Neighbour] = field(default_factory=dict)  # baseline services one hop from the lane

    def as_dict(self) -> dict:
        out = self.plan.as_dict()
        for p in out["plugins"]:
            if p["instance"] in self.choices:
                p["choice"] = self.choices[p["instance"]].as_dict()
        return {**out, "pipeline": self.steps, **({"isolation": self.isolation} if self.isolation else {}),
                "copies": self.copies, **({"proof": self.proof} if self.proof else {}),
                "reach": [r.as_dict() for r in self.reach],
                "neighbours": [n.as_dict() for n in self.neighbours.values()],
                **({"footprint": self.footprint} if self.footprint is not None else {})}


@dataclass(frozen=True)
class DeleteResult:
    flow_id: str
    flow_dir: Path
    deleted: list[str]  # plugin instances whose delete_flow ran, in call order
    messages: list[Problem]
    removed: list[Path]  # with a lanes branch: paths in it (flows/<id>, .devlane/state/<id>)
    gone: bool = False  # nothing of the flow was there: no plugin ran, nothing changed (delete is idempotent)
    published: Published | None = None  # with a lanes branch: the commit that removed it


def stop_plugins() -> None:
    """Kill every running plugin process at once and start no more: for a SIGINT / SIGTERM handler."""
    process.stop_all()


def resume_plugins() -> None:
    """Allow plugin processes again after `stop_plugins` (the next command of a long-lived caller)."""
    process.resume()


def open_session(options: Options, mode: RunMode = "render", collect: bool = False) -> Session:
    return Session(options, mode, collect)


def render(options: Options, flow: FlowInput) -> RenderResult:
    """Render a flow in memory; nothing is written."""
    with open_session(options) as s:
        return render_in(s, flow)


def render_and_write(options: Options, flow: FlowInput, out: Path | None = None) -> tuple[RenderResult, list[Path]]:
    """Render a flow and write it: `rendering` with nothing to look at in between."""
    with rendering(options, out) as run:
        result = run.render(flow)
        return result, run.write(result)


@dataclass(frozen=True)
class Rendering:
    """A render that will be written, holding the output directory's lock: the caller looks at the result (shows
    it, validates it, refuses it by raising) between `render` and `write`, and the library calls nothing back."""

    session: Session
    output: Output
    out: Path | None

    def render(self, flow: FlowInput) -> RenderResult:
        result = render_in(self.session, flow)
        refuse_read_back(result, self.out)
        cap = self.session.settings.lifecycle.budget.lanes
        if cap is not None:  # policy.budget.lanes: the flows of this output directory, once this one is written
            flows = {*self.output.present(), result.plan.flow_id}
            problems = budget.lanes(len(flows), cap, result.plan.flow_id)
            if problems:
                raise DevlaneError(problems)
        return result

    def write(self, result: RenderResult) -> list[Path]:
        with deadline.committing():  # past the deadline, nothing is written; once it starts, the swap completes
            return self.output.write(result.flows)


@contextmanager
def rendering(options: Options, out: Path | None = None) -> Iterator[Rendering]:
    """An open session with the repository loaded and the output directory's lock, held from before any plugin
    runs until the flow is in place: a `delete` of the flow waits for this render, or this render for the delete,
    and neither undoes the other unseen."""
    with open_session(options) as s:
        s.load()  # a repository that does not load stops before the output directory is touched
        with _output(s, out) as output:
            s.flows = frozenset(output.present())  # the output policy keeps their dev copies' names theirs
            yield Rendering(s, output, out)


def _output(s: Session, out: Path | None, create: bool = True) -> Output:
    """The output directory under its lock; with `--timeout`, the wait for it counts against that budget."""
    wait = max(0.0, s.host.budget.left()) if s.options.timeout is not None else None
    return Output(output_root(s.root, s.config.output, out), wait, create, s.root)


def targeted(s: Session, flow: FlowInput) -> Targeted:
    """The flow as data: as given, or (`--services auto`) with the services changed since the base."""
    return targets.targeted(flow, s.load(), s.root, s.options.ref, s.options.top, s.cache)


def render_in(s: Session, flow: FlowInput) -> RenderResult:
    """Render a flow with an open session (the front doors that already loaded the repository)."""
    settings = s.settings
    loaded = s.load()
    flow, changes = targeted(s, flow)
    loaded, model, the_plan, problems = _planned(s, loaded, flow)
    choices = calls.choose_all(s.host, model, the_plan)
    deadline.stage("making the dev copies")
    dev, found = clone.make(model, the_plan, settings.copies, _by_header(settings.routes, model, the_plan))
    problems += found + _budget_before_plugins(settings, dev, the_plan.flow_id)
    deadline.stage("running the plugins")
    with calls.Calls(s.host, model, the_plan, dev, choices,
                     pipeline_steps.per_flow_work(s.host, settings.plugins.pipeline, the_plan, dev)) as running:
        grants = s.grants.for_render()  # bound to identities: what a plugin's code is granted, not its name
        problems += grants.review((inst.servicename, choice) for inst, choice, _ in running.work)
        if not errors(problems):  # the copies are made: the plugins start while the render checks them
            running.start()
        policy = output_policy.OutputPolicy(model, dev, the_plan.flow_id, grants, s.flows)
        # rewriting is done: what a plugin returns is final, once the output policy accepts it. The invariants check
        # devlane's own work: after an error in making the copies (its root cause) they would only repeat it
        if not errors(problems):
            problems += invariants.before_plugins(model, dev, settings.strict)
        s.stop_on_errors(problems)
        with grants.explaining():
            plugins = running.results(policy)
    problems += plugins.messages
    deadline.stage("routing the flow")
    cloned, dev = dev, plugins.patched(clone.patch(dev, plugins.pod_specs))
    dev, found = flow_namespace.provide_secrets(model, dev, plugins.resources, settings.strict)
    problems += found
    entries, found = route_entries(model, dev, the_plan.flow_id, settings.routes)
    problems += found
    if entries.mesh is not None:  # header routing: each hop that must forward the header, without a sign it does
        entries.mesh["unpropagated"] = propagation.unpropagated(model, dev)
        problems += propagation.problems(entries.mesh["unpropagated"], settings.strict)
    collected, found = _lifecycle_objects(settings, emit.collect(the_plan, dev, plugins, entries,
                                                                 model.default_namespace), the_plan.flow_id, dev)
    problems += found
    with grants.explaining():
        objects, found = _post_rendered(s, collected, the_plan, plugins, policy)
    problems += found + grants.said()
    deadline.stage("checking the lane")
    life = settings.lifecycle
    fp = footprint.compute(objects.groups.get(the_plan.flow_id, []), life.prices)
    problems += budget.over(fp, life.budget, the_plan.flow_id, life.prices)
    problems += invariants.after_plugins(model, cloned, objects.all(), policy.owners)
    problems += invariants.external_addresses(model, dev, plugins.instances, settings.strict)
    problems += invariants.unpinned_images(cloned, dev, plugins.instances, settings.strict)
    lane_reach = reach.lane_reach(model, dev, settings.shared_stores, isolated=_isolated(plugins))
    problems += reach.problems(lane_reach, settings.strict)
    shared = _shared_mesh(settings.routes, the_plan, entries)
    if settings.routes.mode != "none" and not errors(problems):  # istio: with the rules shared with other flows
        problems += route_proof.check(model, dev, [*objects.all(), *(shared.objects if shared else [])],
                                      the_plan.flow_id, settings.routes.baggage_key)
    ends, found = lifecycle.expiry(life, lifecycle.commit_time(str(s.root), loaded.revision) if life.ttl and not
                                   life.created else None)
    problems += found
    s.stop_on_errors(problems)
    deadline.stage("emitting the flow")
    flows = emit.render(objects, the_plan, plugins, _provenance(s, loaded, flow, entries, dev, plugins, choices,
                                                                problems, lane_reach, fp, ends))
    return RenderResult(s.root, loaded, model, the_plan, choices, plugins, flows,
                        [p for p in problems if p.severity != "error"], dev, shared, changes, lane_reach)


def _budget_before_plugins(settings: RenderSettings, dev: DevSet, flow_id: str) -> list[Problem]:
    """The budget's limits the dev copies alone exceed, before any plugin runs (plugins only add): a lane refused
    for its size never starts a plugin that creates something outside the cluster."""
    limits = settings.lifecycle.budget
    if limits.empty:
        return []
    return budget.over(_copies_footprint(dev), replace(limits, resources={}, cost_per_day=None), flow_id, None)


def _copies_footprint(dev: DevSet, prices: Prices | None = None) -> footprint.Footprint:
    """The footprint of the dev copies as cloned, before plugins add theirs."""
    return footprint.compute([*(w.obj for w in dev.unique_workloads()), *(o.obj for o in dev.objects)], prices)


def _isolated(plugins: calls.PluginResults) -> dict[str, dict[str, str]]:
    """Per dependent, the store kinds a plugin that ran for it isolates (`spec.isolates`), by plugin name."""
    out: dict[str, dict[str, str]] = {}
    for r in plugins.results:
        manifest = r.choice.manifest if r.choice is not None else None
        for dependent in r.dependents if manifest is not None else ():
            for kind in manifest.isolates:
                out.setdefault(dependent, {}).setdefault(kind, r.choice.name)
    return out


def errors(problems: list[Problem]) -> bool:
    return any(p.severity == "error" for p in problems)


def _planned(s: Session, loaded: Loaded, flow: FlowSpec) -> tuple[Loaded, Model, Plan, list[Problem]]:
    """The flow's template and the pre-render steps, the model, the plan, with what loading found; stops on any
    error."""
    problems = s.loading_problems()
    loaded = loaded.with_documents(apply_template(loaded.documents, flow.template_file, flow.template_args))
    loaded, messages = pipeline_steps.pre_render(s.host, s.settings.plugins.pipeline, loaded, flow.id)
    deadline.stage("building the model")
    model = model_for(s.memo, s.loaded, loaded.documents, s.settings.namespace)
    the_plan, found = make_plan(model, flow, s.settings.routes.mode)
    problems += messages + model.problems + found
    s.stop_on_errors(problems)
    return loaded, model, the_plan, problems


def _by_header(routes: RouteSettings, model: Model, the_plan: Plan) -> frozenset[str]:
    """On a mesh, the dev services requests reach by the flow header (HTTP and gRPC ports)."""
    if routes.mode == "none":
        return frozenset()
    return frozenset(k for k in the_plan.dev_services() if mesh.routed_by_header(model, k))


def _shared_mesh(routes: RouteSettings, the_plan: Plan, entries: Entries) -> RenderedFlow | None:
    """istio: `flows/_mesh/` as this flow alone needs it."""
    return emit.mesh_flow({the_plan.flow_id: entries.mesh}) if entries.mesh and routes.mode == "istio" else None


def _post_rendered(s: Session, objects: emit.FlowObjects, the_plan: Plan, plugins: PluginResults,
                   policy: output_policy.OutputPolicy) -> tuple[emit.FlowObjects, list[Problem]]:
    """The flow's objects after the lifecycle hooks of the plugins it used and the `post-render` steps."""
    flow_id = the_plan.flow_id
    group, messages = pipeline_steps.post_render(s.host, s.settings.plugins.pipeline, objects.groups[flow_id],
                                                 flow_id, plugins.used(flow_id), policy)
    return objects.with_group(flow_id, group), messages


def _provenance(s: Session, loaded: Loaded, flow: FlowSpec, entries: Entries, dev: DevSet, plugins: PluginResults,
                choices: dict[str, Choice], problems: list[Problem], reached: list[reach.Reached],
                fp: footprint.Footprint | None = None, ends: dict | None = None) -> emit.Provenance:
    chosen = sorted([*choices.values(), *(r.choice for r in plugins.results if r.choice)], key=lambda c: c.name)
    digests = {c.name: plugin_digest(c.source.path) for c in chosen}
    return emit.provenance(loaded, flow, s.settings.routes.mode, s.options.ref, digests, entries, dev, plugins,
                           flow_namespace.summary(dev, problems), [r.as_dict() for r in reached],
                           fp.as_dict() if fp is not None else None, ends)


def _lifecycle_objects(settings: RenderSettings, objects: emit.FlowObjects, flow_id: str, dev: DevSet
                       ) -> tuple[emit.FlowObjects, list[Problem]]:
    """The flow's objects with its sleep schedule and namespace quota (`lifecycle.sleep`, `lifecycle.quota`)."""
    life, problems = settings.lifecycle, []
    added: list[dict] = []
    if life.sleep:
        made, problems = lifecycle.sleep_objects(objects.groups.get(flow_id, []), flow_id, life.sleep)
        if settings.strict:
            problems = [replace(p, severity="error") for p in problems]
        added += made
        kept, found = lifecycle.without_replicas(objects.groups.get(flow_id, []))
        objects, problems = objects.with_group(flow_id, kept), problems + found
    if life.quota is not None and not dev.lane.by_namespace:
        problems.append(Problem("lifecycle.quota applies to a lane in namespaces of its own (isolation: namespace): "
                                "a suffix lane shares its baseline's namespaces, whose quota is not the lane's",
                                Where(file=".devlane.yaml"), "set isolation: namespace, or remove lifecycle.quota",
                                severity="warning", code="quota"))
    elif life.quota is not None:
        added += lifecycle.quota_objects(sorted(set(dev.namespaces.values())), flow_id, life.budget, life.quota)
    if not added:
        return objects, problems
    return objects.with_group(flow_id, [*objects.groups.get(flow_id, []), *added]), problems


def plan(options: Options, flow: FlowInput) -> PlanReport:
    """Which services get a dev version and why, which implementation each plugin uses, the pipeline."""
    with open_session(options) as s:
        settings = s.settings
        loaded = s.load()
        flow, changes = targeted(s, flow)
        _, model, the_plan, problems = _planned(s, loaded, flow)
        choices = calls.choose_all(s.host, model, the_plan)
        other = "gateway-api" if the_plan.routing == "none" else "none"
        copies = {the_plan.routing: len(the_plan.dev_services()),  # and what the other mode would need
                  other: len(make_plan(model, flow, other)[0].dev_services())}
        proof = None
        if settings.routes.mode != "none":
            proof, found = _proof(settings, model, the_plan)
            problems += found
            s.stop_on_errors(problems)  # an entry that cannot carry the header stops `plan` as it stops `render`
        reached, fp = _before_plugins(settings, model, the_plan)
        problems += reach.problems(reached)  # listed; `render --strict` refuses them
        return PlanReport(the_plan, choices, pipeline_steps.plan_steps(s.host, settings.plugins.pipeline, flow.id),
                          [p for p in problems if p.severity == "warning"], _lane(settings, model, the_plan), copies,
                          proof, changes, reached, fp.as_dict(), neighbours(model, the_plan.lane()))


def _before_plugins(settings: RenderSettings, model: Model, the_plan: Plan
                    ) -> tuple[list[reach.Reached], footprint.Footprint]:
    """The lane's reach and footprint `plan` shows, on the dev copies as the manifests make them (the plugins'
    rewiring, and what they add, are `render`'s to check and count)."""
    dev, _ = clone.make(model, the_plan, settings.copies, _by_header(settings.routes, model, the_plan))
    return (reach.lane_reach(model, dev, settings.shared_stores, before_plugins=True),
            _copies_footprint(dev, settings.lifecycle.prices))


def _proof(settings: RenderSettings, model: Model, the_plan: Plan) -> tuple[dict, list[Problem]]:
    """The routing proof `plan` shows, on the routes of the dev copies as the manifests make them (no plugin runs;
    `render` proves the final objects again), and the problems of making the entries."""
    routes = settings.routes
    dev, _ = clone.make(model, the_plan, settings.copies, _by_header(routes, model, the_plan))
    entries, problems = route_entries(model, dev, the_plan.flow_id, routes)
    shared = mesh.virtual_services({the_plan.flow_id: entries.mesh}) if routes.mode == "istio" and entries.mesh else []
    found = [*(o for o in entries.objects if o["kind"] != "Ingress"), *shared]
    proof = route_proof.prove(model, dev, [*(d.obj for d in dev.services), *found], the_plan.flow_id,
                              routes.baggage_key)
    problems += propagation.problems(propagation.unpropagated(model, dev), settings.copies.strict)
    return {"header": mesh.BAGGAGE, "member": mesh.member(the_plan.flow_id, routes.baggage_key),
            "paths": proof.paths, "violations": proof.violations,
            "routes": sorted(f"{o['kind']}/{o['metadata']['name']}" for o in found)}, problems


def _lane(settings: RenderSettings, model: Model, the_plan: Plan) -> dict | None:
    """The isolation summary `plan` shows: the dev copies are made (no plugin runs) to see what the lane needs."""
    if not settings.copies.lane.by_namespace:
        return None
    dev, problems = clone.make(model, the_plan, settings.copies)
    dev, found = flow_namespace.provide_secrets(model, dev, [], settings.strict)  # as the manifests say
    return flow_namespace.summary(dev, problems + found)


@dataclass(frozen=True)
class Repository:
    """A repository read without a flow (broken files recorded, not raised): lint, inspection, the plugin supply."""

    root: Path
    loaded: Loaded
    model: Model

    @property
    def problems(self) -> list[Problem]:
        return self.loaded.problems + self.model.problems


def read(options: Options) -> Repository:
    with open_session(options, collect=True) as s:
        return Repository(s.root, s.loaded, build_model(s.loaded.documents, s.config.namespace))


def provision(options: Options, flow: FlowInput) -> tuple[RenderResult, list[Path]]:
    """Run External plugins for real (CI on PR open) and record their results under `.devlane/state/`.

    The whole flow is rendered in memory, so every External plugin sees exactly the inputs a later
    `render` will give it; only the records are written.
    """
    if options.ref is not None:
        raise UsageError("provision records state in the work tree; run it without --ref")
    with open_session(options, "provision") as s:
        result = render_in(s, flow)
    return result, write_records(options.state_root or Path(options.repo), result.plan.flow_id,
                                 result.plugins.records)


def delete(options: Options, flow_id: str, out: Path | None = None) -> DeleteResult:
    """Call every plugin's `delete_flow` with its stored state, newest first, then remove the flow.

    The state comes from the rendered flow's state ConfigMaps (work tree, or `--ref`). The flow
    directory and its provision records are removed only when every call succeeded. The output directory's
    lock is held throughout, so a render of the flow never interleaves with its delete. A flow that is not
    there (deleted already) is `gone`: nothing runs, as `kubectl delete --ignore-not-found`.
    """
    validate_flow_id(flow_id)
    with open_session(options, "delete") as s, _output(s, out, create=False) as output:
        ended = _end_plugins(s, output, build_model(s.loaded.documents, s.config.namespace), flow_id)
        if ended is None:
            return DeleteResult(flow_id, output.flows / flow_id, [], [], [], gone=True)
        return DeleteResult(flow_id, output.flows / flow_id, *ended, _remove_lane(output, s.state_root, flow_id))


def _recorded_flows(records: dict[str, list[str]]) -> list[str]:
    """Flows with provision records: a flow provisioned and never rendered (or whose files are gone) still holds
    what its External plugins created."""
    return sorted(name for name, instances in records.items() if FLOW_ID.fullmatch(name) and instances)


def _expires(output: Output, flow_id: str) -> tuple[datetime, str] | None:
    """A rendered flow's expiry (`lifecycle.expires` in its flow.metadata), None when it has none; one devlane cannot
    read, or out of range, is an error naming the file."""
    ends = (output.metadata(flow_id) or {}).get("lifecycle")
    text = ends.get("expires") if isinstance(ends, dict) else None
    if text is None:
        return None
    try:
        return parse_time(str(text), f"{output.flows / flow_id / 'flow.metadata'}: lifecycle.expires"), str(text)
    except UsageError as exc:
        raise fail(exc.problems[0].message, hint=f"re-render flow {flow_id} (render --ttl), or remove it with "
                   f"devlane delete --flow {flow_id}", code="output") from None


def _end_plugins(s: Session, output: Output, model: Model, flow_id: str,
                 records: dict[str, list[str]] | None = None) -> tuple[list[str], list[Problem]] | None:
    """`delete_flow` of each plugin state of the flow (raised, when a call fails); None when the flow is neither
    rendered nor provisioned there. `records`: `recorded(state root)`, read (its symlinks refused) beforehand."""
    instances = (recorded(s.state_root) if records is None else records).get(flow_id, [])
    if not output.holds(flow_id) and s.options.ref is None:
        if not instances:
            return None
        states = recorded_states(s.host.records, flow_id, instances)  # provisioned, never rendered
    else:
        states = read_flow_states(output.read_rendered(flow_id, s.source, s.root, s.options.ref), flow_id)
    return calls.delete_flows(s.host, model, states, flow_id, output.flows / flow_id)


def _remove_lane(output: Output, state_root: Path, flow_id: str) -> list[Path]:
    """The flow's directory and its provision records, once its plugins are done with them."""
    return [p for p in (output.remove(flow_id), remove_dir(state_root / STATE_DIR / flow_id, state_root, STATE_HINT))
            if p]


@dataclass(frozen=True)
class GcResult:
    """What `gc` removed, would remove (`dry_run`), kept, could not remove (a plugin's delete_flow failed), and
    kept because its expiry could not be read."""

    doomed: dict[str, str]  # flow -> why it goes (not in the keep list; expired at ...)
    removed: list[DeleteResult]
    kept: list[str]
    failed: dict[str, list[Problem]]
    dry_run: bool = False
    flows: Path | None = None  # the output directory's flows/
    unreadable: dict[str, list[Problem]] = field(default_factory=dict)  # flow -> why its expiry is unknown (kept)
    lanes: str | None = None  # with a lanes branch: which (`LanesRef.where`)


def gc(options: Options, keep: list[str] | None = None, expired: bool = False, now: datetime | None = None,
       out: Path | None = None, dry_run: bool = False, lanes: LanesRef | None = None,
       log: Callable[[str], None] | None = None) -> GcResult:
    """Remove every rendered flow not in `keep` (None: keep-list not given) and, with `expired`, every flow whose
    `flow.metadata` expiry is at or before `now` (default: the current time): each as `delete` does, under the
    output directory's lock held throughout. A flow whose plugins fail to delete is kept and reported; the others
    go on; so does a flow whose expiry cannot be read (malformed, out of range), which is kept and named, as kubectl
    goes on past one object it cannot act on and fails at the end. `flows/_mesh/` is rebuilt from the flows that
    remain. A symlink in the output directory or `.devlane/state/` stops it before anything is removed. With
    `lanes`, the flows are the lanes branch's, and one commit removes every lane whose plugins are done."""
    if keep is None and not expired:
        raise UsageError("gc needs the flows to keep (--keep FLOW..., --keep-file FILE) or --expired")
    for flow_id in keep or []:
        validate_flow_id(flow_id)
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    if lanes is None:
        with open_session(options, "delete") as s, _output(s, out, create=False) as output:
            return _gc_in(s, output, keep, expired, moment, dry_run)
    with Checkout(lanes, log) as co:
        with open_session(replace(options, state_root=co.tree), "delete") as s, \
                Output(co.tree, create=False) as output:
            result = replace(_gc_in(s, output, keep, expired, moment, dry_run, remove=False), lanes=lanes.where)
        ended = [r.flow_id for r in result.removed]
        if not ended:
            return result
        paths = {flow_id: _lane_paths(co.tree, flow_id) for flow_id in ended}
        _, published = co.publish(lambda tree: _remove_lanes(tree, ended), f"devlane: gc {', '.join(ended)}")
        return replace(result, removed=[replace(r, removed=paths[r.flow_id], published=published)
                                        for r in result.removed])


def _gc_in(s: Session, output: Output, keep: list[str] | None, expired: bool, moment: datetime, dry_run: bool,
           remove: bool = True) -> GcResult:
    """gc in one output directory (the work tree's, or a lanes branch's checkout); without `remove`, each doomed
    flow's plugins are ended and its files left to the caller."""
    doomed: dict[str, str] = {}
    unreadable: dict[str, list[Problem]] = {}
    records = recorded(s.state_root)
    present = sorted({*output.present(), *(_recorded_flows(records) if s.options.ref is None else [])})
    for flow_id in present:
        why = []
        if keep is not None and flow_id not in keep:
            why.append("not in the keep list")
        try:
            expires = _expires(output, flow_id) if expired else None
        except DevlaneError as exc:
            expires = None
            if not why:  # a flow the keep list ends goes whatever its expiry
                unreadable[flow_id] = exc.problems
        if expires is not None and expires[0] <= moment:
            why.append(f"expired at {expires[1]}")
        if why:
            doomed[flow_id] = " and ".join(why)
    kept = [f for f in present if f not in doomed]
    if dry_run:
        return GcResult(doomed, [], kept, {}, True, output.flows, unreadable)
    model = build_model(s.loaded.documents, s.config.namespace)
    removed, failed = [], {}
    with progress.task("removing flows", len(doomed)) as step:
        for flow_id in doomed:
            try:
                deleted, messages = _end_plugins(s, output, model, flow_id, records) or ([], [])
                paths = _remove_lane(output, s.state_root, flow_id) if remove else []
                removed.append(DeleteResult(flow_id, output.flows / flow_id, deleted, messages, paths))
            except DevlaneError as exc:
                failed[flow_id] = exc.problems
            step()
    return GcResult(doomed, removed, [*kept, *failed], failed, False, output.flows, unreadable)


# --------------------------------------------------------------------------------------------------
# The lanes branch (`renderer/lanes/`): render, provision, delete and gc where every job finds the lanes


def _lane_paths(tree: Path, flow_id: str) -> list[Path]:
    """Where a lane lives in a lanes checkout, as its messages name it: its directory and its records, if there."""
    return [p for p in (Path("flows") / flow_id, Path(STATE_DIR) / flow_id) if (tree / p).is_dir()]


def _remove_lanes(tree: Path, flow_ids: list[str]) -> None:
    """Remove lanes from a lanes checkout: their directories (`_mesh` rebuilt from the rest) and records."""
    with Output(tree, create=False) as output:
        for flow_id in flow_ids:
            _remove_lane(output, tree, flow_id)


def delete_from_lanes(options: Options, flow_id: str, lanes: LanesRef,
                      log: Callable[[str], None] | None = None) -> DeleteResult:
    """`delete` on the lanes branch: each plugin's `delete_flow` with the state stored there, once, then one commit
    that removes the lane and its records (retried on the new tip when another job pushed meanwhile). `gone` when
    the branch holds nothing of the flow."""
    validate_flow_id(flow_id)
    with Checkout(lanes, log) as co:
        with open_session(replace(options, state_root=co.tree), "delete") as s, \
                Output(co.tree, create=False) as output:
            ended = _end_plugins(s, output, build_model(s.loaded.documents, s.config.namespace), flow_id)
        if ended is None:
            return DeleteResult(flow_id, Path("flows") / flow_id, [], [], [], gone=True)
        paths = _lane_paths(co.tree, flow_id)
        _, published = co.publish(lambda tree: _remove_lanes(tree, [flow_id]), f"devlane: delete lane {flow_id}")
        return DeleteResult(flow_id, Path("flows") / flow_id, *ended, paths, published=published)


@dataclass(frozen=True)
class LanePublished:
    """A render or provision committed to the lanes branch."""

    result: RenderResult
    paths: list[Path]  # in the branch: flows/<id> (and flows/_mesh), or the provision records
    published: Published


def render_to_lanes(options: Options, flow: FlowInput, lanes: LanesRef,
                    inspect: Callable[[RenderResult], None] | None = None,
                    log: Callable[[str], None] | None = None) -> LanePublished:
    """Render a flow and commit it to the lanes branch, replaying the provision records stored there. `inspect`
    sees the result before anything is written (the CLI shows it, validates it, refuses it by raising)."""
    with Checkout(lanes, log) as co:
        with open_session(replace(options, state_root=co.tree)) as s:
            result = render_in(s, flow)
            cap = s.settings.lifecycle.budget.lanes
        if cap is not None:
            with Output(co.tree, create=False) as output:
                problems = budget.lanes(len({*output.present(), result.plan.flow_id}), cap, result.plan.flow_id)
            if problems:
                raise DevlaneError(problems)
        if inspect is not None:
            inspect(result)

        def apply(tree: Path) -> list[Path]:
            with Output(tree) as output:
                return [p.relative_to(tree) for p in output.write(result.flows)]

        paths, published = co.publish(apply, f"devlane: lane {result.plan.flow_id}")
        return LanePublished(result, paths, published)


def provision_to_lanes(options: Options, flow: FlowInput, lanes: LanesRef,
                       log: Callable[[str], None] | None = None) -> LanePublished:
    """`provision` whose records are committed to the lanes branch at once, in a commit of their own: what the
    External plugins made stays deletable whatever happens to the render after it."""
    with Checkout(lanes, log) as co:
        result, _ = provision(replace(options, state_root=co.tree), flow)
        records = result.plugins.records

        def apply(tree: Path) -> list[Path]:
            return [p.relative_to(tree) for p in write_records(tree, result.plan.flow_id, records)]

        paths, published = co.publish(apply, f"devlane: provision lane {result.plan.flow_id}")
        return LanePublished(result, paths, published)


# --------------------------------------------------------------------------------------------------
# The live commands: `devlane status`, `verify --server`, `gc --cluster` (the `kubernetes` client, `renderer/live/`)


def rendered_lane(options: Options, flow_id: str, out: Path | None = None) -> list[LaneObject]:
    """The objects of a rendered flow, as its kustomization lists them, from the output directory (or, with `--ref`,
    git): what the live commands compare with the cluster. The output directory's lock is held while reading only,
    never while a cluster is asked (a render of another flow does not wait for a `status --wait`)."""
    from .live.lane import lane_objects

    validate_flow_id(flow_id)
    with open_session(options, collect=True) as s:
        if s.config_file.problems:
            raise DevlaneError(s.config_file.problems)
        with _output(s, out, create=False) as output:
            files = output.read_rendered(flow_id, s.source, s.root, s.options.ref)
            flow_dir = output.flows / flow_id
    return lane_objects(files, flow_dir)


def status(options: Options, flow_id: str, kube: KubeOptions, out: Path | None = None, wait: bool = False,
           timeout: float = 300.0, on_poll: Callable[[StatusReport], None] | None = None) -> StatusReport:
    """The rendered lane's objects in the cluster and their readiness; with `wait`, until it is ready, an object
    failed, or `timeout` seconds passed (`on_poll` sees each report before the last)."""
    from .live import kube as cluster_client
    from .live import status as live_status

    objects = rendered_lane(options, flow_id, out)
    return live_status.watch(cluster_client.connect(kube), objects, flow_id, wait, timeout, on_poll)


def verify_server(options: Options, flow_id: str, kube: KubeOptions, out: Path | None = None,
                  field_manager: str | None = None) -> VerifyReport:
    """A server-side dry run of the rendered flow against the cluster: what it would refuse, and why."""
    from .live import dryrun
    from .live import kube as cluster_client

    objects = rendered_lane(options, flow_id, out)
    return dryrun.verify(cluster_client.connect(kube), objects, flow_id,
                         field_manager or cluster_client.FIELD_MANAGER)


def gc_cluster(kube: KubeOptions, keep: list[str], yes: bool = False) -> SweepReport:
    """The lanes in the cluster whose flow is not in `keep` (orphans), found by devlane's labels on every kind it
    serves; deleted with `yes`, listed otherwise."""
    from .live import kube as cluster_client
    from .live import sweep

    for flow_id in keep:
        validate_flow_id(flow_id)
    cluster = cluster_client.connect(kube)
    report = sweep.find(cluster, keep)
    return sweep.delete(cluster, report) if yes else report


def check_changes(base: Loaded, head: Loaded, s: Session) -> list[Problem]:
    """`validate_change(old_args, new_args)` of every plugin whose definition's args changed between refs.

    `devlane diff` runs this between a pull request's base and head; a plugin can refuse a change
    it cannot apply to a live flow (for example a new database name for an existing branch).
    """
    before = build_model(base.documents, base.config.namespace).plugin_defs
    after = build_model(head.documents, head.config.namespace).plugin_defs
    return changed_plugin_args({n: (d.name, d.args) for n, d in before.items()}, after, s)


def changed_plugin_args(before: dict[str, tuple[str, Any]], after: dict[str, PluginDef],
                        s: Session) -> list[Problem]:
    """`check_changes` from the definitions at base (instance -> plugin, args: what `diff` carries from the base's
    render) and at head."""
    was = {n: SimpleNamespace(name=plugin, args=args) for n, (plugin, args) in before.items()}
    return [p for name, pdef, old in changed_args(was, after)  # type: ignore[arg-type]
            for p in s.host.validate_change(name, pdef.name, old.args, pdef.args)]


def output_root(root: Path, configured: str, out: Path | None) -> Path:
    """`--out DIR`, else the config's `output` inside the repository."""
    return Path(out) if out is not None else root / configured


def write(result: RenderResult, out: Path | None = None) -> list[Path]:
    """Write flows rendered earlier under `out` (default: the repository's configured output directory),
    under the output directory's lock."""
    refuse_read_back(result, out)
    with Output(output_root(result.root, result.loaded.config.output, out), repository=result.root) as output:
        return output.write(result.flows)


def refuse_read_back(result: RenderResult, out: Path | None = None) -> None:
    """An output directory inside the repository must stay out of its manifests: otherwise the next render
    would read this one's objects back as input (a usage error, before anything is written)."""
    config = result.loaded.config
    directory = output_root(result.root, config.output, out)
    names = [f"flows/{f.flow_id}/{n}" for f in result.flows for n in (*f.files, *RenderedFlow.EXTRA_FILES)]
    clash = read_back(result.root, config, directory, names)
    if clash is not None:
        rel = Path(os.path.relpath(directory, result.root)).as_posix()
        raise UsageError(Problem(
            f"--out {out} is inside the repository, and the next render would read what this one writes there "
            f"({clash}) as manifests",
            hint=f"write outside the repository, or set `output: {rel}` in .devlane.yaml (its output directory is "
                 f"never read) and drop --out, or add `{rel}/**` to `exclude:` in .devlane.yaml"))



# --------------------------------------------------------------------------------------------------
# The plugin supply: `devlane plugins lock | fetch | prepare`


@dataclass(frozen=True)
class PluginSupply:
    """The plugins a repository uses: every name, the git sources among them, and the lock as committed."""

    repository: Repository
    names: list[str]
    specs: dict[str, GitSpec]
    lock: Lock

    @property
    def root(self) -> Path:
        return self.repository.root.resolve()


def plugin_supply(options: Options) -> PluginSupply:
    """Broken config or manifests stop here: a plugin definition that was not read must not lose its pin."""
    repo = read(options)
    errors = [p for p in repo.loaded.problems if p.severity == "error"]
    if errors:
        raise DevlaneError(errors)
    config, source = repo.loaded.config, repo.loaded.source
    names = used_plugin_names(repo.model.plugin_defs, config.plugin_sources)
    lock = parse_lock(source.read(LOCK_FILE) if source.exists(LOCK_FILE) else None)
    return PluginSupply(repo, names, git_specs(repo.root.resolve(), names, config.plugin_sources), lock)


def lock(options: Options, update: list[str], update_all: bool, log: Log) -> LockReport | None:
    """Pin every git plugin source in `devlane.lock` (None: the repository has none, and no lock)."""
    if options.ref:
        raise UsageError(Problem("`devlane plugins lock` writes devlane.lock in the working tree, so it takes no "
                                 "--ref", hint="check the ref out, or drop --ref"))
    supply = plugin_supply(options)
    if not supply.specs and not supply.lock.present:
        return None
    return lock_plugins(supply.root, supply.specs, update, update_all, log)


def fetch(options: Options, log: Log) -> FetchReport | None:
    """Export every locked commit into the cache (None: nothing is pinned)."""
    supply = plugin_supply(options)
    problems = stale_pins(supply.specs, supply.lock)
    if problems:
        raise DevlaneError(problems)
    return fetch_plugins(supply.lock, log) if supply.lock.entries else None


def prepare_targets(options: Options) -> tuple[list[Target], list[Problem]]:
    """The plugins `prepare` builds virtualenvs for, and warnings for fallbacks it cannot resolve."""
    supply = plugin_supply(options)
    config = supply.repository.loaded.config
    primary = set(config.plugin_sources) | {p.name for p in supply.repository.model.plugin_defs.values()}
    return resolve_prepare_targets(supply.names, primary, supply.root, options.plugin_sources, config.plugin_sources,
                                   supply.lock)
