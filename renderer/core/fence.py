"""The fence around what a repository may name: every path it gives (a Helm chart or values file, a kustomize
resource, base, patch or generator file, an `inputs:` path, a plugin source) must resolve, symlinks followed,
inside the repository, or inside a directory the operator allows (`--allow-path`, `$DEVLANE_ALLOW_PATHS`: a
monorepo's shared bases beside the repository), never one the repository allows itself.

A pull request controls the repository's files, so a path like `../../home/.kube/config`, an absolute path or a
symlink to one is how it would make a build read the credentials of the machine that renders it (the class of
Argo CD's CVE-2022-24348). `Fence.resolve` refuses such a path with one error naming the field and the path;
`Fence.escaping_link` finds a symlink inside a directory that points out of the fence.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import Where, fail

ALLOW_ENV = "DEVLANE_ALLOW_PATHS"
HINT = (f"keep it inside the repository; the operator (never the repository) may allow a directory beside it with "
        f"--allow-path DIR or ${ALLOW_ENV}")


def operator_dirs(flags: Iterable[str] = ()) -> tuple[str, ...]:
    """The real paths of the directories the operator allows: `--allow-path` flags, then `$DEVLANE_ALLOW_PATHS`
    (os.pathsep-separated); ones that do not exist are left out."""
    raw = [os.path.expanduser(p) for p in (*flags, *os.environ.get(ALLOW_ENV, "").split(os.pathsep)) if p]
    return tuple(dict.fromkeys(os.path.realpath(p) for p in raw if os.path.isdir(p)))


@dataclass(frozen=True)
class Fence:
    """The repository (its real path first) and the directories the operator allows beside it."""

    roots: tuple[str, ...]

    @classmethod
    def around(cls, repository: str | Path, allowed: Iterable[str] = ()) -> Fence:
        return cls((os.path.realpath(repository), *(a for a in allowed if a)))

    @property
    def repository(self) -> str:
        return self.roots[0]

    def contains(self, real: str) -> bool:
        return any(real == r or real.startswith(r.rstrip("/") + "/") for r in self.roots)

    def resolve(self, path: str | Path, what: str, where: Where) -> str:
        """The real path of `path` (relative paths are relative to the current directory: join them first),
        which must lie inside the fence; else one error naming `what` (the field) and the path."""
        real = os.path.realpath(path)
        if not self.contains(real):
            raise fail(f"{what} resolves to {real}, outside the repository ({self.repository})", where, HINT,
                       code="outside-repository")
        return real

    def escaping_link(self, directory: str | Path) -> tuple[str, str] | None:
        """(link, where it resolves) of the first symlink under `directory` (walked without following links) that
        leads out of the fence, in a stable order; None when every link stays inside."""
        for dirpath, dirnames, filenames in os.walk(directory):
            dirnames.sort()
            for name in [*sorted(filenames), *dirnames]:
                full = os.path.join(dirpath, name)
                if os.path.islink(full):
                    real = os.path.realpath(full)
                    if not self.contains(real):
                        return full, real
        return None

    def check_links(self, directory: str | Path, what: str, where: Where) -> None:
        """Refuse a directory holding a symlink that leads out of the fence."""
        found = self.escaping_link(directory)
        if found is not None:
            link, real = found
            rel = os.path.relpath(link, self.repository)
            raise fail(f"{what}: the symlink {rel} resolves to {real}, outside the repository ({self.repository})",
                       where, "replace the link by the file it names, or point it inside the repository",
                       code="outside-repository")


def inside(fence: Fence, base: str | Path, entry: str, what: str, where: Where) -> str:
    """`entry` as `base` names it (relative to `base`, or absolute), resolved within `fence`."""
    return fence.resolve(os.path.join(base, entry), what, where)
