"""Load: a source (work tree or git ref) and its `.devlane.yaml` (`settings.repo_config`) -> `Loaded`: every
parsed object of the repository, with the config that chose them.

Every parsed Kubernetes object becomes a `Document` that remembers its file and index, so later
errors can point at it. Broken config or YAML stops a render at once; with `collect` (lint,
inspection) the problems are recorded and the rest is still read, with default config where the
config is broken.
"""

from __future__ import annotations

import gc
import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from ...core import progress, tempdirs
from ...core.cache import Cache, blob_id
from ...core.fence import Fence, operator_dirs
from ...core.files import InputLimit
from ...core.source import GitRefSource, Source, listed
from ...errors import DevlaneError, Diagnostics, Problem, Where
from ..settings.repo_config import ConfigFile, InputSpec, RepoConfig, read_config
from . import config_annotations, field_types, kustomize_helm
from .document import Document, is_kubernetes_object
from .parsing import Outcome, parse_files

_ALWAYS_EXCLUDED_DIRS = (".git/**", ".github/**", ".devlane/**")
ALWAYS_EXCLUDED = (*_ALWAYS_EXCLUDED_DIRS, ".devlane.yaml", "**/.devlane.yaml")  # config is never a manifest
_KUSTOMIZE_GROUP = "kustomize.config.k8s.io"


class Known(NamedTuple):
    """What a stored entry knew of one file: the blob id, sha256 and size of the bytes it was made from."""

    blob: str
    sha256: str
    size: int


class Memo(Protocol):
    """The early cutoff's side of loading one plain-YAML listing (`render/stored` keeps it): asked for what it
    stored of the listing, for the documents of an entry that still holds, and told what to store."""

    def open(self, config: bytes, includes: list[str], excludes: list[str],
             paths: list[str]) -> dict[str, Known] | None:
        """What the entry of this listing knew of each of its files (None: nothing stored)."""

    def restore(self, source: Source, paths: list[str], blobs: dict[str, str],
                outcomes: dict[str, Outcome]) -> tuple[list[Document], list[Problem]] | None:
        """The stored documents and what loading said of them, when every file still has its stored heads;
        `outcomes`: the parses of the files whose blob changed."""

    def keep(self, files: list[tuple[Known, list, list, list]], problems: list[Problem]) -> None:
        """What to store once the model is built: per file what it is (`Known`), its documents, shape problems and
        the Documents kept of them, and what loading said."""


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

    def with_documents(self, documents: list[Document]) -> Loaded:
        """The same repository with its objects replaced (a template, pre-render steps)."""
        return replace(self, documents=documents)


def read(source: Source, collect: bool = False, top: Path | None = None, cache: Cache | None = None,
         allowed: tuple[str, ...] | None = None, deadline: float | None = None, memo: Memo | None = None,
         config_file: ConfigFile | None = None) -> Loaded:
    """Read every input of `source` as its `.devlane.yaml` (`config_file`, read here when not given) says: plain
    YAML parsed, kustomize and Helm inputs built, each within the repository and the directories the operator
    `allowed` (default: `$DEVLANE_ALLOW_PATHS`), and by the `deadline` (time.monotonic()). `memo`: the stored
    model's, asked when one listing makes the documents."""
    allowed = operator_dirs() if allowed is None else allowed
    config_file = config_file or read_config(source, collect)
    config, config_bytes, problems = config_file.config, config_file.raw, list(config_file.problems)
    inputs = config.inputs or kustomize_helm.detect(source) or (InputSpec("path", globs=tuple(config.manifests)),)
    documents: list[Document] = []
    files: dict[str, str] = {}
    diags = Diagnostics()
    plain = [spec for spec in inputs if spec.kind == "path"]
    built = [spec for spec in inputs if spec.kind != "path"]
    reusable = not collect and not problems and len(plain) == 1 and not built  # one listing makes the documents
    for spec in plain:
        found = load_documents(source, list(spec.globs), _excludes(config), cache,
                               ((config_bytes or b""), memo) if reusable and memo is not None else None)
        documents += found.documents
        files.update(found.files)
        diags.problems += found.diags.problems
    if built:
        _read_built(source, built, documents, files, diags, collect, top, cache, allowed, deadline)
    documents = config_annotations.apply(documents, config, diags, Document)
    if not collect:
        diags.raise_if_errors()
    return Loaded(source, config, config_bytes, documents, files, source.revision(), problems + diags.problems)


def _read_built(source: Source, specs: list[InputSpec], documents: list[Document], files: dict[str, str],
                diags: Diagnostics, collect: bool, top: Path | None, cache: Cache | None, allowed: tuple[str, ...],
                deadline: float | None) -> None:
    """Build each kustomize or Helm input (from a copy of the ref's tree with `--ref`) and parse its objects."""
    with tempdirs.scratch("build") as tmp:
        tree, base = kustomize_helm.materialize(source, Path(tmp), top)
        ws = kustomize_helm.Workspace(tree, base, Fence.around(tree, allowed), deadline)
        for spec in specs:
            try:
                parts = kustomize_helm.cached_build(spec, ws, cache)
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
                   memo: tuple[bytes, Memo] | None = None) -> Found:
    """Read and parse every manifest file; skip (with a warning) documents that are not objects. With `memo` (the
    raw `.devlane.yaml`, and the stored model's memo), ask for the listing's stored entry: when it still holds,
    the documents come from it, their bodies decoded on use.

    The cyclic garbage collector is paused meanwhile: parsing allocates about a million objects
    at 5,000 services, none of them cyclic, and each full collection would walk all of them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _load_documents(source, includes, excludes, cache, memo)
    finally:
        if enabled:
            gc.enable()


def _outside_other_inputs(source: Source, paths: list[str], excludes: list[str], diags: Diagnostics) -> list[str]:
    """`paths` without the files of kustomize and Helm inputs and of nested apps (said once, with the fix)."""
    skip = kustomize_helm.marker_dirs(source, list(_ALWAYS_EXCLUDED_DIRS) + excludes)
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
    warning. `shape`: its `field_types.shape_problem`, when the parse already knows it."""
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
    wrong = field_types.check(doc, document.where, shape)
    if wrong is not None:
        diags.problems.append(wrong)
        return None
    documents.append(document)
    return document


def _is_list(doc: Any) -> bool:
    """A `kind: List` (or a typed list, `ServiceList`...) with `items`: kubectl, Argo CD and Flux apply its items."""
    return is_kubernetes_object(doc) and str(doc["kind"]).endswith("List") and isinstance(doc.get("items"), list)


def _add_items(doc: dict, path: str, index: int, documents: list[Document], diags: Diagnostics) -> None:
    """A list's items, each one object of the repository as kubectl reads them: an item without apiVersion or kind
    takes the list's (`ServiceList` items are Services), a nested list is read the same way. Each item is
    located at the list's document."""
    kind = str(doc["kind"])
    item_kind = kind[: -len("List")] if kind != "List" else None
    for item in doc["items"]:
        if isinstance(item, dict) and item_kind is not None:
            item = {"apiVersion": doc["apiVersion"], "kind": item_kind, **item}
        if _is_list(item):
            _add_items(item, path, index, documents, diags)
        elif not is_kubernetes_object(item):
            diags.warn(f"an item of this {kind} is not a Kubernetes object (no apiVersion/kind); skipped",
                       Where(file=path, document=index), code="not-an-object",
                       hint="give each item of a kind: List its apiVersion and kind, as kubectl needs them")
        else:
            _add(item, path, index, documents, diags)


class Found(NamedTuple):
    """What loading one plain-YAML input found."""

    documents: list[Document]
    files: dict[str, str]  # path -> sha256 of content
    diags: Diagnostics


def _listing(source: Source, includes: list[str], excludes: list[str], diags: Diagnostics) -> list[str]:
    """The manifest files of one plain-YAML input: its globs less the excludes, other inputs' and plugins' files."""
    paths = source.list_files(includes, list(ALWAYS_EXCLUDED) + excludes)
    paths = _outside_other_inputs(source, paths, excludes, diags)
    plugin_dirs = tuple(_plugin_dirs(source, paths))
    return [p for p in paths if not p.startswith(plugin_dirs)]  # a plugin's plugin.yaml and testdata are its own


def input_digests(source: Source, config_file: ConfigFile | None = None) -> tuple[dict[str, str], list[Problem]] | None:
    """The sha256 of each file `read` would parse (what `Loaded.files` holds), read without parsing, and what
    listing them said (directories left to other inputs): what a cached finding about the whole repository is bound
    to. None when that is not all of the inputs (a kustomize or Helm input, whose build reads more) or a file cannot
    be read (loading says why)."""
    config_file = config_file or read_config(source, True)
    config = config_file.config
    inputs = config.inputs or kustomize_helm.detect(source) or (InputSpec("path", globs=tuple(config.manifests)),)
    if any(spec.kind != "path" for spec in inputs):
        return None
    files: dict[str, str] = {}
    unreadable: dict[str, DevlaneError] = {}
    said = Diagnostics()
    refs = isinstance(source, GitRefSource)  # a ref's blob ids name its files' content without reading them
    for spec in inputs:
        for path in _listing(source, list(spec.globs), _excludes(config), said):
            if refs:
                try:
                    files[path] = f"blob {source.blob_id(path)}"  # type: ignore[attr-defined]
                except DevlaneError:
                    return None
                continue
            data = _read(source, path, unreadable)
            if data is None:
                return None
            files[path] = hashlib.sha256(data).hexdigest()
    return files, said.problems


def _load_documents(source: Source, includes: list[str], excludes: list[str], cache: Cache | None,
                    memo: tuple[bytes, Memo] | None) -> Found:
    diags = Diagnostics()
    paths = _listing(source, includes, excludes, diags)
    keeper = memo[1] if memo is not None and cache is not None else None
    stored = keeper.open(memo[0], includes, excludes, paths) if keeper is not None else None  # type: ignore[index]
    read = _Read(source, cache)
    # the files git's index proves are still what the stored entry was made of are not read (nor hashed) unless the
    # entry turns out not to hold
    skipped = source.unchanged({p: (k.blob, k.size) for p, k in stored.items()}) if stored else set()
    with progress.task("reading files", len(paths)) as step:
        for path in paths:
            if path in skipped:
                read.known(path, stored[path])  # type: ignore[index]
            else:
                read.take(path)
            step()
    if read.unreadable:
        keeper = stored = None
    blobs = read.blobs
    outcomes = _parsed([(p, data) for p, data in read.data if (stored or {}).get(p, _NOTHING).blob != blobs.get(p)],
                       cache, blobs)
    if keeper is not None and stored is not None:
        restored = keeper.restore(source, paths, blobs, outcomes)
        if restored is not None:
            diags.problems += restored[1]
            return Found(restored[0], read.in_order(paths), diags)
    for path in paths:
        if path in skipped:
            read.take(path)
    outcomes.update(_parsed([(p, data) for p, data in read.data if p not in outcomes], cache, blobs))
    documents: list[Document] = []
    heads: list[tuple[Known, list, list, list]] | None = [] if keeper is not None else None
    said = len(diags.problems)
    for path in paths:
        outcome = read.unreadable.get(path) or outcomes.get(path)
        if isinstance(outcome, DevlaneError):
            diags.problems += outcome.problems
            heads = None
            continue
        if outcome is None:
            continue
        kept = [_add(doc, path, i, documents, diags, shape) if not _is_list(doc) else _add_items(doc, path, i,
                                                                                                documents, diags)
                for i, (doc, shape) in enumerate(zip(outcome.docs, outcome.shapes, strict=True))]
        if any(_is_list(doc) for doc in outcome.docs):
            heads = None  # a List's items are not documents of the file: the stored model could not find them
        if heads is not None:
            if outcome.exact:
                heads.append((read.what(path), outcome.docs, outcome.shapes, kept))
            else:
                heads = None  # JSON would not give these heads back as they are
    if keeper is not None and heads is not None and not diags.errors:
        keeper.keep(heads, diags.problems[said:])
    return Found(documents, read.in_order(paths), diags)


_NOTHING = Known("", "", -1)


class _Read:
    """The files loading read (or knows without reading): bytes, blob ids (with a cache), sha256 and sizes."""

    def __init__(self, source: Source, cache: Cache | None):
        self.source, self.cache = source, cache
        self.data: list[tuple[str, bytes]] = []
        self.files: dict[str, str] = {}  # path -> sha256 of content
        self.blobs: dict[str, str] = {}  # path -> blob id (with a cache)
        self.sizes: dict[str, int] = {}
        self.unreadable: dict[str, DevlaneError] = {}

    def take(self, path: str) -> None:
        """Read the file at `path`, with its digests."""
        data = _read(self.source, path, self.unreadable)
        if data is None:
            return
        self.files[path] = hashlib.sha256(data).hexdigest()
        self.sizes[path] = len(data)
        self.data.append((path, data))
        if self.cache is not None:
            self.blobs[path] = blob_id(data)

    def known(self, path: str, known: Known) -> None:
        """A file not read: what the stored entry knew of it holds."""
        self.files[path], self.blobs[path], self.sizes[path] = known.sha256, known.blob, known.size

    def what(self, path: str) -> Known:
        return Known(self.blobs[path], self.files[path], self.sizes[path])

    def in_order(self, paths: list[str]) -> dict[str, str]:
        """The sha256 of each file, in listing order (as reading them all in turn gives)."""
        return {p: self.files[p] for p in paths if p in self.files}


def _parsed(items: list[tuple[str, bytes]], cache: Cache | None, blobs: dict[str, str]) -> dict[str, Outcome]:
    """The outcome of each file of `items` (path, content), by path."""
    if not items:
        return {}
    keys = [blobs[path] for path, _ in items] if cache is not None else None
    return dict(zip((path for path, _ in items), parse_files(items, cache, keys), strict=True))


def _read(source: Source, path: str, unreadable: dict[str, DevlaneError]) -> bytes | None:
    """The file's bytes; None, with the reason kept in `unreadable`, when it cannot be read."""
    try:
        return source.read(path)
    except InputLimit:
        raise  # over the total: every later file would be too
    except DevlaneError as exc:  # keep going: lint reports every broken file at once
        unreadable[path] = exc
        return None
