"""`--services auto`: the flow's targets are the services a pull request changed, read from git, each with the
image `--image-template` names. Resolved before the render, from the repository as the session loaded it: the
flow comes out as data (`Targeted`), like any other.

A service changed when, between base and head,
- an object it consists of changed: its Service, or a workload its selector matches (objects are
  compared parsed, so re-formatting a file or editing another object in it does not count), or
- a file under a directory named after it changed (`services/orders/...`, `src/orders/...`: its code).
The image of each target comes from `--image-template`, e.g. `ghcr.io/acme/{service}:{short_sha}`.
"""

from __future__ import annotations

import os
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ...core.cache import Cache
from ...core.source import GitRefSource
from ...core.yamlio import parse_documents
from ...errors import DevlaneError, Problem, UsageError
from ..inputs import kustomize_helm, load
from ..inputs.document import Document
from ..inputs.load import Loaded
from ..model.records import Model
from ..model.topology import build_model
from .flow_spec import FlowRequest, FlowSpec, resolve

TEMPLATE_FIELDS = ("service", "sha", "short_sha", "pr", "branch")


@dataclass(frozen=True)
class Change:
    service: str
    reason: str


@dataclass(frozen=True)
class AutoFlow:
    """The flow `--services auto` asks for: the rest of the request, and where its targets come from."""

    request: FlowRequest
    base: str  # the pull request's base ref
    image_template: str  # e.g. `ghcr.io/acme/{service}:{short_sha}`
    pr: str | None = None


class Targeted(NamedTuple):
    """The flow to render, and why each of its targets is one (`--services auto`; empty for a flow as given)."""

    flow: FlowSpec
    targets: list[Change]


def targeted(flow: FlowSpec | AutoFlow, loaded: Loaded, root: Path, ref: str | None, top: Path | None = None,
             cache: Cache | None = None) -> Targeted:
    """The flow as data: as given, or with the services changed between the base and the rendered ref (`ref`,
    else the work tree's HEAD) of the repository at `root` as loaded, each with its templated image."""
    if isinstance(flow, FlowSpec):
        return Targeted(flow, [])
    changes = changed_services(loaded, root, ref, flow.base, top, cache)
    if not changes:
        raise DevlaneError(Problem(f"--services auto: no service changed between {flow.base} and {ref or 'HEAD'}",
                                   hint="a flow must change at least one service; pass --service NAME=IMAGE"))
    fields = template_fields(root, ref, flow.pr)
    images = {c.service: image_for(flow.image_template, c.service, fields) for c in changes}
    return Targeted(resolve(FlowRequest(**{**vars(flow.request), "images": {**images, **flow.request.images}})),
                    changes)


def _objects(source: GitRefSource, path: str) -> dict[tuple, dict]:
    if not source.exists(path):
        return {}
    try:
        docs = parse_documents(source.read(path), path)
    except DevlaneError:
        return {}
    out = {}
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind"):
            meta = doc.get("metadata") or {}
            out[(doc.get("kind"), meta.get("namespace"), meta.get("name"))] = doc
    return out


def changed_services(loaded: Loaded, root: Path, ref: str | None, base: str, top: Path | None = None,
                     cache: Cache | None = None) -> list[Change]:
    """Services changed between `base` and the rendered ref (the work tree: HEAD), each with the reason."""
    base_src = GitRefSource(root, base)
    head_src = loaded.source if isinstance(loaded.source, GitRefSource) else GitRefSource(root, ref or "HEAD")
    model = build_model(loaded.documents, loaded.config.namespace)
    manifests = {d.file for d in model.documents}
    diff = base_src.commit.diff(head_src.commit)
    prefix = f"{base_src.prefix}/" if base_src.prefix else ""
    paths = sorted({p[len(prefix):] for d in diff for p in (d.a_path, d.b_path) if p and p.startswith(prefix)})
    found: dict[str, str] = {}
    built = any(spec.kind != "path" for spec in loaded.config.inputs or kustomize_helm.detect(head_src))
    if built and paths:  # a base, a patch or a values file changes objects elsewhere: compare what was built
        _built_changes(base_src, head_src, model, found, top, cache)
    for path in paths:
        if not built and (path in manifests or path.endswith((".yaml", ".yml"))):
            before, after = _objects(base_src, path), _objects(head_src, path)
            for key in sorted(set(before) | set(after), key=str):
                if before.get(key) == after.get(key):
                    continue
                kind, _, name = key
                for svc in _services_of(model, kind, name):
                    found.setdefault(svc, f"{kind}/{name} changed in {path}")
        dirs = path.split("/")[:-1]
        for svc in sorted(model.services):
            if svc in dirs and model.services[svc].workload is not None:
                found.setdefault(svc, f"{path} is under a directory named {svc}")
    return [Change(s, found[s]) for s in sorted(found)]


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
    return sorted(s for s, node in model.services.items()
                  if node.workload is not None and node.workload.doc.kind == kind and node.workload.doc.name == name)


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
