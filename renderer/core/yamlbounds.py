"""Bounds on a YAML document's shape, checked before the C parser builds it, and after for aliases.

libyaml's composer (under PyYAML's `CSafeLoader`) recurses once per nesting level in C, so about
25,000 levels overflow the C stack (a segfault, no message), and far fewer break the recursive
Python that later copies and dumps objects. So no document deeper than `MAX_DEPTH` or larger than
`MAX_NODES` reaches it.

Checking every document exactly would cost a second parse, so a linear scan at C speed
(`bytes.count`, one regular expression) first computes an upper bound that holds for any YAML:

- block collections nest only by starting further right, two levels per column at most (a mapping
  and the sequence indented level with its keys), and what precedes one on its line can only be
  spaces and the indicators `- `, `? `, `: `; so no line prefix of those of `_COLUMNS` characters
  bounds block nesting by `2 * _COLUMNS`;
- flow collections nest only through `[` and `{` (two levels each, for `[a: [b]]`'s implied
  mappings), and never span a `---` line; so the brackets of a document bound the flow nesting;
- a node takes at least half a byte of text, so the document's size bounds its nodes.

Only a document whose bound is over the limits (unusually indented, hundreds of brackets, or over
500 KB) is checked exactly, by walking libyaml's event stream, which does not recurse; that check
names the line. Aliases are expanded only after parsing (PyYAML shares aliased nodes), so
`check_aliases` bounds their expansion (and refuses recursive ones) on the built objects.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from ..errors import DevlaneError, Where, fail

MAX_DEPTH = 200  # nesting levels of one document (real manifests, CRDs included, stay under 80)
MAX_NODES = 1_000_000  # nodes of one document, aliases expanded
_COLUMNS = (MAX_DEPTH - 2) // 4  # line prefixes shorter than this keep block nesting under MAX_DEPTH / 2
_MAX_BRACKETS = (MAX_DEPTH - 2 * _COLUMNS - 1) // 2  # flow collections opened in one document
_MAX_FAST_BYTES = (MAX_NODES - 1) // 2  # a document this small cannot hold MAX_NODES nodes
# Line starts (libyaml breaks lines at LF, CR, NEL, LS and PS, and skips a BOM at a line start: the last bytes
# of those in UTF-8) become LF and prefix characters a space, so one `find` looks for a long prefix.
_PREFIXES = bytes.maketrans(b"\r\x85\xa8\xa9\xbf\t?:-", b"\n\n\n\n\n    ")
_DEEP_PREFIX = b"\n" + b" " * _COLUMNS
_DOCUMENT_START = re.compile(rb"\n---(?=[ \t\r\n]|\Z)")
_HINT = "flatten the document, or exclude the file with `exclude:` in .devlane.yaml"
# libyaml 0.2.6 (in PyYAML 6.0.4's wheels) stops at its own nesting limit, 1,000 by default. Its scanner reads up to
# 1,024 characters of one line ahead of the events (a flow collection may start a simple key), so on `[[[[...` it
# can stop before the event that crosses MAX_DEPTH reaches `check_shape`: the same line, reported as devlane's bound.
_PARSER_DEPTH = re.compile(r"maximum nesting depth|nesting (?:depth|level)", re.IGNORECASE)
_set_level = getattr(getattr(yaml, "_yaml", None), "_set_max_nest_level", None)
_get_level = getattr(getattr(yaml, "_yaml", None), "_get_max_nest_level", None)
if _set_level and _get_level and 0 <= _get_level() < MAX_DEPTH:  # a parser stricter than the bound devlane promises
    _set_level(MAX_DEPTH)


def check_shape(data: bytes, file: str, loader: type) -> None:
    """Refuse, naming the line, a YAML stream with a document nested deeper than `MAX_DEPTH` or with
    more than `MAX_NODES` nodes, before any node is built."""
    if not _may_exceed(data):
        return
    depth = nodes = 0
    try:
        for event in yaml.parse(data, Loader=loader):  # events only: libyaml's parser keeps its own stack
            if isinstance(event, yaml.DocumentStartEvent):
                nodes = 0
            elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.CollectionStartEvent)):
                nodes += 1
                if isinstance(event, yaml.CollectionStartEvent):
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise _too_deep(file, event.start_mark)
                if nodes > MAX_NODES:
                    raise fail(f"YAML document has more than {MAX_NODES:,} nodes", _where(file, event.start_mark),
                               _HINT, code="yaml")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        if _PARSER_DEPTH.search(f"{exc.problem} {exc.context}"):
            raise _too_deep(file, exc.problem_mark or exc.context_mark) from None
        raise


def _too_deep(file: str, mark: yaml.Mark | None) -> DevlaneError:
    return fail(f"YAML nesting is deeper than {MAX_DEPTH} levels", _where(file, mark), _HINT, code="yaml")


def _where(file: str, mark: yaml.Mark | None) -> Where:
    return Where(file=file, line=mark.line + 1 if mark else None)


def _may_exceed(data: bytes) -> bool:
    """False when the text alone proves every document within the limits (see the module docstring)."""
    if _DEEP_PREFIX in (b"\n" + data).translate(_PREFIXES):
        return True
    if len(data) <= _MAX_FAST_BYTES and data.count(b"[") + data.count(b"{") <= _MAX_BRACKETS:
        return False
    return any(len(doc) > _MAX_FAST_BYTES or doc.count(b"[") + doc.count(b"{") > _MAX_BRACKETS
               for doc in _DOCUMENT_START.split(data))


def check_aliases(doc: Any, where: Where) -> None:
    """Refuse a document whose aliases expand past `MAX_NODES` nodes (the "billion laughs"), nest it deeper
    than `MAX_DEPTH`, or make it contain itself.

    PyYAML shares aliased objects, so parsing such a document is cheap; copying, dumping or sending it to
    a plugin would not be. Sizes and heights are memoised per object and computed without recursion.
    """
    if not isinstance(doc, (dict, list)):
        return
    done: dict[int, tuple[int, int]] = {}  # id -> (expanded nodes, height)
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, ready = stack.pop()
        key = id(node)
        children = node.values() if isinstance(node, dict) else node
        if ready:
            active.discard(key)
            size, height = len(node) if isinstance(node, dict) else 0, 0  # a mapping's keys are nodes too
            for child in children:
                s, h = done.get(id(child), (1, 0))
                size, height = size + s, max(height, h)
            done[key] = (size + 1, height + 1)
            if size + 1 > MAX_NODES:
                raise fail(f"YAML aliases expand the document past {MAX_NODES:,} nodes (an alias bomb?)", where,
                           "remove the repeated aliases, or exclude the file", code="yaml")
            if height + 1 > MAX_DEPTH:
                raise fail(f"YAML aliases nest the document deeper than {MAX_DEPTH} levels", where, _HINT,
                           code="yaml")
            continue
        if key in done:
            continue
        if key in active:
            raise fail("a YAML alias refers to a collection that contains it (a recursive document)", where,
                       "replace the alias by a copy of what it names", code="yaml")
        active.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children
                     if isinstance(child, (dict, list)) and id(child) not in done)
