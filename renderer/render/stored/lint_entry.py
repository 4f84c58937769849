"""A lint's findings, stored under the exact bytes they were found in: the sha256 of every input file, the config
as read and as the trusted policy left it, the routing and isolation asked for, and the code that found them.

Linting an unchanged repository again (the next CI job on the same commit, an editor's re-run, the Argo CD plugin's
refresh) reads the findings back instead of parsing, modelling and checking every object again; any byte of any of
those changing is another key, so an entry can be missing or old but never wrong for the bytes it is found under.
What depends on more than those bytes is not stored: whether each plugin definition's sources resolve (a plugin's
directory, the lock file, the operator's plugin sources) is asked again on every run, from the stored definitions.
Only repositories read as plain YAML have an entry: a kustomize or Helm input's build reads more than its files.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ...core import code_version
from ...core.cache import Cache, Uncacheable, encode
from ...core.version import VERSION
from ...errors import Problem, Where

FINDERS = ("renderer.linting",)  # the lint and everything it imports: an edit of any module on the way starts afresh


@functools.cache
def cache_kind() -> str:
    digest = hashlib.blake2b(f"{VERSION}\0{code_version.of_modules(*FINDERS)}".encode(), digest_size=8)
    return f"lint-{digest.hexdigest()}"


@dataclass(frozen=True)
class Findings:
    """What lint found: the problems before and after those of unresolvable plugin sources (kept in their order),
    and each plugin definition, where it is defined with the names of its candidate sources."""

    before: list[Problem]
    plugins: list[tuple[Where, list[str]]]
    after: list[Problem]

    def encoded(self) -> bytes | None:
        try:
            return encode({"before": [p.as_row() for p in self.before], "after": [p.as_row() for p in self.after],
                           "plugins": [[vars(where), names] for where, names in self.plugins]})
        except Uncacheable:
            return None

    @classmethod
    def decoded(cls, found: Any) -> Findings | None:
        """The findings of a stored entry; None for one of another form (damaged, or from other code)."""
        try:
            return cls([Problem.from_row(r) for r in found["before"]],
                       [(Where(**where), [str(n) for n in names]) for where, names in found["plugins"]],
                       [Problem.from_row(r) for r in found["after"]])
        except (TypeError, KeyError, ValueError):
            return None


def key(files: dict[str, str], config_raw: bytes | None, config: Any, options: dict[str, Any]) -> str:
    """The key of the findings for these inputs (`files`: path -> sha256 of the content), config and options."""
    doc = {"files": files, "raw": hashlib.sha256(config_raw or b"").hexdigest(),
           "config": dataclasses.asdict(config) if dataclasses.is_dataclass(config) else config, "options": options}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=_canonical).encode()).hexdigest()


def _canonical(value: Any) -> Any:
    """Sets as sorted lists (their iteration order changes from one process to the next), anything else as text."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return repr(value)


def read(cache: Cache, entry_key: str) -> Findings | None:
    found = cache.get(cache_kind(), entry_key)
    return Findings.decoded(found) if isinstance(found, dict) else None


def write(cache: Cache, entry_key: str, findings: Findings) -> None:
    payload = findings.encoded()
    if payload is not None:
        cache.put_raw(cache_kind(), entry_key, payload)
