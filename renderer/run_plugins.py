"""Plugins stage: run each plugin instance once per flow over its dependents' dev pod specs.

Instances run in plan order, so a later plugin sees an earlier one's changes. Kardinal plugins
edit `containers[0]`; devlane moves the target container (`devlane.dev/container`) to the front
for the call and puts it back afterwards. What a plugin returns is final: no reference
rewriting happens after this stage.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .clone import DevSet, DevWorkload
from .errors import DevlaneError, Problem, Where, fail
from .load import GitRefSource, Source
from .model import Model
from .plan import Plan
from .plugins import PluginCall, run_create_flow
from .sources import PluginSource, resolve_plugin_source


@dataclass
class InstanceResult:
    servicename: str
    flow_id: str
    flow_uuid: str
    source: PluginSource
    dependents: list[str]
    config_map: Any
    resources: list[dict] = field(default_factory=list)


@dataclass
class PluginStageResult:
    results: list[InstanceResult] = field(default_factory=list)
    messages: list[Problem] = field(default_factory=list)


def _from_ref(name: str, source: GitRefSource, scratch: Path) -> PluginSource | None:
    """A plugin kept in the repository, read from the rendered git ref rather than the work tree."""
    rel = name[2:] if name.startswith("./") else name
    if rel.startswith("/") or ".." in rel.split("/") or not source.exists(f"{rel.rstrip('/')}/main.py"):
        return None
    dest = scratch / f"plugin-{len(list(scratch.iterdir()))}"
    source.export(rel, dest)
    return PluginSource(name, dest, "repo")


def resolve_sources(model: Model, plan: Plan, repo_root: Path, flag_sources: dict[str, str],
                    config_sources: dict[str, dict], source: Source | None = None,
                    scratch: Path | None = None) -> dict[str, PluginSource]:  # fmt: skip
    """Resolve every plugin the plan uses before running any, so a missing one fails fast.

    With `--ref`, plugins that live in the repository come from that ref (exported to `scratch`).
    """
    out: dict[str, PluginSource] = {}
    for inst in plan.instances:
        pdef = model.plugin_defs[inst.servicename]
        if pdef.name in out:
            continue
        explicit = pdef.name in flag_sources or pdef.name in config_sources
        if isinstance(source, GitRefSource) and scratch is not None and not explicit:
            found = _from_ref(pdef.name, source, scratch)
            if found is not None:
                out[pdef.name] = found
                continue
        try:
            out[pdef.name] = resolve_plugin_source(pdef.name, repo_root, flag_sources, config_sources)
        except DevlaneError as exc:  # point at the plugin definition that names the source
            where = replace(pdef.where, plugin=inst.servicename)
            raise DevlaneError([replace(p, where=where) for p in exc.problems]) from None
    return out


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


def run_plugins(model: Model, plan: Plan, dev: DevSet, sources: dict[str, PluginSource], timeout: float,
                debug: bool = False) -> PluginStageResult:  # fmt: skip
    stage = PluginStageResult()
    for inst in plan.instances:
        pdef = model.plugin_defs[inst.servicename]
        workloads: list[DevWorkload] = [dev.workloads[d] for d in inst.dependents if d in dev.workloads]
        if not workloads:
            continue
        moved = [_to_front(copy.deepcopy(w.pod_spec), w.container) for w in workloads]
        call = PluginCall(
            instance=inst.servicename,
            flow_id=inst.flow_id,
            source=sources[pdef.name],
            args=dict(pdef.args),
            service_specs=[copy.deepcopy(model.services[w.service].doc.obj.get("spec") or {}) for w in workloads],
            pod_specs=[m[0] for m in moved],
            workload_specs=[copy.deepcopy(w.obj.get("spec") or {}) for w in workloads],
            dependents=[w.service for w in workloads],
        )
        outcome = run_create_flow(call, timeout, debug=debug)
        for w, new_spec, (_, idx) in zip(workloads, outcome.pod_specs, moved, strict=True):
            w.obj["spec"]["template"]["spec"] = _back(new_spec, idx)
        try:
            json.dumps(outcome.config_map)
        except (TypeError, ValueError):
            raise fail("config_map is not JSON", Where(plugin=inst.servicename)) from None
        stage.messages += outcome.messages
        stage.results.append(
            InstanceResult(
                inst.servicename,
                inst.flow_id,
                call.flow_uuid,
                call.source,
                call.dependents,
                outcome.config_map,
                list(outcome.resources),
            )
        )
    return stage


def plugin_digest(path: Path) -> str:
    """Content hash of a plugin directory (ignoring caches), recorded in `flow.metadata`."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = f.relative_to(path).as_posix()
        if "__pycache__" in rel or rel.endswith(".pyc") or rel.startswith((".venv/", "venv/", ".git/")):
            continue
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()
