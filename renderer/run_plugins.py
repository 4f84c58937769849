"""Plugins stage: choose each plugin instance's implementation, then run the instances.

- Choice: a plugin definition names a plugin and, optionally, `implementations` in preference
  order; the first whose source is available and allowed is used (an External plugin is allowed
  during render only when `devlane provision` recorded its result). The choice and the reason go
  to `flow.metadata` and `plan`.
- Args: `argsSchema` is checked before any call, then `default_args` and `validate_args` run.
- Order and concurrency: instances that share a dependent run in plan order (a later one sees an
  earlier one's changes); independent instances run concurrently, and results are applied in plan
  order, so the output is the same as a serial run.
- Behaviour (kops): `enforce` fails the render; `bypass` turns the failure into a warning and
  drops that plugin's changes.
- Kardinal plugins edit `containers[0]`, so the target container (`devlane.dev/container`) is
  moved to the front for the call and put back afterwards. What a plugin returns is final.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .clone import DevSet, DevWorkload
from .errors import DevlaneError, Problem, Where, fail
from .invocation import Invocation, Outcome, request_document
from .load import GitRefSource, Source
from .manifest import Manifest, args_problems, load_manifest
from .model import Model, PluginDef
from .plan import Plan, PluginInstance
from .runtimes import Runtime, make_runtime
from .sandbox import NETWORK_HINT, network_hint, scrub, secret_values
from .sources import PluginSource, is_plugin_dir, resolve_plugin_source
from .state import Record, input_hash, read_record

DEFAULT_PLUGIN_TIMEOUT = 60.0


@dataclass
class Choice:
    """The implementation used for one plugin instance, and why."""

    name: str
    source: PluginSource
    manifest: Manifest
    args: dict[str, str]
    external: bool
    reason: str
    skipped: list[dict] = field(default_factory=list)  # [{name, reason}] of preferred alternatives
    record: Record | None = None  # render: the provision record replayed for an External plugin

    def as_dict(self) -> dict:
        return {"name": self.name, "runtime": self.manifest.runtime, "external": self.external,
                "reason": self.reason, "skipped": self.skipped}  # fmt: skip


@dataclass
class InstanceResult:
    servicename: str
    flow_id: str
    flow_uuid: str
    source: PluginSource
    dependents: list[str]
    config_map: Any
    resources: list[dict] = field(default_factory=list)
    status: str = "ok"  # ok | replayed | bypassed | provisioned
    choice: Choice | None = None
    record: Record | None = None


@dataclass
class PluginStageResult:
    results: list[InstanceResult] = field(default_factory=list)
    messages: list[Problem] = field(default_factory=list)
    bypassed: list[dict] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)  # provision mode: what to write


@dataclass
class Budget:
    """Per-call limits inside a whole-render budget (`--timeout`)."""

    flag: float | None = None  # --plugin-timeout: overrides every plugin's own limit
    config: float | None = None  # .devlane.yaml plugins.timeoutSeconds
    total: float | None = None  # --timeout
    started: float = field(default_factory=time.monotonic)

    def for_call(self, manifest: Manifest, where: Where) -> float:
        limit = self.flag or manifest.timeout_seconds or self.config or DEFAULT_PLUGIN_TIMEOUT
        if self.total is None:
            return float(limit)
        left = self.total - (time.monotonic() - self.started)
        if left <= 0:
            raise fail(f"the render ran out of its --timeout budget of {self.total:g} s before this plugin ran",
                       where, "raise --timeout, or make the plugins faster", code="render-timeout")  # fmt: skip
        return float(min(limit, left))

    def explain(self, exc: DevlaneError) -> DevlaneError:
        """A call that timed out as the whole-render budget ran out says so: --plugin-timeout would not help."""
        if self.total is None or self.total - (time.monotonic() - self.started) > 0:
            return exc
        return DevlaneError([replace(p, message=f"{p.message} (the rest of the --timeout budget of {self.total:g} s "
                                                "for the whole render)",
                                     hint="raise --timeout, or make the plugins faster") if p.code == "plugin-timeout"
                             else p for p in exc.problems], exc.exit_code)  # fmt: skip


@dataclass
class Settings:
    budget: Budget = field(default_factory=Budget)
    mode: str = "render"  # render | provision
    jobs: int = field(default_factory=lambda: min(8, os.cpu_count() or 2))
    debug: bool = False


# --------------------------------------------------------------------------------------------------
# Choosing implementations


def _from_ref(name: str, source: GitRefSource, scratch: Path) -> PluginSource | None:
    """A plugin kept in the repository, read from the rendered git ref rather than the work tree."""
    rel = name[2:] if name.startswith("./") else name
    if rel.startswith("/") or ".." in rel.split("/"):
        return None
    if not (source.exists(f"{rel.rstrip('/')}/main.py") or source.exists(f"{rel.rstrip('/')}/plugin.yaml")):
        return None
    dest = scratch / f"plugin-{len(list(scratch.iterdir()))}"
    source.export(rel, dest)
    return PluginSource(name, dest, "repo") if is_plugin_dir(dest) else None


@dataclass
class Resolver:
    """Finds plugin directories and manifests once per name (flags, config, lock, repo, built-in)."""

    repo_root: Path
    flag_sources: dict[str, str]
    config_sources: dict[str, dict]
    source: Source | None = None
    scratch: Path | None = None
    found: dict[str, tuple[PluginSource, Manifest] | DevlaneError] = field(default_factory=dict)

    def get(self, name: str) -> tuple[PluginSource, Manifest]:
        if name not in self.found:
            try:
                src = self._source(name)
                self.found[name] = (src, load_manifest(src.path, name))
            except DevlaneError as exc:
                self.found[name] = exc
        value = self.found[name]
        if isinstance(value, DevlaneError):
            raise value
        return value

    def _source(self, name: str) -> PluginSource:
        explicit = name in self.flag_sources or name in self.config_sources
        if isinstance(self.source, GitRefSource) and self.scratch is not None and not explicit:
            found = _from_ref(name, self.source, self.scratch)
            if found is not None:
                return found
        lock = None
        if isinstance(self.source, GitRefSource):  # pins as committed at the rendered ref
            from .lock import LOCK_FILE, parse_lock

            data = self.source.read(LOCK_FILE) if self.source.exists(LOCK_FILE) else None
            lock = parse_lock(data, LOCK_FILE)
        return resolve_plugin_source(name, self.repo_root, self.flag_sources, self.config_sources, lock=lock)


def _is_external(pdef_side_effects: str | None, manifest: Manifest) -> bool:
    return pdef_side_effects == "External" or manifest.side_effects == "External"


def choose(resolver: Resolver, pdef: PluginDef, flow_id: str, mode: str, repo: Source | None) -> Choice:
    """The first candidate (the plugin, then its implementations) that is available and allowed."""
    skipped: list[dict] = []
    errors: list[DevlaneError] = []
    candidates = pdef.candidates
    for i, cand in enumerate(candidates):
        side = pdef.side_effects if i == 0 else None
        try:
            src, manifest = resolver.get(cand["name"])
        except DevlaneError as exc:
            errors.append(exc)
            skipped.append({"name": cand["name"], "reason": "not available: " + exc.problems[0].message})
            continue
        external = _is_external(side, manifest)
        reason = "preferred" if i == 0 else f"fallback #{i}"
        record = None
        if external and mode == "render":
            record = read_record(repo, flow_id, pdef.servicename) if repo is not None else None
            if record is None:
                skipped.append({"name": cand["name"], "reason": "External: never runs during render, and "
                                "devlane provision recorded no result for this flow"})  # fmt: skip
                continue
            reason += "; External, replaying the result recorded by devlane provision"
        elif external:
            reason += "; External, run for real by devlane provision"
        return Choice(cand["name"], src, manifest, dict(cand["args"]), external, reason, skipped, record)
    where = replace(pdef.where, plugin=pdef.servicename)
    if len(candidates) == 1 and errors:
        raise DevlaneError([replace(p, where=where) for p in errors[0].problems]) from None
    if len(candidates) == 1:
        raise fail(f"plugin {pdef.name} is External (it changes something outside the rendered manifests), "
                   "so it never runs during render, and no provision record exists for this flow", where,
                   f"run `devlane provision --flow {flow_id}` first (CI on PR open), or add a non-External "
                   "implementation under `implementations`", code="plugin-external")  # fmt: skip
    tried = "; ".join(f"{s['name']}: {s['reason']}" for s in skipped)
    raise fail(f"no implementation of {pdef.servicename} is available and allowed ({tried})", where,
               "make one of them available (devlane plugins lock/fetch, --plugin-source) or run devlane provision",
               code="plugin-no-implementation")  # fmt: skip


def choose_all(model: Model, plan: Plan, resolver: Resolver, mode: str, repo: Source | None) -> dict[str, Choice]:
    """Every instance's choice before any plugin runs, so a missing plugin fails fast."""
    return {inst.servicename: choose(resolver, model.plugin_defs[inst.servicename], plan.flow_id, mode, repo)
            for inst in plan.instances}  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Running instances


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


def _extension_objects(model: Model, pdef: PluginDef) -> list[dict]:
    out = []
    for ref in pdef.extensions:
        matches = [d for d in model.documents if d.kind == ref["kind"] and d.name == ref["name"]
                   and (not ref.get("namespace") or (d.namespace or model.default_namespace) == ref["namespace"])
                   and (not ref.get("apiVersion") or d.api_version == ref["apiVersion"])]  # fmt: skip
        if len(matches) != 1:
            what = "no object" if not matches else f"{len(matches)} objects"
            raise fail(f"extension {ref['kind']}/{ref['name']} matches {what} in the repository",
                       replace(pdef.where, plugin=pdef.servicename),
                       "list an object of the repository (add namespace: to pick one of several)",
                       code="plugin-extension")  # fmt: skip
        out.append(copy.deepcopy(matches[0].obj))
    return out


def invocation_for(model: Model, inst: PluginInstance, workloads: list[DevWorkload], choice: Choice) -> Invocation:
    pdef = model.plugin_defs.get(inst.servicename)
    moved = []
    for w in workloads:
        obj = copy.deepcopy(w.obj)
        _to_front(obj["spec"]["template"]["spec"], w.container)
        moved.append(obj)
    return Invocation(
        operation="CreateFlow",
        instance=inst.servicename,
        flow_id=inst.flow_id,
        plugin=choice.name,
        args=dict(choice.args),
        dependents=[w.service for w in workloads],
        workloads=moved,
        services=[copy.deepcopy(model.services[w.service].doc.obj) for w in workloads],
        extensions=_extension_objects(model, pdef) if pdef is not None else [],
    )


class Runner:
    """Runs instances with one runtime per plugin, closed at the end."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.runtimes: dict[str, Runtime] = {}
        self.lock = threading.Lock()
        self.messages: list[Problem] = []  # warnings and info from pipeline transforms

    def runtime(self, choice: Choice) -> Runtime:
        with self.lock:
            if choice.name not in self.runtimes:
                network = choice.external and self.settings.mode == "provision"
                self.runtimes[choice.name] = make_runtime(choice.source, choice.manifest, self.settings.debug, network)
            return self.runtimes[choice.name]

    def close(self) -> None:
        for rt in self.runtimes.values():
            rt.close()

    def prepare_args(self, inv: Invocation, choice: Choice) -> Invocation:
        """argsSchema before any call, then default_args and validate_args."""
        where = Where(plugin=inv.instance)
        problems = args_problems(choice.manifest, inv.args, where)
        if problems:
            raise DevlaneError(problems)
        rt = self.runtime(choice)
        budget = self.settings.budget
        if choice.manifest.has("DefaultArgs"):
            inv = replace(inv, args=rt.default_args(replace(inv, operation="DefaultArgs"),
                                                    budget.for_call(choice.manifest, where)))  # fmt: skip
            problems = args_problems(choice.manifest, inv.args, where)
        if choice.manifest.has("ValidateArgs"):
            call = replace(inv, operation="ValidateArgs")
            problems += rt.validate_args(call, budget.for_call(choice.manifest, where))
        if problems:
            raise DevlaneError(problems)
        return inv

    def create(self, inv: Invocation, choice: Choice) -> tuple[Outcome, str, Record | None]:
        secrets = secret_values(inv.args, choice.manifest.args_schema)
        try:
            outcome, status, record = self._create(inv, choice)
        except DevlaneError as exc:
            raise sanitize(exc, secrets, network_allowed=choice.external and self.settings.mode != "render") from None
        outcome.messages = [_scrubbed(p, secrets) for p in outcome.messages]
        return outcome, status, record

    def _create(self, inv: Invocation, choice: Choice) -> tuple[Outcome, str, Record | None]:
        inv = self.prepare_args(inv, choice)
        where = Where(plugin=inv.instance)
        if choice.external:
            digest = plugin_digest(choice.source.path)
            key = input_hash(choice.name, digest, request_document(inv, 0))
            if self.settings.mode == "render":
                rec = choice.record
                if rec is None or rec.input_hash != key:
                    raise fail(f"the inputs of External plugin {choice.name} changed since `devlane provision` "
                               "recorded its result", where,
                               f"re-provision: devlane provision --flow {inv.flow_id} (CI does this on PR update)",
                               code="plugin-reprovision")  # fmt: skip
                return copy.deepcopy(rec.outcome), "replayed", None
            outcome = self.runtime(choice).create_flow(inv, self.settings.budget.for_call(choice.manifest, where))
            rec = Record(choice.name, inv.instance, inv.flow_id, key,
                         Outcome(outcome.pod_specs, outcome.config_map, outcome.resources))
            return outcome, "provisioned", rec
        outcome = self.runtime(choice).create_flow(inv, self.settings.budget.for_call(choice.manifest, where))
        return outcome, "ok", None


def _scrubbed(p: Problem, secrets: list[str]) -> Problem:
    if not secrets:
        return p
    return replace(p, message=scrub(p.message, secrets), hint=scrub(p.hint, secrets) if p.hint else p.hint)


def sanitize(exc: DevlaneError, secrets: list[str], network_allowed: bool = False) -> DevlaneError:
    """Secrets from args never reach logs or errors; a failed network attempt gets the External hint."""
    problems = [_scrubbed(p, secrets) for p in exc.problems]
    if not network_allowed:
        problems = [replace(p, hint=NETWORK_HINT) if network_hint(p.message) else p for p in problems]
    return DevlaneError(problems, exc.exit_code)


def _levels(instances: list[PluginInstance]) -> list[list[int]]:
    """Group instances into waves: one waits for every earlier instance that shares a dependent."""
    level: list[int] = []
    for i, inst in enumerate(instances):
        deps = set(inst.dependents)
        level.append(1 + max([level[j] for j in range(i) if deps & set(instances[j].dependents)], default=-1))
    waves: dict[int, list[int]] = {}
    for i, lv in enumerate(level):
        waves.setdefault(lv, []).append(i)
    return [waves[k] for k in sorted(waves)]


def run_plugins(model: Model, plan: Plan, dev: DevSet, choices: dict[str, Choice], settings: Settings,
                extra: list[tuple[PluginInstance, Choice, str]] | None = None) -> PluginStageResult:  # fmt: skip
    """Run every instance (plus pipeline `per-flow` steps in `extra`, with their behaviour)."""
    stage = PluginStageResult()
    work: list[tuple[PluginInstance, Choice, str]] = []
    for inst in plan.instances:
        pdef = model.plugin_defs[inst.servicename]
        work.append((inst, choices[inst.servicename], pdef.behavior))
    work += extra or []
    runner = Runner(settings)
    try:
        pool = ThreadPoolExecutor(max_workers=max(1, settings.jobs))
        with pool:
            for wave in _levels([w[0] for w in work]):
                calls = {}
                for i in wave:
                    inst, choice, _ = work[i]
                    workloads = [dev.workloads[d] for d in inst.dependents if d in dev.workloads]
                    if not workloads:
                        continue
                    inv = invocation_for(model, inst, workloads, choice)
                    calls[i] = (inv, workloads, pool.submit(runner.create, inv, choice))
                for i in sorted(calls):  # apply in plan order: same output as a serial run
                    inv, workloads, future = calls[i]
                    inst, choice, behavior = work[i]
                    try:
                        outcome, status, record = future.result()
                    except DevlaneError as exc:
                        exc = settings.budget.explain(exc)
                        if behavior != "bypass":
                            raise exc from None
                        _bypass(stage, inst, choice, exc)
                        continue
                    _apply(stage, inst, choice, inv, workloads, outcome, status, record)
    finally:
        runner.close()
    # waves finish out of plan order: list results (flow.metadata) as a serial run would
    position = {(w[0].servicename, w[0].flow_id): i for i, w in enumerate(work)}
    stage.results.sort(key=lambda r: position.get((r.servicename, r.flow_id), len(work)))
    first: dict[str, int] = {}
    for i, w in enumerate(work):
        first.setdefault(w[0].servicename, i)
    stage.bypassed.sort(key=lambda b: first.get(b["instance"], len(work)))
    return stage


def _bypass(stage: PluginStageResult, inst: PluginInstance, choice: Choice, exc: DevlaneError) -> None:
    first = exc.problems[0]
    stage.messages.append(Problem(f"plugin failed and was bypassed (behavior: bypass); its changes were dropped: "
                                  f"{first.message}", Where(plugin=inst.servicename), first.hint,
                                  severity="warning", code="plugin-bypassed"))  # fmt: skip
    stage.bypassed.append({"instance": inst.servicename, "name": choice.name, "error": first.message})


def _apply(stage: PluginStageResult, inst: PluginInstance, choice: Choice, inv: Invocation,
           workloads: list[DevWorkload], outcome: Outcome, status: str, record: Record | None) -> None:  # fmt: skip
    if len(outcome.pod_specs) != len(workloads):
        raise fail(f"the result has {len(outcome.pod_specs)} pod specs for {len(workloads)} dependents",
                   Where(plugin=inst.servicename), "re-provision the flow", code="plugin-pod-spec-count")
    for w, new_spec in zip(workloads, outcome.pod_specs, strict=True):
        moved_idx = _to_front(copy.deepcopy(w.pod_spec), w.container)[1]
        added = sorted(_duplicate_env(new_spec) - _duplicate_env(w.pod_spec))
        w.obj["spec"]["template"]["spec"] = _back(copy.deepcopy(new_spec), moved_idx)
        for container, name in added:
            stage.messages.append(Problem(
                f"the plugin left env {name} twice in container {container} of {w.obj['kind']}/"
                f"{w.obj['metadata']['name']}; the last one wins in the pod, but server-side apply (Flux, Argo CD "
                "with ServerSideApply) rejects duplicate keys", Where(plugin=inst.servicename),
                "set the variable once (replace it rather than append), or remove it from the manifest",
                severity="warning", code="plugin-duplicate-env"))  # fmt: skip
    try:
        json.dumps(outcome.config_map)
    except (TypeError, ValueError):
        raise fail("config_map is not JSON", Where(plugin=inst.servicename)) from None
    stage.messages += outcome.messages
    if record is not None:
        stage.records.append(record)
    stage.results.append(InstanceResult(inst.servicename, inst.flow_id, inv.flow_uuid, choice.source,
                                        list(inv.dependents), outcome.config_map, list(outcome.resources),
                                        status, choice, record))  # fmt: skip


def _duplicate_env(pod_spec: dict) -> set[tuple[str, str]]:
    """(container, env name) pairs set more than once."""
    out = set()
    for key in ("initContainers", "containers"):
        for c in pod_spec.get(key) or []:
            names = [e.get("name") for e in (c.get("env") or []) if isinstance(e, dict)]
            out |= {(str(c.get("name")), str(n)) for n in names if names.count(n) > 1}
    return out


def plugin_digest(path: Path) -> str:
    """Content hash of a plugin directory (ignoring caches), recorded in `flow.metadata`."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = f.relative_to(path).as_posix()
        if "__pycache__" in rel or rel.endswith(".pyc") or rel.startswith((".venv/", "venv/", ".git/")):
            continue
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()
