"""The plugin cache: bare git mirrors, exported plugin trees and prepared virtualenvs.

Layout under ``$DEVLANE_CACHE`` (default ``$XDG_CACHE_HOME/devlane``, else ``~/.cache/devlane``)::

    git/<sha256(url)[:16]>.git   bare mirror of one plugin repository (branches, tags, pinned commits)
    plugins/<commit>/            the tree of a locked commit, exported by `devlane plugins fetch`
    venvs/<requirements-hash>/   virtualenv built by `devlane plugins prepare`
    v1/                          parses and builds (`core/cache.py`), which `devlane cache clear` empties

Only `devlane plugins lock` and `fetch` talk to git remotes (through GitPython). Render reads
``plugins/`` and ``venvs/`` and nothing else, so it stays offline. Every entry appears atomically: a
tree is exported into a temporary directory and renamed into place, so a directory under
``plugins/`` is always complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from ...core.cache import CACHE_ENV as CACHE_ENV
from ...core.cache import default_root
from ...errors import Where, fail

_HEX = re.compile(r"[0-9a-f]{4,64}\Z")
_FETCH_SPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*", "+HEAD:refs/devlane/HEAD")
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "LC_ALL": "C"}


def cache_root() -> Path:
    """``$DEVLANE_CACHE``, else ``$XDG_CACHE_HOME/devlane``, else ``~/.cache/devlane`` (the parse cache's root too)."""
    return default_root().resolve()


def mirror_path(url: str, root: Path | None = None) -> Path:
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return (root or cache_root()) / "git" / f"{digest}.git"


def checkout_path(commit: str, root: Path | None = None) -> Path:
    """Where `devlane plugins fetch` puts the tree of `commit` (complete whenever it exists)."""
    return (root or cache_root()) / "plugins" / commit


def venv_path(requirements_hash: str, root: Path | None = None) -> Path:
    return (root or cache_root()) / "venvs" / requirements_hash


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on `path` (so two devlane processes never build the same entry)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory locks, the rename still protects readers
            yield
            return
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------------
# Mirrors


def _git_error(exc: Exception) -> str:
    text = (getattr(exc, "stderr", "") or str(exc)).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("stderr:")]
    return (lines[-1] if lines else text).strip("'\" ")


class Mirror:
    """A bare mirror of the plugin repository at `url`; `name` is the plugin name, for messages."""

    def __init__(self, url: str, name: str, root: Path | None = None):
        import git  # lazy: GitPython is only needed by `devlane plugins lock` / `fetch`

        self.url = url
        self.name = name
        self.path = mirror_path(url, root)
        if not (self.path / "HEAD").is_file():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.path.parent))
            git.Repo.init(tmp, bare=True)
            try:
                os.rename(tmp, self.path)
            except OSError:  # another process made it first
                shutil.rmtree(tmp, ignore_errors=True)
        self.repo = git.Repo(self.path)
        self.repo.git.update_environment(**_GIT_ENV)

    def _fail_fetch(self, exc: Exception, what: str):
        return fail(
            f"cannot fetch {what} of plugin {self.name} from {self.url}: {_git_error(exc)}",
            Where(plugin=self.name),
            "check the URL (plugins.sources in .devlane.yaml, or the plugin name), the network and your git "
            "credentials (for a private repository use an ssh URL: plugins.sources.NAME.git: git@host:org/repo)",
            code="plugin-git-fetch",
        )

    def fetch(self) -> None:
        """Update the mirror's branches, tags and the remote's default branch (``refs/devlane/HEAD``)."""
        import git

        try:
            self.repo.git.fetch("--quiet", "--prune", "--force", self.url, *_FETCH_SPECS)
        except git.GitCommandError as exc:
            # an empty remote has no HEAD; retry without it so that the error names the real problem
            try:
                self.repo.git.fetch("--quiet", "--prune", "--force", self.url, *_FETCH_SPECS[:2])
            except git.GitCommandError:
                raise self._fail_fetch(exc, "the branches and tags") from None

    def _fetch_commit(self, commit: str) -> None:
        import git

        with contextlib.suppress(git.GitCommandError):  # servers may refuse a want by commit id
            self.repo.git.fetch("--quiet", self.url, commit)

    def rev(self, spec: str) -> str | None:
        """The commit `spec` names in the mirror, or None."""
        import git

        try:
            return self.repo.git.rev_parse("--verify", "--quiet", f"{spec}^{{commit}}").strip() or None
        except git.GitCommandError:
            return None

    def has_commit(self, commit: str) -> bool:
        return self.rev(commit) == commit

    def resolve(self, ref: str | None) -> str:
        """Fetch, then turn `ref` (branch, tag, full ref name or commit; None: default branch) into a commit."""
        self.fetch()
        if ref in (None, "", "HEAD"):
            found = self.rev("refs/devlane/HEAD")
            if found is None:
                raise fail(f"{self.url} has no default branch (is the repository empty?)", Where(plugin=self.name),
                           f"push a commit there, or set plugins.sources.{self.name!r}.ref in .devlane.yaml",
                           code="plugin-git-ref")
            return found
        assert ref is not None
        candidates = [f"refs/heads/{ref}", f"refs/tags/{ref}"]
        if ref.startswith("refs/"):
            import git

            with contextlib.suppress(git.GitCommandError):
                self.repo.git.fetch("--quiet", "--force", self.url, f"+{ref}:{ref}")
            candidates.insert(0, ref)
        for cand in candidates:
            found = self.rev(cand)
            if found:
                return found
        if _HEX.match(ref.lower()):
            found = self.rev(ref.lower())
            if found is None and len(ref) in (40, 64):
                self._fetch_commit(ref.lower())
                found = self.rev(ref.lower())
            if found:
                return found
        raise fail(
            f"ref {ref!r} of plugin {self.name} not found in {self.url}",
            Where(plugin=self.name),
            f"set plugins.sources.{self.name!r}.ref in .devlane.yaml to a branch, tag or commit that exists there",
            code="plugin-git-ref",
        )

    def ensure_commit(self, commit: str) -> None:
        """Make sure the mirror holds `commit` (fetching if needed) and keeps it (``refs/devlane/pins/``)."""
        if not self.has_commit(commit):
            self.fetch()
            if not self.has_commit(commit):
                self._fetch_commit(commit)
        if not self.has_commit(commit):
            raise fail(
                f"commit {commit} of plugin {self.name} is no longer available from {self.url} "
                "(was it force-pushed away?)",
                Where(plugin=self.name, file="devlane.lock"),
                f"pin a commit that exists: run `devlane plugins lock --update {self.name}`",
                code="plugin-git-commit",
            )
        self.pin(commit)

    def pin(self, commit: str) -> None:
        """Keep `commit` reachable in the mirror even when its branch moves or is deleted."""
        self.repo.git.update_ref(f"refs/devlane/pins/{commit}", commit)

    def read(self, commit: str, path: str) -> bytes | None:
        """The file `path` at `commit`, or None when it is not a regular file there."""
        tree = self.repo.commit(commit).tree
        try:
            item = tree / path if path else tree
        except KeyError:
            return None
        if item.type != "blob" or item.mode == 0o120000:
            return None
        return item.data_stream.read()

    def is_plugin_dir(self, commit: str, subdir: str) -> bool:
        prefix = f"{subdir.strip('/')}/" if subdir.strip("/") else ""
        return any(self.read(commit, prefix + f) is not None for f in ("main.py", "plugin.yaml"))

    def export(self, commit: str, root: Path | None = None) -> tuple[Path, bool]:
        """Write the tree of `commit` into ``plugins/<commit>/`` atomically; (path, True if written now)."""
        final = checkout_path(commit, root)
        if final.is_dir():
            return final, False
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{commit[:12]}-", dir=final.parent))
        try:
            _write_tree(self.repo.commit(commit).tree, tmp)
            try:
                os.rename(tmp, final)
            except OSError:
                if not final.is_dir():
                    raise
                shutil.rmtree(tmp, ignore_errors=True)  # another process exported it meanwhile
                return final, False
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return final, True


def _write_tree(tree: Any, dest: Path) -> None:
    for item in tree.traverse():
        parts = PurePosixPath(item.path).parts
        if any(p in ("", ".", "..", ".git") or "\\" in p for p in parts):
            raise fail(f"refusing to export unsafe path {item.path!r} from a plugin repository",
                       hint="the plugin repository contains a path that would escape its directory",
                       code="plugin-git-tree")
        target = dest.joinpath(*parts)
        if item.type == "tree":
            target.mkdir(parents=True, exist_ok=True)
        elif item.type == "blob":
            target.parent.mkdir(parents=True, exist_ok=True)
            data = item.data_stream.read()
            if item.mode == 0o120000:
                os.symlink(data.decode("utf-8", "surrogateescape"), target)
                continue
            target.write_bytes(data)
            mode = 0o755 if item.mode & 0o111 else 0o644
            os.chmod(target, mode)
        # submodules (type "commit") are not exported: a plugin must not depend on them
