"""Load: a source (work tree or git ref) -> `Loaded`: the repository's config and every parsed object.

Every parsed Kubernetes object becomes a `Document` that remembers its file and index, so later
errors can point at it. Broken config or YAML stops a render at once; with `collect` (lint,
inspection) the problems are recorded and the rest is still read, with default config where the
config is broken.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from ..core import tempdirs
from ..core.cache import Cache, PackReader, blob_id
from ..core.fence import Fence, operator_dirs
from ..core.files import InputLimit
from ..core.k8s import outline
from ..core.source import Source, listed
from ..errors import DevlaneError, Diagnostics, Problem, Where
from . import build, config_annotations, reuse, shapes
from .config import CONFIG_FILE, InputSpec, RepoConfig, parse_config
from .parsing import Outcome, Parsed, cache_kind, cached_parses, decode, parse_files

_ALWAYS_EXCLUDED_DIRS = (".git/**", ".github/**", ".devlane/**")
ALWAYS_EXCLUDED = (*_ALWAYS_EXCLUDED_DIRS, ".devlane.yaml", "**/.devlane.yaml")  # config is never a manifest
_KUSTOMIZE_GROUP = "kustomize.config.k8s.io"


class once:
    """A property computed on first use and then kept in the instance (functools.cached_property takes a lock
    on every first use, which costs more than the fields themselves at a million uses per render)."""

    def __init__(self, compute: Callable[[Any], Any]):
        self.compute = compute
        self.name = compute.__name__

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.compute(obj)
        return value


def head(obj: dict) -> dict[str, Any]:
    """A Document's metadata fields, derived from its object: the one place that says what each one is."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    ns, ann, lab = meta.get("namespace"), meta.get("annotations"), meta.get("labels")
    return {"kind": str(obj.get("kind", "")), "api_version": str(obj.get("apiVersion", "")), "metadata": meta,
            "name": str(meta.get("name", "")), "namespace": str(ns) if ns else None,
            "annotations": ann if isinstance(ann, dict) else {}, "labels": lab if isinstance(lab, dict) else {}}


@dataclass(frozen=True)
class Document:
    """One Kubernetes object from the repository, with where it came from.

    Its fields are read hundreds of thousands of times per render, so each is computed once (the object
    is never edited in place: a stage that changes one makes a new Document)."""

    obj: dict
    file: str
    index: int

    def _head(self) -> dict[str, Any]:
        """Every metadata field at once (each is read, so the first read of one sets all seven)."""
        self.__dict__.update(head(self.obj))
        return self.__dict__

    @once
    def kind(self) -> str:
        return self._head()["kind"]

    @once
    def api_version(self) -> str:
        return self._head()["api_version"]

    @once
    def metadata(self) -> dict:
        return self._head()["metadata"]

    @once
    def name(self) -> str:
        return self._head()["name"]

    @once
    def namespace(self) -> str | None:
        return self._head()["namespace"]

    @once
    def annotations(self) -> dict:
        return self._head()["annotations"]

    @once
    def labels(self) -> dict:
        return self._head()["labels"]

    @once
    def outline(self) -> dict:
        """What passes over the whole repository read (`k8s.outline`): reading it never needs the body."""
        return outline(self.obj)

    @classmethod
    def lean(cls, identity: tuple[str, str, str, str | None], file: str, index: int,
             body: Callable[[], dict]) -> Document:
        """A Document known by its kind, apiVersion, name and namespace, whose object `body()` gives on first use
        (and its other fields with it): a render that reuses the repository's model decodes the few objects its
        flow touches, as the passes over the whole repository were stored with the model."""
        kind, api_version, name, namespace = identity
        doc = object.__new__(cls)
        doc.__dict__.update(kind=kind, api_version=api_version, name=name, namespace=namespace, file=file,
                            index=index, _body=body)
        return doc

    @classmethod
    def loaded(cls, obj: dict, file: str, index: int) -> Document:
        """A Document with its metadata fields already set: loading makes ten thousand of them at 5,000
        services (one dict update each, not seven descriptor calls)."""
        doc = cls(obj, file, index)
        doc.__dict__.update(head(obj))
        return doc

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"

    def where(self) -> Where:
        return Where(file=self.file, document=self.index, object=self.ref)


_BODIES = threading.Lock()  # plugin calls run on threads: a body is decoded once, whichever reads it first


def _body(doc: Document) -> dict:
    with _BODIES:
        found = doc.__dict__.get("obj")
        if found is None:
            found = doc.__dict__["obj"] = doc.__dict__["_body"]()
        return found


_body.__name__ = "obj"
Document.obj = once(_body)  # type: ignore[assignment]  # set by __init__, or on first use for a lean one


@dataclass(frozen=True)
class Loaded:
    """Everything read from the repository for one command."""

    source: Source
    config: RepoConfig
    config_bytes: bytes | None  # the raw .devlane.yaml, for the input hash
    documents: list[Document]
    files: dict[str, str]  # path -> sha256 of content, for the input hash
    revision: str | None
    problems: list[Problem]  # config and file problems (collect mode keeps going past errors)
    reuse: reuse.Reuse | None = None  # the model's stored entry: found still holding, or to store (`model_store`)

    def with_documents(self, documents: list[Document]) -> Loaded:
        """The same repository with its objects replaced (a template, pre-render steps)."""
        return replace(self, documents=documents)


def read(source: Source, collect: bool = False, top: Path | None = None, cache: Cache | None = None,
         allowed: tuple[str, ...] | None = None, deadline: float | None = None) -> Loaded:
    """Read `.devlane.yaml` and every input of `source`: plain YAML parsed, kustomize and Helm inputs built, each
    within the repository and the directories the operator `allowed` (default: `$DEVLANE_ALLOW_PATHS`), and by
    the `deadline` (time.monotonic())."""
    allowed = operator_dirs() if allowed is None else allowed
    config_bytes = source.read(CONFIG_FILE) if source.exists(CONFIG_FILE) else None
    problems: list[Problem] = []
    try:
        config = parse_config(config_bytes)
    except DevlaneError as exc:
        if not collect:
            raise
        problems += exc.problems
        config = RepoConfig()
    inputs = config.inputs or build.detect(source) or (InputSpec("path", globs=tuple(config.manifests)),)
    documents: list[Document] = []
    files: dict[str, str] = {}
    diags = Diagnostics()
    plain = [spec for spec in inputs if spec.kind == "path"]
    built = [spec for spec in inputs if spec.kind != "path"]
    reusable = not collect and not problems and len(plain) == 1 and not built  # one listing makes the documents
    reused = None
    for spec in plain:
        found = load_documents(source, list(spec.globs), _excludes(config), cache,
                               (config_bytes or b"") if reusable else None)
        documents += found.documents
        files.update(found.files)
        diags.problems += found.diags.problems
        reused = found.reuse
    if built:
        _read_built(source, built, documents, files, diags, collect, top, cache, allowed, deadline)
    documents = config_annotations.apply(documents, config, diags, Document)
    if not collect:
        diags.raise_if_errors()
    return Loaded(source, config, config_bytes, documents, files, source.revision(), problems + diags.problems,
                  reused)


def _read_built(source: Source, specs: list[InputSpec], documents: list[Document], files: dict[str, str],
                diags: Diagnostics, collect: bool, top: Path | None, cache: Cache | None, allowed: tuple[str, ...],
                deadline: float | None) -> None:
    """Build each kustomize or Helm input (from a copy of the ref's tree with `--ref`) and parse its objects."""
    with tempdirs.scratch("build") as tmp:
        tree, base = build.materialize(source, Path(tmp), top)
        ws = build.Workspace(tree, base, Fence.around(tree, allowed), deadline)
        for spec in specs:
            try:
                parts = build.cached_build(spec, ws, cache)
            except DevlaneError as exc:
                if not collect:
                    raise
                diags.problems += exc.problems
                continue
            files[spec.label] = hashlib.sha256(b"".join(text for _, text in parts)).hexdigest()
            counts: dict[str, int] = {}
            for (origin, _), parsed in zip(parts, parse_files(parts, cache), strict=True):
                index = counts.get(origin, 0)
                counts[origin] = index + 1
                if isinstance(parsed, DevlaneError):
                    diags.problems += parsed.problems
                    continue
                for doc, shape in zip(parsed.docs, parsed.shapes, strict=True):
                    _add(doc, origin, index, documents, diags, shape)


def _excludes(config: RepoConfig) -> list[str]:
    """What the config excludes from the manifests, its own output directory included."""
    return [*config.exclude, f"{config.output.strip('/')}/**"]


def read_back(root: Path, config: RepoConfig, directory: Path, names: list[str]) -> str | None:
    """The first of `names` (files to be written under `directory`) that a later command would read from
    the repository at `root` as a manifest; None when every one stays out of the inputs."""
    try:
        rel = Path(os.path.realpath(directory)).relative_to(os.path.realpath(root)).as_posix()
    except ValueError:
        return None  # outside the repository
    excludes = list(ALWAYS_EXCLUDED) + _excludes(config)
    for name in names:
        path = name if rel == "." else f"{rel}/{name}"
        if listed(path, config.manifests, excludes):
            return path
    return None


# ---------------------------------------------------------------------------------------------
# Parsing


def is_kubernetes_object(doc: Any) -> bool:
    return isinstance(doc, dict) and bool(doc.get("apiVersion")) and bool(doc.get("kind"))


def _plugin_dirs(source: Source, paths: list[str]) -> list[str]:
    """Directories (with a trailing /) holding a devlane `plugin.yaml` (`apiVersion: devlane.dev/...`)."""
    out = []
    for path in paths:
        if path == "plugin.yaml" or path.endswith("/plugin.yaml"):
            head = source.read(path)[:4096]
            if b"devlane.dev/" in head and b"kind: Plugin" in head:
                out.append(path[: -len("plugin.yaml")])
    return out


def load_documents(source: Source, includes: list[str], excludes: list[str], cache: Cache | None = None,
                   config: bytes | None = None) -> Found:
    """Read and parse every manifest file; skip (with a warning) documents that are not objects. With `config`
    (the raw `.devlane.yaml`) and a cache, look for the model's stored entry (`reuse`): when it still holds, the
    documents come from it, their bodies decoded on use.

    The cyclic garbage collector is paused meanwhile: parsing allocates about a million objects
    at 5,000 services, none of them cyclic, and each full collection would walk all of them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _load_documents(source, includes, excludes, cache, config)
    finally:
        if enabled:
            gc.enable()


def _outside_other_inputs(source: Source, paths: list[str], excludes: list[str], diags: Diagnostics) -> list[str]:
    """`paths` without the files of kustomize and Helm inputs and of nested apps (said once, with the fix)."""
    skip = build.marker_dirs(source, list(_ALWAYS_EXCLUDED_DIRS) + excludes)
    if not skip:
        return paths
    kept, skipped = [], set()
    for path in paths:
        inside = next((d for d in skip if path.startswith(d)), None)
        if inside is None:
            kept.append(path)
        else:
            skipped.add(inside)
    if skipped:
        shown = sorted(skipped)
        more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
        diags.warn(f"skipped {len(shown)} plain-YAML director{'y' if len(shown) == 1 else 'ies'} (kustomize or Helm "
                   f"inputs, or apps with their own .devlane.yaml): {', '.join(shown[:5])}{more}",
                   Where(file=".devlane.yaml"),
                   hint="to model them, list them under `inputs:` in .devlane.yaml ({kustomize: DIR} or {helm: DIR}), "
                        "or render the app's own directory", code="skipped-inputs")
    return kept


def _add(doc: Any, path: str, index: int, documents: list[Document], diags: Diagnostics,
         shape: str | bool | None = False) -> Document | None:
    """One parsed document: kept, and returned, when it is a named Kubernetes object of the right shape, else a
    warning. `shape`: its `shapes.shape_problem`, when the parse already knows it."""
    if doc is None:
        return None
    if not is_kubernetes_object(doc):
        diags.warn(
            "document is not a Kubernetes object (no apiVersion/kind); skipped",
            Where(file=path, document=index),
            hint="exclude non-manifest YAML with `exclude:` in .devlane.yaml",
            code="not-an-object",
        )
        return None
    if str(doc["apiVersion"]).startswith(_KUSTOMIZE_GROUP):
        return None  # kustomization files describe builds, not objects
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        diags.warn(
            f"{doc['kind']} has no metadata.name; skipped",
            Where(file=path, document=index),
            code="no-name",
        )
        return None
    document = Document.loaded(doc, path, index)
    wrong = shapes.check(doc, document.where, shape)
    if wrong is not None:
        diags.problems.append(wrong)
        return None
    documents.append(document)
    return document


class Found(NamedTuple):
    """What loading one plain-YAML input found."""

    documents: list[Document]
    files: dict[str, str]  # path -> sha256 of content
    diags: Diagnostics
    reuse: reuse.Reuse | None  # the model's entry: to reuse, or to store once built


def _load_documents(source: Source, includes: list[str], excludes: list[str], cache: Cache | None,
                    config: bytes | None) -> Found:
    diags = Diagnostics()
    files: dict[str, str] = {}
    paths = source.list_files(includes, list(ALWAYS_EXCLUDED) + excludes)
    paths = _outside_other_inputs(source, paths, excludes, diags)
    plugin_dirs = tuple(_plugin_dirs(source, paths))
    paths = [p for p in paths if not p.startswith(plugin_dirs)]  # a plugin's plugin.yaml and testdata are its own
    read: list[tuple[str, bytes]] = []
    blobs: dict[str, str] = {}  # path -> blob id (with a cache)
    unreadable: dict[str, DevlaneError] = {}
    for path in paths:
        _take(source, path, read, files, blobs, unreadable, cache)
    reuse_ = entry = None
    if cache is not None and config is not None and not unreadable:
        reuse_ = reuse.Reuse(cache, reuse.entry_key(config, includes, excludes, paths))
        entry = reuse.entry(cache, reuse_.key)
    stored = reuse.stored_blobs(entry, paths)
    outcomes = _parsed([(p, data) for p, data in read if stored.get(p) != blobs.get(p)], cache, blobs)
    if reuse_ is not None and entry is not None:
        documents = _restored(entry, paths, blobs, outcomes, source, cache, diags)
        if documents is not None:
            reuse_.model = entry["model"]
            return Found(documents, files, diags, reuse_)
        cache.counters.refused(reuse.cache_kind())  # type: ignore[union-attr]
    outcomes.update(_parsed([(p, data) for p, data in read if p not in outcomes], cache, blobs))
    documents: list[Document] = []
    heads: list[tuple[str, list, list, list]] | None = [] if reuse_ is not None else None
    said = len(diags.problems)
    for path in paths:
        outcome = unreadable.get(path) or outcomes.get(path)
        if isinstance(outcome, DevlaneError):
            diags.problems += outcome.problems
            heads = None
            continue
        if outcome is None:
            continue
        kept = [_add(doc, path, i, documents, diags, shape)
                for i, (doc, shape) in enumerate(zip(outcome.docs, outcome.shapes, strict=True))]
        if heads is not None:
            if outcome.exact:
                heads.append((blobs[path], outcome.docs, outcome.shapes, kept))
            else:
                heads = None  # JSON would not give these heads back as they are
    if reuse_ is not None and heads is not None and not diags.errors:
        reuse_.files, reuse_.problems = heads, diags.problems[said:]
    return Found(documents, files, diags, reuse_)


def _parsed(items: list[tuple[str, bytes]], cache: Cache | None, blobs: dict[str, str]) -> dict[str, Outcome]:
    """The outcome of each file of `items` (path, content), by path."""
    if not items:
        return {}
    keys = [blobs[path] for path, _ in items] if cache is not None else None
    return dict(zip((path for path, _ in items), parse_files(items, cache, keys), strict=True))


def _take(source: Source, path: str, read: list[tuple[str, bytes]], files: dict[str, str], blobs: dict[str, str],
          unreadable: dict[str, DevlaneError], cache: Cache | None) -> None:
    """Read the file at `path` into `read`, with its digests."""
    data = _read(source, path, unreadable)
    if data is None:
        return
    files[path] = hashlib.sha256(data).hexdigest()
    read.append((path, data))
    if cache is not None:
        blobs[path] = blob_id(data)


def _restored(entry: dict, paths: list[str], blobs: dict[str, str], outcomes: dict[str, Outcome],
              source: Source, cache: Cache, diags: Diagnostics) -> list[Document] | None:
    """The documents of a stored entry, when every file still has the stored heads (None: it does not hold).
    Each document's object is decoded on first use (`StoredFile`)."""
    stored = entry["files"]
    if len(stored) != len(paths):
        return None
    blob_of = reuse.stored_blobs(entry, paths)
    changed = [p for p in paths if blob_of.get(p) != blobs.get(p)]
    late = [p for p in changed if p not in outcomes and p in blobs]  # changed before the index's last save
    for p, found in zip(late, cached_parses(cache, [blobs[p] for p in late]), strict=True):
        if found is not None:
            outcomes[p] = found
    for path, row in zip(paths, stored, strict=True):
        if path in changed:
            now = outcomes.get(path)
            if not isinstance(now, Parsed) or not now.exact or not isinstance(row, list) or len(row) != 2 or \
                    row[1] != reuse.heads_digest(reuse.heads(now.docs, now.shapes)):
                return None
    reader = cache.reader(cache_kind())
    try:
        files = [StoredFile(source, path, blobs[path], reader, outcomes.get(path)) for path in paths]
        documents = [Document.lean((kind, api_version, name, ns), paths[f], i, functools.partial(files[f].body, i))
                     for f, i, kind, api_version, name, ns in entry["docs"]]
        problems = [Problem.from_row(row) for row in entry["problems"]]
    except (TypeError, ValueError, KeyError, IndexError):
        return None  # a row of another form: not an entry this code wrote
    diags.problems += problems
    return documents


class StoredFile:
    """The documents of one file of a stored entry, decoded on first use from the parse in hand, the parse
    cache, or (when the cache lost it since) the file itself, read and parsed again, which must still be the
    same blob (`Document.obj` holds the lock while it asks)."""

    def __init__(self, source: Source, path: str, blob: str, reader: PackReader, parsed: Outcome | None):
        self.source, self.path, self.blob, self.reader = source, path, blob, reader
        self.parsed = parsed if isinstance(parsed, Parsed) else None

    def body(self, index: int) -> dict:
        if self.parsed is None:
            self.parsed = self._parse()
        return self.parsed.docs[index]

    def _parse(self) -> Parsed:
        payload = self.reader.get(self.blob)
        found = decode(payload) if payload is not None else None
        if found is not None:
            return found
        data = self.source.read(self.path)
        if blob_id(data) != self.blob:
            raise DevlaneError(Problem(f"{self.path} changed while devlane was rendering", Where(file=self.path),
                                       hint="render again once the files are as they should be",
                                       code="changed-input"))
        outcome = parse_files([(self.path, data)], None)[0]
        if isinstance(outcome, DevlaneError):
            raise outcome
        return outcome


def _read(source: Source, path: str, unreadable: dict[str, DevlaneError]) -> bytes | None:
    """The file's bytes; None, with the reason kept in `unreadable`, when it cannot be read."""
    try:
        return source.read(path)
    except InputLimit:
        raise  # over the total: every later file would be too
    except DevlaneError as exc:  # keep going: lint reports every broken file at once
        unreadable[path] = exc
        return None
