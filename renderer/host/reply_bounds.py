"""A plugin's reply, parsed within limits: the bytes are untrusted, like every input devlane reads.

- A YAML reply is first read as libyaml events (an iterative parser) to bound its nesting depth, its
  size after alias expansion (nodes and bytes) and to refuse duplicate mapping keys, *before* the
  recursive composer sees it: an alias bomb or a 100,000-deep reply is one clear error, never a
  segfault, a `RecursionError` or gigabytes of copies later on.
- A JSON reply (what the SDKs write) goes to the C decoder, whose recursion is guarded; its duplicate
  keys are refused too; the tree is then walked once, iteratively, for depth, node count and string size.
- `object_bytes` measures one returned object as it will be written, for the per-object limit.

The whole reply is already capped at `MAX_MESSAGE_BYTES` by every transport. These limits are the
reply's counterpart of the input limits of `core.yamlio` (to be unified with them).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from ..protocol.krm import MAX_MESSAGE_BYTES

MAX_DEPTH = 200  # nested mappings and lists; Kubernetes objects stay far below
MAX_NODES = 1_000_000  # nodes after alias expansion
MAX_FIELD_BYTES = 1024 * 1024  # one string (key or value): a ConfigMap's whole data may not exceed 1 MiB
MAX_OBJECT_BYTES = 3 * 512 * 1024  # one returned object, as JSON: 1.5 MiB, the largest object etcd stores
MAX_NEW_OBJECTS = 1000  # objects one reply may add

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVER = yaml.resolver.Resolver()
_MERGE = "tag:yaml.org,2002:merge"
_DEPTH_HINT = f"return objects nested at most {MAX_DEPTH} levels"


class ReplyLimit(ValueError):
    """The reply breaks a limit. The message is a predicate ("is nested more than ...") that the caller puts
    after what it read ("the reply", "the plugin state") and the plugin's name."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.message = message
        self.hint = hint


def load_reply(data: bytes) -> Any:
    """The reply as data (JSON, else YAML as kyaml-based functions answer), every limit checked.

    Raises `ReplyLimit` for a limit, `ValueError` (with the parser's message) for text that is neither.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:
        try:
            return load_json(text)
        except json.JSONDecodeError:
            pass
    try:
        _scan_yaml(data)
        doc = yaml.load(data, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None
    check_tree(doc)
    return doc


def load_json(text: str) -> Any:
    """One JSON text within the limits (a plugin's state travels as a JSON string inside the reply)."""
    if not isinstance(text, str):
        raise TypeError("not a string")
    try:
        doc = json.loads(text, object_pairs_hook=_json_object)
    except RecursionError:
        raise ReplyLimit(f"is nested more than {MAX_DEPTH} levels deep", _DEPTH_HINT) from None
    check_tree(doc)
    return doc


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dupe = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ReplyLimit(f"repeats the key {dupe!r} in one object",
                         "write each key once (kubectl refuses duplicate keys; which one wins is undefined)")
    return out


class _Frame:
    """One open mapping or list while scanning YAML events: its expanded size so far, and its keys."""

    __slots__ = ("anchor", "at_key", "keys", "nodes", "size")

    def __init__(self, anchor: str | None, mapping: bool):
        self.nodes, self.size, self.anchor = 1, 0, anchor
        self.keys: set | None = set() if mapping else None
        self.at_key = mapping


def _scan_yaml(data: bytes) -> None:
    """Depth, expanded size and duplicate keys from the event stream (no tree is built)."""
    frames: list[_Frame] = []
    anchors: dict[str, tuple[int, int]] = {}
    total = [0, 0]

    def add(nodes: int, size: int, line: int) -> None:
        target = frames[-1] if frames else None
        if target is None:
            total[0] += nodes
            total[1] += size
            counted = total
        else:
            target.nodes += nodes
            target.size += size
            if target.keys is not None:
                target.at_key = not target.at_key
            counted = [target.nodes, target.size]
        if counted[0] > MAX_NODES or counted[1] > MAX_MESSAGE_BYTES:
            raise ReplyLimit(f"expands past {MAX_NODES:,} nodes or {MAX_MESSAGE_BYTES // 2**20} MiB through "
                             f"YAML aliases (line {line}; an alias bomb?)",
                             "return plain data, without repeated aliases")

    for event in yaml.parse(data, Loader=_Loader):
        line = event.start_mark.line + 1 if event.start_mark else 0
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(frames) >= MAX_DEPTH:
                raise ReplyLimit(f"is nested more than {MAX_DEPTH} levels deep (line {line})", _DEPTH_HINT)
            frames.append(_Frame(event.anchor, isinstance(event, yaml.MappingStartEvent)))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frame = frames.pop()
            if frame.anchor:
                anchors[frame.anchor] = (frame.nodes, frame.size)
            add(frame.nodes, frame.size, line)
        elif isinstance(event, yaml.ScalarEvent):
            parent = frames[-1] if frames else None
            if parent is not None and parent.keys is not None and parent.at_key:
                tag = event.tag or _RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)
                if tag != _MERGE:
                    if (tag, event.value) in parent.keys:
                        raise ReplyLimit(f"repeats the key {event.value!r} in one mapping (line {line})",
                                         "write each key once (kubectl refuses duplicate keys)")
                    parent.keys.add((tag, event.value))
            if event.anchor:
                anchors[event.anchor] = (1, len(event.value))
            add(1, len(event.value), line)
        elif isinstance(event, yaml.AliasEvent):
            add(*anchors.get(event.anchor, (1, 0)), line)


def check_tree(doc: Any) -> None:
    """Depth, node count and string sizes of parsed data, walked iteratively (shared nodes counted each time)."""
    nodes = 0
    stack: list[tuple[Any, int, tuple | None]] = [(doc, 0, None)]  # (value, depth, path as (parent, key))
    while stack:
        value, depth, path = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise ReplyLimit(f"holds more than {MAX_NODES:,} values", "return fewer or smaller objects")
        if isinstance(value, str):
            if len(value) > MAX_FIELD_BYTES // 4 and len(value.encode("utf-8")) > MAX_FIELD_BYTES:
                raise ReplyLimit(f"has a field of {len(value.encode('utf-8')):,} bytes at {path_text(path)}, more "
                                 f"than the {MAX_FIELD_BYTES // 1024:,} KiB a field may hold",
                                 "keep large data out of the reply (a Kubernetes object cannot hold it either)")
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth >= MAX_DEPTH:
            raise ReplyLimit(f"is nested more than {MAX_DEPTH} levels deep (at {path_text(path)})",
                             _DEPTH_HINT)
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in pairs:
            if isinstance(key, str):
                stack.append((key, depth + 1, (path, key)))
            stack.append((child, depth + 1, (path, key)))


def path_text(path: tuple | None) -> str:
    """`items[2].data.seed` from the linked (parent, key) path of `check_tree`."""
    parts: list[str] = []
    while path is not None:
        path, key = path
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    text = "".join(reversed(parts)).lstrip(".")
    return text or "the top level"


def object_bytes(obj: Any) -> int:
    """One object's size as JSON (how large it is for the API server)."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8"))
