"""`devlane diff`: render a flow at a pull request's base and head (offline, no checkout) and compare.

Objects are paired by apiVersion/kind/namespace/name and reported as added, changed or removed,
with a unified diff of their canonical YAML. Each object is attributed to the service it is a dev
copy of (or to the flow: state ConfigMaps, entries, plugin resources), so the report can say per
service what changed, and which plugins act on it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import yaml

from .errors import DevlaneError, Problem
from .names import dev_name

FLOW_ROW = "(flow)"


@dataclass
class ObjectChange:
    key: tuple[str, str, str, str]  # apiVersion, kind, namespace, name
    status: str  # added | changed | removed
    file: str
    service: str
    diff: str

    @property
    def label(self) -> str:
        return f"{self.key[1]}/{self.key[3]}"

    def as_dict(self) -> dict:
        return {"apiVersion": self.key[0], "kind": self.key[1], "namespace": self.key[2], "name": self.key[3],
                "status": self.status, "file": self.file, "service": self.service, "diff": self.diff}  # fmt: skip


@dataclass
class Report:
    flow_id: str
    base: str
    head: str
    changes: list[ObjectChange]
    services: list[dict]  # service, version, reasons, plugins, counts
    plugins: list[dict]  # instance, plugin, runtime, external, description, when, dependents
    problems: list[Problem] = field(default_factory=list)  # validate_change refusals
    notes: list[str] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)  # entry hosts of the flow at head

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for c in self.changes if c.status == s) for s in ("added", "changed", "removed")}

    def as_dict(self) -> dict:
        return {
            "flow": self.flow_id, "base": self.base, "head": self.head, "counts": self.counts(),
            "services": self.services, "plugins": self.plugins, "notes": self.notes,
            "problems": [p.as_dict() for p in self.problems],
            "objects": [c.as_dict() for c in self.changes],
        }  # fmt: skip


def _objects(result) -> dict[tuple, tuple[str, str, dict]]:
    out = {}
    for flow in result.flows if result is not None else []:
        for name, text in flow.files.items():
            obj = yaml.load(text, Loader=yaml.CSafeLoader)
            meta = obj.get("metadata") or {}
            key = (obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", ""))
            out[key] = (f"flows/{flow.flow_id}/{name}", text, obj)
    return out


def _service_of(name: str, flow_id: str, services: list[str]) -> str:
    for svc in services:
        if name == dev_name(svc, flow_id):
            return svc
    return FLOW_ROW


def compare(flow_id: str, base_ref: str, head_ref: str, base, head, descriptions: dict[str, str]) -> Report:
    """The report between two renders (`base` may be None when the flow could not render there)."""
    before, after = _objects(base), _objects(head)
    decisions = head.plan.decisions
    services = sorted(decisions)
    changes = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old and new and old[1] == new[1]:
            continue
        status = "added" if old is None else "removed" if new is None else "changed"
        file = (new or old)[0]
        diff = "".join(difflib.unified_diff((old[1] if old else "").splitlines(True),
                                            (new[1] if new else "").splitlines(True),
                                            f"a/{file}" if old else "/dev/null", f"b/{file}" if new else "/dev/null"))
        changes.append(ObjectChange(key, status, file, _service_of(key[3], flow_id, services), diff))
    instances = head.plan.instances
    rows = []
    for name in services:
        d = decisions[name]
        mine = [c for c in changes if c.service == name]
        if d.version == "baseline" and not mine:
            continue
        rows.append({"service": name, "version": d.version, "reasons": list(d.reasons),
                     "plugins": [i.servicename for i in instances if name in i.dependents],
                     **{s: sum(1 for c in mine if c.status == s) for s in ("added", "changed", "removed")}})
    flow_objs = [c for c in changes if c.service == FLOW_ROW]
    if flow_objs:
        rows.append({"service": FLOW_ROW, "version": "", "reasons": ["state, entries and plugin resources"],
                     "plugins": [], **{s: sum(1 for c in flow_objs if c.status == s)
                                       for s in ("added", "changed", "removed")}})  # fmt: skip
    plugins = []
    for r in head.stage.results if head.stage else []:
        choice = r.choice
        external = bool(choice and choice.external)
        plugins.append({
            "instance": r.servicename, "plugin": choice.name if choice else r.source.name,
            "runtime": choice.manifest.runtime if choice else "", "external": external,
            "description": descriptions.get(r.servicename, ""),
            "when": "provision (CI), replayed by render; delete_flow on close" if external
                    else "render; delete_flow on close",
            "dependents": list(r.dependents),
        })  # fmt: skip
    notes = [] if base is not None else [f"the flow does not render at {base_ref}: everything is new"]
    return Report(flow_id, base_ref, head_ref, changes, rows, plugins, notes=notes)


def run(options, flow, base_ref: str, head_ref: str) -> Report:
    """Render at both refs and compare; a flow that cannot render at base is reported as all new."""
    from dataclasses import replace

    from . import api

    head = api.render(replace(options, ref=head_ref), flow)
    try:
        base = api.render(replace(options, ref=base_ref), flow)
    except DevlaneError:
        base = None
    descriptions = {}
    for r in head.stage.results if head.stage else []:
        if r.choice and r.choice.manifest.description:
            descriptions[r.servicename] = r.choice.manifest.description
    report = compare(flow.id, base_ref, head_ref, base, head, descriptions)
    report.problems = api.check_changes(options, base_ref, head_ref)
    report.entries = sorted(h for f in head.flows for e in f.metadata.get("entries") or []
                            for h in e.get("hosts") or [])  # fmt: skip
    return report
