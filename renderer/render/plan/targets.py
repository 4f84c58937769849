"""`--services auto`: the flow's targets are the services a pull request changed, read from git, each with the
image CI built for it. Resolved before the render, from the repository as the session loaded it: the flow comes out
as data (`Targeted`), like any other.

A service changed when, between where the head branched from the base (their merge-base, as a pull request's
"Files changed" compares) and the head,
- an object it consists of changed: its Service, or a workload its selector matches (objects are
  compared parsed, so re-formatting a file or editing another object in it does not count), or
- a file under a directory named after it changed (`services/orders/...`, `src/orders/...`: its code).

Which image it runs: `--image-template` (e.g. `ghcr.io/acme/{service}:{short_sha}`) names what CI builds, and only a
service whose committed image is in that repository is built by CI. Any other (a store, a third-party image bumped by
Renovate) runs its committed image, and one whose only change is code under its directory is no target (its image
cannot have changed). A pull request that changes no service is no lane (`NoServiceChanged`), not an error.
"""

from __future__ import annotations

import contextlib
import os
import re
import string
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from ...core.cache import Cache
from ...core.images import repository
from ...core.k8s import pod_template
from ...core.source import GitRefSource, merge_base
from ...errors import DevlaneError, NothingToDo, Problem, UsageError
from ..inputs import kustomize_helm, load, parsing
from ..inputs.document import Document
from ..inputs.load import Loaded
from ..model.records import Model, ServiceNode
from ..model.topology import build_model
from .flow_spec import FlowRequest, FlowSpec, resolve

TEMPLATE_FIELDS = ("service", "sha", "short_sha", "pr", "branch")
TEMPLATE, COMMITTED, GIVEN, NOT_BUILT = "template", "committed", "given", "not-built"  # `Change.origin`


@dataclass(frozen=True)
class Change:
    """A service the pull request changed: why, and the image its dev copy runs (`origin`: built by CI from
    `--image-template`, the committed one, given by `--service`, or `not-built`: no target, its image cannot change)."""

    service: str
    reason: str
    image: str = ""
    origin: str = ""
    objects: bool = True  # its objects changed (False: only code under its directory)

    @property
    def target(self) -> bool:
        return self.origin != NOT_BUILT


@dataclass(frozen=True)
class AutoFlow:
    """The flow `--services auto` asks for: the rest of the request, and where its targets come from."""

    request: FlowRequest
    base: str  # the pull request's base ref
    image_template: str  # e.g. `ghcr.io/acme/{service}:{short_sha}`
    pr: str | None = None


class NoServiceChanged(NothingToDo):
    """`--services auto` found nothing to target: no lane (a docs-only pull request). Not a failure: each command
    says it in one line and exits 0; one that writes lanes removes the lane an earlier push made."""

    def __init__(self, flow_id: str, base: str, head: str, files: list[str], changes: list[Change]):
        self.flow_id, self.base, self.head, self.files, self.changes = flow_id, base, head, files, changes
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        changed = f"{len(files)} file{'s' if len(files) != 1 else ''} changed: {shown}" if files else "no file changed"
        super().__init__(Problem(f"flow {flow_id}: no service changed between {base} and {head} ({changed}); no lane",
                                 severity="info", code="no-service-changed"))

    def with_problems(self, problems: list[Problem]) -> NothingToDo:
        return NothingToDo(problems)


class Targeted(NamedTuple):
    """The flow to render, and why each of its targets is one (`--services auto`; empty for a flow as given)."""

    flow: FlowSpec
    targets: list[Change]


def targeted(flow: FlowSpec | AutoFlow, loaded: Loaded, root: Path, ref: str | None, top: Path | None = None,
             cache: Cache | None = None) -> Targeted:
    """The flow as data: as given, or with the services changed between the base and the rendered ref (`ref`,
    else the work tree's HEAD) of the repository at `root` as loaded, each with the image it runs."""
    if isinstance(flow, FlowSpec):
        return Targeted(flow, [])
    head = ref or "HEAD"
    model = build_model(loaded.documents, loaded.config.namespace)
    changes, files = changed_services(loaded, root, ref, merge_base(root, flow.base, head), top, cache, model)
    fields = template_fields(root, ref, flow.pr)
    chosen = [_image_of(c, model.services[c.service], flow, fields) for c in changes]
    if not any(c.target for c in chosen) and not flow.request.images:
        raise NoServiceChanged(flow.request.flow_id or "", flow.base, head, files, chosen)
    images = {c.service: c.image for c in chosen if c.target}
    return Targeted(resolve(FlowRequest(**{**vars(flow.request), "images": {**images, **flow.request.images}})),
                    chosen)


def _image_of(change: Change, node: ServiceNode, flow: AutoFlow, fields: dict[str, str]) -> Change:
    """The image a changed service's dev copy runs, and where it comes from."""
    given = flow.request.images.get(change.service)
    if given:
        return replace(change, image=given, origin=GIVEN)
    templated = image_for(flow.image_template, change.service, fields)
    committed = committed_image(node)
    if committed is None or repository(committed) == repository(templated):
        return replace(change, image=templated, origin=TEMPLATE)
    why = f"its image {committed} is not built by CI (--image-template builds {repository(templated)})"
    if change.objects:
        return replace(change, reason=f"{change.reason}; {why}: the committed image runs", image=committed,
                       origin=COMMITTED)
    return replace(change, reason=f"{change.reason}, but {why}: no target", origin=NOT_BUILT)


def committed_image(node: ServiceNode) -> str | None:
    """The image of the service's target container as committed (None: no workload, or no image there)."""
    if node.workload is None:
        return None
    spec = pod_template(node.workload.doc.obj).get("spec") or {}
    for c in spec.get("containers") or []:
        if isinstance(c, dict) and c.get("name", "") == (node.container or "") and isinstance(c.get("image"), str):
            return str(c["image"])
    return None


def _objects(source: GitRefSource, paths: list[str], cache: Cache | None) -> dict[str, dict[tuple, dict]]:
    """Each file's objects at the source's ref by (kind, namespace, name); none for a file that is not there or does
    not parse. Parses come from the cache by blob id without reading the blob (the head's files were parsed by its
    load), and the others are parsed across the cores and kept for the base's render, which reads them next."""
    ids: dict[str, str] = {}
    for path in paths:
        if source.exists(path):
            with contextlib.suppress(DevlaneError):  # a link out of the repository: no objects, as it does not load
                ids[path] = source.blob_id(path)
    keys = list(ids)
    parsed: dict[str, Any] = dict(zip(keys, parsing.cached_parses(cache, [ids[p] for p in keys]), strict=True)) \
        if cache is not None else {}
    missing: list[tuple[str, bytes]] = []
    for path in keys:
        if parsed.get(path) is None:
            with contextlib.suppress(DevlaneError):
                missing.append((path, source.read(path)))
    parsed.update(zip((p for p, _ in missing), parsing.parse_files(missing, cache, [ids[p] for p, _ in missing]),
                      strict=True))
    out: dict[str, dict[tuple, dict]] = {path: {} for path in paths}
    for path, outcome in parsed.items():
        if isinstance(outcome, parsing.Parsed):
            for doc in outcome.docs:
                if isinstance(doc, dict) and doc.get("kind"):
                    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
                    out[path][(doc.get("kind"), meta.get("namespace"), meta.get("name"))] = doc
    return out


def changed_services(loaded: Loaded, root: Path, ref: str | None, base: str, top: Path | None = None,
                     cache: Cache | None = None, model: Model | None = None) -> tuple[list[Change], list[str]]:
    """Services changed between `base` and the rendered ref (the work tree: HEAD), each with the reason; and the
    files that changed."""
    base_src = GitRefSource(root, base)
    head_src = loaded.source if isinstance(loaded.source, GitRefSource) else GitRefSource(root, ref or "HEAD")
    model = model or build_model(loaded.documents, loaded.config.namespace)
    manifests = {d.file for d in model.documents}
    paths = base_src.changed(head_src)
    found: dict[str, str] = {}  # service -> an object of it changed
    code: dict[str, str] = {}  # service -> code under its directory changed
    built = any(spec.kind != "path" for spec in loaded.config.inputs or kustomize_helm.detect(head_src))
    if built and paths:  # a base, a patch or a values file changes objects elsewhere: compare what was built
        _built_changes(base_src, head_src, model, found, top, cache)
    compared = [] if built else [p for p in paths if p in manifests or p.endswith((".yaml", ".yml"))]
    befores, afters = _objects(base_src, compared, cache), _objects(head_src, compared, cache)
    for path in paths:
        if path in befores:
            before, after = befores[path], afters[path]
            for key in sorted(set(before) | set(after), key=str):
                if before.get(key) == after.get(key):
                    continue
                kind, _, name = key
                for svc in _services_of(model, kind, name):
                    found.setdefault(svc, f"{kind}/{name} changed in {path}")
        for svc in sorted(set(path.split("/")[:-1])):  # the directories the path is under
            if svc in model.services and model.services[svc].workload is not None:
                code.setdefault(svc, f"{path} is under a directory named {svc}")
    changes = [Change(s, found[s]) if s in found else Change(s, code[s], objects=False)
               for s in sorted({*found, *code})]
    return changes, paths


def _built_changes(base_src: GitRefSource, head_src: GitRefSource, model: Model, found: dict[str, str],
                   top: Path | None, cache: Cache | None) -> None:
    """Services whose objects differ between the builds of base and head (kustomize and Helm inputs)."""
    def objects(source: GitRefSource) -> dict[tuple, Document]:
        loaded = load.read(source, top=top, cache=cache)
        return {(d.kind, d.namespace, d.name): d for d in loaded.documents}

    before, after = objects(base_src), objects(head_src)
    for key in sorted(set(before) | set(after), key=str):
        old, new = before.get(key), after.get(key)
        if old is not None and new is not None and old.obj == new.obj:
            continue
        kind, _, name = key
        where = (new or old).file  # type: ignore[union-attr]
        for svc in _services_of(model, kind, name):
            found.setdefault(svc, f"{kind}/{name} changed in the build of {where}")


def _services_of(model: Model, kind: str, name: str) -> list[str]:
    if kind == "Service" and name in model.services:
        return [name]
    return model.keys_by_workload.get((kind, name), [])


def image_for(template: str, service: str, fields: dict[str, str]) -> str:
    """Fill `--image-template`; an unknown field is a usage error that names it."""
    names = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    unknown = sorted({n for n in names if n not in TEMPLATE_FIELDS})
    if unknown:
        raise UsageError(Problem(f"--image-template {template!r}: unknown field(s) {', '.join(unknown)}",
                                 hint="fields: " + ", ".join("{" + f + "}" for f in TEMPLATE_FIELDS)))
    if "pr" in names and not fields.get("pr"):
        raise UsageError(Problem("--image-template uses {pr} but no pull request number is known",
                                 hint="pass --pr N (GitHub Actions: refs/pull/N/merge in GITHUB_REF works too)"))
    return template.format(service=service, **{k: fields.get(k, "") for k in TEMPLATE_FIELDS if k != "service"})


def template_fields(repo: Path, head: str | None, pr: str | None) -> dict[str, str]:
    import git

    r = git.Repo(repo, search_parent_directories=True)
    commit = r.commit(head or "HEAD")
    if pr is None:
        pr = os.environ.get("DEVLANE_PR")
        m = re.match(r"refs/pull/(\d+)/", os.environ.get("GITHUB_REF", ""))
        pr = pr or (m.group(1) if m else None)
    branch = ""
    if head is None and not r.head.is_detached:
        branch = r.active_branch.name
    return {"sha": commit.hexsha, "short_sha": commit.hexsha[:7], "pr": pr or "", "branch": branch}
