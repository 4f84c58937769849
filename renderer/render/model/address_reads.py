"""Where a pod reads addresses from, and the references found there.

A pod reads addresses from its containers' (and init containers') env values, `command` and `args`,
and from the ConfigMaps and Secrets it uses: `envFrom`, `valueFrom.configMapKeyRef`/`secretKeyRef`,
mounted volumes and projected volumes. The rewriter (clone), the Job rule (plan), the wiring check
and the isolation invariant all walk a pod through this one module, so none of them can miss a
place the others look at.

`devlane.dev/no-rewrite` (on the Service or lone workload, and on a ConfigMap) lists what is not an
address: env variable names, ConfigMap keys, and the words `args` and `command`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...core.k8s import all_containers
from ...core.names import DEVLANE
from ...core.references import Reference, Targets, find_in_args, find_in_data, find_in_value, host_variables
from ..inputs.document import Document

NO_REWRITE = DEVLANE + "no-rewrite"


@dataclass
class Slot:
    """One place in a pod spec holding references: an env value or a `command`/`args` element."""

    container: str
    field: str  # "env", "args" or "command"
    label: str  # the env variable, or the element's index
    value: str
    refs: list[Reference]
    set: Callable[[str], None]

    @property
    def where(self) -> str:
        if self.field == "env":
            return f"container {self.container} env {self.label}"
        return f"container {self.container} {self.field}[{self.label}]"


@dataclass(frozen=True)
class ConfigRead:
    """A ConfigMap or Secret a pod reads, and how."""

    kind: str  # "ConfigMap" or "Secret"
    name: str
    keys: tuple[str, ...] | None  # None: every key (envFrom, a whole volume)


def _setter(container: dict, field: str, index: int | None = None) -> Callable[[str], None]:
    def set_env(value: str, entry: dict = container) -> None:
        entry["value"] = value

    def set_item(value: str) -> None:
        container[field][index] = value

    return set_env if index is None else set_item


def pod_slots(pod_spec: dict, targets: Targets, skip: frozenset[str] = frozenset()) -> Iterator[Slot]:
    """Every env value and command/args element of the pod that references a target."""
    if not targets:
        return
    for c in all_containers(pod_spec):
        name = str(c.get("name", ""))
        entries = [e for e in c.get("env") or [] if isinstance(e, dict)]
        argv = [a for field in ("command", "args") if isinstance(c.get(field), list) for a in c[field]]
        # `X=otel-collector` used as `http://$(X):4317` is a host, whatever its name says
        as_host = host_variables({str(e.get("name", "")): e.get("value") for e in entries}, argv)
        for env in entries:
            value, var = env.get("value"), str(env.get("name", ""))
            if isinstance(value, str) and var not in skip:
                refs = find_in_value(value, targets, var, as_host=var in as_host)
                if refs:
                    yield Slot(name, "env", var, value, refs, _setter(env, "value"))
        for field in ("command", "args"):
            argv = c.get(field)
            if field in skip or not isinstance(argv, list):
                continue
            for i, refs in enumerate(find_in_args(argv, targets)):
                if refs:
                    yield Slot(name, field, str(i), argv[i], refs, _setter(c, field, i))


def pod_values(pod_spec: dict) -> Iterator[tuple[str, str, str, str]]:
    """(container, field, key, value) of every literal env value (`env NAME`, key NAME) and `command`/`args`
    element (`args[2]`, no key) of the pod's containers and init containers, in spec order: whatever the
    targets, for the checks that read every value rather than the references to known services."""
    for c in all_containers(pod_spec):
        name = str(c.get("name", ""))
        for e in c.get("env") or []:
            if isinstance(e, dict) and isinstance(e.get("value"), str):
                yield name, f"env {e.get('name')}", str(e.get("name", "")), e["value"]
        for field in ("command", "args"):
            for i, arg in enumerate(c.get(field) or []):
                if isinstance(arg, str):
                    yield name, f"{field}[{i}]", "", arg


def config_reads(pod_spec: dict) -> list[ConfigRead]:
    """The ConfigMaps and Secrets the pod reads, in spec order, each (kind, name) once with all its keys."""
    found: dict[tuple[str, str], set[str] | None] = {}

    def add(kind: str, name: object, key: object = None) -> None:
        if not isinstance(name, str) or not name:
            return
        slot = (kind, name)
        if key is None:
            found[slot] = None
        elif slot not in found:
            found[slot] = {str(key)}
        elif found[slot] is not None:
            found[slot].add(str(key))

    for c in all_containers(pod_spec):
        for src in c.get("envFrom") or []:
            if isinstance(src, dict):
                add("ConfigMap", (src.get("configMapRef") or {}).get("name"))
                add("Secret", (src.get("secretRef") or {}).get("name"))
        for env in c.get("env") or []:
            ref = (env.get("valueFrom") or {}) if isinstance(env, dict) else {}
            for kind, field in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                if isinstance(ref.get(field), dict):
                    add(kind, ref[field].get("name"), ref[field].get("key", ""))
    for vol in _volumes(pod_spec):
        if isinstance(vol.get("configMap"), dict):
            add("ConfigMap", vol["configMap"].get("name"))
        if isinstance(vol.get("secret"), dict):
            add("Secret", vol["secret"].get("secretName"))
        for src in (vol.get("projected") or {}).get("sources") or []:
            if isinstance(src, dict):
                add("ConfigMap", (src.get("configMap") or {}).get("name"))
                add("Secret", (src.get("secret") or {}).get("name"))
    return [ConfigRead(k, n, None if keys is None else tuple(sorted(keys))) for (k, n), keys in found.items()]


def _volumes(pod_spec: dict) -> list[dict]:
    return [v for v in pod_spec.get("volumes") or [] if isinstance(v, dict)]


def repoint(pod_spec: dict, kind: str, old: str, new: str) -> None:
    """Make the pod read ConfigMap (or Secret) `new` wherever it read `old`."""
    ref_field, key_field, vol_field, vol_name = (
        ("configMapRef", "configMapKeyRef", "configMap", "name") if kind == "ConfigMap"
        else ("secretRef", "secretKeyRef", "secret", "secretName"))
    refs = []
    for c in all_containers(pod_spec):
        refs += [src.get(ref_field) for src in c.get("envFrom") or [] if isinstance(src, dict)]
        refs += [(env.get("valueFrom") or {}).get(key_field) for env in c.get("env") or [] if isinstance(env, dict)]
    for vol in _volumes(pod_spec):
        if isinstance(vol.get(vol_field), dict) and vol[vol_field].get(vol_name) == old:
            vol[vol_field][vol_name] = new
        refs += [src.get(vol_field) for src in (vol.get("projected") or {}).get("sources") or []
                 if isinstance(src, dict)]
    for ref in refs:
        if isinstance(ref, dict) and ref.get("name") == old:
            ref["name"] = new


def data_of(doc_obj: dict) -> dict[str, str]:
    """The text entries of a ConfigMap, or the decoded entries of a Secret (undecodable ones left out)."""
    out: dict[str, str] = {}
    if doc_obj.get("kind") == "Secret":
        for key, value in (doc_obj.get("data") or {}).items():
            try:
                out[str(key)] = base64.b64decode(str(value), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError, ValueError):
                continue
        out.update({str(k): str(v) for k, v in (doc_obj.get("stringData") or {}).items() if v is not None})
        return out
    return {str(k): v for k, v in (doc_obj.get("data") or {}).items() if isinstance(v, str)}


def data_refs(doc: Document | dict, targets: Targets, keys: tuple[str, ...] | None = None,
              skip: frozenset[str] = frozenset()) -> dict[str, list[Reference]]:
    """References in a ConfigMap's (or Secret's) entries, per key (only `keys` when given)."""
    obj = doc.obj if isinstance(doc, Document) else doc
    own = (obj.get("metadata") or {}).get("annotations") or {}
    skip = skip | {x.strip() for x in str(own.get(NO_REWRITE, "")).split(",") if x.strip()}
    out = {}
    for key, value in data_of(obj).items():
        if key in skip or (keys is not None and key not in keys):
            continue
        refs = find_in_data(key, value, targets)
        if refs:
            out[key] = refs
    return out
