"""Repository-level plugin steps (`.devlane.yaml` `pipeline`, kops hooks) and lifecycle hooks.

- `pre-render`: the ResourceList's items are every repository object; what comes back replaces
  them (KRM function semantics: kept ids are edits, new items are additions, missing ones are
  removed) before the model is built.
- `per-flow`: a plugin instance whose dependents are all of the flow's dev services (see
  `per_flow_work`), run with the definitions' instances.
- `post-render`: the items are the flow's rendered objects; what comes back is rendered.
- Lifecycle hooks (CNPG-I): a plugin whose `plugin.yaml` lists `spec.lifecycle.kinds` patches every
  rendered object of those kinds, in flows where it is used (for pipeline plugins, in every flow).

Pre- and post-render steps transform whole object lists, so they need an exec or grpc plugin;
a kardinal-python plugin in those stages contributes through its `lifecycle_hook`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from .clone import DevSet
from .config import PipelineStep
from .errors import DevlaneError, Problem, Where, fail
from .invocation import ID, Invocation, strip_internal
from .load import Document
from .model import PluginDef
from .plan import Plan, PluginInstance
from .run_plugins import Choice, Resolver, Runner, Settings, choose
from .runtimes import DocumentRuntime

CONFIG_WHERE = ".devlane.yaml"


def _step_def(step: PipelineStep) -> PluginDef:
    return PluginDef(step.name, step.plugin, "stateful", dict(step.args),
                     Where(file=CONFIG_WHERE, plugin=step.name), behavior=step.behavior)  # fmt: skip


def _guard(step: PipelineStep, messages: list[Problem], fn: Callable[[], list[dict]],
           keep: list[dict]) -> list[dict]:  # fmt: skip
    """Run one step with its behaviour: bypass turns a failure into a warning and keeps `keep`."""
    try:
        return fn()
    except DevlaneError as exc:
        if step.behavior != "bypass":
            raise
        first = exc.problems[0]
        messages.append(Problem(f"pipeline step {step.name} ({step.stage}) failed and was bypassed; its changes "
                                f"were dropped: {first.message}", Where(file=CONFIG_WHERE, plugin=step.name),
                                first.hint, severity="warning", code="plugin-bypassed"))  # fmt: skip
        return keep


def _transform(runner: Runner, choice: Choice, step: PipelineStep, flow_id: str, objects: list[dict]) -> list[dict]:
    """One ResourceList transform of `objects` by an exec or grpc plugin."""
    rt = runner.runtime(choice)
    where = Where(file=CONFIG_WHERE, plugin=step.name)
    if not isinstance(rt, DocumentRuntime):
        raise fail(f"pipeline step {step.name}: {step.stage} steps transform whole object lists, which a "
                   f"{rt.kind} plugin cannot do", where,
                   "use an exec or grpc plugin, or give the plugin a lifecycle_hook and list it under "
                   "spec.lifecycle.kinds in its plugin.yaml", code="pipeline-runtime")  # fmt: skip
    inv = Invocation("CreateFlow", step.name, flow_id, choice.name, args=dict(choice.args),
                     objects=[copy.deepcopy(o) for o in objects], stage=step.stage)  # fmt: skip
    inv = runner.prepare_args(inv, choice)
    try:
        doc, reader = rt._call(inv, runner.settings.budget.for_call(choice.manifest, where))
    except DevlaneError as exc:
        raise runner.settings.budget.explain(exc) from None
    runner_messages = reader.results(doc)
    by_id = {str(i): o for i, o in enumerate(objects)}
    out = []
    for item in doc["items"]:
        ident = ((item.get("metadata") or {}).get("annotations") or {}).get(ID)
        if ident is not None and ident not in by_id:
            raise reader.error(f"returned an item with unknown {ID} {ident!r}")
        out.append(strip_internal(copy.deepcopy(item)))
    runner.messages += runner_messages
    return out


class Steps:
    """Runs the pipeline's steps of one render; one runtime per plugin, closed by `close()`."""

    def __init__(self, steps: list[PipelineStep], resolver: Resolver, settings: Settings, mode: str, repo_source):
        self.steps = steps
        self.resolver = resolver
        self.runner = Runner(settings)
        self.mode = mode
        self.repo_source = repo_source
        self.messages: list[Problem] = []

    def choice(self, step: PipelineStep, flow_id: str) -> Choice:
        return choose(self.resolver, _step_def(step), flow_id, self.mode, self.repo_source)

    def close(self) -> None:
        self.runner.close()
        self.messages += self.runner.messages

    def pre_render(self, documents: list[Document], flow_id: str) -> list[Document]:
        for step in (s for s in self.steps if s.stage == "pre-render"):
            objects = [d.obj for d in documents]
            choice = self.choice(step, flow_id)
            run = lambda c=choice, s=step, o=objects: _transform(self.runner, c, s, flow_id, o)  # noqa: E731
            new = _guard(step, self.messages, run, objects)
            if new is objects:
                continue
            documents = [Document(obj, f"<pipeline {step.name}>", i) for i, obj in enumerate(new)]
        return documents

    def per_flow_work(self, plan: Plan, dev: DevSet) -> list[tuple[PluginInstance, Choice, str]]:
        services = sorted(s for s in plan.dev_services() if dev.versions.get(s, plan.flow_id) == plan.flow_id
                          and s in dev.workloads)  # fmt: skip
        work = []
        for step in (s for s in self.steps if s.stage == "per-flow"):
            inst = PluginInstance(step.name, plan.flow_id, services)
            work.append((inst, self.choice(step, plan.flow_id), step.behavior))
        return work

    def post_render(self, objects: list[dict], flow_id: str, used: list[Choice]) -> list[dict]:
        """Lifecycle hooks of the plugins in use, then the `post-render` steps, in order."""
        hooked = list(used) + [self.choice(s, flow_id) for s in self.steps]
        seen: set[str] = set()
        for choice in hooked:
            if choice.name in seen or not choice.manifest.lifecycle_kinds or not choice.manifest.has("LifecycleHook"):
                continue
            seen.add(choice.name)
            objects = self._lifecycle(choice, objects, flow_id)
        for step in (s for s in self.steps if s.stage == "post-render"):
            choice = self.choice(step, flow_id)
            rt = self.runner.runtime(choice)
            if not isinstance(rt, DocumentRuntime) and choice.manifest.has("LifecycleHook"):
                continue  # a kardinal-python step contributes through its lifecycle_hook (above)
            current = objects
            objects = _guard(step, self.messages,
                             lambda c=choice, s=step, o=current: _transform(self.runner, c, s, flow_id, o),
                             current)
        return objects

    def _lifecycle(self, choice: Choice, objects: list[dict], flow_id: str) -> list[dict]:
        kinds = set(choice.manifest.lifecycle_kinds)
        picked = [i for i, o in enumerate(objects) if o.get("kind") in kinds]
        if not picked:
            return objects
        where = Where(plugin=choice.name)
        inv = Invocation("LifecycleHook", choice.name, flow_id, choice.name, args=dict(choice.args),
                         objects=[copy.deepcopy(objects[i]) for i in picked])  # fmt: skip
        patched = self.runner.runtime(choice).lifecycle_hook(inv, self.runner.settings.budget.for_call(
            choice.manifest, where))
        out = list(objects)
        for i, obj in zip(picked, patched, strict=True):
            out[i] = obj
        return out
