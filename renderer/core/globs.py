"""Globs over posix paths: `manifests:` (which files are inputs: `**`, `*`, `?`) and `exclude:` (which are not,
with `.gitignore`'s own rules).

Why `.gitignore` for `exclude:`: users write exclusions as they write ignore files (`*.draft.yaml` at any depth,
`scratch/` for a directory anywhere, `/top.yaml` at the root only, `!keep.yaml` to take one back), and pathspec
implements git's matching, edge cases included, better than a translation of our own would.
"""

from __future__ import annotations

import re
from functools import cache

import pathspec


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


def excluded(path: str, excludes: list[str] | tuple[str, ...]) -> bool:
    """Whether `exclude:` leaves out the file `path`, as `.gitignore` lines would."""
    return bool(excludes) and _ignore_spec(tuple(excludes)).match_file(path)


def dir_excluded(rel_dir: str, excludes: list[str] | tuple[str, ...]) -> bool:
    """Whether `exclude:` leaves out the whole directory `rel_dir` (`dir/`, `dir/**`, `dir`, `/dir`...): nothing under
    it is listed, as git does not descend into an ignored directory."""
    return bool(excludes) and _ignore_spec(tuple(excludes)).match_file(rel_dir + "/")


@cache
def _ignore_spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    """`.gitignore` lines; `./x` (which devlane took before it read them as git does) is `/x`, rooted."""
    return pathspec.GitIgnoreSpec.from_lines("/" + p[2:] if p.startswith("./") else p for p in patterns)
