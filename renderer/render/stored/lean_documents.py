"""The documents of a stored entry, restored without parsing: known by kind, apiVersion, name and namespace, each
decoding its object on first use.

An entry holds when every file has its stored blob id, or else a new parse with the stored heads (an image or
an env value changed, no outline did). A flow's render then decodes the few objects it copies or checks, from
the parse in hand, the parse cache, or the file itself read and parsed again.
"""

from __future__ import annotations

import functools

from ...core.cache import Cache, PackReader, blob_id
from ...core.source import Source
from ...errors import DevlaneError, Problem, Where
from ..inputs.document import Document
from ..inputs.load import Known
from ..inputs.parsing import Outcome, Parsed, cache_kind, cached_parses, decode, parse_files
from .model_entry import ROW, heads, heads_digest


def restore(entry: dict, known: dict[str, Known], paths: list[str], blobs: dict[str, str],
            outcomes: dict[str, Outcome], source: Source, cache: Cache) -> tuple[list[Document], list[Problem]] | None:
    """The documents of a stored entry and what loading said of them, when every file still has the stored
    heads (None: it does not hold). `known`: what the entry stored of each file (`model_entry.stored_files`);
    `outcomes`: the parses of the files whose blob changed, by path."""
    stored = entry["files"]
    if len(stored) != len(paths):
        return None
    changed = [p for p in paths if p not in known or known[p].blob != blobs.get(p)]
    late = [p for p in changed if p not in outcomes and p in blobs]  # changed before the index's last save
    for p, found in zip(late, cached_parses(cache, [blobs[p] for p in late]), strict=True):
        if found is not None:
            outcomes[p] = found
    for path, row in zip(paths, stored, strict=True):
        if path in changed:
            now = outcomes.get(path)
            if not isinstance(now, Parsed) or not now.exact or not isinstance(row, list) or len(row) != ROW or \
                    row[1] != heads_digest(heads(now.docs, now.shapes)):
                return None
    reader = cache.reader(cache_kind())
    try:
        files = [StoredFile(source, path, blobs[path], reader, outcomes.get(path)) for path in paths]
        documents = [Document.lean((kind, api_version, name, ns), paths[f], i, functools.partial(files[f].body, i))
                     for f, i, kind, api_version, name, ns in entry["docs"]]
        problems = [Problem.from_row(row) for row in entry["problems"]]
    except (TypeError, ValueError, KeyError, IndexError):
        return None  # a row of another form: not an entry this code wrote
    return documents, problems


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
