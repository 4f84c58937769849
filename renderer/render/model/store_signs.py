"""Which repository services hold state: a Service is a *store* (or a *registry*) when its annotations, its
workload's image, its volumes or its ports say so, whether or not the user annotated it (`core.stores` holds the
signs). The lane's reach (`checks.reach`), `lint` and `init` all ask here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.k8s import all_containers, pod_spec
from ...core.stores import Role, image_kind, port_kind, role_of
from .records import ServiceNode


@dataclass(frozen=True)
class StoreSign:
    kind: str  # "mysql", "kafka", "eureka", "volume", ...
    reason: str  # what said so, for the user: "image mysql:8.0", "port 3306", "volumeClaimTemplates"

    @property
    def role(self) -> Role:
        return role_of(self.kind)


def store_sign(node: ServiceNode) -> StoreSign | None:
    """The strongest sign that `node` holds state or hands out addresses, or None (a stateless service).
    A registry's image wins over everything (a registry often keeps its data on a volume too)."""
    obj = node.workload.doc.obj if node.workload is not None else {}
    spec = pod_spec(obj) if obj else {}
    containers = all_containers(spec) if spec else []
    by_image = [(image_kind(str(c.get("image") or "")), str(c.get("image"))) for c in containers]
    for kind, image in by_image:
        if kind is not None and role_of(kind) == "registry":
            return StoreSign(kind, f"image {image}")
    for kind, image in by_image:
        if kind is not None:
            return StoreSign(kind, f"image {image}")
    if node.stateful:
        return StoreSign("database", "annotated kardinal.dev.service/stateful")
    ports = [p for p in (node.doc.obj.get("spec") or {}).get("ports") or [] if isinstance(p, dict)] \
        if node.is_service else []
    for p in ports:
        kind = port_kind(p.get("port")) or port_kind(p.get("targetPort"))
        if kind is not None:
            return StoreSign(kind, f"port {p.get('port')}")
    if (obj.get("spec") or {}).get("volumeClaimTemplates"):
        return StoreSign("volume", f"{obj.get('kind')} with volumeClaimTemplates")
    for vol in spec.get("volumes") or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName") if isinstance(vol, dict) else None
        if claim:
            return StoreSign("volume", f"PersistentVolumeClaim {claim}")
    return None
