"""The line of each key of a small YAML file (`.devlane.yaml`), so an error about a setting names the line the
user edits: `.devlane.yaml:14, services.orders.dependencies`.

Why a pass of its own: the parse that builds the config drops positions (the C loader builds plain objects, the
hot path's way); a file of a few hundred lines is composed again only when a problem needs a line.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import yaml
from yaml.nodes import MappingNode, SequenceNode

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Path = tuple[str | int, ...]


@lru_cache(maxsize=8)
def key_lines(data: bytes) -> dict[Path, int]:
    """1-based line of every mapping key and sequence item, by its path from the root (`("services", "orders",
    "dependencies")`, `("pipeline", 0)`); empty for a file that does not compose (its parse says why)."""
    try:
        root = yaml.compose(data, Loader=_Loader)
    except (yaml.YAMLError, RecursionError, ValueError):
        return {}
    lines: dict[Path, int] = {}
    stack: list[tuple[Path, Any]] = [((), root)] if root is not None else []
    seen: set[int] = set()  # an aliased node is walked once (and a recursive alias ends)
    while stack:
        path, node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for key, value in node.value:
                if isinstance(key.value, str):
                    here = (*path, key.value)
                    lines.setdefault(here, key.start_mark.line + 1)
                    stack.append((here, value))
        elif isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                here = (*path, i)
                lines.setdefault(here, item.start_mark.line + 1)
                stack.append((here, item))
    return lines


def line_of(data: bytes | None, path: Path) -> int | None:
    """The line of `path`, or of its nearest ancestor the file has (None without a file)."""
    if not data:
        return None
    lines = key_lines(data)
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None
