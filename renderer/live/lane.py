"""A rendered flow's objects, as a GitOps engine applies them: the files its `kustomization.yaml` lists, in order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.yamlio import load_one, parse_documents
from ..errors import Where, fail

KUSTOMIZATION = "kustomization.yaml"


@dataclass(frozen=True)
class LaneObject:
    """One object of the flow and the rendered file it is in (named in every message about it)."""

    obj: dict
    file: str

    @property
    def api_version(self) -> str:
        return str(self.obj["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        found = self.obj["metadata"].get("namespace")
        return str(found) if found else None

    @property
    def annotations(self) -> dict:
        found = self.obj["metadata"].get("annotations")
        return found if isinstance(found, dict) else {}


def shown(kind: str, namespace: str | None, name: str) -> str:
    """`Deployment shop/web-pr-7`, `Namespace shop-pr-7`: an object as the reports name it."""
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


@dataclass(frozen=True)
class Reported:
    """What a live command says about one object of the flow (in the cluster's namespace for it)."""

    api_version: str
    kind: str
    namespace: str | None
    name: str
    message: str
    file: str  # the rendered file the object is in

    def shown(self) -> str:
        return shown(self.kind, self.namespace, self.name)

    def as_dict(self) -> dict:
        return {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace, "name": self.name,
                "message": self.message, "file": self.file}


def lane_objects(files: dict[str, bytes], flow_dir: Path) -> list[LaneObject]:
    """The objects of the files `flow_dir/kustomization.yaml` lists (as read from the output directory or git);
    a listed file that is missing, or an object without apiVersion, kind and name, is an error naming the file."""
    index = str(flow_dir / KUSTOMIZATION)
    if KUSTOMIZATION not in files:
        raise fail(f"{flow_dir} has no {KUSTOMIZATION}", Where(file=index), code="output",
                   hint="re-render the flow (devlane writes one beside its objects)")
    doc = load_one(files[KUSTOMIZATION], index)
    resources = doc.get("resources") if isinstance(doc, dict) else None
    if not isinstance(resources, list):
        raise fail("it lists no resources", Where(file=index), code="output", hint="re-render the flow")
    out = []
    for name in resources:
        shown = str(flow_dir / str(name))
        if str(name) not in files:
            raise fail(f"it lists {name}, which is not in {flow_dir}", Where(file=index), code="output",
                       hint="re-render the flow")
        for number, obj in enumerate(parse_documents(files[str(name)], shown)):
            if obj is None:
                continue
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            if not (isinstance(meta, dict) and isinstance(meta.get("name"), str) and isinstance(obj.get("kind"), str)
                    and isinstance(obj.get("apiVersion"), str)):
                raise fail("not a Kubernetes object (apiVersion, kind and metadata.name)",
                           Where(file=shown, document=number), code="output", hint="re-render the flow")
            out.append(LaneObject(obj, shown))
    return out
