"""Add Kardinal's annotations to `.devlane.yaml` instead of the manifests (`devlane init --config`, for
manifests the user does not own): `services:` entries and `plugins.definitions`, the file created when absent.

The same splicing as `yamledit`: existing keys, comments and layout stay byte for byte, new entries go after
the last ones in the file's own indentation. A key already set to another value is a `Disagreement` (never
overwritten), the same value is nothing to do. A plugin definition may carry a `"#comment"` (comment lines
written above it: what the user must fill in), and `{"#commented": text}` is an entry that is only comment
lines (a store the built-in catalogue has no plugin for yet). The result must read as the old config plus
the additions and pass the config's schema (`render.settings.repo_config`), else nothing is planned and every edit is
`skipped` with the reason.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import DevlaneError
from ..render.settings.repo_config import CONFIG_FILE, parse_config
from .yamledit import (
    AnnotationEdit,
    Commented,
    Disagreement,
    EditPlan,
    Splices,
    Style,
    Text,
    add_entries,
    append_items,
    block_insert,
    compose,
    entry_lines,
    flow_text,
    get_entry,
    is_empty,
    is_map,
    item_lines,
    parse_text,
    read_text,
    reads_as,
    style_of,
)

API_VERSION = "devlane.dev/v1alpha1"
COMMENT = "#comment"  # a plugin definition's comment line(s), written above the entry
COMMENTED = "#commented"  # an entry that is only comment lines


def _service_edit(key: str, field: str, value: Any) -> AnnotationEdit:
    """How a `services:` field is named in a `Disagreement` or `skipped`: kind Service, key services.KEY.FIELD."""
    ns, _, name = key.rpartition("/")
    return AnnotationEdit(CONFIG_FILE, 0, "Service", name, ns or None, f"services.{key}.{field}", flow_text(value))


def _plugin_edit(definition: Mapping[str, Any]) -> AnnotationEdit:
    """How a definition is named in a `Disagreement` or `skipped`: kind PluginDefinition, key plugins.definitions."""
    clean = {k: v for k, v in definition.items() if k != COMMENT}
    name = _servicename(clean) or str(clean.get("name", ""))
    return AnnotationEdit(CONFIG_FILE, 0, "PluginDefinition", name, None, "plugins.definitions", flow_text(clean))


def _servicename(definition: Any) -> str | None:
    if not isinstance(definition, Mapping):
        return None
    name = definition.get("servicename") or definition.get("serviceName")
    return str(name) if name else None


def _has_comment_block(text: str, lines: list[str]) -> bool:
    """Whether `lines` (comment lines) already stand one after another in `text`, indentation aside."""
    have = [line.strip() for line in re.split(r"\r\n|\n|\r", text)]
    want = [line.strip() for line in lines]
    return any(have[i:i + len(want)] == want for i in range(len(have) - len(want) + 1))


def _real(definitions: list[Any]) -> list[dict]:
    """The definitions that are objects (not only comment lines)."""
    return [d.item if isinstance(d, Commented) else d for d in definitions
            if not isinstance(d, Commented) or d.item is not None]


def _items(definitions: list[Any], col: int, style: Style) -> list[str]:
    return [line for d in definitions
            for line in (d.lines(col, style) if isinstance(d, Commented) else item_lines(d, col, style))]


def _plugins_block(definitions: list[Any], col: int, style: Style) -> list[str]:
    """`plugins:` and its `definitions:` at column `col`; comment-only entries alone are just comment lines
    at `col` (an empty `definitions:` would not pass the schema)."""
    if not _real(definitions):
        return _items(definitions, col, style)
    return [" " * col + "plugins:", " " * (col + style.step) + "definitions:",
            *_items(definitions, col + style.step + style.seq, style)]


class _Planner:
    """What to add to one `.devlane.yaml`, and the plan."""

    def __init__(self, services: Mapping[str, Mapping[str, Any]], plugins: Sequence[Mapping[str, Any]]):
        self.services = services
        self.plugins = plugins
        self.edits = [_service_edit(k, f, v) for k, fields in services.items() for f, v in fields.items()]
        self.edits += [_plugin_edit(d) for d in plugins if COMMENTED not in d]
        self.disagreements: list[Disagreement] = []

    def refuse(self, reason: str) -> EditPlan:
        disagreeing = {d.edit for d in self.disagreements}
        return EditPlan({}, tuple(self.disagreements),
                        tuple((e, reason) for e in self.edits if e not in disagreeing))

    def new_services(self, old: dict) -> dict[str, dict[str, Any]]:
        """The fields not set yet, by service; the ones set differently become disagreements."""
        have_all = old.get("services") if isinstance(old.get("services"), dict) else {}
        out: dict[str, dict[str, Any]] = {}
        for key, fields in self.services.items():
            have = have_all.get(key) if isinstance(have_all.get(key), dict) else {}
            for field, value in fields.items():
                if field not in have:
                    out.setdefault(key, {})[field] = value
                elif have[field] != value:
                    self.disagreements.append(Disagreement(_service_edit(key, field, value), flow_text(have[field])))
        return out

    def new_definitions(self, old: dict, text: str) -> list[Any]:
        """The definitions to add (dicts, or `Commented` ones); an existing definition of the same servicename
        that differs becomes a disagreement."""
        plugins = old.get("plugins") if isinstance(old.get("plugins"), dict) else {}
        have = plugins.get("definitions") if isinstance(plugins.get("definitions"), list) else []
        by_name = {_servicename(d): d for d in have if _servicename(d)}
        out: list[Any] = []
        for definition in self.plugins:
            if COMMENTED in definition:
                entry = Commented(str(definition[COMMENTED]))
                if not _has_comment_block(text, entry.lines(0, Style())):
                    out.append(entry)
                continue
            clean = {k: v for k, v in definition.items() if k != COMMENT}
            there = by_name.get(_servicename(clean))
            if there is not None and there != clean:
                self.disagreements.append(Disagreement(_plugin_edit(definition), flow_text(there)))
            elif there is None and clean not in have:
                out.append(Commented(str(definition[COMMENT]), clean) if definition.get(COMMENT) else clean)
        return out


def _expected(old: dict, services: dict[str, dict[str, Any]], definitions: list[Any]) -> dict:
    out = copy.deepcopy(old)
    for key, fields in services.items():
        if not isinstance(out.get("services"), dict):
            out["services"] = {}
        if not isinstance(out["services"].get(key), dict):
            out["services"][key] = {}
        out["services"][key].update(copy.deepcopy(fields))
    real = _real(definitions)
    if real:
        if not isinstance(out.get("plugins"), dict):
            out["plugins"] = {}
        if not isinstance(out["plugins"].get("definitions"), list):
            out["plugins"]["definitions"] = []
        out["plugins"]["definitions"] += copy.deepcopy(real)
    return out


def plan_config(repo: Path, services: Mapping[str, Mapping[str, Any]],
                plugins: Sequence[Mapping[str, Any]]) -> EditPlan:
    """The change that adds `services` ("name" or "namespace/name" -> fields, as `services:` of
    `.devlane.yaml`) and `plugins` (plugin definitions, as `plugins.definitions`) to the repository's
    `.devlane.yaml`, created when absent (nothing is written; see `yamledit.apply`)."""
    planner = _Planner(services, plugins)
    path = Path(repo) / CONFIG_FILE
    invalid = None  # what is wrong with the file as it is (`services:` left empty, say): the result must fix it
    try:
        text = read_text(path) if path.is_file() else None
        docs = [d for d in parse_text(text, CONFIG_FILE) if d is not None] if text is not None else []
        nodes = [n for n in compose(text) if n is not None and not is_empty(n)] if text is not None else []
        if len(docs) > 1 or len(nodes) != len(docs) or (docs and not isinstance(docs[0], dict)):
            raise ValueError("it must hold one mapping")
    except (OSError, ValueError, DevlaneError) as exc:
        reason = exc.problems[0].message if isinstance(exc, DevlaneError) else str(exc)
        return planner.refuse(f"{CONFIG_FILE} cannot be edited: {reason}; fix it first")
    except Exception as exc:  # ruamel.yaml's own errors: it refuses what PyYAML reads
        return planner.refuse(f"ruamel.yaml cannot read {CONFIG_FILE}: {str(exc).splitlines()[0]}")
    if docs:
        try:
            parse_config(text.encode("utf-8") if text else None)
        except DevlaneError as exc:
            invalid = exc.problems[0].message
    old = docs[0] if docs else {}
    before = text or ""
    new_services = planner.new_services(old)
    new_defs = planner.new_definitions(old, before)
    if not new_services and not new_defs:
        return EditPlan({}, tuple(planner.disagreements))
    expected = _expected(old, new_services, new_defs)
    where = Text(before)
    if not nodes:
        brk = where.newline()
        lines = [f"apiVersion: {API_VERSION}", "kind: Config"]
        if new_services:
            lines += entry_lines("services", new_services, 0, Style())
        lines += _plugins_block(new_defs, 0, Style())
        expected = {"apiVersion": API_VERSION, "kind": "Config", **expected}
        after = before + ("" if not before or before.endswith(("\n", "\r")) else brk) + brk.join(lines) + brk
    else:
        splices = Splices()
        reason = _splice(where, splices, nodes[0], new_services, new_defs)
        if reason:
            return planner.refuse(f"{CONFIG_FILE}: {reason}; add the entries by hand")
        after = splices.apply(before)
    problem = reads_as(after, CONFIG_FILE, [expected])
    if problem is None:
        try:
            parse_config(after.encode("utf-8"))
        except DevlaneError as exc:
            problem = (f"{CONFIG_FILE} cannot be edited: {invalid}; fix it first" if invalid else
                       f"the result would not be a valid {CONFIG_FILE}: {exc.problems[0].message}")
    if problem:
        return planner.refuse(problem)
    return EditPlan({CONFIG_FILE: (before, after)}, tuple(planner.disagreements))


def _splice(where: Text, splices: Splices, root: Any, services: dict[str, dict[str, Any]],
            definitions: list[Any]) -> str | None:
    """Plan the new services and definitions into the config document `root`; a reason when that cannot be."""
    if not is_map(root):
        return "it is not a mapping"
    style = style_of(where, root)
    flow = bool(root.flow_style)
    col = 0 if flow or not root.value else root.value[0][0].start_mark.column
    at_end: list[str] = []  # new lines after the last top-level entry
    top: list[tuple[str, Any]] = []  # new top-level entries of a flow mapping
    if services:
        found = get_entry(root, "services")
        if found is None:
            at_end += entry_lines("services", services, col, style)
            top.append(("services", services))
        else:
            reason = _services(where, splices, style, found, services)
            if reason:
                return reason
    if definitions:
        real = bool(_real(definitions))
        comments = any(isinstance(d, Commented) for d in definitions)
        plugins = get_entry(root, "plugins")
        defs = get_entry(plugins[1], "definitions") if plugins and is_map(plugins[1]) else None
        if plugins is not None and not is_map(plugins[1]) and not is_empty(plugins[1]):
            return "plugins is not a mapping"
        if defs is not None:
            reason = append_items(where, splices, style, defs[0], defs[1], definitions)
            if reason:
                return f"plugins.definitions: {reason}"
        elif not real or plugins is None:
            at_end += _plugins_block(definitions, col, style)
            top.append(("plugins", {"definitions": definitions}))
        elif is_map(plugins[1]) and plugins[1].flow_style:
            if comments:
                return "comments cannot go into the flow mapping of plugins"
            add_entries(where, splices, style, plugins[0], plugins[1], [("definitions", definitions)])
        else:
            inner = plugins[0].start_mark.column + style.step if is_empty(plugins[1]) else \
                plugins[1].value[0][0].start_mark.column
            end = plugins[0].end_mark.index if is_empty(plugins[1]) else where.end(plugins[1],
                                                                                    plugins[0].end_mark.index)
            block_insert(where, splices, end or plugins[0].end_mark.index,
                          [" " * inner + "definitions:", *_items(definitions, inner + style.seq, style)])
    if flow and top:
        if any(isinstance(d, Commented) for d in definitions):
            return "comments cannot go into a flow mapping"
        return add_entries(where, splices, style, None, root, top)
    if at_end:
        end = where.end(root, 0)
        if end is None:
            return "the end of its mapping could not be located"
        block_insert(where, splices, end, at_end)
    return None


def _services(where: Text, splices: Splices, style: Style, found: tuple[Any, Any],
              services: dict[str, dict[str, Any]]) -> str | None:
    """Plan new fields of existing services, and new services, into the `services:` entry `found`."""
    key, node = found
    if is_empty(node):
        return add_entries(where, splices, style, key, node, list(services.items()))
    if not is_map(node):
        return "services is not a mapping"
    fresh = []
    for name, fields in services.items():
        entry = get_entry(node, name)
        if entry is None:
            fresh.append((name, fields))
            continue
        reason = add_entries(where, splices, style, entry[0], entry[1], list(fields.items()))
        if reason:
            return f"services.{name}: {reason}"
    return add_entries(where, splices, style, key, node, fresh) if fresh else None
