"""`ModelMemo`: the early cutoff of one command, the one object that reads and writes the stored model.

Loading asks it for the entry of its listing and for the documents of an entry that still holds (it is the
`Memo` of `inputs.load`); the pipeline asks it for the model (`model_for`): the stored one, decoded with its
whole-repository passes, or one built now and stored for the next render; the session waits for the write.
"""

from __future__ import annotations

import contextlib
import os

from ...core import parallel
from ...core.cache import Cache
from ...core.source import Source
from ...errors import Problem
from ..inputs.document import Document
from ..inputs.load import Known, Loaded
from ..inputs.parsing import Outcome
from ..model.records import Model
from ..model.topology import build_model
from . import lean_documents, model_codec, model_entry


class ModelMemo:
    """What loading found out for the model's entry: the stored model to reuse, or what to store once a model is
    built (per file its blob id, documents, shape problems and the Documents loading kept of them, and what
    loading said of them)."""

    def __init__(self, cache: Cache):
        self.cache = cache
        self.key: str | None = None
        self.entry: dict | None = None
        self.known: dict[str, Known] | None = None  # what the entry stored of each file
        self.model: dict | None = None  # the stored model, once its documents are restored
        self.files: list[tuple[Known, list, list, list]] | None = None
        self.problems: list[Problem] = []
        self.child: int | None = None  # the process writing the entry

    def open(self, config: bytes, includes: list[str], excludes: list[str],
             paths: list[str]) -> dict[str, Known] | None:
        """Look up the entry of this listing; what it stored of each file (None: no entry)."""
        self.key = model_entry.entry_key(config, includes, excludes, paths)
        self.entry = model_entry.read(self.cache, self.key)
        self.known = model_entry.stored_files(self.entry, paths) if self.entry is not None else None
        return self.known

    def restore(self, source: Source, paths: list[str], blobs: dict[str, str],
                outcomes: dict[str, Outcome]) -> tuple[list[Document], list[Problem]] | None:
        """The entry's documents and what loading said of them, when every file still has its stored heads."""
        restored = lean_documents.restore(self.entry, self.known or {}, paths, blobs, outcomes, source, self.cache) \
            if self.entry is not None else None
        if restored is None:
            self.cache.counters.refused(model_entry.cache_kind())
            return None
        self.model = self.entry["model"]  # type: ignore[index]
        return restored

    def keep(self, files: list[tuple[Known, list, list, list]], problems: list[Problem]) -> None:
        """What to store with the model built from these files (all of them parsed exactly)."""
        self.files, self.problems = files, problems

    def model_for(self, loaded: Loaded, documents: list[Document], default_namespace: str | None) -> Model:
        """The model of `documents`: the stored one when it still holds (and `documents` are the loaded ones, no
        template or pre-render step changed them), else built, and stored for the next render."""
        same = documents is loaded.documents
        if same and self.model is not None:
            model = model_codec.decode(self.model, documents, default_namespace)
            if model is not None:
                return model
        model = build_model(documents, default_namespace)
        if same and self.files is not None:
            self._store(model)
        return model

    def _store(self, model: Model) -> None:
        """Encoding the model and every file's heads costs about a twentieth of a cold render at 5,000 services,
        so with a spare core a forked child does it while the render goes on (`wait` reaps it); a child that
        fails costs the entry, never the render."""
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

    def _write(self, model: Model) -> None:
        if self.key is not None and self.files is not None:
            model_entry.write(self.cache, self.key, self.files, self.problems, model_codec.encode(model))

    def wait(self) -> None:
        """Wait for the child writing the entry, if any (before the command returns: the next may need it)."""
        if self.child is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.child, 0)
            self.child = None


def model_for(memo: ModelMemo | None, loaded: Loaded, documents: list[Document],
              default_namespace: str | None) -> Model:
    """The model of `documents`, through the memo when the command has one (a cache)."""
    if memo is None:
        return build_model(documents, default_namespace)
    return memo.model_for(loaded, documents, default_namespace)
