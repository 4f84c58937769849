"""Globs over posix paths: `manifests:` (which files are inputs: `**`, `*`, `?`) and `exclude:` (which are not,
with `.gitignore`'s own rules).

Why `.gitignore` for `exclude:`: users write exclusions as they write ignore files (`*.draft.yaml` at any depth,
`scratch/` for a directory anywhere, `/top.yaml` at the root only, `!keep.yaml` to take one back), and pathspec
implements git's matching, edge cases included, better than a translation of our own would.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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
    return bool(excludes) and _ignored(tuple(excludes))(path)


def dir_excluded(rel_dir: str, excludes: list[str] | tuple[str, ...]) -> bool:
    """Whether `exclude:` leaves out the whole directory `rel_dir` (`dir/`, `dir/**`, `dir`, `/dir`...): nothing under
    it is listed, as git does not descend into an ignored directory."""
    return bool(excludes) and _ignored(tuple(excludes))(rel_dir + "/")


_GROUP_NAME = re.compile(r"\(\?P<\w+>")


@cache
def _ignored(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """The test of a path against `.gitignore` lines; `./x` (which devlane took before it read them as git does) is
    `/x`, rooted.

    Without a negation (`!keep.yaml`), a path is ignored when any line matches it, so pathspec's own regexes joined
    into one decide in one match: a listing tests every file of the repository against the same few lines (the
    output directory and devlane's own always among them), and pathspec tries them one by one. With a negation, the
    order and kind of the lines that match decide (git's rules), and pathspec does."""
    spec = pathspec.GitIgnoreSpec.from_lines("/" + p[2:] if p.startswith("./") else p for p in patterns)
    lines = [p for p in spec.patterns if p.include is not None]
    if any(not p.include for p in lines):
        return spec.match_file
    if not lines:
        return lambda _path: False
    # the directory mark's named group recurs in every line: one regex cannot name it twice (and none reads it here)
    joined = re.compile("|".join(f"(?:{_GROUP_NAME.sub('(?:', p.regex.pattern)})" for p in lines))
    return lambda path: joined.match(path) is not None
