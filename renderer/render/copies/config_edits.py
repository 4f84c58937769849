"""Plugin edits of the ConfigMaps a flow's dev pods read: what a plugin is handed, and where its changes land.

Why: a plugin that gives the lane its own topic, subject or vhost must reach the app's config files (a Spring
`application.yml`, a `.properties` file in a ConfigMap volume), not only env and args. Each CreateFlow is handed,
per dependent, the ConfigMaps its pod reads, as the pod reads them now: the clone's per-flow copy or the
baseline's, with the edits of the plugins that ran before it. A plugin may change the values of their `data`.

The edits land on the flow's copy of the ConfigMap (made here when the clone made none), one per namespace and
version, and every dev pod of that version that read the baseline's reads the copy instead; the baseline's
ConfigMap, which baseline pods read, is never changed.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

from ...core.k8s import pod_spec, with_pod_spec
from ..model.address_reads import config_reads, data_of, repoint
from ..model.records import Model
from .clone import copy_of
from .dev_set import DevObject, DevSet, DevWorkload, Rewrite

Slot = tuple[str | None, str, str]  # (namespace of the dev pods, ConfigMap name as they read it, version)


@dataclass
class ConfigEdits:
    """The edits of one flow's plugins so far: per ConfigMap read, key -> new value."""

    model: Model
    dev: DevSet
    edits: dict[Slot, dict[str, str]] = field(default_factory=dict)
    homes: dict[Slot, str | None] = field(default_factory=dict)  # the baseline's namespace, to find it

    def handed(self, w: DevWorkload, spec: dict) -> list[dict]:
        """The ConfigMaps `w`'s pod (as `spec`) reads, each as a minimal object with its text data, edits
        applied; a ConfigMap that is neither in the repository nor copied is left out."""
        out = []
        for read in config_reads(spec):
            if read.kind != "ConfigMap":
                continue
            data = self._data(w, read.name)
            if data is not None:
                meta = {"name": read.name, **({"namespace": w.namespace} if w.namespace else {})}
                out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})
        return out

    def _data(self, w: DevWorkload, name: str) -> dict[str, str] | None:
        made = self.dev.find("ConfigMap", w.namespace, name)  # the clone's per-flow copy
        doc = None if made is not None else self.model.find("ConfigMap", self.model.namespace_of(w.baseline), name)
        if made is None and doc is None:
            return None
        data = data_of(made if made is not None else doc.obj)
        return {**data, **self.edits.get((w.namespace, name, w.version), {})}

    def record(self, w: DevWorkload, name: str, data: dict[str, str], handed: dict[str, str]) -> None:
        """A plugin's new `data` for ConfigMap `name` as `w` reads it: the values that differ from what the plugin
        was `handed` are its edits (a value it left alone keeps any other plugin's edit)."""
        slot = (w.namespace, name, w.version)
        changed = {k: v for k, v in data.items() if k in handed and handed[k] != v}
        if changed:
            self.edits.setdefault(slot, {}).update(changed)
            self.homes.setdefault(slot, self.model.namespace_of(w.baseline))

    def apply(self, dev: DevSet) -> DevSet:
        """`dev` (after the plugins' pod specs) with the edits: on the flow's copies, the dev pods repointed."""
        if not self.edits:
            return dev
        objects = list(dev.objects)
        at = {(o.obj["metadata"].get("namespace"), o.obj["metadata"]["name"]): i for i, o in enumerate(objects)
              if o.obj.get("kind") == "ConfigMap"}
        rewrites = list(dev.rewrites)
        moved: dict[tuple[str | None, str, str], str] = {}  # (namespace, baseline name, version) -> the copy's
        for (ns, name, version), changed in sorted(self.edits.items(), key=lambda e: (e[0][0] or "", *e[0][1:])):
            target = name if (ns, name) in at else dev.lane.name(name, version)
            if (ns, target) not in at:
                doc = self.model.find("ConfigMap", self.homes[(ns, name, version)], name)
                if doc is None:
                    continue
                obj = copy_of(doc, version, ns, dev.lane)
                obj.pop("immutable", None)
                at[(ns, target)] = len(objects)
                objects.append(DevObject(doc, obj, version))
            if target != name:
                moved[(ns, name, version)] = target
            made = objects[at[(ns, target)]]
            obj = {**made.obj, "data": dict(made.obj.get("data") or {})}
            for key, value in sorted(changed.items()):
                rewrites.append(Rewrite(target, None, "key", key, obj["data"].get(key, ""), value))
                obj["data"][key] = value
            objects[at[(ns, target)]] = replace(made, obj=obj)
        return replace(dev, objects=objects, rewrites=rewrites, workloads=_repointed(dev, moved))


def _repointed(dev: DevSet, moved: dict[tuple[str | None, str, str], str]) -> dict[str, DevWorkload]:
    """The dev workloads, each reading the flow's copy wherever it read a baseline ConfigMap that got one."""
    if not moved:
        return dev.workloads
    new: dict[int, DevWorkload] = {}
    for dw in dev.unique_workloads():
        spec = pod_spec(dw.obj)
        names = [(r.name, moved[(dw.namespace, r.name, dw.version)]) for r in config_reads(spec)
                 if r.kind == "ConfigMap" and (dw.namespace, r.name, dw.version) in moved]
        if not names:
            new[id(dw)] = dw
            continue
        obj = with_pod_spec(dw.obj, copy.deepcopy(spec))  # `repoint` edits in place
        for old, target in names:
            repoint(pod_spec(obj), "ConfigMap", old, target)
        new[id(dw)] = replace(dw, obj=obj)
    return {s: new[id(dw)] for s, dw in dev.workloads.items()}
