"""Early cutoff: what a render derives from the whole repository, kept for the next render that would derive it
again.

A one-file change re-parses one file (`parsing`), but the model, the selector indexes and the documents
themselves are rebuilt from every file: at 5,000 services that is most of a warm render. Yet those passes read
only each object's outline (`k8s.outline`: apiVersion, kind, metadata, selectors, ports, pod template labels,
container names, entry points' specs), and most changes (an image, an env value, a resource limit) leave every
outline as it was. So a render stores, per listing of the repository, each file's blob id and its documents'
outlines (its *heads*, kept as a digest), each kept document's kind, apiVersion, name and namespace, what
loading said of them, and the model built from them. The next render reuses the model when each file has the
same blob id, or else the same heads; its documents then decode their objects (and outlines) only when a stage
reads them (a flow reads the few objects it copies), as the passes over the whole repository were stored with
the model.

The entry is a hint, never trusted: a listing that differs is another key; heads are compared exactly (in
order, as JSON); a damaged entry is a miss; the entry's kind names the code that wrote it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import parallel
from ..core.cache import Cache, Uncacheable, encode
from ..core.jsonio import dumps_compact
from ..core.k8s import outline
from ..core.version import VERSION
from ..errors import Problem
from . import parsing

# the modules whose code decides what an entry holds: the heads, the documents kept from them, the model and
# the passes stored with it
_WRITERS = ("reuse.py", "load.py", "model.py", "model_store.py", "plugin_defs.py", "clone.py", "invariants.py",
            "../core/k8s.py", "../core/names.py", "../errors.py")


@functools.cache
def cache_kind() -> str:
    """The cache directory of these entries, named by the code that writes them (an upgrade starts afresh)."""
    digest = hashlib.blake2b(f"{VERSION}\0{parsing.cache_kind()}\0".encode(), digest_size=8)
    here = Path(__file__).parent
    for name in _WRITERS:
        digest.update((here / name).read_bytes())
    return f"model-{digest.hexdigest()}"


def entry_key(config: bytes, includes: list[str], excludes: list[str], paths: list[str]) -> str:
    """The key of a repository's entry: its config and its listing (so another file set never finds it)."""
    digest = hashlib.blake2b(digest_size=20)
    for part in (config, *(s.encode() for s in includes), b"", *(s.encode() for s in excludes), b"",
                 *(p.encode() for p in paths)):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()


def heads(docs: list[Any], shapes: list[str | None], kept: list[Any] | None = None) -> list[list]:
    """A file's heads: each document's shape problem and outline (None for an empty document, 0 for one that is
    not a mapping): all that loading and the model read of it. `kept`: the Documents loading made of them
    (None where it made none), whose outlines are already computed."""
    return [[shape, kept[i].outline if kept is not None and kept[i] is not None
             else outline(d) if isinstance(d, dict) else (None if d is None else 0)]
            for i, (d, shape) in enumerate(zip(docs, shapes, strict=True))]


def heads_digest(heads_: list[list]) -> str | None:
    """A file's heads as the entry keeps them: a digest of their JSON text (key order included: an object's
    metadata keeps the order it has). The outlines themselves are not kept: a stage that reads one decodes the
    object, whose outline is the one stored, as the file has the stored blob or heads. None: not JSON (a date in
    metadata), so the file never matches."""
    try:
        text = dumps_compact(heads_)
    except (TypeError, ValueError):
        return None
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass
class Reuse:
    """What loading found out for the model's entry: the stored model to reuse (`model`, JSON, with how many
    documents it indexes), or what to store once a model is built (`files`: per file, its blob id, documents,
    shape problems and the Documents loading kept of them; `problems`: what loading said of them)."""

    cache: Cache
    key: str
    model: dict | None = None
    files: list[tuple[str, list, list, list]] | None = None
    problems: list[Problem] = field(default_factory=list)
    child: int | None = field(default=None, repr=False)  # the process writing the entry

    def store(self, model: Callable[[], dict | None]) -> None:
        """Store the model `model()` gives (JSON, see `model_store`) with every file's heads. Encoding them costs
        about a twentieth of a cold render at 5,000 services, so with a spare core a forked child does it while the
        render goes on (`wait` reaps it); a child that fails costs the entry, never the render."""
        if self.files is None:
            return
        if parallel.available_cpus() < 2 or not parallel.can_fork():
            self._write(model)
            return
        pid = os.fork()
        if pid:
            self.child = pid
            return
        try:  # the child: a copy of the render's memory, so the documents are there without sending them
            self._write(model)
        finally:
            os._exit(0)

    def _write(self, model: Callable[[], dict | None]) -> None:
        stored = model()
        if stored is None or self.files is None:
            return
        files, docs = [], []
        for i, (blob, parsed, shapes, kept) in enumerate(self.files):
            files.append([blob, heads_digest(heads(parsed, shapes, kept))])
            docs += [[i, d.index, d.kind, d.api_version, d.name, d.namespace] for d in kept if d is not None]
        try:  # the heads are parts of exact parses and the model is checked: no walk over megabytes of them again
            payload = encode({"files": files, "docs": docs, "problems": [p.as_row() for p in self.problems],
                              "model": stored})
        except Uncacheable:
            return
        self.cache.put_raw(cache_kind(), self.key, payload)

    def wait(self) -> None:
        """Wait for the child writing the entry, if any (before the command returns: the next may need it)."""
        if self.child is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.child, 0)
            self.child = None


def entry(cache: Cache, key: str) -> dict | None:
    """The stored entry under `key`, when it has the expected form."""
    found = cache.get(cache_kind(), key)
    if not isinstance(found, dict) or not all(isinstance(found.get(k), list) for k in ("files", "docs", "problems")) \
            or not isinstance(found.get("model"), dict):
        return None
    return found


def stored_blobs(found: dict | None, paths: list[str]) -> dict[str, str]:
    """The blob id the entry `found` stored for each of `paths` (none without an entry, or for a damaged row)."""
    rows = found["files"] if found is not None else []
    if len(rows) != len(paths):
        return {}
    return {p: row[0] for p, row in zip(paths, rows, strict=True)
            if isinstance(row, list) and len(row) == 2 and isinstance(row[0], str)}
