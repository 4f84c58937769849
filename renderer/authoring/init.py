"""`devlane init`: from an unannotated repository to a working first flow.

    read (api.read: plain YAML, kustomize, Helm, `.devlane.yaml inputs:`) -> infer -> edits -> diff
    -> (--write | --config) apply -> lint -> the first `devlane render` to try

Modes:
- `dry-run` (default): nothing is written; the result holds the diff and the facts.
- `write`: annotations go into the plain-YAML files where the objects live (round-trip, `yamledit`). Objects
  that come from a kustomize build or a Helm chart have no file of their own to edit, so their annotations
  go to `.devlane.yaml services:` instead, with a note: a half-annotated repository would render flows that
  silently miss edges, and `services:` is exactly the place the inputs issue made for objects one does not
  own. Without any entry point, an Ingress for the entry Service is added as a new file beside it.
- `config`: everything goes to `.devlane.yaml` (`services:` by built names, `plugins:`); no input changes.

Plugin suggestions always go to `.devlane.yaml plugins.definitions`, with a comment saying which args to
fill in; they are not attached to the services (`plugins:`) until the user has filled them, so the first
render works as written. Existing annotations are never overwritten: a different value is a disagreement.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from .. import api
from ..core import deadline
from ..core.names import KARDINAL as K
from ..core.yamlscalars import SafeDumper
from ..errors import Problem, UsageError
from ..render.model.annotations import parse_dependency_item
from ..render.model.records import Model
from ..render.settings.repo_config import CONFIG_FILE
from .infer import infer
from .infer_facts import EntryPoint, Evidence, Inference

if TYPE_CHECKING:
    from .yamledit import AnnotationEdit, EditPlan

Mode = Literal["dry-run", "write", "config"]
MODES = ("dry-run", "write", "config")
FLOW = "pr-1"
FILL_IN = "FILL-IN"
# built-ins that give a lane its own state on a shared broker: attached to the broker's clients (type external)
CLIENT_PLUGINS = frozenset({"kafka-topic", "rabbitmq-vhost", "nats-stream"})


@dataclass(frozen=True)
class Disagreement:
    """An annotation the repository already has, with a value init would not have written."""

    object: str
    key: str
    existing: str
    inferred: str
    evidence: Evidence | None

    def as_dict(self) -> dict:
        return {"object": self.object, "key": self.key, "existing": self.existing, "inferred": self.inferred,
                **({"evidence": self.evidence.as_dict()} if self.evidence else {})}


@dataclass(frozen=True)
class InitResult:
    root: Path
    mode: str
    inference: Inference
    diff: str
    changed: list[str]  # files written (or, in a dry run, that would be)
    disagreements: list[Disagreement]
    notes: list[str]
    lint: list[Problem]
    next_command: str
    pending: list[str] = field(default_factory=list)  # what init left for the user: plugin args, external edges
    suggested: dict[str, str] = field(default_factory=dict)  # new manifests this mode does not write: path -> text

    @property
    def unchanged(self) -> bool:
        return not self.changed

    def as_dict(self) -> dict:
        inf = self.inference
        return {"mode": self.mode, "changed": self.changed, "diff": self.diff, **inf.as_dict(),
                "disagreements": [d.as_dict() for d in self.disagreements], "notes": self.notes,
                "pending": self.pending, "suggested": self.suggested, "lint": [p.as_dict() for p in self.lint],
                "next": self.next_command}


@dataclass
class _Want:
    """What init would annotate on one object, and why."""

    doc: Any  # load.Document
    config_key: str | None  # services.<key> in .devlane.yaml (None: not a Service: only editable in place)
    values: dict[str, str] = field(default_factory=dict)
    why: dict[str, Evidence | None] = field(default_factory=dict)


def run(options: api.Options, mode: Mode = "dry-run") -> InitResult:
    """Infer, plan the edits, apply them in `write`/`config` mode, lint, and say what to render first."""
    if mode not in MODES:
        raise UsageError(f"init: unknown mode {mode!r} (one of {', '.join(MODES)})")
    from . import configedit, yamledit

    root = Path(options.repo)
    repo = api.read(options)
    editable = frozenset(f for f in repo.loaded.files if f.endswith((".yaml", ".yml")) and (root / f).is_file())
    deadline.stage(f"inferring the dependencies of {len(repo.model.services)} services")
    inf = infer(repo.model, editable)
    deadline.stage("writing the annotations" if mode != "dry-run" else "preparing the diff")
    wants, disagreements = _wanted(inf)
    edits: list[AnnotationEdit] = []
    services: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    routed = []
    for want in wants:
        in_place = mode != "config" and want.doc.file in editable
        if in_place:
            for key, value in sorted(want.values.items()):
                edits.append(yamledit.AnnotationEdit(want.doc.file, want.doc.index, want.doc.kind, want.doc.name,
                                                     want.doc.namespace, K + key, value))
        elif want.config_key is not None:
            services[want.config_key] = {k: _config_value(k, v) for k, v in sorted(want.values.items())}
            if mode == "write":
                routed.append(want.config_key)
        else:
            notes.append(f"{want.doc.ref} ({want.doc.file}) comes from a build: annotate it in its source "
                         f"({', '.join(K + k for k in want.values)})")
    if routed:
        notes.append(f"{len(routed)} Service(s) come from a kustomize build or a Helm chart and cannot be edited in "
                     f"place: their annotations go to {CONFIG_FILE} services: ({', '.join(routed)}); "
                     "`devlane init --config` puts everything there")
    plugins, pending = _plugin_suggestions(inf, root)
    plan = _merge(yamledit.plan_annotations(root, edits),
                  configedit.plan_config(root, services, plugins) if services or plugins else None)
    for d in plan.disagreements:
        disagreements.append(Disagreement(f"{d.edit.kind}/{d.edit.name}", d.edit.key, d.existing, d.edit.value, None))
    notes += [f"not edited: {e.kind}/{e.name} {e.key}: {why}" for e, why in plan.skipped]
    new_files, suggested = _new_files(inf, repo.model, mode, notes)
    diff = yamledit.unified_diff(plan) + "".join(_new_file_diff(p, t) for p, t in sorted(new_files.items()))
    changed = sorted({*plan.changes, *new_files})
    unread = sorted({str(p.where.file) for p in repo.loaded.problems if p.severity == "error"})
    if mode != "dry-run" and changed and unread:  # what init saw is partial: write nothing from it
        notes.append(f"nothing written: {', '.join(unread)} could not be read, so what init inferred may be "
                     "incomplete; fix the errors below and run init again")
        mode = "dry-run"  # reported as what it is: a plan
    if mode != "dry-run" and changed:
        yamledit.apply(root, plan)
        for rel, text in sorted(new_files.items()):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
    pending += _external_edges(inf)
    problems = api.lint(options)
    return InitResult(root, mode, inf, diff, changed, disagreements, notes, problems, _next_command(inf, options),
                      pending, suggested)


def _config_value(key: str, value: str) -> Any:
    if key == "dependencies":
        return value.split(",")
    return value == "true" if value in ("true", "false") else value


def _merge(a: EditPlan, b: EditPlan | None) -> EditPlan:
    if b is None:
        return a
    return type(a)({**a.changes, **b.changes}, (*a.disagreements, *b.disagreements), (*a.skipped, *b.skipped))


def _config_key(doc: Any) -> str | None:
    if doc.kind != "Service":
        return None
    return f"{doc.namespace}/{doc.name}" if doc.namespace else doc.name


def _same(key: str, existing: str, value: str) -> bool:
    if key == "dependencies":
        return {parse_dependency_item(i) for i in existing.split(",") if i.strip()} == \
            {parse_dependency_item(i) for i in value.split(",")}
    return existing.strip().lower() == value.strip().lower()


def _wanted(inf: Inference) -> tuple[list[_Want], list[Disagreement]]:
    """The annotations init would add, per object, and the existing ones that say something else."""
    model = inf.model
    wants: dict[int, _Want] = {}
    disagreements: list[Disagreement] = []
    external = {r.service for r in inf.roles if r.role == "external"}

    def want(doc: Any, key: str, value: str, why: Evidence | None) -> None:
        existing = doc.annotations.get(K + key)
        if existing is not None:
            if not _same(key, str(existing), value):
                disagreements.append(Disagreement(f"{doc.kind}/{doc.name}", K + key, str(existing), value, why))
            return
        w = wants.setdefault(id(doc), _Want(doc, _config_key(doc)))
        w.values[key], w.why[key] = value, why

    for source, items in inf.dependencies().items():
        kept = [i for i, e in zip(items, _edges_of(inf, source), strict=True) if e.target not in external]
        if kept:
            want(model.services[source].doc, "dependencies", ",".join(kept), _edges_of(inf, source)[0].evidence)
    for role in inf.roles:
        node = model.services.get(role.service)
        if node is not None:
            want(node.doc, role.role, "true", role.evidence)
    for entry in inf.entries:
        if entry.doc is not None:
            want(entry.doc, entry.annotation, "true", entry.evidence)
    return list(wants.values()), disagreements


def _edges_of(inf: Inference, source: str) -> list:
    seen, out = set(), []
    for e in inf.edges:
        if e.source == source and e.item not in seen:
            seen.add(e.item)
            out.append(e)
    return out


def _external_edges(inf: Inference) -> list[str]:
    external = {r.service: r for r in inf.roles if r.role == "external"}
    return [f"{e.source} -> {e.target}: {e.target} is external; add {e.item} to {e.source}'s dependencies together "
            f"with its plugin ({external[e.target].plugin or 'none in the catalogue yet'})"
            for e in inf.edges if e.target in external]


# -- plugins ---------------------------------------------------------------------------------------------------------


@functools.cache
def required_args(plugin: str) -> tuple[str, ...]:
    """The required args of a built-in plugin, from its `plugin.yaml` argsSchema (read once per process: the
    catalogue ships with devlane and does not change under it)."""
    from ..host.resolve import builtin_root

    root = builtin_root()
    path = root / plugin / "plugin.yaml" if root else None
    if path is None or not path.is_file():
        return ()
    schema = ((yaml.load(path.read_text(), Loader=yaml.CSafeLoader) or {}).get("spec") or {}).get("argsSchema") or {}
    return tuple(str(a) for a in schema.get("required") or [])


def _plugin_suggestions(inf: Inference, root: Path) -> tuple[list[dict], list[str]]:
    """One plugin definition per stateful or external service (commented out where the catalogue has none)."""
    model = inf.model
    defined = set(model.plugin_defs)
    existing = (root / CONFIG_FILE).read_text() if (root / CONFIG_FILE).is_file() else ""
    out: list[dict] = []
    pending: list[str] = []
    for role in inf.roles:
        node = model.services.get(role.service)
        name = node.name if node is not None else role.service
        if node is not None and node.plugins:
            continue  # the service already has its plugins
        where = f"services.{_config_key(node.doc) or name}" if node is not None else \
            f"the services {', '.join(role.dependents)}"
        if role.plugin is None:
            what = role.store or ("external system" if role.role == "external" else "store")
            text = (f"{name}: a {what} cache; its dev copy starts empty, which is all a lane needs: no plugin"
                    if role.store == "memcached" else
                    f"{name}: no built-in plugin for {what} yet; its dev copy starts from a fresh volume "
                    "(write a plugin: devlane plugins new NAME)")
            if text not in existing:
                out.append({"#commented": text})
            continue
        servicename = f"{name}-{role.plugin}" if not name.endswith(role.plugin) else name
        if servicename in defined:
            continue
        args = [a for a in required_args(role.plugin) if a not in dict(role.args)]
        kind = role.role
        if role.plugin in CLIENT_PLUGINS:  # a lane's own topics or vhost on the shared broker: on its clients
            clients = sorted({e.source for e in inf.edges if e.target == role.service}
                             | {r for c in inf.shared_config if role.service in c.stores for r in c.readers})
            where = (", ".join(f"services.{c}" for c in clients) + f" (the clients of {name})" if clients else
                     f"the services that use {name}") + f", and drop stateful from {name}: the lane then shares " \
                f"the broker, not its {role.store} state"
            kind = "external"
        entry: dict[str, Any] = {
            "#comment": (f"devlane init: {role.reason}. Fill in the args (docs: plugins/{role.plugin}/README.md), "
                         f"then add plugins: [{servicename}] to {where}"),
            "name": role.plugin, "type": kind, "servicename": servicename}
        if args or role.args:
            entry["args"] = {**{a: FILL_IN for a in args}, **dict(role.args)}
        out.append(entry)
        pending.append(f"plugin {servicename} ({role.plugin}) for {name}: "
                       + (f"fill in {', '.join(args)}, then " if args else "") + f"attach it ({where})")
    return out, pending


# -- entry points ----------------------------------------------------------------------------------------------------


def entry_ingress(entry: EntryPoint, model: Model) -> tuple[str, str]:
    """A new file holding an Ingress for the suggested entry: (path, text)."""
    node = model.services[entry.service or ""]
    meta: dict[str, Any] = {"name": f"{node.name}-entry", "annotations": {K + "ingress": "true"}}
    if node.namespace and node.doc.namespace:
        meta["namespace"] = node.namespace
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta,
               "spec": {"rules": [{"host": entry.host, "http": {"paths": [{
                   "path": "/", "pathType": "Prefix",
                   "backend": {"service": {"name": node.name, "port": {"number": entry.port}}}}]}}]}}
    head = (f"# Added by `devlane init`: the flows' entry point ({node.name} is what users reach first).\n"
            "# Each flow gets its own host <flowId>.<domain>; change preview.example.com to your preview domain.\n")
    folder = Path(node.doc.file).parent
    text = yaml.dump(ingress, Dumper=SafeDumper, sort_keys=False)  # a service named `1e3` stays a string in Go
    return (folder / f"{node.name}-entry-ingress.yaml").as_posix(), head + text


def _new_files(inf: Inference, model: Model, mode: str, notes: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """New manifests to write (the entry Ingress), and those this mode only suggests."""
    out, suggested = {}, {}
    for entry in inf.entries:
        if entry.doc is not None or entry.service is None:
            continue
        path, text = entry_ingress(entry, model)
        if mode == "config" or model.services[entry.service].doc.file not in inf.editable:
            notes.append(f"entry: {entry.note}; init writes no new manifest in this mode, so add it to your inputs "
                         f"(e.g. as {path} and `- {{path: {path}}}` in {CONFIG_FILE} inputs:):\n{text}")
            suggested[path] = text
            continue
        out[path] = text
    return out, suggested


def _new_file_diff(path: str, text: str) -> str:
    return "".join(difflib.unified_diff([], text.splitlines(keepends=True), "/dev/null", f"b/{path}"))


# -- what to try next ------------------------------------------------------------------------------------------------


def _next_command(inf: Inference, options: api.Options) -> str:
    """A realistic first flow: the first service the entry calls (not a store), else the entry, else any caller."""
    model = inf.model
    stores = {r.service for r in inf.roles}
    backends = [b for e in model.entries for b in e.backends] + [e.service for e in inf.entries if e.service]
    deps = inf.dependencies()
    target = None
    for b in backends:
        callees = [e.target for e in inf.edges if e.source == b and e.target not in stores]
        target = callees[0] if callees else b
        break
    if target is None:
        target = next(iter(sorted(deps)), None) or next(iter(sorted(model.services)), "SERVICE")
    name = model.services[target].name if target in model.services else target
    repo = str(options.repo)
    return f"devlane render {repo} --flow {FLOW} --service {target}=REGISTRY/{name}:TAG"
