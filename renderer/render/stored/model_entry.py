"""A stored model's entry in the cache: its key (the config and the listing of the repository), its kind (the
code that writes it), each file's blob id and heads, the documents kept, and the write.

The entry is a hint, never trusted: a listing that differs is another key; heads are compared exactly (in
order, as JSON); a damaged entry is a miss; the entry's kind names the code that wrote it.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from ...core import code_version
from ...core.cache import Cache, Uncacheable, encode
from ...core.jsonio import dumps_compact
from ...core.k8s import outline
from ...core.version import VERSION
from ...errors import Problem
from ..inputs import parsing
from ..inputs.load import Known

# the stages whose code decides what an entry holds (the settings read, the documents kept and their heads, the
# model and the passes stored with it, the entry's form): every layer of `render/` up to this one
SHAPED_BY = ("renderer.render.settings", "renderer.render.inputs", "renderer.render.model", "renderer.render.stored")


@functools.cache
def cache_kind() -> str:
    """The cache directory of these entries, named by the code that writes them and all it imports
    (`code_version`): an upgrade, or an edit of any module on the way, starts afresh."""
    digest = hashlib.blake2b(f"{VERSION}\0{parsing.cache_kind()}\0{code_version.of_packages(*SHAPED_BY)}".encode(),
                             digest_size=8)
    return f"model-{digest.hexdigest()}"


def entry_key(config: bytes, includes: list[str], excludes: list[str], paths: list[str]) -> str:
    """The key of a repository's entry: its config and its listing (so another file set never finds it)."""
    digest = hashlib.blake2b(digest_size=20)
    for part in (config, *(s.encode() for s in includes), b"", *(s.encode() for s in excludes), b"",
                 *(p.encode() for p in paths)):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()


ROW = 4  # a file's row: blob id, heads digest, sha256, size


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


def write(cache: Cache, key: str, files: list[tuple[Known, list, list, list]], problems: list[Problem],
          model: dict | None) -> None:
    """Store the entry: per file its blob id, heads, sha256 and size (`files`: what the file is, its documents,
    shape problems and the Documents loading kept of them), the documents kept, what loading said of them
    (`problems`), and the model as JSON (`model_codec`; None: nothing to store)."""
    if model is None:
        return
    rows, docs = [], []
    for i, (known, parsed, shapes, kept) in enumerate(files):
        rows.append([known.blob, heads_digest(heads(parsed, shapes, kept)), known.sha256, known.size])
        docs += [[i, d.index, d.kind, d.api_version, d.name, d.namespace] for d in kept if d is not None]
    try:  # the heads are parts of exact parses and the model is checked: no walk over megabytes of them again
        payload = encode({"files": rows, "docs": docs, "problems": [p.as_row() for p in problems], "model": model})
    except Uncacheable:
        return
    cache.put_raw(cache_kind(), key, payload)


def read(cache: Cache, key: str) -> dict | None:
    """The stored entry under `key`, when it has the expected form."""
    found = cache.get(cache_kind(), key)
    if not isinstance(found, dict) or not all(isinstance(found.get(k), list) for k in ("files", "docs", "problems")) \
            or not isinstance(found.get("model"), dict):
        return None
    return found


def stored_files(found: dict | None, paths: list[str]) -> dict[str, Known]:
    """What the entry `found` stored of each of `paths` (none without an entry, or for a damaged row)."""
    rows = found["files"] if found is not None else []
    if len(rows) != len(paths):
        return {}
    return {p: Known(row[0], row[2], row[3]) for p, row in zip(paths, rows, strict=True)
            if isinstance(row, list) and len(row) == ROW and isinstance(row[0], str) and isinstance(row[2], str)
            and type(row[3]) is int}
