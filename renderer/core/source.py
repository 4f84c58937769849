"""Where repository files come from: the working tree, or a git ref read as blobs (no checkout).

`--ref` renders read blobs straight from git (GitPython); both sources list files by the same globs
and read them under the same rules, so every stage above reads files the same way:

- regular files only (a FIFO, socket or device is an error, never a hang), at most `MAX_FILE_BYTES`
  each and `MAX_TOTAL_BYTES` in all, counted as read;
- a symlink is followed only while it stays inside the repository directory; one that points
  outside, dangles or loops is an error naming the link. Symlinked directories are not descended.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from ..errors import DevlaneError, Where, fail
from . import files, gitindex
from .files import InputLimit, over_limit, read_regular
from .globs import dir_excluded, excluded, matches

SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv"})  # never manifests
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # every file one command reads from the repository
MAX_LINK_HOPS = 40  # as Linux's MAXSYMLINKS
_LINK_HINT = "point the link at a file inside the repository, replace it with the file, or exclude it"


class _Budget:
    """Bytes read from one source, each path counted once: the total is bounded, not just each file."""

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        self.total = 0

    def take(self, path: str, data: bytes) -> bytes:
        self.count(path, len(data))
        return data

    def count(self, path: str, size: int) -> None:
        if path not in self.sizes:
            self.sizes[path] = size
            self.total += size
            if self.total > MAX_TOTAL_BYTES:
                raise over_limit(path, MAX_TOTAL_BYTES, "with this file, the repository's files read are", InputLimit)


def listed(rel: str, includes: list[str], excludes: list[str]) -> bool:
    """Whether a source lists the file `rel` (a posix path inside the repository) for these globs."""
    parts = rel.split("/")
    if any(parts[i] in SKIPPED_DIRS or dir_excluded("/".join(parts[: i + 1]), excludes) for i in range(len(parts) - 1)):
        return False
    return matches(rel, includes) and not excluded(rel, excludes)


class WorktreeSource:
    """Files from the working tree under `root`."""

    def __init__(self, root: Path):
        self.root = root
        self._real_root = os.path.realpath(root)
        self._budget = _Budget()
        self._walked: set[str] = set()  # listed through real directories only (os.walk does not follow links)
        self._dirs: list[tuple[str, list[str]]] | None = None
        self._handed: dict[str, bytes] | None = None  # see `handing_over`

    @contextlib.contextmanager
    def handing_over(self) -> Iterator[None]:
        """Meanwhile, the bytes of a file read are kept for its next reader, who takes them: `lint` hashes every
        file for the key of its stored findings, then loads the same files from those very bytes, without a second
        read (the findings stored are about exactly what the key was made of)."""
        self._handed = {}
        try:
            yield
        finally:
            self._handed = None

    def list_files(self, includes: list[str], excludes: list[str]) -> list[str]:
        found: list[str] = []
        pruned: set[str] = set()  # excluded directories: nothing under them is listed
        for rel_dir, filenames in self._tree():
            if rel_dir and (rel_dir.rpartition("/")[0] in pruned or dir_excluded(rel_dir, excludes)):
                pruned.add(rel_dir)
                continue
            for f in filenames:
                rel = f"{rel_dir}/{f}" if rel_dir else f
                if matches(rel, includes) and not excluded(rel, excludes):
                    found.append(rel)
        self._walked.update(found)
        return sorted(found)

    def _tree(self) -> list[tuple[str, list[str]]]:
        """Every real directory under the root (os.walk does not follow links), parents first, with its files:
        walked once per source, as loading lists the tree twice (the manifests, and the inputs to leave alone)
        and each command reads one snapshot of it."""
        if self._dirs is None:
            root, out = self._real_root, []
            for dirpath, dirnames, filenames in os.walk(root):
                rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
                dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
                out.append(("" if rel_dir == "." else rel_dir, filenames))
            self._dirs = out
        return self._dirs

    def unchanged(self, known: dict[str, tuple[str, int]]) -> set[str]:
        """The paths of `known` (path -> blob id and size of the bytes devlane hashed) that git's index proves still
        hold those bytes: git recorded that blob id with the stat data the file still has, and its size is the size
        hashed (a filter, such as line endings or LFS, makes git's blob other bytes than the file's). Each counts in
        the read budget as if read. None without a usable index (`gitindex`), or where `.gitattributes` could set
        a filter; only files listed through real directories (no link on the way)."""
        index = self._git_index()
        if index is None:
            return set()
        out, prefix = set(), os.path.join(self._real_root, "")
        for path, (blob, size) in known.items():
            if path in self._walked and size <= files.MAX_FILE_BYTES and \
                    index.clean(prefix + path, path) == (blob, size):
                self._budget.count(path, size)
                out.add(path)
        return out

    def _git_index(self) -> gitindex.Index | None:
        if any(".gitattributes" in names for _, names in self._tree()):
            return None
        return gitindex.read(self._real_root)

    def read(self, path: str) -> bytes:
        handed = self._handed
        if handed is None:
            return self._read(path)
        data = handed.pop(path, None)
        if data is None:
            data = handed[path] = self._read(path)
        return data

    def _read(self, path: str) -> bytes:
        if path in self._walked:  # every directory on the way is real: no realpath, O_NOFOLLOW checks the file
            try:
                return self._budget.take(path, read_regular(os.path.join(self._real_root, path), path))
            except InputLimit:
                raise
            except DevlaneError:
                pass  # a symlink, or gone: the full check below says which
        return self._budget.take(path, read_regular(self._inside(path), path))

    def _inside(self, path: str) -> str:
        """The real path of `path`, which must stay inside the repository through every symlink."""
        full = os.path.join(self._real_root, path)
        try:
            real = os.path.realpath(full, strict=True)
        except OSError as exc:
            if exc.errno == errno.ENOENT and os.path.lexists(full):
                target = os.readlink(full) if os.path.islink(full) else exc.filename
                raise fail(f"dangling symlink: its target {target} does not exist", Where(file=path),
                           hint=_LINK_HINT) from None
            if exc.errno == errno.ELOOP:
                raise fail("symlink loop: following the link leads back to it", Where(file=path),
                           hint=_LINK_HINT) from None
            raise fail(f"cannot read: {exc.strerror}", Where(file=path)) from None
        if os.path.commonpath([real, self._real_root]) != self._real_root:
            raise fail(f"symlink points outside the repository, to {real}", Where(file=path), hint=_LINK_HINT)
        return real

    def exists(self, path: str) -> bool:
        """Whether `path` is there and not a directory (a link or a FIFO counts: reading it says what is wrong)."""
        full = self.root / path
        return os.path.lexists(full) and not full.is_dir()

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


def _repository(root: Path, ref: str) -> Any:
    """The git repository containing `root` (GitPython's Repo, imported lazily: only refs need it)."""
    import git

    try:
        return git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise fail(f"{root} is not inside a git repository, so --ref {ref} cannot be read",
                   hint="run devlane in a git checkout, or drop --ref to render the working tree") from None


def _commit(repo: Any, ref: str) -> Any:
    import git

    try:
        return repo.commit(ref)
    except (git.BadName, ValueError, git.GitCommandError):
        raise fail(f"unknown git ref {ref!r} in {repo.working_dir}", hint="pass a branch, tag or commit that exists "
                   "(git fetch it first if it is remote)", code="unknown-ref") from None


def resolve_commit(root: Path, ref: str) -> str:
    """The commit `ref` names in the repository containing `root`; an unknown ref is an error naming it."""
    return _commit(_repository(root, ref), ref).hexsha


def merge_base(root: Path, base: str, head: str) -> str:
    """Where `head` branched from `base` (what a pull request's "Files changed" compares with): a base that moved on
    after the branch was cut adds nothing to it. No common ancestor (a shallow clone) is an error that says so."""
    repo = _repository(root, base)
    found = repo.merge_base(_commit(repo, base), _commit(repo, head))
    if not found:
        raise fail(f"no common ancestor of --base {base} and {head}: the history between them is not here",
                   hint="fetch the whole history (actions/checkout: fetch-depth: 0; git fetch --unshallow)",
                   code="no-merge-base")
    return str(found[0].hexsha)


class GitRefSource:
    """Files of `ref` in the git repository containing `root`, read as blobs (no checkout)."""

    def __init__(self, root: Path, ref: str):
        self.repo = _repository(root, ref)
        self.commit = _commit(self.repo, ref)
        top = Path(self.repo.working_tree_dir or root).resolve()
        prefix = root.resolve().relative_to(top).as_posix()
        self.prefix = "" if prefix == "." else prefix
        try:
            self.tree = self.commit.tree / self.prefix if self.prefix else self.commit.tree
        except KeyError:
            raise fail(f"{self.prefix} does not exist at {ref}") from None
        self.ref = ref
        self._blobs: dict[str, Any] = {}
        self._dirs: set[str] = set()
        self._budget = _Budget()
        for item in self.tree.traverse():
            rel = str(PurePosixPath(item.path).relative_to(self.prefix)) if self.prefix else item.path
            if item.type == "blob":
                self._blobs[rel] = item
            else:
                self._dirs.add(rel)

    def list_files(self, includes: list[str], excludes: list[str]) -> list[str]:
        return sorted(rel for rel in self._blobs if listed(rel, includes, excludes))

    def read(self, path: str) -> bytes:
        blob = self._blobs[self._target(path)]
        if blob.size > files.MAX_FILE_BYTES:
            raise over_limit(path, files.MAX_FILE_BYTES, f"the file at {self.ref} is")
        return self._budget.take(path, blob.data_stream.read())

    def blob_id(self, path: str) -> str:
        """The git blob id of what `read(path)` gives (through symlink blobs), without reading it: the key of its
        cached parse (`core.cache.blob_id` of the same bytes)."""
        return self._blobs[self._target(path)].hexsha

    def changed(self, other: GitRefSource) -> list[str]:
        """The paths (relative to this source's directory) whose content or mode differs at `other`'s ref, or that
        only one of the two has: git's own comparison of the two trees (`git diff --name-only`), renames as a
        deletion and an addition."""
        prefix = f"{self.prefix}/" if self.prefix else ""
        where = ["--", f":(literal){self.prefix}"] if self.prefix else []
        out = self.repo.git.diff("--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv",
                                 self.commit.hexsha, other.commit.hexsha, *where)
        return sorted({p[len(prefix):] for p in out.split("\0") if p and p.startswith(prefix)})

    def _target(self, path: str) -> str:
        """The regular blob `path` names at the ref, through symlink blobs that stay inside the repository."""
        current = path
        for _ in range(MAX_LINK_HOPS):
            blob = self._blobs.get(current)
            if blob is None:
                what = "a directory" if current in self._dirs else "missing"
                raise fail(f"symlink target {current} is {what} at {self.ref}", Where(file=path), hint=_LINK_HINT)
            if blob.mode & 0o170000 != 0o120000:  # not a symlink
                if blob.mode & 0o170000 != 0o100000:
                    raise fail(f"not a regular file at {self.ref}", Where(file=path), hint=_LINK_HINT)
                return current
            link = blob.data_stream.read(4096).decode("utf-8", "replace")
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(current), link))
            if posixpath.isabs(link) or resolved == ".." or resolved.startswith("../"):
                raise fail(f"symlink points outside the repository, to {link} (at {self.ref})", Where(file=path),
                           hint=_LINK_HINT)
            current = resolved
        raise fail(f"symlink loop at {self.ref}: more than {MAX_LINK_HOPS} links", Where(file=path), hint=_LINK_HINT)

    def exists(self, path: str) -> bool:
        return path in self._blobs

    def unchanged(self, known: dict[str, tuple[str, int]]) -> set[str]:
        """None: a ref's files are read from git's objects (`WorktreeSource.unchanged`)."""
        return set()

    def handing_over(self) -> contextlib.AbstractContextManager[None]:
        """Nothing to keep: a ref's key is made of blob ids, no file is read for it."""
        return contextlib.nullcontext()

    def revision(self) -> str | None:
        return self.commit.hexsha

    def write_tree(self, dest: Path) -> None:
        """Write the whole repository at this ref into `dest` (not only the directory rendered: an overlay's
        bases live beside it), for tools that build from a directory (kustomize, helm). Symlinks are kept
        when they stay inside the repository, and every byte counts against the same total as `read`."""
        for item in self.commit.tree.traverse():
            if item.type != "blob":
                continue
            target = dest / item.path
            target.parent.mkdir(parents=True, exist_ok=True)
            kind = item.mode & 0o170000
            if kind == 0o120000:
                link = item.data_stream.read(4096).decode("utf-8", "replace")
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(item.path), link))
                if not posixpath.isabs(link) and resolved != ".." and not resolved.startswith("../"):
                    os.symlink(link, target)
            elif kind == 0o100000:
                if item.size > files.MAX_FILE_BYTES:
                    continue  # the tool reports a missing file if the input needs it
                target.write_bytes(self._budget.take(f":{item.path}", item.data_stream.read()))

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
