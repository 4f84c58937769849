"""Emit: assemble the final objects of a flow, with state ConfigMaps, labels, file names,
`flow.metadata` and a README, ready for `write` (files) or `--stdout` (one stream).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from . import __version__
from .clone import DevSet, flow_labels
from .invariants import CLUSTER_SCOPED
from .names import suffixed
from .plan import SHARED, Plan
from .run_plugins import PluginStageResult
from .yamlio import dump

SUBSTITUTE = "kustomize.toolkit.fluxcd.io/substitute"
STATE_KEY = "config_map.json"


@dataclass
class RenderedFlow:
    """One output directory: `flows/<flow_id>/` (the flow, or `shared`)."""

    flow_id: str
    files: dict[str, str]  # file name -> YAML text of one object
    metadata: dict
    readme: str
    objects: list[dict] = field(default_factory=list)

    def stream(self) -> str:
        return "".join(f"---\n{self.files[f]}" for f in sorted(self.files))

    def kustomization(self) -> str:
        return dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": sorted(self.files),
            }
        )

    def metadata_text(self) -> str:
        return json.dumps(self.metadata, indent=2, sort_keys=True) + "\n"


def state_configmap(servicename: str, flow_id: str, config_map, namespace: str | None, source_name: str,
                    dependents: list[str]) -> dict:  # fmt: skip
    """Kardinal's `config_map` as a real ConfigMap, so `delete` can read it back from git."""
    meta: dict = {
        "name": suffixed(f"devlane-state-{servicename}", flow_id, limit=253),
        "labels": {**flow_labels(flow_id), "devlane.dev/plugin-instance": servicename[:63].strip(".-")},
        "annotations": {
            "devlane.dev/plugin": source_name,
            "devlane.dev/flow-uuid": f"{servicename}-{flow_id}",
            "devlane.dev/dependents": ",".join(dependents),
        },
    }
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": {STATE_KEY: json.dumps(config_map, sort_keys=True, ensure_ascii=False)},
    }


def _label_resource(obj: dict, version: str, namespace: str | None) -> dict:
    meta = obj.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(version)}
    if namespace and obj.get("kind") not in CLUSTER_SCOPED and not meta.get("namespace"):
        meta["namespace"] = namespace
    return obj


def collect_objects(plan: Plan, dev: DevSet, stage: PluginStageResult, entries: list[dict],
                    default_ns: str | None) -> dict[str, list[dict]]:  # fmt: skip
    """Group every rendered object by the directory it goes to (flow id or `shared`)."""
    groups: dict[str, list[dict]] = {plan.flow_id: []}
    for dw in dev.unique_workloads():
        groups.setdefault(dw.version, []).append(dw.obj)
    for _, obj, version in dev.services:
        groups.setdefault(version, []).append(obj)
    for res in stage.results:
        ns = None
        if res.dependents and res.dependents[0] in dev.workloads:
            ns = dev.workloads[res.dependents[0]].obj["metadata"].get("namespace")
        ns = ns or default_ns
        group = groups.setdefault(res.flow_id, [])
        group.append(state_configmap(res.servicename, res.flow_id, res.config_map, ns, res.source.name,
                                     res.dependents))  # fmt: skip
        group.extend(_label_resource(r, res.flow_id, ns) for r in res.resources)
    groups[plan.flow_id].extend(entries)
    return groups


def _file_names(objects: list[dict]) -> dict[str, dict]:
    """Stable file names `<kind>-<name>.yaml`, with the namespace added only where names collide."""
    plain: dict[str, list[dict]] = {}
    for obj in objects:
        plain.setdefault(f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml", []).append(obj)
    out: dict[str, dict] = {}
    for name, objs in plain.items():
        if len(objs) == 1:
            out[name] = objs[0]
        else:
            for obj in objs:
                ns = obj["metadata"].get("namespace") or "cluster"
                out[f"{obj['kind'].lower()}-{ns}-{obj['metadata']['name']}.yaml"] = obj
    return out


def render_files(objects: list[dict]) -> dict[str, str]:
    """Dump each object; text containing `${` opts out of Flux post-build substitution."""
    files = {}
    for name, obj in sorted(_file_names(objects).items()):
        text = dump(obj)
        if "${" in text:
            obj["metadata"].setdefault("annotations", {})[SUBSTITUTE] = "disabled"
            text = dump(obj)
        files[name] = text
    return files


def build_metadata(flow_id: str, plan: Plan, context: dict, stage: PluginStageResult, files: dict[str, str],
                   group: str) -> dict:  # fmt: skip
    """`flow.metadata`: what was rendered from what, and why each service got a dev version."""
    return {
        "apiVersion": "devlane.dev/v1alpha1",
        "kind": "FlowMetadata",
        "flow": group,
        "requestedBy": flow_id if group == SHARED else None,
        "devlaneVersion": __version__,
        "source": context["source"],
        "inputHash": context["input_hash"],
        "routing": plan.routing,
        "targets": context["targets"],
        "template": context.get("template"),
        "services": [
            d.as_dict()
            for n, d in sorted(plan.decisions.items())
            if group != SHARED or d.version == SHARED
        ],
        "plugins": [
            {
                "instance": r.servicename,
                "flowUuid": r.flow_uuid,
                "name": r.source.name,
                "source": r.source.origin,
                "digest": context["plugin_digests"].get(r.source.name),
                "dependents": r.dependents,
                "runtime": r.choice.manifest.runtime if r.choice else None,
                "status": r.status,
                "choice": r.choice.as_dict() if r.choice else None,
            }
            for r in stage.results
            if r.flow_id == group
        ],
        "bypassed": context.get("bypassed", []) if group != SHARED else [],
        "entries": context["entries"] if group != SHARED else [],
        "rewrites": context["rewrites"] if group != SHARED else [],
        "files": sorted(files),
    }


def build_readme(meta: dict) -> str:
    lines = [f"# devlane flow `{meta['flow']}`", ""]
    lines.append(
        "Rendered offline by devlane "
        f"{meta['devlaneVersion']} from revision `{(meta['source'] or {}).get('revision') or 'working tree'}` "
        f"(input hash `{meta['inputHash'][:12]}`). Do not edit: re-render instead."
    )
    lines += ["", "## Services", "", "| Service | Version | Why |", "|---|---|---|"]
    for s in meta["services"]:
        lines.append(f"| {s['name']} | {s['version']} | {'; '.join(s['reasons'])} |")
    if meta["plugins"]:
        lines += ["", "## Plugins", "", "| Instance | Plugin | Dependents |", "|---|---|---|"]
        for p in meta["plugins"]:
            lines.append(f"| {p['instance']} | `{p['name']}` | {', '.join(p['dependents'])} |")
    if meta["entries"]:
        lines += ["", "## Entry points", ""]
        for e in meta["entries"]:
            for h in e["hosts"]:
                lines.append(f"- {e['kind']} `{e['name']}`: http://{h}/")
    lines += ["", "## Files", ""] + [f"- `{f}`" for f in meta["files"]]
    return "\n".join(lines) + "\n"
