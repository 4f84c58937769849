"""Emit: the final objects of a flow, grouped by directory (`collect`), then as files with state
ConfigMaps, labels, stable file names, `flow.metadata` and a README (`render`), ready for `write`
(files) or `--stdout` (one stream).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ...core import deadline, parallel
from ...core.files import read_user_file
from ...core.jsonio import dumps_pretty
from ...core.k8s import CLUSTER_SCOPED
from ...core.names import SHARED, flow_labels, flow_uuid, suffixed
from ...core.version import VERSION
from ...core.yamlio import dump
from ...protocol.krm import STATE_KEY
from ..checks import footprint, reach
from ..copies.dev_set import DevSet
from ..inputs.load import Loaded
from ..plan.flow_spec import FlowSpec
from ..plan.planner import Plan
from ..plugins.calls import PluginResults
from ..routing import mesh
from ..routing.entries import Entries

SUBSTITUTE = "kustomize.toolkit.fluxcd.io/substitute"


@dataclass(frozen=True)
class FlowObjects:
    """Every rendered object, by the directory it goes to: the flow id, or `shared`."""

    groups: dict[str, list[dict]]

    def all(self) -> list[dict]:
        return [o for objs in self.groups.values() for o in objs]

    def with_group(self, group: str, objects: list[dict]) -> FlowObjects:
        return FlowObjects({**self.groups, group: objects})


@dataclass(frozen=True)
class Provenance:
    """What `flow.metadata` records of where a flow came from and what acted on it."""

    revision: str | None
    ref: str | None
    input_hash: str
    targets: list[dict]
    template: dict | None
    plugin_digests: dict[str, str]
    entries: list[dict]
    rewrites: list[dict]
    bypassed: list[dict]
    isolation: dict | None = None  # isolation namespace: flow namespaces, aliases, what the lane still needs
    mesh: dict | None = None  # mesh routing: the header the flow is matched by, and (istio) the hosts it routes
    reach: list[dict] = field(default_factory=list)  # the state outside the lane its dev pods can use
    footprint: dict | None = None  # `checks.footprint`: what the lane reserves and creates
    lifecycle: dict | None = None  # created, ttl and expires (`--ttl`)


@dataclass(frozen=True)
class RenderedFlow:
    """One output directory: `flows/<flow_id>/` (the flow, or `shared`)."""

    flow_id: str
    files: dict[str, str]  # file name -> YAML text of one object
    metadata: dict
    readme: str
    objects: list[dict] = field(default_factory=list)

    EXTRA_FILES = ("kustomization.yaml", "flow.metadata", "README.md")  # written next to the objects
    def stream(self) -> str:
        return "".join(f"---\n{self.files[f]}" for f in sorted(self.files))

    def kustomization(self) -> str:
        return dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                     "resources": sorted(self.files)})

    def metadata_text(self) -> str:
        return dumps_pretty(self.metadata) + "\n"


def input_hash(loaded: Loaded, flow: FlowSpec, routing: str, digests: dict[str, str], isolation: str = "suffix",
               ends: dict | None = None) -> str:
    """A hash of every input of the render: files, config, flow and template, routing and isolation, plugin code,
    and the lane's expiry (`--ttl`, `--created`)."""
    template = hashlib.sha256(read_user_file(flow.template_file)).hexdigest() if flow.template_file else None
    doc = {
        "devlane": VERSION,
        "files": loaded.files,
        "config": hashlib.sha256(loaded.config_bytes or b"").hexdigest(),
        "flow": {**flow.as_dict(), "template": {"sha256": template, "args": flow.template_args}},
        "routing": routing,
        "plugins": digests,
        **({"isolation": isolation} if isolation != "suffix" else {}),  # suffix hashes as before it had a choice
        **({"lifecycle": ends} if ends else {}),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def provenance(loaded: Loaded, flow: FlowSpec, routing: str, ref: str | None, digests: dict[str, str],
               entries: Entries, dev: DevSet, plugins: PluginResults, isolation: dict | None = None,
               reach: list[dict] | None = None, footprint: dict | None = None, ends: dict | None = None) -> Provenance:
    template = {"file": Path(flow.template_file).name, "args": flow.template_args} if flow.template_file else None
    return Provenance(loaded.revision, ref, input_hash(loaded, flow, routing, digests, dev.lane.isolation, ends),
                      flow.as_dict()["services"], template, digests, entries.summary,
                      [r.as_dict() for r in dev.rewrites], plugins.bypassed, isolation, entries.mesh, reach or [],
                      footprint, ends)


def state_configmap(servicename: str, flow_id: str, config_map, namespace: str | None, source_name: str,
                    dependents: list[str]) -> dict:
    """Kardinal's `config_map` as a real ConfigMap, so `delete` can read it back from git."""
    meta: dict = {
        "name": suffixed(f"devlane-state-{servicename}", flow_id, limit=253),
        "labels": {**flow_labels(flow_id), "devlane.dev/plugin-instance": servicename[:63].strip(".-")},
        "annotations": {
            "devlane.dev/plugin": source_name,
            "devlane.dev/flow-uuid": flow_uuid(servicename, flow_id),
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


def label_resource(obj: dict, version: str, namespace: str | None) -> dict:
    """A plugin's new object as the flow renders it: flow labels, and the flow's namespace if it names none."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **flow_labels(version)}
    if namespace and obj.get("kind") not in CLUSTER_SCOPED and not meta.get("namespace"):
        meta["namespace"] = namespace
    return obj


def collect(plan: Plan, dev: DevSet, plugins: PluginResults, entries: Entries, default_ns: str | None) -> FlowObjects:
    """Group every rendered object by the directory it goes to (flow id or `shared`)."""
    groups: dict[str, list[dict]] = {plan.flow_id: []}
    for dw in dev.unique_workloads():
        groups.setdefault(dw.version, []).append(dw.obj)
    for svc in dev.services:
        groups.setdefault(svc.version, []).append(svc.obj)
    for extra in dev.objects:
        groups.setdefault(extra.version, []).append(extra.obj)
    for res in plugins.results:
        ns = None
        if res.dependents and res.dependents[0] in dev.workloads:
            ns = dev.workloads[res.dependents[0]].obj["metadata"].get("namespace")
        ns = ns or default_ns
        group = groups.setdefault(res.flow_id, [])
        group.append(state_configmap(res.servicename, res.flow_id, res.config_map, ns, res.source.name,
                                     res.dependents))
        group.extend(label_resource(r, res.flow_id, ns) for r in res.resources)
    groups[plan.flow_id].extend(entries.objects)
    return FlowObjects(groups)


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


PARALLEL_OBJECTS = 1000  # below this many objects, forking costs more than it saves


def _dumped(objects: list[dict]) -> list[str]:
    """Each object's canonical YAML, across the available cores when there are many: PyYAML's representer
    is Python, and a wide flow dumps thousands of objects (half its render). Same text either way."""
    workers = parallel.available_cpus()
    texts: list[str] = [""] * len(objects)

    def here(share: range) -> None:
        for i in share:
            deadline.check()
            texts[i] = dump(objects[i])

    if workers < 2 or len(objects) < PARALLEL_OBJECTS or not parallel.can_fork():
        here(range(len(objects)))
        return texts

    split = parallel.shares([1] * len(objects), workers)
    done = parallel.fork_map(range(len(objects)), split, lambda i: dump(objects[i]).encode("utf-8"), here)
    for share in split[1:]:
        for i in share:
            text = done[i]
            texts[i] = dump(objects[i]) if text is None else text.decode("utf-8")
    return texts


def render_files(objects: list[dict]) -> tuple[dict[str, str], list[dict]]:
    """Each object dumped to its file, and the objects as written: text containing `${` opts out of Flux
    post-build substitution with an annotation."""
    files, written = {}, []
    named = sorted(_file_names(objects).items())
    for (name, obj), text in zip(named, _dumped([obj for _, obj in named]), strict=True):
        if "${" in text:
            meta = obj["metadata"]
            annotations = {**(meta.get("annotations") or {}), SUBSTITUTE: "disabled"}
            obj = {**obj, "metadata": {**meta, "annotations": annotations}}
            text = dump(obj)
        files[name] = text
        written.append(obj)
    return files, written


def render(objects: FlowObjects, plan: Plan, plugins: PluginResults, provenance: Provenance) -> list[RenderedFlow]:
    """The flow's directory first, then `shared` when the flow has shared copies."""
    flows = []
    for group in sorted(objects.groups, key=lambda g: (g != plan.flow_id, g)):
        files, written = render_files(objects.groups[group])
        meta = build_metadata(plan.flow_id, plan, provenance, plugins, files, group)
        flows.append(RenderedFlow(group, files, meta, build_readme(meta), written))
    return flows


def build_metadata(flow_id: str, plan: Plan, provenance: Provenance, plugins: PluginResults, files: dict[str, str],
                   group: str) -> dict:
    """`flow.metadata`: what was rendered from what, and why each service got a dev version."""
    flow_group = group != SHARED
    return {
        "apiVersion": "devlane.dev/v1alpha1",
        "kind": "FlowMetadata",
        "flow": group,
        "requestedBy": None if flow_group else flow_id,
        "devlaneVersion": VERSION,
        "source": {"revision": provenance.revision, "ref": provenance.ref},
        "inputHash": provenance.input_hash,
        "routing": plan.routing,
        "targets": provenance.targets,
        "template": provenance.template,
        # the services with a version of this flow (or shared) and why: the baseline of a monorepo is thousands
        # of "not affected" lines in every lane's commit (`devlane plan` explains every service)
        "services": [d.as_dict() for n, d in sorted(plan.decisions.items())
                     if (d.version != "baseline" if flow_group else d.version == SHARED)],
        "plugins": [
            {
                "instance": r.servicename,
                "flowUuid": r.flow_uuid,
                "name": r.source.name,
                "source": r.source.origin,
                "digest": provenance.plugin_digests.get(r.source.name),
                "dependents": r.dependents,
                "runtime": r.choice.manifest.runtime if r.choice else None,
                "status": r.status,
                "choice": r.choice.as_dict() if r.choice else None,
            }
            for r in plugins.results
            if r.flow_id == group
        ],
        "bypassed": provenance.bypassed if flow_group else [],
        "entries": provenance.entries if flow_group else [],
        "rewrites": provenance.rewrites if flow_group else [],
        "reach": provenance.reach if flow_group else [],
        "files": sorted(files),
        **({"isolation": provenance.isolation} if provenance.isolation and flow_group else {}),
        **({"mesh": provenance.mesh} if provenance.mesh and flow_group else {}),
        **({"footprint": provenance.footprint} if provenance.footprint is not None and flow_group else {}),
        **({"lifecycle": provenance.lifecycle} if provenance.lifecycle and flow_group else {}),
    }


def reach_section(records: list[dict]) -> list[str]:
    """The flow README's list of the state outside the lane that its dev pods can still use."""
    if not records:
        return []
    lines = ["", "## Reach beyond the lane", "", "State the dev pods can still use (a warning of the render; an error "
             "under --strict, but for what is marked shared):", ""]
    for r in records:
        lines.append(f"- {reach.line(r)}" + ("" if r["class"] == "shared" else f"  \n  Fix: {r['fix']}"))
    return lines


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
    lane = meta.get("isolation")
    if lane:
        lines += ["", "## Isolation: namespace", "", "| Baseline namespace | Flow namespace |", "|---|---|"]
        lines += [f"| {base} | {flow} |" for base, flow in lane["namespaces"].items()]
        if lane["aliases"]:
            lines += ["", "Aliases (ExternalName Services to the baseline):", ""]
            lines += [f"- `{a}`" for a in lane["aliases"]]
        if lane["needs"]:
            lines += ["", "The lane still needs:", ""] + [f"- {n}" for n in lane["needs"]]
    lines += mesh_section(meta.get("mesh"))
    if meta.get("footprint"):
        lines += ["", "## Footprint", "", "| | |", "|---|---|"]
        rows = footprint.summary(meta["footprint"], meta.get("lifecycle"))
        lines += [f"| {what} | {value} |" for what, value in rows]
    lines += reach_section(meta.get("reach") or [])
    if meta["entries"]:
        lines += ["", "## Entry points", ""]
        for e in meta["entries"]:
            for h in e["hosts"]:
                lines.append(f"- {e['kind']} `{e['name']}`: http://{h}/")
    lines += ["", "## Files", ""] + [f"- `{f}`" for f in meta["files"]]
    return "\n".join(lines) + "\n"


def mesh_section(record: dict | None) -> list[str]:
    """The README's routing section on a mesh: how a request joins the flow, and what the app must do."""
    if not record:
        return []
    lines = ["", f"## Routing: {record['mode']}", "",
             f"Requests carrying the W3C `{record['header']}` member `{record['member']}` reach this flow's dev "
             "versions; every other request reaches the baseline. The entry adds the member; each service must "
             "propagate `baggage` on its outgoing calls (OpenTelemetry does by default).", "",
             f"Matched with `{record['match']}`."]
    if record["mode"] == "istio":
        lines += ["", "Routed hosts (their VirtualServices, shared by every flow, are in `flows/_mesh/`):", ""]
        lines += [f"- `{h['service']}` -> `{h['dev']}` (ports {', '.join(map(str, h['ports']))})"
                  for h in record.get("hosts") or []] or ["- none"]
    return lines


def mesh_flow(records: dict[str, dict], keep: bool = False) -> RenderedFlow | None:
    """`flows/_mesh/`: istio's one VirtualService per baseline host, from the `mesh` records of every flow in the
    output directory. A function of the records alone, so a directory after a delete equals a fresh render of the
    flows that remain. When no flow routes a host: None, or with `keep` (the directory exists) an empty
    kustomization, so that Argo CD or Flux prune the VirtualServices rather than fail on a missing path."""
    objects = mesh.virtual_services(records)
    if not objects and not keep:
        return None
    files, written = render_files(objects)
    flows = sorted(r for r in records if any(h for h in records[r].get("hosts") or []))
    meta = {"apiVersion": "devlane.dev/v1alpha1", "kind": "MeshRoutes", "flow": mesh.MESH_DIR, "routing": "istio",
            "devlaneVersion": VERSION, "flows": flows, "files": sorted(files)}
    state = ["## Flows", "", *[f"- `{f}`" for f in flows], "", "## Files", "", *[f"- `{f}`" for f in sorted(files)]] \
        if objects else ["No flow routes a host now: the kustomization is empty, so the Application or Kustomization "
                         "that deploys this directory prunes the VirtualServices (Argo CD needs `allowEmpty: true` in "
                         "its automated sync policy)."]
    readme = "\n".join([
        "# devlane mesh routes (`istio`)", "",
        "Istio sidecars do not merge VirtualServices of one host, so every baseline host that has a dev version "
        "in any flow gets exactly one VirtualService here, listing every flow (sorted by flow id) and then the "
        "catch-all to the baseline. devlane rebuilds this directory from the flows in `flows/` on every "
        "`render` and `delete`. Do not edit: re-render instead.", "",
        "Deploy it with one Argo CD Application or Flux Kustomization for the whole output directory's mesh "
        "(path `flows/_mesh`), never from a per-flow one.", "", *state,
    ]) + "\n"
    return RenderedFlow(mesh.MESH_DIR, files, meta, readme, written)
