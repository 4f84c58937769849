"""A plugin's reply, parsed within limits: the bytes are untrusted, like every input devlane reads.

- A YAML reply is parsed exactly as an input file is (`core.yamlio.parse_documents`, bounded by
  `core.yamlbounds` before the C parser sees it: depth, node count after alias expansion, duplicate
  keys): an alias bomb or a 100,000-deep reply is one clear error, never a segfault, a
  `RecursionError` or gigabytes of copies later on.
- A JSON reply (what the SDKs write) goes to the C decoder, whose recursion is guarded; its duplicate
  keys are refused too; the tree is then walked once, iteratively, for depth, node count and string size.
- `object_bytes` measures one returned object as it will be written, for the per-object limit.

The whole reply is already capped at `MAX_MESSAGE_BYTES` by every transport. These limits are the
reply's own additions to the input limits (field, object and object-count sizes).
"""

from __future__ import annotations

import json
from typing import Any

from ..core.yamlbounds import MAX_DEPTH, MAX_NODES
from ..core.yamlio import parse_documents
from ..errors import DevlaneError
from ..protocol.krm import MAX_MESSAGE_BYTES

MAX_FIELD_BYTES = 1024 * 1024  # one string (key or value): a ConfigMap's whole data may not exceed 1 MiB
MAX_OBJECT_BYTES = 3 * 512 * 1024  # one returned object, as JSON: 1.5 MiB, the largest object etcd stores
MAX_NEW_OBJECTS = 1000  # objects one reply may add

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
        docs = parse_documents(data, "the reply")  # the same bounds as every input file, before the C parser
    except DevlaneError as exc:
        p = exc.problems[0]
        if p.code == "yaml" and p.message.startswith("invalid YAML"):
            raise ValueError(p.message.removeprefix("invalid YAML: ") + (f" (line {p.where.line})" if p.where.line
                                                                        else "")) from None
        raise ReplyLimit("is refused: " + p.message + (f" (line {p.where.line})" if p.where.line else ""),
                         p.hint or "") from None
    if len(docs) != 1:
        raise ValueError(f"one document expected, found {len(docs)}")
    check_tree(docs[0])
    return docs[0]


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


def check_tree(doc: Any) -> None:
    """Depth, node count and string sizes of parsed data, walked iteratively (shared nodes counted each time)."""
    nodes = text = 0
    stack: list[tuple[Any, int, tuple | None]] = [(doc, 0, None)]  # (value, depth, path as (parent, key))
    while stack:
        value, depth, path = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise ReplyLimit(f"holds more than {MAX_NODES:,} values", "return fewer or smaller objects")
        if isinstance(value, str):
            text += len(value)
            if text > MAX_MESSAGE_BYTES:  # only aliases repeating one long string get here (the reply is capped)
                raise ReplyLimit(f"expands past {MAX_MESSAGE_BYTES // 2**20} MiB of text through YAML aliases",
                                 "return plain data, without repeated aliases")
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
