"""YAML in and out.

Parsing goes through PyYAML's C loader (`CSafeLoader`): it is the hot path of every render.
Dumping is canonical (fixed key order for the top of an object, literal blocks for multi-line
text, no line folding) so that the same objects always give the same bytes.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

try:  # pragma: no cover - the C loader is required in practice, the fallback keeps dev setups working
    _Loader = yaml.CSafeLoader
    _Dumper = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader  # type: ignore[misc]
    _Dumper = yaml.SafeDumper  # type: ignore[misc]

from ..errors import Where, fail

# An anchor definition (`&name`) is the precondition for an alias bomb; files without one skip the check.
_ANCHOR = re.compile(rb"(?:^|[\s,\[{:-])&[^\s,\[\]{}]")
MAX_EXPANDED_NODES = 1_000_000


def parse_documents(data: bytes, file: str) -> list[Any]:
    """Parse a multi-document YAML file; errors name the file and line."""
    try:
        docs = list(yaml.load_all(data, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise fail(f"invalid YAML: {problem}", Where(file=file, line=line),
                   hint="fix the YAML syntax, or exclude the file with `exclude:` in .devlane.yaml",
                   code="yaml") from None
    except yaml.YAMLError as exc:
        raise fail(f"invalid YAML: {exc}", Where(file=file), code="yaml") from None
    except RecursionError:
        raise fail("YAML nesting is too deep", Where(file=file), code="yaml") from None
    if b"&" in data and _ANCHOR.search(data):
        for index, doc in enumerate(docs):
            check_expansion(doc, Where(file=file, document=index))
    return docs


def check_expansion(doc: Any, where: Where, limit: int = MAX_EXPANDED_NODES) -> None:
    """Refuse documents whose aliases expand past `limit` nodes (the "billion laughs" attack).

    PyYAML shares aliased nodes, so parsing is cheap; copying or dumping would not be.
    Sizes are memoised per object identity, so the walk is linear in the unique nodes.
    """
    sizes: dict[int, int] = {}

    def size(node: Any, depth: int = 0) -> int:
        if depth > 200:
            raise fail("YAML document is nested too deeply", where, code="yaml")
        if isinstance(node, dict):
            items: Any = node.items()
        elif isinstance(node, list):
            items = ((None, v) for v in node)
        else:
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        total = 1
        for k, v in items:
            total += size(k, depth + 1) + size(v, depth + 1)
            if total > limit:
                raise fail(f"YAML document expands to more than {limit:,} nodes through aliases (an alias bomb?)",
                           where, hint="remove the repeated aliases or exclude the file", code="yaml")
        sizes[key] = total
        return total

    size(doc)


def load_one(data: bytes | str, file: str) -> Any:
    """Parse a file that must hold exactly one document (config, flow, template args)."""
    if isinstance(data, str):
        data = data.encode()
    docs = [d for d in parse_documents(data, file) if d is not None]
    if len(docs) != 1:
        raise fail(f"expected exactly one YAML document, found {len(docs)}", Where(file=file), code="yaml")
    return docs[0]


# ---------------------------------------------------------------------------------------------
# Canonical dumping

_TOP_ORDER = ("apiVersion", "kind", "metadata", "spec", "data", "stringData")


class _Dumper_(_Dumper):  # type: ignore[misc,valid-type]
    """Dumper with literal blocks for multi-line strings."""


def _str_representer(dumper: yaml.Dumper, value: str) -> yaml.Node:
    if "\n" in value and not _has_trailing_space_lines(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _has_trailing_space_lines(value: str) -> bool:
    # libyaml refuses literal style for lines with trailing spaces or tabs; fall back to quoted.
    return any(line != line.rstrip(" \t") for line in value.split("\n")) or "\t" in value


_Dumper_.add_representer(str, _str_representer)


def canonical(obj: dict) -> dict:
    """Reorder the top-level keys of a Kubernetes object into the conventional order."""
    head = {k: obj[k] for k in _TOP_ORDER if k in obj}
    head.update((k, v) for k, v in obj.items() if k not in head)
    return head


def dump(obj: Any) -> str:
    """Dump one object as canonical YAML text."""
    if isinstance(obj, dict):
        obj = canonical(obj)
    return yaml.dump(obj, Dumper=_Dumper_, sort_keys=False, default_flow_style=False, allow_unicode=True,
                     width=1_000_000, indent=2)
