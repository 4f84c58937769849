"""Plugin definitions: Kardinal's `kardinal.dev.service/plugin-definition` annotation (and the legacy
inline `kardinal.dev.service/plugins` list), parsed into `PluginDef`s with every problem collected.

Values are read as Kardinal reads them (every scalar kept as its literal text), plus devlane's
extensions of an entry: `behavior`, `sideEffects`, `extensions` and `implementations`.
"""

from __future__ import annotations

import copy
import functools
import posixpath
import re
from dataclasses import dataclass, field
from typing import Literal

from ...core.yamlio import parse_documents
from ...errors import DevlaneError, Diagnostics, Where
from ...host.manifest import SideEffects
from ..inputs.document import Document

PLUGIN_DEF_KEYS = {
    "name", "type", "servicename", "serviceName", "args", "behavior", "sideEffects", "extensions", "implementations",
}
_SERVICENAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
PluginType = Literal["stateful", "external"]


@dataclass(frozen=True)
class PluginDef:
    """One entry of a `plugin-definition` list (or a legacy inline `plugins` entry)."""

    servicename: str
    name: str
    type: PluginType
    args: dict[str, str]
    where: Where
    legacy: bool = False
    behavior: Literal["enforce", "bypass"] = "enforce"  # kops: a failure fails the render | is a warning
    side_effects: SideEffects | None = None  # "External" overrides the plugin's own manifest
    extensions: list[dict] = field(default_factory=list)  # {kind, name, namespace?} of repo objects, or {file}
    implementations: list[dict] = field(default_factory=list)  # fallbacks: {name, args}, in preference order

    @property
    def candidates(self) -> list[dict]:
        """The plugin itself, then its `implementations`, in preference order."""
        return [{"name": self.name, "args": self.args}, *self.implementations]

    @property
    def instance_where(self) -> Where:
        return Where(self.where.file, self.where.line, self.where.document, self.where.object, self.servicename)


def _parse_definition(text: str) -> list:
    """The annotation's YAML, every scalar kept as its literal text (as Kardinal's map[string]string decode
    does). Repositories repeat one definition on many pseudo-Services, so each text is parsed once per
    process; the result is copied, as callers keep and hand on its dicts."""
    return copy.deepcopy(_parsed_definition(text))


@functools.lru_cache(maxsize=256)
def _parsed_definition(text: str) -> list:
    return parse_documents(text.encode(), "", plain=True)


def parse_plugin_definition(
    value: object, doc: Document, diags: Diagnostics, legacy_service: tuple[str, bool] | None = None
) -> list[PluginDef]:
    where = doc.where()
    try:
        docs = _parse_definition(str(value))
    except DevlaneError as exc:
        problem = exc.problems[0]
        line = f" (line {problem.where.line} of the annotation)" if problem.where.line else ""
        diags.error(f"plugin definition is not valid YAML{line}: {problem.message.removeprefix('invalid YAML: ')}",
                    where, code="bad-plugin-definition")
        return []
    items = docs[0] if len(docs) == 1 else None
    if not isinstance(items, list):
        diags.error("plugin definition must be a YAML list of {name, type, servicename, args}", where,
                    code="bad-plugin-definition")
        return []
    defs: list[PluginDef] = []
    for i, item in enumerate(items):
        at = f"plugin definition item {i}"
        if not isinstance(item, dict):
            diags.error(f"{at} must be a mapping", where, code="bad-plugin-definition")
            continue
        for key in sorted(set(item) - PLUGIN_DEF_KEYS):
            diags.error(f"{at}: unknown key {key!r}", where,
                        hint="allowed keys: " + ", ".join(sorted(PLUGIN_DEF_KEYS - {"serviceName"})),
                        code="unknown-key")
        name = item.get("name")
        if not name:
            diags.error(f"{at} has no name (the plugin source)", where, code="bad-plugin-definition")
            continue
        servicename = item.get("servicename") or item.get("serviceName")
        ptype = item.get("type")
        if legacy_service is not None:
            service, stateful = legacy_service
            servicename = servicename or f"{service}-{_last_segment(name)}"
            ptype = ptype or ("stateful" if stateful else "external")
        if not servicename:
            diags.error(f"{at} ({name}) has no servicename", where, code="bad-plugin-definition")
            continue
        if not _SERVICENAME.match(servicename):
            diags.error(f"{at}: servicename {servicename!r} must be lower-case letters, digits, '-' or '.'", where,
                        hint="it names Kubernetes objects (the plugin's state ConfigMap)", code="bad-plugin-definition")
            continue
        if ptype not in ("stateful", "external"):
            diags.error(f"{at} ({servicename}): type must be stateful or external, got {ptype!r}", where,
                        code="bad-plugin-definition")
            continue
        args = item.get("args") or {}
        if not isinstance(args, dict) or any(isinstance(v, dict | list) for v in args.values()):
            diags.error(f"{at} ({servicename}): args must be a mapping of names to plain values", where,
                        code="bad-plugin-definition")
            continue
        args = plain_args(args)
        extras = _plugin_extras(item, f"{at} ({servicename})", where, diags)
        if extras is None:
            continue
        defs.append(PluginDef(servicename, str(name), ptype, args, where, legacy_service is not None, **extras))
    return defs


def plain_args(args: dict) -> dict[str, str]:
    return {str(k): "" if v is None else str(v) for k, v in args.items()}


def _plugin_extras(item: dict, at: str, where: Where, diags: Diagnostics) -> dict | None:
    """behavior, sideEffects, extensions and implementations of one plugin-definition entry."""
    behavior = item.get("behavior", "enforce")
    side_effects = item.get("sideEffects")
    problems = []
    if behavior not in ("enforce", "bypass"):
        problems.append(f"behavior must be enforce or bypass, got {behavior!r}")
    if side_effects not in (None, "None", "External"):
        problems.append(f"sideEffects must be None or External, got {side_effects!r}")
    extensions = []
    for ref in item.get("extensions") or []:
        if isinstance(ref, dict) and "file" in ref:
            path = ref["file"]
            if set(ref) != {"file"} or not isinstance(path, str) or not _inside_repo(path):
                problems.append(f"extensions file entries must be {{file: PATH}} with PATH relative to the repository "
                                f"root and inside it, got {ref!r}")
            else:
                extensions.append({"file": posixpath.normpath(path)})
            continue
        if isinstance(ref, str) and "/" in ref:  # Kind/name or Kind/namespace/name
            parts = ref.split("/")
            ref = {"kind": parts[0], "name": parts[-1], **({"namespace": parts[1]} if len(parts) == 3 else {})}
        if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
            problems.append(f"extensions entries must be {{kind, name, namespace?}} or 'Kind/name', got {ref!r}")
            continue
        extensions.append({k: str(ref[k]) for k in ("apiVersion", "kind", "namespace", "name") if ref.get(k)})
    implementations = []
    for alt in item.get("implementations") or []:
        if isinstance(alt, str):
            alt = {"name": alt}
        args = alt.get("args") if isinstance(alt, dict) else None
        if not isinstance(alt, dict) or not alt.get("name") or not isinstance(args or {}, dict):
            problems.append(f"implementations entries must be a plugin name or {{name, args}}, got {alt!r}")
            continue
        implementations.append({"name": str(alt["name"]), "args": plain_args(args or item.get("args") or {})})
    for problem in problems:
        diags.error(f"{at}: {problem}", where, code="bad-plugin-definition")
    if problems:
        return None
    return {"behavior": behavior, "side_effects": side_effects, "extensions": extensions,
            "implementations": implementations}


def _inside_repo(path: str) -> bool:
    norm = posixpath.normpath(path)
    return bool(path) and not path.startswith("/") and norm != "." and not norm.startswith("../") and norm != ".."


def _last_segment(name: str) -> str:
    seg = name.rstrip("/").split("/")[-1].split(":")[0].split("@")[0]
    seg = re.sub(r"\.git$", "", seg).lower()
    return re.sub(r"[^a-z0-9-]+", "-", seg).strip("-") or "plugin"


def add_plugin_def(pdef: PluginDef, plugin_defs: dict[str, PluginDef], diags: Diagnostics) -> None:
    if pdef.servicename in plugin_defs:
        other = plugin_defs[pdef.servicename]
        diags.error(f"duplicate plugin servicename {pdef.servicename!r} (also defined at {other.where})", pdef.where,
                    hint="the plugin servicename has to be unique across the repository", code="duplicate-servicename")
        return
    plugin_defs[pdef.servicename] = pdef


def changed_args(before: dict[str, PluginDef], after: dict[str, PluginDef]) -> list[tuple[str, PluginDef, PluginDef]]:
    """(instance, definition now, definition before) of every plugin whose args changed, by instance name."""
    out = []
    for name, pdef in sorted(after.items()):
        old = before.get(name)
        if old is not None and old.name == pdef.name and old.args != pdef.args:
            out.append((name, pdef, old))
    return out


def used_plugin_names(plugin_defs: dict[str, PluginDef], config_sources: dict[str, dict]) -> list[str]:
    """Every plugin name the repository refers to: each definition's plugin and implementations, and every
    `plugins.sources` entry."""
    names: set[str] = set(config_sources)
    for pdef in plugin_defs.values():
        names |= {c["name"] for c in pdef.candidates if isinstance(c.get("name"), str) and c["name"].strip()}
    return sorted(names)
