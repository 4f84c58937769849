"""`devlane gc --cluster`: the lanes the cluster still holds whose flow is not kept (the orphans a missed close event
leaves), found by devlane's labels on every kind the cluster serves, namespaced and cluster-scoped (the lane
namespaces of `isolation: namespace` among them), listed, and deleted only when asked.

Only a lane object is ever touched: the server selects by both of devlane's labels (`devlane.dev/flow` and
`app.kubernetes.io/managed-by: devlane`), each object it returns is checked again here, and the delete carries
the object's uid and resourceVersion as preconditions, so an object replaced or relabelled since it was listed is
looked at again rather than deleted. An object another lane object owns (a Deployment's ReplicaSets and pods, a
Service's EndpointSlices) goes with its owner, by the garbage collector, as kubectl deletes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.names import FLOW_LABEL, MANAGED_BY, MANAGED_BY_VALUE, SHARED
from ..errors import Problem, Where
from ..render.plan.flow_spec import FLOW_ID, MAX_FLOW_ID, RESERVED_FLOW_IDS
from .kube import ApiRefusal, Cluster, Kind
from .lane import shown

SELECTOR = f"{FLOW_LABEL},{MANAGED_BY}={MANAGED_BY_VALUE}"
NO_LANE_OBJECTS = frozenset({("", "events"), ("events.k8s.io", "events")})  # kinds no lane ever renders
# the labels of objects a controller derives from a lane Service, with its labels (and no owner reference on
# Endpoints): they go with the Service
DERIVED = ("endpoints.kubernetes.io/managed-by", "endpointslice.kubernetes.io/managed-by")
ATTEMPTS = 3  # deletes of one object that changed in between


@dataclass(frozen=True)
class LaneItem:
    """One object of a lane in the cluster."""

    kind: Kind
    namespace: str | None
    name: str
    uid: str
    resource_version: str
    flow_id: str

    def shown(self) -> str:
        return shown(self.kind.kind, self.namespace, self.name)

    def as_dict(self) -> dict:
        return {"apiVersion": self.kind.api_version, "kind": self.kind.kind, "namespace": self.namespace,
                "name": self.name, "flow": self.flow_id}


@dataclass
class SweepReport:
    """What the cluster holds of each lane, and what became of the orphans'."""

    server: str
    doomed: dict[str, list[LaneItem]]  # flow -> its objects, in the order they are deleted
    kept: dict[str, int]  # flow -> how many objects it has there
    owned: int = 0  # objects of the doomed lanes owned by (or derived from) their other objects: they go with them
    terminating: int = 0  # lane objects being deleted already (a namespace emptying itself)
    dry_run: bool = True
    deleted: list[LaneItem] = field(default_factory=list)
    gone: list[LaneItem] = field(default_factory=list)  # gone (or replaced) before the delete reached them
    failed: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"server": self.server, "dryRun": self.dry_run, "kept": self.kept, "owned": self.owned,
                "terminating": self.terminating,
                "doomed": {f: [i.as_dict() for i in items] for f, items in self.doomed.items()},
                "deleted": [i.as_dict() for i in self.deleted], "gone": [i.as_dict() for i in self.gone],
                "failed": [p.as_dict() for p in self.failed], "warnings": [p.as_dict() for p in self.warnings]}


def lane_of(obj: dict) -> str | None:
    """The flow a lane object belongs to, from both of devlane's labels; None for any other object (the check
    that does not trust the server's label selector)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    flow = labels.get(FLOW_LABEL)
    if labels.get(MANAGED_BY) != MANAGED_BY_VALUE or not isinstance(flow, str):
        return None
    if len(flow) > MAX_FLOW_ID or not FLOW_ID.fullmatch(flow) or (flow in RESERVED_FLOW_IDS and flow != SHARED):
        return None
    return flow


def find(cluster: Cluster, keep: list[str]) -> SweepReport:
    """Every lane object of the cluster, by flow: the flows not in `keep` are doomed (`shared`, the copies every
    flow shares, is always kept). A kind the credentials may not list is a warning, and the sweep goes on."""
    kinds, warnings = cluster.all_kinds()
    kinds = [k for k in kinds if {"list", "delete"} <= k.verbs and (k.group, k.resource) not in NO_LANE_OBJECTS]
    items: dict[str, tuple[LaneItem, list[str] | None]] = {}  # uid -> the item, the uids of its owners (None: derived)
    refused: dict[str, ApiRefusal] = {}  # resource -> why it could not be listed
    terminating: set[str] = set()  # uids of lane objects being deleted already
    for kind, found in zip(kinds, cluster.each(lambda k: list(cluster.selected(k, SELECTOR)), kinds), strict=True):
        if isinstance(found, ApiRefusal):
            refused[f"{kind.resource}.{kind.group}" if kind.group else kind.resource] = found
            continue
        for obj in found:
            flow = lane_of(obj)
            meta = obj.get("metadata") or {}
            if flow is None or not meta.get("uid"):
                continue
            if meta.get("deletionTimestamp"):
                terminating.add(str(meta["uid"]))
            labels = meta.get("labels") or {}
            owners = None if any(key in labels for key in DERIVED) else \
                [str(o.get("uid")) for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
            items[str(meta["uid"])] = (LaneItem(kind, meta.get("namespace") if kind.namespaced else None,
                                                str(meta.get("name")), str(meta["uid"]),
                                                str(meta.get("resourceVersion")), flow), owners)
    if refused and len(refused) == len(kinds):
        raise cluster.forbidden(next(iter(refused.values())), "list any kind of object by devlane's labels")
    if refused:
        warnings.append(Problem(f"cannot list {len(refused)} of the cluster's {len(kinds)} kinds: {', '.join(refused)} "
                                f"({next(iter(refused.values())).message})", severity="warning", code="cluster",
                                hint="lanes' objects of those kinds were not looked at; a kubeconfig that may list "
                                     "them sees them"))
    emptying = {i.name for i, _ in items.values() if i.kind.kind == "Namespace" and i.uid in terminating}
    ending = {uid for uid, (i, _) in items.items() if uid in terminating or i.namespace in emptying}
    top = [item for uid, (item, owners) in items.items() if uid not in ending and owners is not None
           and not any(o in items for o in owners)]
    top.sort(key=lambda i: (i.kind.kind == "Namespace", not i.kind.namespaced, i.flow_id, i.namespace or "",
                            i.kind.kind, i.name))
    doomed: dict[str, list[LaneItem]] = {}
    kept: dict[str, int] = {}
    for item in top:
        if item.flow_id in keep or item.flow_id == SHARED:
            kept[item.flow_id] = kept.get(item.flow_id, 0) + 1
        else:
            doomed.setdefault(item.flow_id, []).append(item)
    listed = {item.uid for item in top}
    owned = sum(1 for uid, (item, _) in items.items() if uid not in listed and uid not in ending
                and item.flow_id in doomed)
    return SweepReport(cluster.server, dict(sorted(doomed.items())), dict(sorted(kept.items())), owned,
                       len(ending), warnings=warnings)


def delete(cluster: Cluster, report: SweepReport) -> SweepReport:
    """Delete the doomed objects (namespaced ones first, namespaces last), each only while it is still the lane
    object listed; a failure is recorded and the others go on."""
    report.dry_run = False
    for items in report.doomed.values():
        for item in items:
            _delete_one(cluster, report, item)
    return report


def _delete_one(cluster: Cluster, report: SweepReport, item: LaneItem) -> None:
    version = item.resource_version
    for _ in range(ATTEMPTS):
        try:
            (report.deleted if cluster.delete(item.kind, item.namespace, item.name, item.uid, version)
             else report.gone).append(item)
            return
        except ApiRefusal as refusal:
            if refusal.status != 409:
                report.failed.append(Problem(f"cannot delete {item.shown()} (flow {item.flow_id}): {refusal.message}",
                                             Where(object=item.shown()), code="cluster",
                                             hint="run `devlane gc --cluster` again once fixed (RBAC: the delete "
                                                  "right on that kind)"))
                return
        live = cluster.get(item.kind, item.namespace, item.name)  # changed since it was listed: look again
        meta = (live or {}).get("metadata") or {}
        if live is None or meta.get("uid") != item.uid:
            report.gone.append(item)
            return
        if lane_of(live) != item.flow_id:
            report.failed.append(Problem(f"{item.shown()} is no longer an object of lane {item.flow_id} (its labels "
                                         "changed since it was listed): not deleted", Where(object=item.shown()),
                                         code="cluster", severity="warning"))
            return
        version = str(meta.get("resourceVersion"))
    report.failed.append(Problem(f"cannot delete {item.shown()} (flow {item.flow_id}): it kept changing",
                                 Where(object=item.shown()), code="cluster", hint="run `devlane gc --cluster` again"))
