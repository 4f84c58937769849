"""Parse many YAML files at once: cached parses first, the rest across the available cores.

Parsing is most of a render's cost, and between two renders nearly every file is unchanged. A file's
documents are cached under its git blob id (`core.cache`), so a one-file change re-parses one file;
the entries are JSON, which decodes some twenty times faster than YAML parses. What is not cached is
parsed in forked children when there is enough of it (`core.parallel`); they send their results back
as the same JSON, so every path gives equal documents: cached, parallel and serial renders write the
same bytes.

Only documents JSON carries exactly are cached: not a file with anchors (an alias shares one object
between two places, JSON would copy it) or non-string keys, dates, binary or sets. Those files, and
files that fail to parse, are parsed here every time (and their errors come from here).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from ...core import code_version, deadline, parallel, yamlio
from ...core.cache import Cache, Uncacheable, blob_id, encode
from ...core.version import VERSION
from ...errors import DevlaneError
from . import field_types

PARALLEL_BYTES = 2 * 1024 * 1024  # below this much YAML to parse, forking costs more than it saves


@dataclass(frozen=True)
class Parsed:
    """A file's documents and, for each, its `field_types.shape_problem` (None when it is not an object): the shape
    walk costs about as much as decoding, so it is done once per content too, and in the children."""

    docs: list[Any]
    shapes: list[str | None]
    exact: bool = True  # whether JSON carries the documents as they are (no alias, date, non-string key...)


Outcome = Parsed | DevlaneError  # a file's documents, or why it could not be parsed


@functools.cache
def cache_kind() -> str:
    """The cache directory of parses: named by everything a parse depends on, so any change starts afresh."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{VERSION}\0{yaml.__version__}\0{getattr(yaml, '__with_libyaml__', False)}\0".encode())
    digest.update(code_version.of_modules(__name__).encode())  # this module (the entries' form) and all it imports
    return f"yaml-{digest.hexdigest()}"


def _parse(path: str, data: bytes, encoded: bool = True) -> tuple[Outcome, bytes | None]:
    """One file's outcome, and (if `encoded`) its JSON when that is exact."""
    try:
        docs, plain_tree = yamlio.parse_stream(data, path)
    except DevlaneError as exc:
        return exc, None
    parsed = Parsed(docs, [field_types.shape_problem(d) if _is_object(d) else None for d in docs], plain_tree)
    if not plain_tree or not encoded:
        return parsed, None
    try:
        return parsed, encode([docs, parsed.shapes])
    except Uncacheable:
        return Parsed(parsed.docs, parsed.shapes, False), None


def _is_object(doc: Any) -> bool:
    return isinstance(doc, dict) and bool(doc.get("apiVersion")) and bool(doc.get("kind"))


def decode(payload: bytes) -> Parsed | None:
    """A cached parse from its JSON; None when it is damaged."""
    try:
        docs, found = json.loads(payload)
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(docs, list) or not isinstance(found, list) or len(docs) != len(found):
        return None
    return Parsed(docs, found)


def cached_parses(cache: Cache, keys: list[str]) -> list[Parsed | None]:
    """The cached parse of each blob id in `keys`, None where there is none (or it is damaged)."""
    found = cache.get_many(cache_kind(), keys)
    return [None if (raw := found.get(key)) is None else decode(raw) for key in keys]


def parse_files(items: Sequence[tuple[str, bytes]], cache: Cache | None, keys: list[str] | None = None,
                workers: int | None = None) -> list[Outcome]:
    """The outcome of each (path, content) in `items`, in order (`keys`: their blob ids, when known)."""
    if cache is not None and keys is None:
        keys = [blob_id(data) for _, data in items]
    keys = keys or []
    out: list[Outcome | None] = [None] * len(items)
    pending: list[int] = []
    if cache is not None:
        out = list(cached_parses(cache, keys))
        pending = [i for i, found in enumerate(out) if found is None]
    else:
        pending = list(range(len(items)))
    fresh: dict[str, bytes] = {}  # what this process parsed, for the cache

    def here(i: int) -> None:
        deadline.check()
        outcome, payload = _parse(*items[i], encoded=cache is not None)
        out[i] = outcome
        if payload is not None and cache is not None:
            fresh[keys[i]] = payload

    def there(i: int) -> bytes | None:
        return _parse(*items[i])[1]

    def keep(done: list[tuple[int, bytes | None]]) -> None:  # in a child, after it sent its results
        if cache is not None:
            cache.put_many(cache_kind(), {keys[i]: payload for i, payload in done if payload is not None})

    sizes = [len(items[i][1]) for i in pending]
    workers = parallel.available_cpus() if workers is None else workers
    if workers > 1 and len(pending) > 1 and sum(sizes) >= PARALLEL_BYTES and parallel.can_fork():
        split = parallel.shares(sizes, workers)
        done = parallel.fork_map(pending, split, there, lambda share: [here(pending[p]) for p in share], keep)
        for share in split[1:]:
            for p in share:
                i = pending[p]
                out[i] = None if done[p] is None else decode(done[p])  # type: ignore[arg-type]
                if out[i] is None:
                    here(i)
    else:
        for i in pending:
            here(i)
    if cache is not None and fresh:
        cache.put_many(cache_kind(), fresh)
        cache.compact(cache_kind())
    return out  # type: ignore[return-value]
