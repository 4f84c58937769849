"""Checks of a round-trip edit (`renderer.authoring.yamledit`): the old text is all there, byte for byte, with
only insertions; and the new text reads as the old objects plus the additions."""

from __future__ import annotations

import copy
import difflib
import re
from typing import Any

from renderer.core.yamlio import parse_documents


def lines(text: str) -> list[str]:
    """Lines with their own line breaks (a missing final break stays missing)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+$", text)


def only_insertions(before: str, after: str) -> list[str]:
    """The lines `after` adds to `before`; fails when any byte of `before` changed or went. A line of
    `before` may only grow by one insertion (a flow entry, a line break before new lines at the end)."""
    old, new = lines(before), lines(after)
    added: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        assert op in ("insert", "replace"), f"lines {i1 + 1}-{i2} of the old text were deleted"
        if op == "replace" and i2 - i1 == j2 - j1:  # lines that each grew
            pairs = list(zip(old[i1:i2], new[j1:j2], strict=True))
        else:
            assert i2 - i1 <= 1, f"lines {i1 + 1}-{i2} of the old text changed: {old[i1:i2]!r} -> {new[j1:j2]!r}"
            pairs = [("".join(old[i1:i2]), "".join(new[j1:j2]))]
        for gone, came in pairs:
            prefix = len(_common_prefix(gone, came))
            assert len(came) >= len(gone) and came.endswith(gone[prefix:]), (
                f"line {i1 + 1} changed beyond an insertion: {gone!r} -> {came!r}")
        added += new[j1:j2]
    return added


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def with_annotations(docs: list[Any], added: dict[int, dict[str, str]]) -> list[Any]:
    out = copy.deepcopy(docs)
    for index, more in added.items():
        meta = out[index]["metadata"]
        if not isinstance(meta.get("annotations"), dict):
            meta["annotations"] = {}
        meta["annotations"].update(more)
    return out


def check_annotated(before: str, after: str, added: dict[int, dict[str, str]], file: str = "f.yaml") -> None:
    """`after` is `before` with only insertions, and reads as its documents plus the `added` annotations
    (document index -> key -> value)."""
    only_insertions(before, after)
    old = parse_documents(before.encode(), file)
    assert parse_documents(after.encode(), file) == with_annotations(old, added)
