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
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.cache import Cache, blob_id
from ..core.files import read_regular
from ..core.source import Source, WorktreeSource
from ..core.version import VERSION
from ..core.yamlio import load_one
from ..errors import DevlaneError, Where, fail
from ..host import process
from .config import InputSpec

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
# Checks before building


def kustomization_graph(tree: Path, directory: str) -> tuple[list[tuple[str, str]], list[Path]]:
    """Every kustomization reachable from `directory` through `resources`, `bases` and `components`:
    (kustomization file, entry) of each remote one, and the local directories outside `tree` (a base beside
    a repository that is not in git), which the sandboxed build must be able to read."""
    remote, dirs = _kustomizations(tree, directory)
    top = Path(os.path.normpath(tree))
    outside = [d for d in dirs if top != d and top not in d.parents]
    return remote, sorted(set(outside) - {d for d in outside for d2 in outside if d2 in d.parents})


def _kustomizations(tree: Path, directory: str) -> tuple[list[tuple[str, str]], list[Path]]:
    """(remote entries as (kustomization file, entry), every local directory holding a reachable kustomization)."""
    remote: list[tuple[str, str]] = []
    found: list[Path] = []
    seen: set[Path] = set()
    top = Path(os.path.normpath(tree))
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
        try:
            doc = load_one(read_regular(kfile, shown), shown)
        except DevlaneError:
            continue  # the build reports it, naming the file
        if not isinstance(doc, dict):
            continue
        for field in ("resources", "bases", "components"):
            entries = doc.get(field)
            for entry in entries if isinstance(entries, list) else []:
                if not isinstance(entry, str):
                    continue
                if _REMOTE.search(entry):
                    remote.append((shown, entry))
                elif (here / entry).is_dir():
                    stack.append(Path(os.path.normpath(here / entry)))
    return remote, found


# --------------------------------------------------------------------------------------------------
# The cache of builds: a build is a pure function of its input files, the tool and the options, and costs
# seconds (kustomize is superlinear in files), so it is kept under a digest of exactly those.


@functools.cache
def _build_kind() -> str:
    digest = hashlib.blake2b(Path(__file__).read_bytes(), digest_size=8)
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
    """Add every file under `roots` (path relative to `top`, and its git blob id or link target) to `hasher`."""
    files: dict[str, str] = {}
    for root in roots:
        if root.is_file():
            walked: Any = [(str(root.parent), [], [root.name])]
        else:
            walked = os.walk(root)
        for dirpath, dirnames, filenames in walked:
            dirnames[:] = [d for d in dirnames if d != ".git"]
            for name in filenames:
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, top)
                if rel in files:
                    continue
                if os.path.islink(full):
                    files[rel] = "link:" + os.readlink(full)
                    continue
                try:
                    files[rel] = blob_id(read_regular(full, rel))
                except DevlaneError:
                    files[rel] = "unreadable"  # the build reports it
    for rel in sorted(files):
        hasher.update(f"{rel}\0{files[rel]}\n".encode())


def build_key(spec: InputSpec, tree: Path, base: str = "") -> str:
    """The cache key of one build: its options, its tool, and the digest of every file it may read (each
    reachable kustomization's directory, as kustomize's default load restrictor allows no other; the chart
    and its values files for Helm)."""
    spec = _based(spec, base)
    hasher = hashlib.sha256()
    top = Path(os.path.normpath(tree))
    if spec.kind == "kustomize":
        roots = _kustomizations(tree, spec.path)[1]
        tool = kustomize_command(spec)
    else:
        roots = [top / spec.path, *(top / v for v in spec.values)]
        tool = helm_command(spec)
        spec = replace(spec, release_name=release_name(spec, tree))  # from the directory's name, when not given
    hasher.update(json.dumps([dataclasses.asdict(spec), _tool_identity(tool)], sort_keys=True, default=str).encode())
    _tree_digest(hasher, top, sorted(roots))
    return hasher.hexdigest()


def cached_build(spec: InputSpec, tree: Path, base: str, cache: Cache | None) -> list[tuple[str, bytes]]:
    """`build`, or its result from `cache` when the same input files, tool and options built it before."""
    if cache is None or not (tree / _based(spec, base).path).is_dir():
        return build(spec, tree, base)
    key = build_key(spec, tree, base)
    found = cache.get(_build_kind(), key)
    if isinstance(found, list) and all(isinstance(p, list) and len(p) == 2 for p in found):
        return [(str(origin), str(text).encode("utf-8")) for origin, text in found]
    parts = build(spec, tree, base)
    cache.put(_build_kind(), key, [[origin, text.decode("utf-8", "replace")] for origin, text in parts])
    return parts


# --------------------------------------------------------------------------------------------------
# Building


def build(spec: InputSpec, tree: Path, base: str = "") -> list[tuple[str, bytes]]:
    """The objects of one built input as (where they came from, YAML text of one document), in order.

    `tree` is the whole repository (bases and charts may sit beside the directory rendered) and `base`
    the rendered directory inside it; input paths are relative to `base`."""
    spec = _based(spec, base)
    if not (tree / spec.path).is_dir():
        raise fail(f"{spec.label}: {spec.path} is not a directory of the repository", Where(file=".devlane.yaml"),
                   hint="fix the path under `inputs:` (relative to the repository root)", code="build-input")
    if spec.kind == "kustomize":
        return _kustomize(spec, tree)
    return _helm(spec, tree)


def _based(spec: InputSpec, base: str) -> InputSpec:
    """`spec` with its paths relative to the repository's top instead of the rendered directory `base`."""
    if not base:
        return spec
    return replace(spec, path=posixpath.normpath(posixpath.join(base, spec.path)),
                   values=tuple(posixpath.normpath(posixpath.join(base, v)) for v in spec.values))


def _kustomize(spec: InputSpec, tree: Path) -> list[tuple[str, bytes]]:
    if not any((tree / spec.path / n).is_file() for n in KUSTOMIZATION_FILES):
        raise fail(f"{spec.label}: no kustomization.yaml in {spec.path}", Where(file=spec.path),
                   hint="point `kustomize:` at a directory holding a kustomization", code="build-input")
    remote, outside = kustomization_graph(tree, spec.path)
    if remote:
        kfile, entry = remote[0]
        raise fail(f"{spec.label}: remote base {entry!r} (in {kfile}): devlane renders offline and never fetches",
                   Where(file=kfile), hint="vendor the base into the repository and point at its directory, or "
                   "list its objects' annotations in .devlane.yaml", code="build-remote")
    out = _run([*kustomize_command(spec), str(tree / spec.path)], tree, spec, [str(d) for d in outside])
    return [(spec.label, doc) for doc in _documents(out)]


def _helm(spec: InputSpec, tree: Path) -> list[tuple[str, bytes]]:
    chart = tree / spec.path
    if not (chart / CHART_FILE).is_file():
        raise fail(f"{spec.label}: no Chart.yaml in {spec.path}", Where(file=spec.path),
                   hint="point `helm:` at a chart directory", code="build-input")
    argv = [*helm_command(spec), release_name(spec, tree), str(chart), "--include-crds"]
    if spec.namespace:
        argv += ["--namespace", spec.namespace]
    if spec.kube_version:
        argv += ["--kube-version", spec.kube_version]
    for values in spec.values:
        if not (tree / values).is_file():
            raise fail(f"{spec.label}: values file {values} does not exist", Where(file=".devlane.yaml"),
                       hint="fix `values:` (paths are relative to the repository root)", code="build-input")
        argv += ["--values", str(tree / values)]
    for key, value in spec.set:
        argv += ["--set", f"{key}={value}"]
    out = _run(argv, tree, spec)
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


def _run(argv: list[str], tree: Path, spec: InputSpec, also: list[str] | None = None) -> bytes:
    """Run a build tool in the sandbox (no network, the repository read-only); its error names the input."""
    try:
        done = process.spawn(argv, b"", BUILD_TIMEOUT, readable=[str(tree), *(also or [])], limit=256 * 1024 * 1024)
    except OSError as exc:
        raise fail(f"{spec.label}: could not run {argv[0]}: {exc.strerror}", Where(file=spec.path),
                   code="build-tool") from None
    if done.returncode == 0 and not done.timed_out:
        return done.stdout
    text = done.stderr.strip().replace(str(tree) + "/", "")
    lines = [line for line in text.splitlines() if line.strip()][-8:]
    hint = "fix the input so that the tool builds it (the message above is the tool's own)"
    missing = _MISSING_DEPENDENCY.search(text)
    if missing:
        hint = (f"vendor the chart's dependencies: helm dependency build {spec.path}, and commit its charts/ "
                "directory (devlane never downloads during render)")
    elif done.timed_out:
        lines.append(f"timed out after {BUILD_TIMEOUT:g} s")
    what = " ".join(argv[:2])
    raise fail(f"{spec.label}: {what} failed:\n  " + "\n  ".join(lines or [f"exit status {done.returncode}"]),
               Where(file=spec.path), hint=hint, code="build-failed")


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
