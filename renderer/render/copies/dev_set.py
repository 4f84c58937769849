"""`DevSet`: a flow's dev copies (workloads by service, Services, other per-flow objects) and the references
rewritten to reach them: what every stage after the copies reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...core.k8s import pod_spec, pod_template
from ...core.names import SHARED
from ...core.references import Targets
from ...core.secrets_mask import mask
from ..inputs.document import Document
from ..model.records import Model
from ..plan.planner import service_targets
from ..settings.isolation import Lane


@dataclass(frozen=True)
class DevWorkload:
    """A dev copy of one workload and the service (node key) it was copied for."""

    service: str
    version: str  # flow id or "shared"
    baseline: Document
    obj: dict
    container: str | None

    @property
    def pod_spec(self) -> dict:
        return pod_spec(self.obj)

    @property
    def pod_labels(self) -> dict:
        return pod_template(self.obj)["metadata"]["labels"]

    @property
    def name(self) -> str:
        return self.obj["metadata"]["name"]

    @property
    def namespace(self) -> str | None:
        return self.obj["metadata"].get("namespace")

    @property
    def key(self) -> tuple[str | None, str]:
        """(namespace, name): unique among a flow's dev workloads."""
        return self.namespace, self.name


@dataclass(frozen=True)
class Rewrite:
    """One reference rewritten: in a dev workload's container (env, args, command) or a ConfigMap copy's key."""

    object: str
    container: str | None  # None: a ConfigMap key
    field: str  # "env", "args", "command" or "key"
    label: str
    old: str
    new: str

    def as_dict(self) -> dict:
        """As `flow.metadata` records it: the values with the secrets of their URLs masked (`secrets_mask`)."""
        if self.container is None:
            return {"configMap": self.object, "key": self.label, "old": mask(self.old), "new": mask(self.new)}
        return {"workload": self.object, "container": self.container, self.field: self.label, "old": mask(self.old),
                "new": mask(self.new)}


@dataclass(frozen=True)
class DevService:
    baseline: Document
    obj: dict
    version: str


@dataclass(frozen=True)
class DevObject:
    """Another per-flow copy: a ConfigMap, a PersistentVolumeClaim, a NetworkPolicy."""

    baseline: Document
    obj: dict
    version: str


@dataclass(frozen=True)
class DevSet:
    """Everything cloned for a flow: workloads (by service key), Services, other copies, rewrites done."""

    workloads: dict[str, DevWorkload] = field(default_factory=dict)
    services: list[DevService] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    dev_names: dict[str, str] = field(default_factory=dict)  # service key -> dev name
    versions: dict[str, str] = field(default_factory=dict)  # dev service key -> flow id or "shared"
    objects: list[DevObject] = field(default_factory=list)
    renamed: dict[tuple[str | None, str], str] = field(default_factory=dict)  # (ns, Service) -> dev Service
    lane: Lane = field(default_factory=Lane)
    namespaces: dict[str, str] = field(default_factory=dict)  # isolation namespace: baseline ns -> flow ns
    by_header: frozenset[str] = frozenset()  # mesh routing: dev services the mesh reaches by the flow header
    # (namespace, workload, slot) of a dev pod's own address kept as the baseline's while it registers with a
    # registry the lane shares (`clone._shared_registry`)
    own_addresses: frozenset[tuple[str | None, str, str]] = frozenset()

    def rewrite_targets(self, version: str) -> list[str]:
        """Services whose dev copies a workload of `version` may point at.

        A shared copy serves every flow, so it may only point at other shared copies. On a mesh, a service
        reached by the flow header keeps its baseline address (the mesh routes it); only the others are
        rewritten (TCP cannot be routed by a header). Computed once per version: every dev workload asks.
        """
        cache = self._cache("_rewrite_targets")
        if version not in cache:
            cache[version] = sorted(n for n, v in self.versions.items()
                                    if (version != SHARED or v == SHARED) and n not in self.by_header)
        return cache[version]

    def reference_targets(self, model: Model, version: str, home: str | None) -> Targets:
        """`rewrite_targets(version)` as reference targets seen from namespace `home`: indexed once per version
        (a wide flow has thousands of dev workloads, each reading the same few addresses)."""
        cache = self._cache("_reference_targets")
        if version not in cache:
            cache[version] = Targets(service_targets(model, self.rewrite_targets(version)))
        return cache[version].at(home)

    def _cache(self, name: str) -> dict:
        """A per-DevSet memo (the dataclass is frozen; `replace` makes a new DevSet with an empty one)."""
        return self.__dict__.setdefault(name, {})

    def unique_workloads(self) -> list[DevWorkload]:
        """Each dev workload once, even when several services select it."""
        return list({id(w): w for w in self.workloads.values()}.values())

    def find(self, kind: str, namespace: str | None, name: str) -> dict | None:
        """A per-flow copy (ConfigMap, PVC...) by kind and name."""
        index = self._cache("_index")
        if not index:
            index.update({(o.obj["kind"], o.obj["metadata"].get("namespace"), o.obj["metadata"]["name"]): o.obj
                          for o in self.objects})
        return index.get((kind, namespace, name))

    def service_name(self, name: str, namespace: str | None) -> str:
        """The dev name of Service `name` seen from `namespace` (itself when it has no dev copy)."""
        return self.renamed.get((namespace, name)) or self.renamed.get((None, name)) or name
