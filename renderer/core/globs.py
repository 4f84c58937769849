"""Gitignore-like globs (`**`, `*`, `?`) over posix paths, for `manifests:` and `exclude:`."""

from __future__ import annotations

import re
from functools import cache


@cache
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Translate a glob into a regex over posix paths."""
    pattern = pattern[2:] if pattern.startswith("./") else pattern
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(path: str, patterns: list[str] | tuple[str, ...]) -> bool:
    return _any_of(tuple(patterns)).match(path) is not None


@cache
def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for a list of globs (a walk tests thousands of paths against the same few)."""
    if not patterns:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{compile_glob(p).pattern})" for p in patterns))


def dir_excluded(rel_dir: str, excludes: list[str]) -> bool:
    """True when a whole directory is excluded (pattern `dir/**` or `dir/`)."""
    for pattern in excludes:
        p = pattern[2:] if pattern.startswith("./") else pattern
        if p.endswith("/**"):
            p = p[:-3]
        elif p.endswith("/"):
            p = p[:-1]
        else:
            continue
        if compile_glob(p).match(rel_dir):
            return True
    return False
