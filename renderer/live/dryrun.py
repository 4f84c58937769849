"""`devlane verify --server`: each object of a rendered flow sent to the live cluster as a server-side apply with
`dryRun=All`, so that everything the server would refuse is found before a GitOps engine applies it: admission
(ResourceQuota, ValidatingAdmissionPolicy, webhooks, RBAC escalation checks), a CRD's schema and CEL rules, and
the update rules of the object already there (an immutable field a second push would change).

What a dry run cannot see is said, not guessed: an object in a namespace this flow creates (`isolation: namespace`)
while that namespace is not in the cluster yet, or a custom resource whose CRD this flow brings, is `unchecked`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.k8s import copy_tree
from .kube import ApiRefusal, Cluster
from .lane import LaneObject, Reported

RESULTS = ("accepted", "refused", "unchecked")


@dataclass(frozen=True)
class Verdict(Reported):
    result: str = "accepted"  # accepted, refused, unchecked

    def line(self) -> str:
        return f"{self.file}: {self.shown()}: {self.message}"

    def as_dict(self) -> dict:
        return {**super().as_dict(), "result": self.result}


@dataclass(frozen=True)
class VerifyReport:
    flow_id: str
    server: str
    field_manager: str
    verdicts: list[Verdict]

    def of(self, result: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.result == result]

    def summary(self) -> str:
        refused, unchecked = len(self.of("refused")), len(self.of("unchecked"))
        total = len(self.verdicts)
        head = (f"flow {self.flow_id}: the cluster at {self.server} would refuse {refused} of {total} objects"
                if refused else f"flow {self.flow_id}: the cluster at {self.server} accepts "
                                f"{len(self.of('accepted'))} of {total} objects")
        return head + f" (server-side dry run{f'; {unchecked} unchecked' if unchecked else ''})"

    def as_dict(self) -> dict:
        return {"flow": self.flow_id, "server": self.server, "fieldManager": self.field_manager,
                "counts": {r: len(self.of(r)) for r in RESULTS}, "objects": [v.as_dict() for v in self.verdicts]}


def verify(cluster: Cluster, objects: list[LaneObject], flow_id: str, manager: str) -> VerifyReport:
    """A dry-run apply of each object, in the flow's order; the API's message for each one refused."""
    namespaces = {o.name for o in objects if o.kind == "Namespace" and o.api_version == "v1"}
    crds = {(str((o.obj.get("spec") or {}).get("group")), str(((o.obj.get("spec") or {}).get("names") or {})
                                                              .get("kind")))
            for o in objects if o.kind == "CustomResourceDefinition"}
    absent: dict[str, bool] = {}  # namespace this flow creates -> not in the cluster yet
    verdicts = []
    for o in objects:
        kind = cluster.kind_of(o.api_version, o.kind)
        namespace = (o.namespace or cluster.namespace) if kind is None or kind.namespaced else None

        def verdict(result: str, message: str, o: LaneObject = o, namespace: str | None = namespace) -> Verdict:
            return Verdict(o.api_version, o.kind, namespace, o.name, message, o.file, result)

        if kind is None:
            if (o.api_version.rpartition("/")[0], o.kind) in crds:
                verdicts.append(verdict("unchecked", "its CustomResourceDefinition comes with this flow and is not "
                                                     "in the cluster yet"))
            else:
                verdicts.append(verdict("refused", f"the cluster serves no kind {o.kind} in {o.api_version} (is its "
                                                   "CustomResourceDefinition installed?)"))
            continue
        if namespace in namespaces:
            if namespace not in absent:
                ns_kind = cluster.kind_of("v1", "Namespace")
                absent[namespace] = ns_kind is not None and cluster.get(ns_kind, None, namespace) is None
            if absent[namespace]:
                verdicts.append(verdict("unchecked", f"its namespace {namespace} comes with this flow and is not in "
                                                     "the cluster yet"))
                continue
        body = copy_tree(o.obj)
        if namespace is not None:
            body["metadata"]["namespace"] = namespace
        try:
            cluster.dry_run_apply(kind, namespace, body, manager)
            verdicts.append(verdict("accepted", "accepted"))
        except ApiRefusal as refusal:
            verdicts.append(verdict("refused", refusal.message))
    return VerifyReport(flow_id, cluster.server, manager, verdicts)
