"""Kardinal's annotations kept in `.devlane.yaml`, for objects the user does not own (a vendored chart, a
remote or shared base): `services:` entries become the annotations of the Services they name (Kardinal's,
and devlane's `volume`, `container`, `workload` and `no-rewrite`), and
`plugins.definitions` a plugin-definition pseudo-Service, before the model reads anything.

Config entries name Services by their final names (what the build produced), so they survive name
prefixes and suffixes that kustomize adds and annotation values never follow. Where the manifest already
carries a different value, the config wins and a warning (shown by `lint`) names both.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import yaml

from ...core.names import DEVLANE, KARDINAL
from ...errors import Diagnostics
from ..settings.repo_config import CONFIG_FILE, RepoConfig

PSEUDO_SERVICE = "devlane-config-plugin-definitions"
# config field -> annotation: Kardinal's own, and devlane's extra keys a user of a vendored chart needs as much
ANNOTATIONS = {"dependencies": KARDINAL + "dependencies", "stateful": KARDINAL + "stateful",
               "external": KARDINAL + "external", "shared": KARDINAL + "shared", "plugins": KARDINAL + "plugins",
               "volume": DEVLANE + "volume", "container": DEVLANE + "container", "workload": DEVLANE + "workload",
               "noRewrite": DEVLANE + "no-rewrite", "propagates": KARDINAL + "propagates"}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return ",".join(str(v) for v in value) if isinstance(value, list) else str(value)  # type: ignore[union-attr]


def apply(documents: list[Any], config: RepoConfig, diags: Diagnostics, make: Callable[..., Any]) -> list[Any]:
    """`documents` (`load.Document`s, built by `make(obj, file, index, origins)`) with the config's annotations
    merged in, each remembering its line of `.devlane.yaml`, and its plugin definitions added."""
    if not config.services and not config.plugin_definitions:
        return documents
    out = list(documents)
    by_name: dict[str, list[int]] = {}
    for i, doc in enumerate(out):
        if doc.kind == "Service" and doc.api_version == "v1":
            by_name.setdefault(doc.name, []).append(i)
            if doc.namespace:
                by_name.setdefault(f"{doc.namespace}/{doc.name}", []).append(i)
    for key, fields in sorted(config.services.items()):
        where = config.where("services", key, object=f"services.{key}")
        found = by_name.get(key, [])
        if not found:
            diags.error(f"services.{key} names no Service of the repository's inputs", where,
                        hint="use the Service's final name, as the build produces it (kustomize prefixes and "
                             "suffixes included), or namespace/name", code="config-service")
            continue
        if len(found) > 1:
            diags.error(f"services.{key} names {len(found)} Services (one per namespace)", where,
                        hint="write namespace/name", code="config-service")
            continue
        index = found[0]
        doc = out[index]
        obj = copy.deepcopy(doc.obj)
        annotations = obj.setdefault("metadata", {}).setdefault("annotations", {}) or {}
        obj["metadata"]["annotations"] = annotations
        origins = []
        for field, value in sorted(fields.items()):
            name, text = ANNOTATIONS[field], _text(value)
            origins.append((name, config.where("services", key, field, object=f"services.{key}.{field}")))
            old = annotations.get(name)
            if old is not None and str(old) != text:
                diags.warn(f"services.{key}.{field} ({text!r}) overrides {name}: {old!r} of the manifest",
                           config.where("services", key, field, object=f"services.{key}.{field}"),
                           hint=f"keep one of them: remove services.{key}.{field} or the annotation in "
                                f"{doc.file}", code="annotation-conflict")
            annotations[name] = text
        out[index] = make(obj, doc.file, doc.index, tuple(origins))
    if config.plugin_definitions:
        pseudo = {"apiVersion": "v1", "kind": "Service",
                  "metadata": {"name": PSEUDO_SERVICE, "annotations": {
                      KARDINAL + "plugin-definition": yaml.safe_dump(config.plugin_definitions, sort_keys=False)}}}
        out.append(make(pseudo, CONFIG_FILE, 0))
    return out
