"""Where repository files come from: the working tree, or a git ref read as blobs (no checkout).

`--ref` renders read blobs straight from git (GitPython); both sources list files by the same globs
and refuse files over the size limit, so every stage above reads files the same way.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from ..errors import Where, fail
from .globs import dir_excluded, matches

MAX_FILE_BYTES = 64 * 1024 * 1024


class WorktreeSource:
    """Files from the working tree under `root`."""

    def __init__(self, root: Path):
        self.root = root

    def list_files(self, includes: list[str], excludes: list[str]) -> list[str]:
        found: list[str] = []
        root = str(self.root)
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            rel_dir = "" if rel_dir == "." else rel_dir
            keep = []
            for d in sorted(dirnames):
                sub = f"{rel_dir}/{d}" if rel_dir else d
                if d in (".git", "__pycache__", "node_modules", ".venv") or dir_excluded(sub, excludes):
                    continue
                keep.append(d)
            dirnames[:] = keep
            for f in filenames:
                rel = f"{rel_dir}/{f}" if rel_dir else f
                if matches(rel, includes) and not matches(rel, excludes):
                    found.append(rel)
        return sorted(found)

    def read(self, path: str) -> bytes:
        full = self.root / path
        size = full.stat().st_size
        if size > MAX_FILE_BYTES:
            raise fail(f"file is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit", Where(file=path),
                       hint="split it, or exclude it with `exclude:` in .devlane.yaml")
        return full.read_bytes()

    def exists(self, path: str) -> bool:
        return (self.root / path).is_file()

    def revision(self) -> str | None:
        """The commit checked out, read from `.git` (no git process on the render path); git itself for
        layouts that reading files does not cover (reftable, a ref that is neither loose nor packed)."""
        found = _head_commit(self.root.resolve())
        if found is not False:
            return found
        try:
            out = subprocess.run(["git", "-C", str(self.root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                 timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() or None if out.returncode == 0 else None


_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")


def _head_commit(root: Path) -> str | Literal[False] | None:
    """HEAD's commit of the repository containing `root`: None outside a repository or before the first
    commit, False when the files do not say (then ask git)."""
    for directory in (root, *root.parents):
        dot = directory / ".git"
        if dot.is_file():  # a linked worktree or a submodule: "gitdir: PATH"
            text = dot.read_text(errors="replace").strip()
            if not text.startswith("gitdir:"):
                return False
            gitdir = (directory / text.removeprefix("gitdir:").strip()).resolve()
        elif dot.is_dir():
            gitdir = dot
        else:
            continue
        common = gitdir
        if (gitdir / "commondir").is_file():
            common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
        try:
            head = (gitdir / "HEAD").read_text().strip()
        except OSError:
            return False
        if _SHA.match(head):
            return head
        if not head.startswith("ref: "):
            return False
        ref = head.removeprefix("ref: ").strip()
        for base in (gitdir, common):
            if (base / ref).is_file():
                value = (base / ref).read_text().strip()
                return value if _SHA.match(value) else False
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(errors="replace").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref and _SHA.match(sha):
                    return sha
        return None if (common / "refs").is_dir() and not (common / "reftable").exists() else False
    return None


class GitRefSource:
    """Files of `ref` in the git repository containing `root`, read as blobs (no checkout)."""

    def __init__(self, root: Path, ref: str):
        import git  # imported lazily: GitPython is only needed for --ref

        try:
            self.repo = git.Repo(root, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise fail(f"{root} is not inside a git repository, so --ref {ref} cannot be read",
                       hint="run devlane in a git checkout, or drop --ref to render the working tree") from None
        try:
            self.commit = self.repo.commit(ref)
        except (git.BadName, ValueError, git.GitCommandError):
            raise fail(f"unknown git ref {ref!r} in {self.repo.working_dir}",
                       hint="pass a branch, tag or commit that exists (git fetch it first if it is remote)") from None
        top = Path(self.repo.working_tree_dir or root).resolve()
        prefix = root.resolve().relative_to(top).as_posix()
        self.prefix = "" if prefix == "." else prefix
        try:
            self.tree = self.commit.tree / self.prefix if self.prefix else self.commit.tree
        except KeyError:
            raise fail(f"{self.prefix} does not exist at {ref}") from None
        self.ref = ref
        self._blobs: dict[str, Any] = {}
        for item in self.tree.traverse():
            if item.type == "blob":
                rel = str(PurePosixPath(item.path).relative_to(self.prefix)) if self.prefix else item.path
                self._blobs[rel] = item

    def list_files(self, includes: list[str], excludes: list[str]) -> list[str]:
        out = []
        for rel in self._blobs:
            parts = rel.split("/")
            if any(
                dir_excluded("/".join(parts[: i + 1]), excludes) or parts[i] in (".git", "node_modules")
                for i in range(len(parts) - 1)
            ):
                continue
            if matches(rel, includes) and not matches(rel, excludes):
                out.append(rel)
        return sorted(out)

    def read(self, path: str) -> bytes:
        blob = self._blobs[path]
        if blob.size > MAX_FILE_BYTES:
            raise fail(f"file is {blob.size:,} bytes at {self.ref}, over the limit", Where(file=path))
        return blob.data_stream.read()

    def exists(self, path: str) -> bool:
        return path in self._blobs

    def revision(self) -> str | None:
        return self.commit.hexsha

    def export(self, directory: str, dest: Path) -> bool:
        """Write the files under `directory` at this ref into `dest`; False if there are none."""
        prefix = directory.strip("/") + "/"
        found = False
        for rel, blob in self._blobs.items():
            if rel.startswith(prefix):
                target = dest / rel[len(prefix) :]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(blob.data_stream.read())
                found = True
        return found


Source = WorktreeSource | GitRefSource


def open_source(root: Path, ref: str | None) -> Source:
    if not root.is_dir():
        raise fail(f"repository directory {root} does not exist", hint="pass the path of your manifests repo")
    return GitRefSource(root, ref) if ref else WorktreeSource(root)
