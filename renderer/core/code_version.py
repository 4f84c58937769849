"""The version of the code behind a cache entry: a digest of the source of some modules of this package and of
every module of it they import, directly or not (their import closure).

A cache kind is named by the code that shapes its entries, so an upgrade, or a local edit of any module whose
work an entry holds, starts afresh instead of serving what the old code made. A hand-kept list of files drifts
(a module split in two, a helper moved); the closure follows the imports as they are written, so a module that
starts to shape an entry counts as soon as something on the way imports it.

Imports are read from the source text (every `from ... import` and `import renderer...` statement, wherever
it stands), not by importing: counting a module too many costs a cold render after editing it, never a stale
entry. Reading them costs about 3 ms per process, once per cache kind.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
from pathlib import Path

PACKAGE = "renderer"
_HOME = Path(__file__).resolve().parent.parent.parent  # the directory holding the `renderer` package
# one import statement at the start of a line: `from DOTS NAME import NAMES` (parenthesised or not), or `import X`
_STATEMENT = re.compile(r"\n[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(?:\(([^)]*)\)|([^\n]*))"
                        r"|import[ \t]+([^\n]*))")
_WORD = re.compile(r"[\w.]+")


@functools.cache
def modules(home: Path = _HOME) -> dict[str, str]:
    """Every module of this package by dotted name (a package by its `__init__.py`), with its file."""
    out: dict[str, str] = {}
    prefix = len(str(home)) + 1
    pending = [os.path.join(home, PACKAGE)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    dotted = entry.path[prefix:-3].replace(os.sep, ".")
                    out[dotted.removesuffix(".__init__")] = entry.path
    return out


def package_modules(package: str, home: Path = _HOME) -> list[str]:
    """Every module of `package` and of its sub-packages (the package itself included)."""
    return sorted(m for m in modules(home) if m == package or m.startswith(package + "."))


def imported(module: str, text: str, home: Path = _HOME) -> set[str]:
    """The modules of this package that `text`, the source of `module`, imports. A package's `__init__` counts
    where it is imported by name, not on the way to one of its modules (those only hand names on)."""
    known = modules(home)
    here = module.split(".") if known[module].endswith("__init__.py") else module.split(".")[:-1]
    found: set[str] = set()
    for dots, name, grouped, names, plain in _STATEMENT.findall("\n" + text):
        if not dots and not name:  # `import a.b, c`
            found.update(_WORD.findall(plain.split("#")[0]))
            continue
        base = here[: len(here) - len(dots) + 1] if dots else []
        target = ".".join([*base, *([name] if name else [])])
        if target in known:
            found.add(target)  # and `from package import module`: the module
            found.update(f"{target}.{word}" for word in _WORD.findall((grouped or names).split("#")[0]))
    return found & known.keys()


def closure(roots: list[str], home: Path = _HOME) -> list[str]:
    """`roots` and every module of this package they import, directly or not, sorted."""
    return sorted(_sources(roots, home))


def _sources(roots: list[str], home: Path) -> dict[str, bytes]:
    """The source of every module of `roots`' closure."""
    known = modules(home)
    seen: dict[str, bytes] = {}
    pending = [m for m in roots if m in known]
    while pending:
        module = pending.pop()
        if module not in seen:
            with open(known[module], "rb") as f:
                seen[module] = f.read()
            pending += imported(module, seen[module].decode(), home) - seen.keys()
    return seen


def digest(roots: list[str], home: Path = _HOME) -> str:
    """16 hex digits naming the source of `roots`' closure. Source that cannot be read (an install without it)
    gives a digest of this process alone: entries are then never shared, rather than maybe stale."""
    h = hashlib.blake2b(digest_size=8)
    try:
        sources = _sources(roots, home)
        for module in sorted(sources):
            h.update(module.encode() + b"\0" + sources[module] + b"\0")
    except (OSError, UnicodeDecodeError):
        h.update(secrets.token_bytes(16))
    return h.hexdigest()


@functools.cache
def of_packages(*packages: str) -> str:
    """The digest of every module of `packages` (dotted names) and of all they import: a module added to one of
    them counts without anyone listing it."""
    return digest([m for p in packages for m in package_modules(p)])


@functools.cache
def of_modules(*names: str) -> str:
    """The digest of the modules `names` (dotted) and of all they import."""
    return digest(list(names))
