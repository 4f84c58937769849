"""`Document`: one Kubernetes object of the repository, with the file and index it came from.

Every stage reads these: an object's kind, name, namespace, labels and annotations hundreds of thousands of
times per render, each computed once; its outline (what whole-repository passes read); and, for a document
restored from the stored model, its body decoded only when a stage first reads it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.k8s import outline
from ...errors import Where


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
    # annotations `.devlane.yaml` `services:` gave the object, with where each is written there: a problem with one
    # names that line, not a chart template the user does not own
    origins: tuple[tuple[str, Where], ...] = ()

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

    def where(self, annotation: str | None = None) -> Where:
        """Where the object is written; for a problem with its `annotation`, where that annotation is (its
        `.devlane.yaml` line, when the config gave it)."""
        if annotation is not None and self.origins:
            for name, where in self.origins:
                if name == annotation:
                    return Where(file=where.file, line=where.line, object=f"{where.object} (for {self.ref})")
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


def is_kubernetes_object(doc: Any) -> bool:
    return isinstance(doc, dict) and bool(doc.get("apiVersion")) and bool(doc.get("kind"))
