"""Built inputs: kustomize directories and Helm charts, built by the real tools, offline, in the sandbox.

devlane models what Argo CD or Flux would apply, so a kustomization is built with `kustomize build`
(or `kubectl kustomize`) and a chart with `helm template`, never read as raw files: final names,
namespaces, labels and generated ConfigMap/Secret names come from the tool. The tools run in the
plugin sandbox (`host.confine`: no network, read-only filesystem, hidden credentials), since the
kustomization or chart comes from the pull request too. The commands are the operator's choice
(`$DEVLANE_KUSTOMIZE`, `$DEVLANE_HELM`), never the repository's.

A `--ref` render builds the tree at the ref, written from git objects into a temporary directory
(`materialize`); the work tree is built in place.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import posixpath
import re
import shlex
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from ...core import code_version
from ...core.cache import Cache, blob_id
from ...core.fence import Fence, inside
from ...core.files import read_regular
from ...core.source import Source, WorktreeSource
from ...core.version import VERSION
from ...core.yamlio import load_one
from ...errors import DevlaneError, Where, fail
from ...host import process
from ..settings.repo_config import InputSpec

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
CHART_FILE = "Chart.yaml"
BUILD_TIMEOUT = 300.0
KUSTOMIZE_ENV, HELM_ENV = "DEVLANE_KUSTOMIZE", "DEVLANE_HELM"
# Entries that kustomize fetches over the network: URLs, scp-like git addresses, hosted-git shorthands.
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.\-]*://|git@|(?:github|gitlab)\.com/|bitbucket\.org/)|[?&]ref=|\.git(?:/|$)")
_SOURCE = re.compile(r"^# Source: (.+)$", re.M)
_DOC_SPLIT = re.compile(r"^---[ \t]*(?:#.*)?$", re.M)


def detect(source: Source) -> tuple[InputSpec, ...]:
    """What the root given is, without config: a kustomization, a chart, or () for plain YAML."""
    if any(source.exists(f) for f in KUSTOMIZATION_FILES):
        return (InputSpec("kustomize", path="."),)
    if source.exists(CHART_FILE):
        return (InputSpec("helm", path="."),)
    return ()


def marker_dirs(source: Source, excludes: list[str]) -> list[str]:
    """Sub-directories (`dir/`) a plain-YAML scan must leave alone: kustomize and Helm inputs (their files are
    not objects until built) and nested apps with their own `.devlane.yaml`."""
    markers = [f"**/{name}" for name in (*KUSTOMIZATION_FILES, CHART_FILE, ".devlane.yaml")]
    dirs = {path.rpartition("/")[0] for path in source.list_files(markers, excludes)}
    return sorted(f"{d}/" for d in dirs if d)


# --------------------------------------------------------------------------------------------------
# Tools


def _tool(env: str, candidates: list[list[str]], spec: InputSpec, install: str) -> list[str]:
    chosen = os.environ.get(env, "").strip()
    if chosen:
        argv = shlex.split(chosen)
        if shutil.which(argv[0]):
            return argv
        raise fail(f"${env} names {argv[0]!r}, which is not installed", Where(file=spec.path),
                   hint=f"fix ${env}, or unset it to use {' or '.join(' '.join(c) for c in candidates)}")
    for argv in candidates:
        if shutil.which(argv[0]):
            return list(argv)
    raise fail(f"{spec.label}: no {' or '.join(c[0] for c in candidates)} to build this input with",
               Where(file=spec.path), hint=f"{install}, or set ${env} to the command", code="build-tool")


def kustomize_command(spec: InputSpec) -> list[str]:
    return _tool(KUSTOMIZE_ENV, [["kustomize", "build"], ["kubectl", "kustomize"]], spec,
                 "install kubectl (it includes kustomize: https://kubernetes.io/docs/tasks/tools/) or kustomize")


def helm_command(spec: InputSpec) -> list[str]:
    return _tool(HELM_ENV, [["helm", "template"]], spec, "install Helm 3 (https://helm.sh/docs/intro/install/)")


# --------------------------------------------------------------------------------------------------
# Where builds run, and the checks before building


@dataclass(frozen=True)
class Workspace:
    """Where the builds of one command run and what bounds them: the repository's directory (the work tree's top,
    or the ref written out), the rendered directory inside it, the fence around what an input may name, and the
    moment by which every build must have ended (the rest of `--timeout`, or of the Argo CD CMP's budget)."""

    tree: Path
    base: str = ""
    fence: Fence | None = None
    deadline: float | None = None  # time.monotonic()

    @property
    def bounds(self) -> Fence:
        return self.fence or Fence.around(self.tree)

    def timeout(self, spec: InputSpec) -> float:
        """Seconds a build may take: BUILD_TIMEOUT, or less when the command's budget ends sooner."""
        if self.deadline is None:
            return BUILD_TIMEOUT
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise fail(f"{spec.label}: the command's time budget ran out before this input was built",
                       Where(file=spec.path), "raise --timeout (or the Argo CD CMP's ARGOCD_EXEC_TIMEOUT)",
                       code="build-timeout")
        return min(BUILD_TIMEOUT, left)


# Fields of a kustomization that name files or directories, and where in an entry the path is: the entry itself
# (a string), a key of it (a mapping), or, for generators, the file lists inside it (`key=path` or `path`).
_PATH_FIELDS = {
    "resources": None, "bases": None, "components": None, "crds": None, "configurations": None,
    "transformers": None, "generators": None, "validators": None, "patchesStrategicMerge": None,
    "patches": "path", "patchesJson6902": "path", "replacements": "path",
}
_GENERATORS = ("configMapGenerator", "secretGenerator")


def _named_paths(doc: dict) -> list[tuple[str, str]]:
    """(field, path) of every local file or directory a kustomization names; inline patches and remote entries
    are not paths."""
    out: list[tuple[str, str]] = []
    for field, key in _PATH_FIELDS.items():
        entries = doc.get(field)
        for entry in entries if isinstance(entries, list) else []:
            path = entry.get(key) if key and isinstance(entry, dict) else entry if not key else None
            if isinstance(path, str) and path and "\n" not in path and not _REMOTE.search(path):
                out.append((field, path))
    for field in _GENERATORS:
        entries = doc.get(field)
        for gen in entries if isinstance(entries, list) else []:
            if not isinstance(gen, dict):
                continue
            files = [*(gen.get("files") or []), *(gen.get("envs") or []), *([gen["env"]] if gen.get("env") else [])]
            out += [(field, f.rpartition("=")[2]) for f in files if isinstance(f, str) and f]
    for field, key in (("openapi", "path"), ("helmGlobals", "chartHome")):
        value = doc.get(field)
        if isinstance(value, dict) and isinstance(value.get(key), str):
            out.append((field, value[key]))
    return out


def kustomization_graph(ws: Workspace, directory: str) -> tuple[list[tuple[str, str]], list[Path]]:
    """Every kustomization reachable from `directory` through `resources`, `bases` and `components`: (kustomization
    file, entry) of each remote one, and the directories holding one. Each path a kustomization names must resolve
    inside the fence (one error naming the file, the field and the path), and no symlink in their directories may
    lead out of it."""
    remote: list[tuple[str, str]] = []
    found: list[Path] = []
    seen: set[Path] = set()
    fence = ws.bounds
    top = Path(os.path.normpath(ws.tree))
    stack = [Path(os.path.normpath(top / directory))]
    while stack:
        here = stack.pop()
        if here in seen:
            continue
        seen.add(here)
        kfile = next((here / n for n in KUSTOMIZATION_FILES if (here / n).is_file()), None)
        if kfile is None:
            continue
        found.append(here)
        shown = os.path.relpath(kfile, top)
        where = Where(file=shown)
        fence.resolve(kfile, "the kustomization", where)
        fence.check_links(here, "its directory", where)
        try:
            doc = load_one(read_regular(kfile, shown), shown)
        except DevlaneError:
            continue  # the build reports it, naming the file
        if not isinstance(doc, dict):
            continue
        for field in ("resources", "bases", "components"):
            entries = doc.get(field)
            remote += [(shown, e) for e in entries if isinstance(e, str) and _REMOTE.search(e)] if isinstance(
                entries, list) else []
        for field, entry in _named_paths(doc):
            real = inside(fence, here, entry, f"{field} entry {entry!r}", where)
            if field in ("resources", "bases", "components") and os.path.isdir(real):
                stack.append(Path(os.path.normpath(here / entry)))
    return remote, found


# --------------------------------------------------------------------------------------------------
# The cache of builds: a build is a pure function of its input files, the tool and the options, and costs
# seconds (kustomize is superlinear in files), so it is kept under a digest of exactly those.


@functools.cache
def _build_kind() -> str:
    digest = hashlib.blake2b(code_version.of_modules(__name__).encode(), digest_size=8)
    digest.update(VERSION.encode())
    return f"build-{digest.hexdigest()}"


def _tool_identity(argv: list[str]) -> list:
    """What tells one installed tool from another without running it: its resolved path, size and mtime."""
    found = shutil.which(argv[0])
    if found is None:
        return argv
    real = os.path.realpath(found)
    try:
        st = os.stat(real)
    except OSError:
        return [*argv, real]
    return [*argv, real, st.st_size, st.st_mtime_ns]


def _tree_digest(hasher: Any, top: Path, roots: list[Path]) -> None:
    """Add every file a build may read under `roots` to `hasher`: its path relative to `top` and the git blob id
    of its content, through symlinks (a link's target, a linked subchart: what the tool reads, never the link's
    text, so an edit reached through a link changes the key). Links were checked to stay inside the fence."""
    files: dict[str, str] = {}
    for root in roots:
        shown = Path(os.path.normpath(root))
        _digest_files(top, shown, os.path.realpath(shown), files, frozenset())
    for rel in sorted(files):
        hasher.update(f"{rel}\0{files[rel]}\n".encode())


def _digest_files(top: Path, shown: Path, real: str, files: dict[str, str], walking: frozenset[str]) -> None:
    """`files[rel] = blob id` of the file or of every file under the directory `real`, named under `shown` (where
    the build sees it); a link is resolved once per chain, so a link to a parent directory cannot loop."""
    rel = os.path.relpath(shown, top)
    if not os.path.isdir(real):
        if rel not in files:
            try:
                files[rel] = blob_id(read_regular(real, rel))
            except DevlaneError:
                files[rel] = "unreadable"  # missing, or not a regular file: the build reports it
        return
    if real in walking:
        files.setdefault(rel, "loop")
        return
    walking = walking | {real}
    with os.scandir(real) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name == ".git":
                continue
            target = os.path.realpath(entry.path) if entry.is_symlink() else entry.path
            _digest_files(top, shown / entry.name, target, files, walking)


def build_key(spec: InputSpec, ws: Workspace) -> str:
    """The cache key of one build: its options, its tool, and the digest of every file it may read (each
    reachable kustomization's directory, as kustomize's default load restrictor allows no other; the chart
    and its values files for Helm)."""
    spec = _based(spec, ws.base)
    hasher = hashlib.sha256()
    top = Path(os.path.normpath(ws.tree))
    if spec.kind == "kustomize":
        roots = kustomization_graph(ws, spec.path)[1]
        tool = kustomize_command(spec)
    else:
        roots = [top / spec.path, *(top / v for v in spec.values)]
        tool = helm_command(spec)
        spec = replace(spec, release_name=release_name(spec, ws.tree))  # from the directory's name, when not given
    hasher.update(json.dumps([dataclasses.asdict(spec), _tool_identity(tool)], sort_keys=True, default=str).encode())
    _tree_digest(hasher, top, sorted(roots))
    return hasher.hexdigest()


def cached_build(spec: InputSpec, ws: Workspace, cache: Cache | None) -> list[tuple[str, bytes]]:
    """`build`, or its result from `cache` when the same input files, tool and options built it before."""
    based = _based(spec, ws.base)
    if cache is None or not (ws.tree / based.path).is_dir():
        return build(spec, ws)
    _check_inputs(based, ws)  # before the key reads any file the input names
    key = build_key(spec, ws)
    found = cache.get(_build_kind(), key)
    if isinstance(found, list) and all(isinstance(p, list) and len(p) == 2 for p in found):
        return [(str(origin), str(text).encode("utf-8")) for origin, text in found]
    parts = build(spec, ws)
    cache.put(_build_kind(), key, [[origin, text.decode("utf-8", "replace")] for origin, text in parts])
    return parts


# --------------------------------------------------------------------------------------------------
# Building


def build(spec: InputSpec, ws: Workspace) -> list[tuple[str, bytes]]:
    """The objects of one built input as (where they came from, YAML text of one document), in order.

    `ws.tree` is the whole repository (bases and charts may sit beside the directory rendered) and `ws.base`
    the rendered directory inside it; input paths are relative to `ws.base`."""
    spec = _based(spec, ws.base)
    _check_inputs(spec, ws)
    if spec.kind == "kustomize":
        return _kustomize(spec, ws)
    return _helm(spec, ws)


def _check_inputs(spec: InputSpec, ws: Workspace) -> None:
    """The input's own paths (the chart or kustomization directory, the values files) exist and stay inside the
    fence, and no symlink in a chart leads out of it (a kustomization's are checked along its graph)."""
    fence, where = ws.bounds, Where(file=".devlane.yaml")
    field = "`kustomize:`" if spec.kind == "kustomize" else "`helm:`"
    directory = fence.resolve(ws.tree / spec.path, f"{spec.label}: the {field} path {spec.path}", where)
    if not os.path.isdir(directory):
        raise fail(f"{spec.label}: {spec.path} is not a directory of the repository", where,
                   hint="fix the path under `inputs:` (relative to the repository root)", code="build-input")
    for values in spec.values:
        real = fence.resolve(ws.tree / values, f"{spec.label}: the values file {values}", where)
        if not os.path.isfile(real):
            raise fail(f"{spec.label}: values file {values} does not exist", where,
                       hint="fix `values:` (paths are relative to the repository root)", code="build-input")
    if spec.kind == "helm":
        fence.check_links(directory, spec.label, Where(file=spec.path))


def _based(spec: InputSpec, base: str) -> InputSpec:
    """`spec` with its paths relative to the repository's top instead of the rendered directory `base`."""
    if not base:
        return spec
    return replace(spec, path=posixpath.normpath(posixpath.join(base, spec.path)),
                   values=tuple(posixpath.normpath(posixpath.join(base, v)) for v in spec.values))


def _kustomize(spec: InputSpec, ws: Workspace) -> list[tuple[str, bytes]]:
    if not any((ws.tree / spec.path / n).is_file() for n in KUSTOMIZATION_FILES):
        raise fail(f"{spec.label}: no kustomization.yaml in {spec.path}", Where(file=spec.path),
                   hint="point `kustomize:` at a directory holding a kustomization", code="build-input")
    remote = kustomization_graph(ws, spec.path)[0]
    if remote:
        kfile, entry = remote[0]
        raise fail(f"{spec.label}: remote base {entry!r} (in {kfile}): devlane renders offline and never fetches",
                   Where(file=kfile), hint="vendor the base into the repository and point at its directory, or "
                   "list its objects' annotations in .devlane.yaml", code="build-remote")
    out = _run([*kustomize_command(spec), str(ws.tree / spec.path)], ws, spec)
    return [(spec.label, doc) for doc in _documents(out)]


def _helm(spec: InputSpec, ws: Workspace) -> list[tuple[str, bytes]]:
    chart = ws.tree / spec.path
    if not (chart / CHART_FILE).is_file():
        raise fail(f"{spec.label}: no Chart.yaml in {spec.path}", Where(file=spec.path),
                   hint="point `helm:` at a chart directory", code="build-input")
    argv = [*helm_command(spec), release_name(spec, ws.tree), str(chart), "--include-crds"]
    if spec.namespace:
        argv += ["--namespace", spec.namespace]
    if spec.kube_version:
        argv += ["--kube-version", spec.kube_version]
    for values in spec.values:
        argv += ["--values", str(ws.tree / values)]
    for key, value in spec.set:
        argv += ["--set", f"{key}={value}"]
    out = _run(argv, ws, spec)
    prefix = PurePosixPath(spec.path).parent.as_posix()
    docs = []
    for text in _DOC_SPLIT.split(out.decode("utf-8", "replace")):
        m = _SOURCE.search(text)
        if m is None and not text.strip():
            continue
        origin = m.group(1).strip() if m else spec.label
        docs.append((f"{prefix}/{origin}" if m and prefix != "." else origin, text.encode("utf-8")))
    return docs


def release_name(spec: InputSpec, tree: Path) -> str:
    """The release a chart is built as: `releaseName:` when given, else the chart directory's name within the
    repository, so the same chart gets the same name in the work tree, at a `--ref` (built in a temporary
    directory) and in Argo CD's checkout (a random directory); a chart at the repository's top has no name
    there, so it takes its own `name` from Chart.yaml. `spec` is relative to the repository's top (`_based`)."""
    if spec.release_name:
        return spec.release_name
    rel = posixpath.normpath(spec.path)
    if rel != ".":
        return _label(posixpath.basename(rel))
    try:
        chart = load_one(read_regular(str(tree / CHART_FILE), CHART_FILE), CHART_FILE)
    except DevlaneError:
        chart = None  # helm reports the broken Chart.yaml itself
    name = chart.get("name") if isinstance(chart, dict) else None
    return _label(name) if isinstance(name, str) else "release"


def _label(name: str) -> str:
    """A release name from a directory name: lower-case DNS label characters, at most 53 of them."""
    text = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:53].strip("-")
    return text or "release"


def _documents(out: bytes) -> list[bytes]:
    return [t.encode("utf-8") for t in _DOC_SPLIT.split(out.decode("utf-8", "replace")) if t.strip()]


_MISSING_DEPENDENCY = re.compile(r"found in (?:Chart|requirements)\.yaml, but missing in charts/ directory: (.+)")


def _run(argv: list[str], ws: Workspace, spec: InputSpec) -> bytes:
    """Run a build tool in the sandbox, which shows it only the tool and the fence's directories (no network, read
    only, no HOME), killed when the command's budget runs out; its error names the input."""
    timeout = ws.timeout(spec)
    try:
        done = process.spawn(argv, b"", timeout, readable=list(ws.bounds.roots), limit=256 * 1024 * 1024,
                             view="tool")
    except OSError as exc:
        raise fail(f"{spec.label}: could not run {argv[0]}: {exc.strerror}", Where(file=spec.path),
                   code="build-tool") from None
    if done.returncode == 0 and not done.timed_out:
        return done.stdout
    text = done.stderr.strip().replace(str(ws.tree) + "/", "")
    lines = [line for line in text.splitlines() if line.strip()][-8:]
    hint = "fix the input so that the tool builds it (the message above is the tool's own)"
    missing = _MISSING_DEPENDENCY.search(text)
    if missing:
        hint = (f"vendor the chart's dependencies: helm dependency build {spec.path}, and commit its charts/ "
                "directory (devlane never downloads during render)")
    elif done.timed_out:
        budget = timeout < BUILD_TIMEOUT
        lines.append(f"timed out after {timeout:g} s" + (" (the rest of the command's time budget)" if budget else
                                                          "") + "; the tool's whole process group was killed")
        hint = ("raise --timeout (or the Argo CD CMP's ARGOCD_EXEC_TIMEOUT), or fix the input: a build that does "
                "not end (a FIFO, an endless template) is refused" if budget else
                f"fix the input: a build may take at most {BUILD_TIMEOUT:g} s")
    what = " ".join(argv[:2])
    raise fail(f"{spec.label}: {what} failed:\n  " + "\n  ".join(lines or [f"exit status {done.returncode}"]),
               Where(file=spec.path), hint=hint, code="build-timeout" if done.timed_out else "build-failed")


def materialize(source: Source, dest: Path, top: Path | None = None) -> tuple[Path, str]:
    """(the repository's directory, the rendered directory inside it): `top` when the caller knows it (the
    Argo CD CMP gets the repository without .git), else the work tree's enclosing git repository (or the
    directory itself outside git), or the ref's whole tree written into `dest`."""
    if isinstance(source, WorktreeSource):
        root = Path(os.path.realpath(source.root))
        given = Path(os.path.realpath(top)) if top is not None else None
        if given is None or (given != root and given not in root.parents):  # only a directory holding the root
            given = next((d for d in (root, *root.parents) if (d / ".git").exists()), root)
        top = given
        rel = root.relative_to(top).as_posix()
        return top, "" if rel == "." else rel
    source.write_tree(dest)
    return dest, source.prefix
