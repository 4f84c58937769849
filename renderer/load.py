"""Load: read manifest files from a working tree or from a git ref, and parse them.

A `Source` abstracts where files come from so that `--ref` reads blobs straight from git
(GitPython) without a checkout. Every parsed Kubernetes object becomes a `Document` that
remembers its file and index, so later errors can point at it.
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import DevlaneError, Diagnostics, Where, fail
from .yamlio import parse_documents

MAX_FILE_BYTES = 64 * 1024 * 1024
ALWAYS_EXCLUDED = (".git/**", ".github/**", ".devlane.yaml", ".devlane/**")
_KUSTOMIZE_GROUP = "kustomize.config.k8s.io"


@dataclass
class Document:
    """One Kubernetes object from the repository, with where it came from."""

    obj: dict
    file: str
    index: int

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def metadata(self) -> dict:
        meta = self.obj.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str | None:
        ns = self.metadata.get("namespace")
        return str(ns) if ns else None

    @property
    def annotations(self) -> dict:
        ann = self.metadata.get("annotations")
        return ann if isinstance(ann, dict) else {}

    @property
    def labels(self) -> dict:
        lab = self.metadata.get("labels")
        return lab if isinstance(lab, dict) else {}

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"

    def where(self) -> Where:
        return Where(file=self.file, document=self.index, object=self.ref)


@dataclass
class LoadResult:
    """Everything read from the repository for one render."""

    documents: list[Document]
    files: dict[str, str]  # path -> sha256 of content, for the input hash
    revision: str | None
    diagnostics: Diagnostics = field(default_factory=Diagnostics)


# ---------------------------------------------------------------------------------------------
# Globs


@cache
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Translate a gitignore-like glob (`**`, `*`, `?`) into a regex over posix paths."""
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
    return any(compile_glob(p).match(path) for p in patterns)


def _dir_excluded(rel_dir: str, excludes: list[str]) -> bool:
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


# ---------------------------------------------------------------------------------------------
# Sources


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
                if d in (".git", "__pycache__", "node_modules", ".venv") or _dir_excluded(sub, excludes):
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
            raise fail(
                f"file is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit",
                Where(file=path),
                hint="split it, or exclude it with `exclude:` in .devlane.yaml",
            )
        return full.read_bytes()

    def exists(self, path: str) -> bool:
        return (self.root / path).is_file()

    def revision(self) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(self.root), "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                timeout=10,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() or None if out.returncode == 0 else None


class GitRefSource:
    """Files of `ref` in the git repository containing `root`, read as blobs (no checkout)."""

    def __init__(self, root: Path, ref: str):
        import git  # imported lazily: GitPython is only needed for --ref

        try:
            self.repo = git.Repo(root, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise fail(
                f"{root} is not inside a git repository, so --ref {ref} cannot be read",
                hint="run devlane in a git checkout, or drop --ref to render the working tree",
            ) from None
        try:
            self.commit = self.repo.commit(ref)
        except (git.BadName, ValueError, git.GitCommandError):
            raise fail(
                f"unknown git ref {ref!r} in {self.repo.working_dir}",
                hint="pass a branch, tag or commit that exists (git fetch it first if it is remote)",
            ) from None
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
                _dir_excluded("/".join(parts[: i + 1]), excludes) or parts[i] in (".git", "node_modules")
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


# ---------------------------------------------------------------------------------------------
# Parsing


def is_kubernetes_object(doc: Any) -> bool:
    return isinstance(doc, dict) and bool(doc.get("apiVersion")) and bool(doc.get("kind"))


def _plugin_dirs(source: Source, paths: list[str]) -> list[str]:
    """Directories (with a trailing /) holding a devlane `plugin.yaml` (`apiVersion: devlane.dev/...`)."""
    out = []
    for path in paths:
        if path == "plugin.yaml" or path.endswith("/plugin.yaml"):
            head = source.read(path)[:4096]
            if b"devlane.dev/" in head and b"kind: Plugin" in head:
                out.append(path[: -len("plugin.yaml")])
    return out


def load_documents(source: Source, includes: list[str], excludes: list[str]) -> LoadResult:
    """Read and parse every manifest file; skip (with a warning) documents that are not objects.

    The cyclic garbage collector is paused meanwhile: parsing allocates about a million objects
    at 5,000 services, none of them cyclic, and each full collection would walk all of them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _load_documents(source, includes, excludes)
    finally:
        if enabled:
            gc.enable()


def _load_documents(source: Source, includes: list[str], excludes: list[str]) -> LoadResult:
    diags = Diagnostics()
    documents: list[Document] = []
    files: dict[str, str] = {}
    paths = source.list_files(includes, list(ALWAYS_EXCLUDED) + excludes)
    plugin_dirs = _plugin_dirs(source, paths)
    for path in paths:
        if any(path.startswith(d) for d in plugin_dirs):
            continue  # a plugin's own plugin.yaml and testdata are not the repository's manifests
        try:
            data = source.read(path)
            files[path] = hashlib.sha256(data).hexdigest()
            parsed = parse_documents(data, path)
        except DevlaneError as exc:  # keep going: lint reports every broken file at once
            diags.problems += exc.problems
            continue
        for index, doc in enumerate(parsed):
            if doc is None:
                continue
            if not is_kubernetes_object(doc):
                diags.warn(
                    "document is not a Kubernetes object (no apiVersion/kind); skipped",
                    Where(file=path, document=index),
                    hint="exclude non-manifest YAML with `exclude:` in .devlane.yaml",
                    code="not-an-object",
                )
                continue
            if str(doc["apiVersion"]).startswith(_KUSTOMIZE_GROUP):
                continue  # kustomization files describe builds, not objects
            meta = doc.get("metadata")
            if not isinstance(meta, dict) or not meta.get("name"):
                diags.warn(
                    f"{doc['kind']} has no metadata.name; skipped",
                    Where(file=path, document=index),
                    code="no-name",
                )
                continue
            documents.append(Document(doc, path, index))
    return LoadResult(documents, files, source.revision(), diags)
