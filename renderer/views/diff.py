"""`devlane diff`: render a flow at a pull request's base and head (offline, no checkout) and compare.

Objects are paired by apiVersion/kind/namespace/name and reported as added, changed or removed,
with a unified diff of their canonical YAML. Each object is attributed to the service it is a dev
copy of (or to the flow: state ConfigMaps, entries, plugin resources), so the report can say per
service what changed, and which plugins act on it. Secret values never reach the report: they are
replaced by a short digest, so a changed value still shows as a changed line; in every other object, the
secrets of URLs and connection strings are masked (`core.secrets_mask`), and an object whose only change is
such a secret is said to change, in a comment line. Image changes are summarised on their own, as reviewers
look for them first.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field, replace

import yaml

from .. import api
from ..core.k8s import pod_spec
from ..core.secrets_mask import mask
from ..core.source import merge_base, resolve_commit
from ..core.yamlio import dump
from ..errors import DevlaneError, Problem
from ..render.model.topology import build_model
from ..render.plan.targets import GIVEN, Change, NoServiceChanged
from ..render.settings.isolation import Lane
from ..session import Options
from . import diff_base

FLOW_ROW = "(flow)"
STATUSES = ("added", "changed", "removed")


@dataclass(frozen=True)
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
                "status": self.status, "file": self.file, "service": self.service, "diff": self.diff}


@dataclass(frozen=True)
class Report:
    flow_id: str
    base: str
    head: str
    changes: list[ObjectChange]
    services: list[dict]  # service, kind, version, reasons, plugins, counts
    plugins: list[dict]  # instance, plugin, type, status, runtime, external, description, when, dependents
    problems: list[Problem] = field(default_factory=list)  # validate_change refusals
    notes: list[str] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)  # entry hosts of the flow at head
    images: list[dict] = field(default_factory=list)  # object, service, container, base, head
    versions: dict[str, str] = field(default_factory=dict)  # every service at head: dev | shared | baseline
    edges: list[tuple[str, str]] = field(default_factory=list)  # service dependency edges at head, for the picture
    isolation: dict | None = None  # isolation namespace at head: flow namespaces, aliases, what the lane needs
    mesh: dict | None = None  # mesh routing at head: flow.metadata's record (mode, header, member, match, hosts)
    by_header: list[str] = field(default_factory=list)  # mesh: dev services the mesh reaches by the flow header
    entry_backends: list[str] = field(default_factory=list)  # services the entries send to, for the picture
    targets: list[Change] = field(default_factory=list)  # `--services auto`: each target and why
    reach: list[dict] = field(default_factory=list)  # at head: the state outside the lane its dev pods can use
    footprint: dict | None = None  # at head: what the lane reserves and creates (flow.metadata)
    lifecycle: dict | None = None  # at head: created, ttl, expires
    lane: bool = True  # False: `--services auto` found no service changed, so there is no lane
    base_beside: bool = False  # the base rendered in a forked process beside the head's render (--debug says so)
    target_images: list[dict] = field(default_factory=list)  # service, image (what its dev copy runs), origin, reason

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for c in self.changes if c.status == s) for s in STATUSES}

    def as_dict(self) -> dict:
        return {
            "flow": self.flow_id, "base": self.base, "head": self.head, "counts": self.counts(),
            "changed": bool(self.changes), "services": self.services, "plugins": self.plugins,
            "images": self.images, "notes": self.notes, "problems": [p.as_dict() for p in self.problems],
            "objects": [c.as_dict() for c in self.changes], "lane": self.lane, "targets": self.target_images,
            **({"isolation": self.isolation} if self.isolation else {}),
            **({"mesh": {**self.mesh, "byHeader": self.by_header}} if self.mesh else {}),
            **({"reach": self.reach} if self.reach else {}),
            **({"footprint": self.footprint} if self.footprint else {}),
        }


def _digest(value) -> str:
    return "<redacted sha256:" + hashlib.sha256(str(value).encode()).hexdigest()[:12] + ">"


def masked_object(text: str, obj: dict) -> str:
    """An object's text as a report shows it: a Secret's values replaced by digests (keys and metadata stay
    readable), the secrets of URLs and connection strings masked in every other object (`secrets_mask.mask`)."""
    if obj.get("kind") != "Secret" or not (obj.get("data") or obj.get("stringData")):
        return mask(text)
    safe = dict(obj)
    for part in ("data", "stringData"):
        if isinstance(obj.get(part), dict):
            safe[part] = {k: _digest(v) for k, v in obj[part].items()}
    return dump(safe)


def masked_file(text: str) -> str:
    """`masked_object` of a rendered file's text (read as an object only when it is a Secret's)."""
    secret = text.startswith("kind: Secret\n") or "\nkind: Secret\n" in text
    return masked_object(text, (yaml.load(text, Loader=yaml.CSafeLoader) or {}) if secret else {})


def _objects(result) -> dict[tuple, tuple[str, dict, str]]:
    """Each rendered object by (apiVersion, kind, namespace, name): its file, itself, its text (masked only where the
    report shows it: an object that did not change is never shown)."""
    out = {}
    for flow in result.flows if result is not None else []:
        # the objects as written, in the files' order: no need to parse back thousands of files (a PR that bumps
        # every service renders them all twice); parsed only where a flow does not carry them
        written = flow.objects if len(flow.objects) == len(flow.files) else \
            [yaml.load(text, Loader=yaml.CSafeLoader) for text in flow.files.values()]
        for (name, text), obj in zip(flow.files.items(), written, strict=True):
            meta = obj.get("metadata") or {}
            key = (obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", ""))
            out[key] = (f"flows/{flow.flow_id}/{name}", obj, text)
    return out


def _images(obj: dict | None) -> dict[str, str]:
    if obj is None:
        return {}
    pod = pod_spec(obj)
    return {c.get("name", ""): c.get("image", "") for part in ("initContainers", "containers")
            for c in pod.get(part) or [] if isinstance(c, dict)}


def _service_of(name: str, flow_id: str, services: list[str], lane: Lane) -> str:
    for svc in services:
        if name == lane.name(svc, flow_id):
            return svc
    return FLOW_ROW


def _counts(changes: list[ObjectChange]) -> dict[str, int]:
    return {s: sum(1 for c in changes if c.status == s) for s in STATUSES}


def compare(flow_id: str, base_ref: str, head_ref: str, base: api.RenderResult | None, head: api.RenderResult,
            base_error: str = "", problems: list[Problem] | None = None) -> Report:
    """The report between two renders (`base` may be None when the flow could not render there)."""
    before, after = _objects(base), _objects(head)
    decisions = head.plan.decisions
    services = sorted(decisions)
    changes, images = [], []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old and new and old[2] == new[2]:
            continue
        status = "added" if old is None else "removed" if new is None else "changed"
        file = (new or old)[0]
        shown_old, shown_new = (masked_object(o[2], o[1]) if o else "" for o in (old, new))
        diff = "".join(
            difflib.unified_diff(shown_old.splitlines(True), shown_new.splitlines(True),
                                 f"a/{file}" if old else "/dev/null", f"b/{file}" if new else "/dev/null")
        ) or f"# {file}: only a masked secret changed\n"
        service = _service_of(key[3], flow_id, services, head.dev.lane)
        changes.append(ObjectChange(key, status, file, service, diff))
        was, now = _images(old[1] if old else None), _images(new[1] if new else None)
        for container in sorted(set(was) | set(now)):
            if was.get(container, "") != now.get(container, ""):
                images.append({"object": f"{key[1]}/{key[3]}", "service": service, "container": container,
                               "base": was.get(container, ""), "head": now.get(container, "")})
    instances = head.plan.instances
    rows = []
    for name in services:
        d = decisions[name]
        mine = [c for c in changes if c.service == name]
        if d.version == "baseline" and not mine:
            continue
        rows.append(
            {
                "service": name,
                "kind": d.kind,
                "version": d.version,
                "reasons": list(d.reasons),
                "plugins": [i.servicename for i in instances if name in i.dependents],
                **_counts(mine),
            }
        )
    flow_objs = [c for c in changes if c.service == FLOW_ROW]
    if flow_objs:
        rows.append(
            {
                "service": FLOW_ROW,
                "kind": "flow",
                "version": "",
                "reasons": ["state, entries and plugin resources"],
                "plugins": [],
                **_counts(flow_objs),
            }
        )
    plugins = []
    for r in head.plugins.results:
        choice = r.choice
        external = bool(choice and choice.external)
        plugins.append({
            "instance": r.servicename, "plugin": choice.name if choice else r.source.name, "status": r.status,
            "type": "external" if getattr(decisions.get(r.servicename), "kind", "") == "external" else "stateful",
            "runtime": choice.manifest.runtime if choice else "", "external": external,
            "description": choice.manifest.description if choice else "",
            "when": "provision (CI), replayed by render; delete_flow on close" if external
                    else "render; delete_flow on close",
            "dependents": list(r.dependents),
        })
    notes = []
    if base is None:
        why = f" ({base_error})" if base_error else ""
        notes.append(f"the flow does not render at {base_ref}{why}: every object is reported as added")
    entries = sorted(h for f in head.flows for e in f.metadata.get("entries") or [] for h in e.get("hosts") or [])
    edges = sorted((name, dep) for name, node in head.model.services.items() for dep, _ in node.dependencies)
    backends = sorted({b for e in head.model.entries for b in e.backends})
    return Report(flow_id, base_ref, head_ref, changes, rows, plugins, list(problems or []), notes, entries, images,
                  {n: decisions[n].version for n in services}, edges, head.main.metadata.get("isolation"),
                  head.main.metadata.get("mesh"), sorted(head.dev.by_header), backends,
                  reach=head.main.metadata.get("reach") or [], footprint=head.main.metadata.get("footprint"),
                  lifecycle=head.main.metadata.get("lifecycle"))


def run(options: Options, flow: api.FlowInput, base_ref: str, head_ref: str) -> Report:
    """Render at both refs (each loaded once) and compare; a flow that cannot render at base is reported as all new.
    An unknown base is an error naming it (a typo must not report every object as added); with `--services auto`
    the base is rendered where the head branched from it, as the targets are found."""
    base_commit = resolve_commit(options.repo, base_ref)
    try:
        at_head = api.open_session(replace(options, ref=head_ref), "preview")
    except DevlaneError as exc:
        raise _at_head(exc, head_ref) from exc
    with at_head:
        try:
            at_head.load()
        except DevlaneError as exc:
            raise _at_head(exc, head_ref) from exc
        try:
            flow, targets = api.targeted(at_head, flow)
        except NoServiceChanged as exc:
            return Report(exc.flow_id, base_ref, head_ref, [], [], [], notes=[exc.problems[0].message],
                          targets=exc.changes, lane=False, target_images=_target_rows(exc.changes))
        if targets:
            found = merge_base(options.repo, base_ref, head_ref)
            base_ref, base_commit = f"{base_ref} (merge-base {found[:7]})", found
        try:
            head, based = diff_base.with_base(options, base_commit, flow, lambda: api.render_in(at_head, flow))
        except DevlaneError as exc:
            raise _at_head(exc, head_ref) from exc
        if based.unopened is not None:  # no such directory at base: nothing to compare with, nor to validate against
            return _targeted(compare(flow.id, base_ref, head_ref, None, head, based.unopened), head, targets)
        base = None if based.flows is None else _Rendered(based.flows)
        try:
            if based.defs_problems:
                raise DevlaneError(based.defs_problems)
            after = head.model if head.model.documents is at_head.loaded.documents else \
                build_model(at_head.loaded.documents, at_head.loaded.config.namespace)
            problems = api.changed_plugin_args(based.defs, after.plugin_defs, at_head)
        except DevlaneError:
            if base is not None:
                raise
            problems = []  # with no model at base there are no old args to validate a change against
    report = compare(flow.id, base_ref, head_ref, base, head, based.error, problems)
    return _targeted(replace(report, base_beside=based.beside), head, targets)


@dataclass(frozen=True)
class _Rendered:
    """The base's render as `compare` reads it: its flows (`diff_base.Flow`)."""

    flows: list[diff_base.Flow]


def _targeted(report: Report, head: api.RenderResult, targets: list[Change]) -> Report:
    """The report with each target and the image its dev copy runs, read from the head's render itself."""
    images = _images_of(head)
    given = "the flow names it (--service, or its flow file)"
    rows = _target_rows(targets) if targets else [
        {"service": name, "image": o.image or "", "origin": GIVEN, "reason": given}
        for name, o in sorted(head.plan.overrides.items())]
    return replace(report, targets=targets, target_images=[{**r, "image": images.get(r["service"], r["image"])}
                                                           for r in rows])


def _target_rows(targets: list[Change]) -> list[dict]:
    return [{"service": c.service, "image": c.image, "origin": c.origin, "reason": c.reason} for c in targets]


def _images_of(head: api.RenderResult) -> dict[str, str]:
    """Per target, the image of its target container in its dev copy, as rendered."""
    out = {}
    for name, copy in head.dev.workloads.items():
        for c in copy.pod_spec.get("containers") or []:
            if isinstance(c, dict) and c.get("name") == copy.container and isinstance(c.get("image"), str):
                out[name] = c["image"]
    return out


def _at_head(exc: DevlaneError, head_ref: str) -> DevlaneError:
    return exc.with_problems([Problem(f"the flow does not render at head {head_ref}"), *exc.problems])
