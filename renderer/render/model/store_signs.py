"""Which repository services hold state: a Service is a *store* (or a *registry*) when its annotations, its
workload's image, its volumes or its ports say so, whether or not the user annotated it (`core.stores` holds the
signs). The lane's reach (`checks.reach`), `lint` and `init` all ask here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...core.k8s import all_containers, pod_spec
from ...core.stores import Role, image_kind, port_kind, role_of
from .records import ServiceNode

Source = Literal["image", "port", "annotation", "volume"]


@dataclass(frozen=True)
class StoreSign:
    kind: str  # "mysql", "kafka", "eureka", "database" (a store of no known kind), "volume", ...
    reason: str  # what said so, for the user: "image mysql:8.0", "port 3306", "volumeClaimTemplates"
    source: Source = "image"
    value: str = ""  # the image, the port number, the claim: where `init` points its evidence
    on_service: bool = False  # the value is on the Service (a port), not on its workload

    @property
    def role(self) -> Role:
        return role_of(self.kind)


def store_sign(node: ServiceNode) -> StoreSign | None:
    """The strongest sign that `node` holds state or hands out addresses, or None (a stateless service).
    A registry's image wins over everything (a registry often keeps its data on a volume too); an image that says
    only "a database" (`yelb-db`) takes its kind from a well-known port beside it.

    Worked out once per node, kept in it as `records.once` keeps a field: a node and its objects never change, and
    lint's reach asks about each service every time another service's pod names it (19,000 times at 5,000)."""
    kept = node.__dict__
    if _KEPT not in kept:
        kept[_KEPT] = _sign(node)
    return kept[_KEPT]


_KEPT = "_store_sign"


def _sign(node: ServiceNode) -> StoreSign | None:
    obj = node.workload.doc.obj if node.workload is not None else {}
    spec = pod_spec(obj) if obj else {}
    images = [(image_kind(str(c.get("image") or "")), str(c.get("image"))) for c in all_containers(spec)] \
        if spec else []
    images = [(kind, image) for kind, image in images if kind is not None]
    images.sort(key=lambda hit: (role_of(hit[0]) != "registry", hit[0] == "database"))
    port = _port_sign(node)
    if images and (images[0][0] != "database" or port is None):
        return StoreSign(images[0][0], f"image {images[0][1]}", "image", images[0][1])
    if images and port is not None:
        return StoreSign(port.kind, f"image {images[0][1]}, {port.reason}", "image", images[0][1])
    if port is not None:
        return port
    if node.stateful:
        return StoreSign("database", "annotated kardinal.dev.service/stateful", "annotation", "true")
    return volume_sign(obj, spec)


def volume_sign(obj: dict, spec: dict) -> StoreSign | None:
    """The claim a workload keeps its data on (a volumeClaimTemplate, a persistentVolumeClaim volume), if any."""
    templates = (obj.get("spec") or {}).get("volumeClaimTemplates") or []
    if templates:
        name = str((templates[0].get("metadata") or {}).get("name", "")) if isinstance(templates[0], dict) else ""
        return StoreSign("volume", f"{obj.get('kind')} with volumeClaimTemplates", "volume", name)
    for vol in spec.get("volumes") or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName") if isinstance(vol, dict) else None
        if claim:
            return StoreSign("volume", f"PersistentVolumeClaim {claim}", "volume", str(claim))
    return None


def _port_sign(node: ServiceNode) -> StoreSign | None:
    ports = [p for p in (node.doc.obj.get("spec") or {}).get("ports") or [] if isinstance(p, dict)] \
        if node.is_service else []
    for p in ports:
        kind = port_kind(p.get("port")) or port_kind(p.get("targetPort"))
        if kind is not None:
            return StoreSign(kind, f"port {p.get('port')}", "port", str(p.get("port")), on_service=True)
    return None
