"""Repository-level plugin steps (`.devlane.yaml` `pipeline`, kops hooks) and lifecycle hooks.

- `pre-render`: the ResourceList's items are every repository object; what comes back replaces
  them (KRM function semantics: kept ids are edits, new items are additions, missing ones are
  removed) before the model is built.
- `per-flow`: a plugin instance whose dependents are all of the flow's dev services (see
  `per_flow_work`), run with the definitions' instances.
- `post-render`: the items are the flow's rendered objects; what comes back is rendered, once the output
  policy (`output_policy`) accepts what the step added or changed (lifecycle hooks too). What a
  `pre-render` step returns is the repository itself: it meets the model and the invariants, not the
  output policy.
- Lifecycle hooks (CNPG-I): a plugin whose `plugin.yaml` lists `spec.lifecycle.kinds` patches every
  rendered object of those kinds, in flows where it is used (for pipeline plugins, in every flow).

Pre- and post-render steps transform whole object lists, so they need an exec or grpc plugin;
a kardinal-python plugin in those stages contributes through its `lifecycle_hook`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from ...errors import DevlaneError, Problem, Where, fail
from ...host.choose import Candidate, Choice, PluginUse
from ...host.invoke import Invocation
from ...host.plugin_host import PluginHost
from ..copies.dev_set import DevSet
from ..inputs import field_types
from ..inputs.document import Document, is_kubernetes_object
from ..inputs.load import Loaded
from ..plan.planner import Plan, PluginInstance
from ..settings.repo_config import CONFIG_FILE, PipelineStep
from .calls import Work
from .output_policy import OutputPolicy


def step_use(step: PipelineStep) -> PluginUse:
    return PluginUse(step.name, (Candidate(step.plugin, dict(step.args)),), None,
                     Where(file=CONFIG_FILE, plugin=step.name))


class _Run:
    """The steps of one stage: bypass warnings first, then what the plugins reported, as a serial run."""

    def __init__(self, host: PluginHost, flow_id: str, policy: OutputPolicy | None = None):
        self.host = host
        self.flow_id = flow_id
        self.policy = policy  # None before the model exists (pre-render)
        self.warnings: list[Problem] = []
        self.reported: list[Problem] = []

    @property
    def messages(self) -> list[Problem]:
        return self.warnings + self.reported

    def choice(self, step: PipelineStep) -> Choice:
        return self.host.choose(step_use(step), self.flow_id)

    def guarded(self, step: PipelineStep, fn: Callable[[], list[dict]], keep: list[dict]) -> list[dict]:
        """Run one step with its behaviour: bypass turns a failure into a warning and keeps `keep`."""
        try:
            return fn()
        except DevlaneError as exc:
            if step.behavior != "bypass":
                raise
            first = exc.problems[0]
            self.warnings.append(Problem(f"pipeline step {step.name} ({step.stage}) failed and was bypassed; its "
                                         f"changes were dropped: {first.message}",
                                         Where(file=CONFIG_FILE, plugin=step.name), first.hint, severity="warning",
                                         code="plugin-bypassed"))
            return keep

    def transform(self, choice: Choice, step: PipelineStep, objects: list[dict]) -> list[dict]:
        """One ResourceList transform of `objects` by an exec or grpc plugin."""
        rt = self.host.runtime(choice)
        if choice.manifest.runtime == "kardinal-python":
            raise fail(f"pipeline step {step.name}: {step.stage} steps transform whole object lists, which a "
                       f"{rt.kind} plugin cannot do", Where(file=CONFIG_FILE, plugin=step.name),
                       "use an exec or grpc plugin, or give the plugin a lifecycle_hook and list it under "
                       "spec.lifecycle.kinds in its plugin.yaml", code="pipeline-runtime")
        inv = Invocation("CreateFlow", step.name, self.flow_id, choice.name, args=dict(choice.args),
                         objects=[copy.deepcopy(o) for o in objects], stage=step.stage)
        inv = self.host.prepare_args(inv, choice)
        try:
            out, messages = rt.transform(inv, self.host.timeout(choice, step.name))
        except DevlaneError as exc:
            raise self.host.budget.explain(exc) from None
        if self.policy is not None:
            self.policy.transformed(self.policy.caller(step.name, choice), objects, out)
        self.reported += messages
        return out

    def lifecycle(self, choice: Choice, objects: list[dict]) -> list[dict]:
        kinds = set(choice.manifest.lifecycle_kinds)
        picked = [i for i, o in enumerate(objects) if o.get("kind") in kinds]
        if not picked:
            return objects
        inv = Invocation("LifecycleHook", choice.name, self.flow_id, choice.name, args=dict(choice.args),
                         objects=[copy.deepcopy(objects[i]) for i in picked])
        patched = self.host.runtime(choice).lifecycle_hook(inv, self.host.timeout(choice, choice.name))
        if self.policy is not None:
            self.policy.hooked(self.policy.caller(choice.name, choice), [objects[i] for i in picked], patched)
        out = list(objects)
        for i, obj in zip(picked, patched, strict=True):
            out[i] = obj
        return out


def pre_render(host: PluginHost, steps: list[PipelineStep], loaded: Loaded, flow_id: str) -> tuple[Loaded,
                                                                                                  list[Problem]]:
    """The repository's objects after the `pre-render` steps, in order."""
    run = _Run(host, flow_id)
    documents = loaded.documents
    for step in (s for s in steps if s.stage == "pre-render"):
        objects = [d.obj for d in documents]
        choice = run.choice(step)
        new = run.guarded(step, lambda c=choice, s=step, o=objects: run.transform(c, s, o), objects)
        if new is not objects:
            documents = [_replaced(obj, step, i) for i, obj in enumerate(new)]
    return loaded.with_documents(documents), run.messages


def _replaced(obj: object, step: PipelineStep, index: int) -> Document:
    """An object a pre-render step returned, held to what the repository's own objects are (see `load`)."""
    doc = Document(obj, f"<pipeline {step.name}>", index)  # type: ignore[arg-type]
    if not is_kubernetes_object(obj) or not doc.name:
        raise fail(f"pipeline step {step.name} returned item {index + 1}, which is not a Kubernetes object with "
                   "apiVersion, kind and metadata.name", Where(file=CONFIG_FILE, plugin=step.name),
                   code="pipeline-output")
    wrong = field_types.check(doc.obj, Where(object=doc.ref, plugin=step.name))
    if wrong is not None:
        raise DevlaneError(wrong)
    return doc


def per_flow_work(host: PluginHost, steps: list[PipelineStep], plan: Plan, dev: DevSet) -> list[Work]:
    """The `per-flow` steps as plugin instances over every dev service of the flow."""
    services = tuple(sorted(s for s in plan.dev_services() if dev.versions.get(s, plan.flow_id) == plan.flow_id
                            and s in dev.workloads))
    return [(PluginInstance(step.name, plan.flow_id, services), host.choose(step_use(step), plan.flow_id),
             step.behavior) for step in steps if step.stage == "per-flow"]


def post_render(host: PluginHost, steps: list[PipelineStep], objects: list[dict], flow_id: str,
                used: list[Choice], policy: OutputPolicy | None = None) -> tuple[list[dict], list[Problem]]:
    """Lifecycle hooks of the plugins in use, then the `post-render` steps, in order; `policy` checks what
    each one adds or changes."""
    run = _Run(host, flow_id, policy)
    seen: set[str] = set()
    for choice in [*used, *(run.choice(s) for s in steps)]:
        if choice.name in seen or not choice.manifest.lifecycle_kinds or not choice.manifest.has("LifecycleHook"):
            continue
        seen.add(choice.name)
        objects = run.lifecycle(choice, objects)
    for step in (s for s in steps if s.stage == "post-render"):
        choice = run.choice(step)
        if choice.manifest.runtime == "kardinal-python" and choice.manifest.has("LifecycleHook"):
            continue  # a kardinal-python step contributes through its lifecycle_hook (above)
        current = objects
        objects = run.guarded(step, lambda c=choice, s=step, o=current: run.transform(c, s, o), current)
    return objects, run.messages


def plan_steps(host: PluginHost, steps: list[PipelineStep], flow_id: str) -> list[dict]:
    """What `plan` shows of the pipeline: each step and the implementation it uses."""
    return [{"name": s.name, "stage": s.stage, "plugin": s.plugin, "behavior": s.behavior,
             "choice": host.choose(step_use(s), flow_id).as_dict()} for s in steps]
