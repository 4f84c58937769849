"""Edit the user's YAML without disturbing it: Kardinal annotations added to manifests, and `services:` and
`plugins.definitions` added to `.devlane.yaml` (what `devlane init --write` and `--config` write).

A dump of a whole file, even ruamel.yaml's round-trip one, re-indents, re-wraps and normalises. So ruamel.yaml
only LOCATES here: its composer gives every node's start and end in the text, and the new lines are spliced
into the original text, indented like their neighbours (flow collections get flow entries). Every byte that
is not part of an addition stays as it was: comments, quoting, key order, indentation, document separators,
line endings, a byte order mark, a missing final newline.

Every planned file is then parsed again with the loader that renders (`core.yamlio`) and must read as the
old documents plus exactly the additions; an edit that would give anything else is not made but `skipped`,
with the reason. Existing values are never overwritten: a key already set to something else is a
`Disagreement`, and the same value is nothing to do, so a plan of an applied plan is empty.

The splicing helpers (`Text`, `Splices`, `Style`, `add_entries`, `append_items`...) are public for
`configedit`, which plans `.devlane.yaml` the same way. ruamel.yaml is imported only when a plan is made,
never on the render path.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..core.files import exchange
from ..core.yamlio import parse_documents
from ..core.yamlscalars import SafeDumper
from ..errors import DevlaneError, Where, fail

_BREAKS = "\r\n\x85\u2028\u2029"


@dataclass(frozen=True)
class AnnotationEdit:
    """One annotation to add to one object. `file` and `index` are `load.Document`'s: the repository-relative
    POSIX path and the 0-based index of the YAML document in the file (empty documents counted)."""

    file: str
    index: int
    kind: str
    name: str
    namespace: str | None
    key: str  # the full annotation key, e.g. "kardinal.dev.service/dependencies"
    value: str


@dataclass(frozen=True)
class Disagreement:
    """An edit the file already answers differently (never overwritten)."""

    edit: AnnotationEdit
    existing: str


@dataclass(frozen=True)
class EditPlan:
    changes: dict[str, tuple[str, str]]  # repo-relative file -> (text before, text after); only files that change
    disagreements: tuple[Disagreement, ...] = ()
    skipped: tuple[tuple[AnnotationEdit, str], ...] = ()  # edits that could not be placed, and why


# ---------------------------------------------------------------------------------------------
# Scalars and blocks of new YAML


def _one_line(dumped: str) -> str | None:
    text = dumped.removesuffix("\n...\n").removesuffix("\n")
    return None if any(c in text for c in _BREAKS) else text


def _scalar(value: Any, flow: bool = False) -> str:
    """`value` (a string, number, boolean or null) as one line of YAML that reads back as exactly it, quoted
    only where a YAML emitter would quote it (`"true"`, `"1.0"`, `": "`...) or where a YAML 1.1 or 1.2 reader
    would retype it (`'0o17'`, `'y'`: the rule of devlane's output, `yamlscalars`); `flow`: inside a flow
    collection."""
    if isinstance(value, Mapping | list) and not value:
        return "[]" if isinstance(value, list) else "{}"
    inf = float("inf")
    if flow:
        text = _one_line(yaml.dump([value], Dumper=SafeDumper, allow_unicode=True, width=inf, default_flow_style=True))
        text = text[1:-1] if text else None
    else:
        text = _one_line(yaml.dump(value, Dumper=SafeDumper, allow_unicode=True, width=inf))
    return text if text is not None else json.dumps(value)  # JSON strings are YAML double-quoted scalars


def _literal(value: Any, pad: str) -> list[str] | None:
    """A multi-line string as a literal block (`|`), its lines indented by `pad`; None when a literal block
    cannot carry it exactly."""
    if not isinstance(value, str) or "\n" not in value:
        return None
    body = value.rstrip("\n")
    lines = body.split("\n")
    # a literal block's indentation is its first non-empty line's: one that starts with a blank would lose it
    if (not body or body.lstrip("\n")[:1] in (" ", "\t") or any(c in value for c in "\r\t\x85\u2028\u2029\ufeff")
            or any(line != line.rstrip(" ") for line in lines)
            or any(not c.isprintable() for c in value.replace("\n", ""))):
        return None
    trailing = len(value) - len(body)
    chomp = "-" if trailing == 0 else "" if trailing == 1 else "+"
    return [f"|{chomp}"] + [f"{pad}{line}" if line else "" for line in lines] + [""] * (trailing - 1)


def flow_text(value: Any) -> str:
    """`value` as flow YAML on one line."""
    if isinstance(value, Mapping) and value:
        return "{" + ", ".join(f"{_scalar(k, True)}: {flow_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list) and value:
        return "[" + ", ".join(flow_text(v) for v in value) + "]"
    return _scalar(value, flow=True)


@dataclass(frozen=True)
class Style:
    step: int = 2  # indentation of a nested mapping
    seq: int = 2  # indentation of a block sequence's `-` under its key (0: indentless)


def entry_lines(key: Any, value: Any, col: int, style: Style) -> list[str]:
    """The lines of `key: value` in block style at column `col`."""
    head = " " * col + _scalar(key) + ":"
    if isinstance(value, Mapping) and value:
        return [head] + [line for k, v in value.items() for line in entry_lines(k, v, col + style.step, style)]
    if isinstance(value, list) and value:
        return [head] + [line for item in value for line in item_lines(item, col + style.seq, style)]
    literal = _literal(value, " " * (col + style.step))
    if literal:
        return [f"{head} {literal[0]}", *literal[1:]]
    return [f"{head} {_scalar(value)}"]


def item_lines(value: Any, col: int, style: Style) -> list[str]:
    """The lines of one block sequence item at column `col`."""
    pad = " " * col
    if isinstance(value, Mapping) and value:
        lines = [line for k, v in value.items() for line in entry_lines(k, v, col + 2, style)]
        return [pad + "- " + lines[0][col + 2:], *lines[1:]]
    if isinstance(value, list) and value:
        lines = [line for v in value for line in item_lines(v, col + 2, style)]
        return [pad + "- " + lines[0][col + 2:], *lines[1:]]
    literal = _literal(value, " " * (col + 2))
    if literal:
        return [f"{pad}- {literal[0]}", *literal[1:]]
    return [f"{pad}- {_scalar(value)}"]


def _comment_lines(text: str, col: int) -> list[str]:
    return [" " * col + ("# " + line if line.strip() else "#") for line in str(text).splitlines() or [""]]


# ---------------------------------------------------------------------------------------------
# Locating: ruamel.yaml's nodes and their places in the text


def compose(text: str) -> list[Any]:
    """Every document's root node (None for an empty document), in order."""
    from ruamel.yaml import YAML  # only here: never on the render path

    return list(YAML(typ="rt", pure=True).compose_all(text))


def _kinds() -> tuple[type, type, type]:
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    return MappingNode, SequenceNode, ScalarNode


def is_map(node: Any) -> bool:
    return isinstance(node, _kinds()[0])


def _is_seq(node: Any) -> bool:
    return isinstance(node, _kinds()[1])


def is_empty(node: Any) -> bool:
    """An implicit null (`key:` and nothing): its marks are those of the next token."""
    return (isinstance(node, _kinds()[2]) and node.value == "" and node.style is None
            and node.start_mark.index == node.end_mark.index)


def get_entry(mapping: Any, key: str) -> tuple[Any, Any] | None:
    """The (key node, value node) of `key` written in `mapping` itself (not merged in)."""
    for k, v in mapping.value:
        if isinstance(k, _kinds()[2]) and k.value == key and k.tag != "tag:yaml.org,2002:merge":
            return k, v
    return None


class Text:
    """One file's text and where things go in it."""

    def __init__(self, text: str):
        self.text = text

    def end(self, node: Any, after: int) -> int | None:
        """Where the text of this occurrence of `node` ends (None: an implicit null, which has no text);
        `after`: where its key ends, to tell an alias (whose node is the anchor's, earlier) from the node."""
        if node.start_mark.index < after and getattr(node, "anchor", None):
            match = re.compile(r"\*" + re.escape(node.anchor) + r"(?![^\s,\[\]{}])").search(self.text, after)
            return match.end() if match else None
        if is_empty(node):
            return None
        if (is_map(node) or _is_seq(node)) and not node.flow_style:
            last = None
            for entry in node.value:
                for part in (entry if is_map(node) else (entry,)):
                    here = self.end(part, last or node.start_mark.index)
                    last = max(last or 0, here) if here is not None else last
            return last
        return node.end_mark.index

    def line_after(self, pos: int) -> tuple[int, str, bool]:
        """Where a new line goes after the line holding `pos - 1`: (position, the line break the file uses
        there, whether a break must be added first because the text ends without one)."""
        text = self.text
        if pos > 0 and text[pos - 1] == "\n":
            return pos, "\r\n" if text[pos - 2:pos] == "\r\n" else "\n", False
        if pos > 0 and text[pos - 1] == "\r":
            return (pos + 1, "\r\n", False) if text.startswith("\n", pos) else (pos, "\r", False)
        match = re.compile(r"\r\n|\n|\r").search(text, pos)
        if not match:
            return len(text), self.newline(), True
        return match.end(), match.group(), False

    def newline(self) -> str:
        match = re.search(r"\r\n|\n|\r", self.text)
        return match.group() if match else "\n"



@dataclass
class Splices:
    """Insertions into one text, made all at once (positions are in the original text)."""

    items: list[tuple[int, str]] = field(default_factory=list)

    def add(self, pos: int, text: str) -> None:
        self.items.append((pos, text))

    def apply(self, text: str) -> str:
        """The text with every insertion made; insertions at one place keep the order they were added in."""
        at: dict[int, list[str]] = {}
        for pos, new in self.items:
            at.setdefault(pos, []).append(new)
        for pos in sorted(at, reverse=True):
            text = text[:pos] + "".join(at[pos]) + text[pos:]
        return text


def block_insert(where: Text, splices: Splices, end: int, lines: list[str]) -> None:
    """New whole lines after the line where `end` falls."""
    pos, brk, missing = where.line_after(end)
    body = brk.join(lines)
    splices.add(pos, (brk + body) if missing else body + brk)


def style_of(where: Text, root: Any) -> Style:
    """The indentation `root`'s document already uses: the first nested block mapping's step, and whether
    block sequences sit under their key or indented."""
    step = seq = None
    stack = [root]
    seen: set[int] = set()
    while stack and (step is None or seq is None):
        node = stack.pop()
        if id(node) in seen or not is_map(node) or node.flow_style:
            continue
        seen.add(id(node))
        for k, v in node.value:
            if is_map(v) and not v.flow_style and v.value and step is None:
                step = v.value[0][0].start_mark.column - k.start_mark.column
            if _is_seq(v) and not v.flow_style and v.value and seq is None:
                seq = v.start_mark.column - k.start_mark.column
            if is_map(v):
                stack.append(v)
            elif _is_seq(v):
                stack.extend(item for item in v.value if is_map(item))
    step = step if step and step > 0 else 2
    return Style(step, seq if seq is not None and seq >= 0 else step)


def _meta_style(where: Text, root: Any, meta_key: Any, meta: Any) -> Style:
    """The document's style, with the step of its metadata: of a nested block mapping (labels), or its own."""
    style = style_of(where, root)
    nested = [(k, v) for k, v in meta.value if is_map(v) and not v.flow_style and v.value]
    if nested:
        step = nested[0][1].value[0][0].start_mark.column - nested[0][0].start_mark.column
    else:
        step = meta.value[0][0].start_mark.column - meta_key.start_mark.column if meta.value else 0
    return Style(step, style.seq) if step > 0 and not meta.flow_style else style


def add_entries(where: Text, splices: Splices, style: Style, key: Any, node: Any,
                 entries: list[tuple[Any, Any]]) -> str | None:
    """Plan `entries` (key, value) into the mapping `node` (the value of the key node `key`): after its last
    entry, in its style. A reason when that cannot be done."""
    if is_map(node) and node.flow_style:
        pairs = ", ".join(f"{_scalar(k, True)}: {flow_text(v)}" for k, v in entries)
        if not node.value:
            splices.add(where.text.index("{", node.start_mark.index) + 1, pairs)
        else:
            last_key, last_value = node.value[-1]
            end = where.end(last_value, last_key.end_mark.index) or where.end(last_key, node.start_mark.index)
            if end is None:
                return "the flow mapping's last entry could not be located"
            splices.add(end, ", " + pairs)
        return None
    if is_map(node) and node.value:
        col = node.value[0][0].start_mark.column
        end = where.end(node, node.start_mark.index if key is None else key.end_mark.index)
        if end is None:
            return "the mapping's end could not be located"
        block_insert(where, splices, end, [line for k, v in entries for line in entry_lines(k, v, col, style)])
        return None
    if is_empty(node):
        col = key.start_mark.column + style.step
        block_insert(where, splices, key.end_mark.index, [line for k, v in entries for line in entry_lines(k, v, col,
                                                                                                       style)])
        return None
    return "it is not a mapping"


def append_items(where: Text, splices: Splices, style: Style, key: Any, node: Any,
                  items: list[list[str] | Any]) -> str | None:
    """Plan `items` onto the end of the sequence `node` (the value of `key`). An item is a value, or a list of
    `Commented` (comment lines, and maybe an item under them)."""
    if _is_seq(node) and node.flow_style:
        values = [i for i in items if not isinstance(i, Commented)]
        if len(values) != len(items):
            return "comments cannot go into a flow sequence"
        text = ", ".join(flow_text(v) for v in values)
        if not node.value:
            splices.add(where.text.index("[", node.start_mark.index) + 1, text)
        else:
            end = where.end(node.value[-1], node.value[-1].start_mark.index)
            if end is None:
                return "the flow sequence's last item could not be located"
            splices.add(end, ", " + text)
        return None
    if _is_seq(node) and node.value:
        col, end = node.start_mark.column, where.end(node, key.end_mark.index)
    elif is_empty(node):
        col, end = key.start_mark.column + style.seq, key.end_mark.index
    else:
        return "it is not a sequence"
    if end is None:
        return "the sequence's end could not be located"
    lines: list[str] = []
    for item in items:
        lines += item.lines(col, style) if isinstance(item, Commented) else item_lines(item, col, style)
    block_insert(where, splices, end, lines)
    return None


@dataclass(frozen=True)
class Commented:
    """Comment lines written where a sequence item goes, optionally followed by the item itself."""

    text: str
    item: Any = None

    def lines(self, col: int, style: Style) -> list[str]:
        out = _comment_lines(self.text, col)
        return out if self.item is None else out + item_lines(self.item, col, style)


def _shared(root: Any) -> set[int]:
    """Ids of the nodes of a document used in more than one place (an anchor and its aliases)."""
    seen: set[int] = set()
    twice: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            twice.add(id(node))
            continue
        seen.add(id(node))
        if is_map(node):
            stack.extend(part for entry in node.value for part in entry)
        elif _is_seq(node):
            stack.extend(node.value)
    return twice


# ---------------------------------------------------------------------------------------------
# Files


def _path(repo: Path, file: str) -> Path | None:
    """`file` under `repo`, or None when it would leave it."""
    if not file or file.startswith("/") or ".." in Path(file).parts or "\\" in file:
        return None
    return repo / file


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ValueError("the file is UTF-16; devlane edits UTF-8 files only")
    return data.decode("utf-8")


def parse_text(text: str, file: str) -> list[Any]:
    return parse_documents(text.encode("utf-8"), file)


# ---------------------------------------------------------------------------------------------
# Annotations


def _object_matches(doc: Any, edit: AnnotationEdit) -> str | None:
    """Why `doc` is not the object `edit` names (None: it is)."""
    if not isinstance(doc, dict):
        return f"document {edit.index} of {edit.file} is not a mapping"
    if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        return (f"document {edit.index} of {edit.file} is a {doc['kind']}, whose items init does not edit: add the "
                f"annotations to {edit.kind}/{edit.name} in it by hand")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    ns = meta.get("namespace")
    found = (str(doc.get("kind", "")), str(meta.get("name", "")), str(ns) if ns else None)
    if found != (edit.kind, edit.name, edit.namespace):
        shown = f"{found[0]}/{found[1]}" + (f" in namespace {found[2]}" if found[2] else "")
        return f"document {edit.index} of {edit.file} is {shown}, not {edit.kind}/{edit.name}" + (
            f" in namespace {edit.namespace}" if edit.namespace else "")
    return None


def _text_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str) if isinstance(
        value, dict | list) else str(value)


def _plan_document(where: Text, root: Any, doc: dict, edits: list[AnnotationEdit], splices: Splices,
                   disagreements: list[Disagreement], skipped: list[tuple[AnnotationEdit, str]]
                   ) -> list[AnnotationEdit]:
    """Plan the edits of one document; the edits planned."""
    existing = (doc.get("metadata") or {}).get("annotations")
    existing = existing if isinstance(existing, dict) else {}
    todo: dict[str, AnnotationEdit] = {}
    for edit in edits:
        if edit.key in existing:
            old = _text_of(existing[edit.key])
            if old != edit.value:
                disagreements.append(Disagreement(edit, old))
        elif edit.key in todo:
            if todo[edit.key].value != edit.value:
                skipped.append((edit, f"another edit sets {edit.key} to {todo[edit.key].value!r}"))
        else:
            todo[edit.key] = edit
    if not todo:
        return []
    planned = list(todo.values())

    def skip(reason: str) -> list[AnnotationEdit]:
        skipped.extend((edit, f"{reason}; add the annotation by hand") for edit in planned)
        return []

    if not is_map(root):
        return skip("the document is not a mapping")
    meta = get_entry(root, "metadata")
    if meta is None:
        return skip("its metadata comes from a merge key (<<)")
    meta_key, meta_node = meta
    shared = _shared(root)
    if not is_map(meta_node) or id(meta_node) in shared or meta_node.start_mark.index < meta_key.end_mark.index:
        return skip("its metadata is an alias or an anchor used elsewhere")
    entries = [(e.key, e.value) for e in planned]
    style = _meta_style(where, root, meta_key, meta_node)
    ann = get_entry(meta_node, "annotations")
    if ann is None:
        if existing:
            return skip("its metadata.annotations come from a merge key (<<)")
        reason = add_entries(where, splices, style, meta_key, meta_node, [("annotations", dict(entries))])
    else:
        ann_key, ann_node = ann
        if id(ann_node) in shared or (ann_node.start_mark.index < ann_key.end_mark.index and not is_empty(ann_node)):
            return skip("its metadata.annotations is an alias or an anchor used elsewhere")
        if is_map(ann_node) or is_empty(ann_node):
            reason = add_entries(where, splices, style, ann_key, ann_node, entries)
        else:
            reason = "its metadata.annotations is not a mapping"
    return skip(reason) if reason else planned


def _expected(docs: list[Any], added: Iterable[AnnotationEdit]) -> list[Any]:
    out = copy.deepcopy(docs)
    for edit in added:
        meta = out[edit.index]["metadata"]
        if not isinstance(meta.get("annotations"), dict):
            meta["annotations"] = {}
        meta["annotations"][edit.key] = edit.value
    return out


def reads_as(new_text: str, file: str, expected: list[Any]) -> str | None:
    """Why `new_text` does not read as `expected` (None: it does)."""
    try:
        new = parse_text(new_text, file)
    except DevlaneError as exc:
        return f"the edited file would not parse ({exc.problems[0].message})"
    if new != expected:
        return "the edited file would not read as the old objects plus the annotation"
    return None


def _plan_file(repo: Path, file: str, edits: list[AnnotationEdit], changes: dict[str, tuple[str, str]],
               disagreements: list[Disagreement], skipped: list[tuple[AnnotationEdit, str]]) -> None:
    path = _path(repo, file)
    if path is None or not path.is_file():
        skipped.extend((e, f"{file} is not a file of the repository") for e in edits)
        return
    try:
        text = read_text(path)
        docs = parse_text(text, file)
        nodes = compose(text)
    except (OSError, ValueError, DevlaneError) as exc:
        reason = exc.problems[0].message if isinstance(exc, DevlaneError) else str(exc)
        skipped.extend((e, f"{file} cannot be read: {reason}") for e in edits)
        return
    except Exception as exc:  # ruamel.yaml's own errors: it refuses what PyYAML reads
        skipped.extend((e, f"ruamel.yaml cannot read {file}: {str(exc).splitlines()[0]}") for e in edits)
        return
    if len(nodes) != len(docs):
        skipped.extend((e, f"ruamel.yaml and PyYAML count different documents in {file}") for e in edits)
        return
    where = Text(text)
    by_doc: dict[int, list[AnnotationEdit]] = {}
    for edit in edits:
        by_doc.setdefault(edit.index, []).append(edit)
    planned: dict[int, tuple[Splices, list[AnnotationEdit]]] = {}
    for index, group in sorted(by_doc.items()):
        if not 0 <= index < len(docs):
            skipped.extend((e, f"{file} has no document {index} (it has {len(docs)})") for e in group)
            continue
        mine = []
        for edit in group:
            wrong = _object_matches(docs[index], edit)
            if wrong:
                skipped.append((edit, wrong))
            else:
                mine.append(edit)
        if not mine:
            continue
        splices = Splices()
        done = _plan_document(where, nodes[index], docs[index], mine, splices, disagreements, skipped)
        if done:
            planned[index] = (splices, done)
    if not planned:
        return
    all_splices = Splices([item for s, _ in planned.values() for item in s.items])
    new = all_splices.apply(text)
    if reads_as(new, file, _expected(docs, [e for _, done in planned.values() for e in done])) is None:
        changes[file] = (text, new)
        return
    kept: list[tuple[int, str]] = []  # one document at a time, to keep the ones that do read back
    for splices, done in planned.values():
        reason = reads_as(splices.apply(text), file, _expected(docs, done))
        if reason:
            skipped.extend((e, reason) for e in done)
        else:
            kept += splices.items
    if kept:
        changes[file] = (text, Splices(kept).apply(text))


def plan_annotations(repo: Path, edits: Sequence[AnnotationEdit]) -> EditPlan:
    """The changes that add `edits` to the manifests of `repo` (nothing is written; see `apply`)."""
    by_file: dict[str, list[AnnotationEdit]] = {}
    for edit in edits:
        by_file.setdefault(edit.file, []).append(edit)
    changes: dict[str, tuple[str, str]] = {}
    disagreements: list[Disagreement] = []
    skipped: list[tuple[AnnotationEdit, str]] = []
    for file in sorted(by_file):
        _plan_file(Path(repo), file, by_file[file], changes, disagreements, skipped)
    return EditPlan(changes, tuple(disagreements), tuple(skipped))


# ---------------------------------------------------------------------------------------------
# Showing and writing a plan


def _lines(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def unified_diff(plan: EditPlan) -> str:
    """The plan as a unified diff with git's `a/` and `b/` names, files in order."""
    out: list[str] = []
    for file in sorted(plan.changes):
        before, after = plan.changes[file]
        for line in difflib.unified_diff(_lines(before), _lines(after), f"a/{file}", f"b/{file}"):
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def apply(repo: Path, plan: EditPlan) -> list[str]:
    """Write the plan's files, all or none, never over an edit made since the plan was read: each new text is
    written to a temporary file and swapped with its file in one step (`renameat2` RENAME_EXCHANGE), then what was
    swapped out is compared with what the plan read. Anything else there (an edit made at any moment before the
    swap) is swapped back, with every file already written, and the command refuses. Where the filesystem cannot
    swap, the file is read again right before a rename over it. The files written, in order."""
    targets = []
    for file in sorted(plan.changes):
        before, after = plan.changes[file]
        path = _path(Path(repo), file)
        if path is None:
            raise fail(f"{file} is outside the repository", Where(file=file))
        _unchanged(file, path, before)
        targets.append((file, Path(os.path.realpath(path)), before, after))
    done: list[Swapped] = []
    try:
        for file, target, before, after in targets:
            done.append(_swap_in(file, target, before, after.encode("utf-8")))
    except BaseException:
        for swapped in reversed(done):  # put back what this command wrote
            with contextlib.suppress(OSError):
                swapped.undo()
        raise
    finally:
        for swapped in done:
            swapped.forget()
    return [file for file, _, _, _ in targets]


@dataclass
class Swapped:
    """One file written by `apply`: how to put its old text back, until the whole plan is written."""

    target: Path
    before: str
    old: Path | None  # the old text's file (swapped out), or None: renamed over, or a new file
    existed: bool

    def undo(self) -> None:
        if self.old is not None:
            if exchange(self.old, self.target):  # our text is now at `old`: gone with it
                os.unlink(self.old)
            else:
                os.replace(self.old, self.target)
            self.old = None
        elif self.existed:
            _replace(self.target, self.before.encode("utf-8"))
        else:
            os.unlink(self.target)

    def forget(self) -> None:
        if self.old is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.old)


def _unchanged(file: str, path: Path, before: str) -> None:
    """Refuse when `path` no longer holds `before` (the text the plan was made from; "" for a new file)."""
    try:
        current = read_text(path) if path.exists() else ""
    except (OSError, ValueError) as exc:
        raise fail(f"{file} cannot be read: {exc}", Where(file=file)) from None
    if current != before:
        raise fail(f"{file} changed since the edits were planned; nothing was written", Where(file=file),
                   hint="run the command again")


def _swap_in(file: str, target: Path, before: str, data: bytes) -> Swapped:
    """`data` in place of `target`, checked against `before` at the moment of the swap."""
    existed = target.exists()
    tmp = _staged(target, data)
    try:
        if existed and exchange(tmp, target):
            if read_text(tmp) != before:  # an edit landed since the plan: give it back untouched
                exchange(tmp, target)
                raise fail(f"{file} changed while it was being written; nothing was written", Where(file=file),
                           hint="run the command again")
            return Swapped(target, before, tmp, existed)
        _unchanged(file, target, before)
        if existed:
            os.replace(tmp, target)
        else:
            os.link(tmp, target)  # never over a file created meanwhile
            os.unlink(tmp)
        return Swapped(target, before, None, existed)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _staged(target: Path, data: bytes) -> Path:
    """`data` in a temporary file beside `target`, flushed to disk, with `target`'s mode (or the umask's)."""
    mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask()
    fd, raw = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(raw, mode)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(raw)
        raise
    return Path(raw)


def _replace(target: Path, data: bytes) -> None:
    os.replace(_staged(target, data), target)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
