"""Where a plugin comes from, resolved once per name: `--plugin-source`, `.devlane.yaml`
`plugins.sources`, a path in the repository (read from the rendered git ref for `--ref`), a
built-in under the top-level `plugins` package, or a git source pinned in `devlane.lock`.

A plugin directory holds `main.py` (Kardinal Python) and/or `plugin.yaml` (any runtime). Render
resolves git sources through `devlane.lock` and the cache only: it never touches the network, and
refuses an unpinned or unfetched plugin with the command that fixes it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.resources
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from ..core import tempdirs
from ..core.fence import Fence
from ..core.source import GitRefSource, Source
from ..errors import DevlaneError, Problem, Where, fail
from .manifest import Manifest, load_manifest
from .supply import plugin_cache
from .supply.gitspec import DEFAULT_REF, GitSpec, config_git_spec, git_url_for, is_url
from .supply.lock import LOCK_FILE, Lock, parse_lock, read_lock
from .supply.venvs import Target, target_for

BUILTIN_PACKAGE = "plugins"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
Origin = Literal["flag", "config", "repo", "builtin", "git"]


def is_plugin_dir(path: Path) -> bool:
    return (path / "main.py").is_file() or (path / "plugin.yaml").is_file()


@dataclass(frozen=True)
class PluginSource:
    name: str  # the plugin `name` from the plugin definition, e.g. "github.com/org/repo" or "./plugins/x"
    path: Path  # the plugin directory
    origin: Origin
    commit: str | None = None  # git: the commit pinned in devlane.lock
    url: str | None = None  # git: the repository URL


def builtin_root() -> Path | None:
    """Directory of the top-level ``plugins`` package that holds devlane's built-in plugins."""
    try:
        root = importlib.resources.files(BUILTIN_PACKAGE)
    except (ModuleNotFoundError, TypeError):
        return None
    path = Path(str(root))
    return path if path.is_dir() else None


def source_hint(name: str) -> str:
    return f"pass --plugin-source {name}=PATH, or add plugins.sources.{name!r}.path to .devlane.yaml"


def _explicit_dir(name: str, path: Path, given_by: str) -> Path:
    """A directory named explicitly by a flag or config entry: it must exist and hold main.py."""
    path = path.resolve()
    where = Where(plugin=name)
    if not path.is_dir():
        raise fail(
            f"plugin source {given_by} is not a directory: {path}",
            where,
            f"point it at the plugin's directory (the one holding main.py); {source_hint(name)}",
            code="plugin-source",
        )
    if not is_plugin_dir(path):
        raise fail(
            f"plugin source {given_by} has neither main.py nor plugin.yaml: {path}",
            where,
            "a Kardinal plugin is a directory with main.py defining create_flow and delete_flow; "
            "point the source at that directory",
            code="plugin-source",
        )
    return path


def _builtin_dir(name: str) -> Path | None:
    if not _PLAIN_NAME.match(name):
        return None
    root = builtin_root()
    return root / name if root is not None else None


def refuse_shadowing(name: str, what: str, fix: str, where: Where | None = None) -> None:
    """A plain name that is a built-in's always means the built-in: a repository directory or a `plugins.sources`
    entry that takes it is refused, naming both, so no grant meant for the built-in reaches other code by its
    name."""
    builtin = _builtin_dir(name)
    if builtin is None or not is_plugin_dir(builtin):
        return
    raise fail(f"{what} takes the name of the built-in plugin {name!r} ({builtin}); a plain name always means the "
               "built-in, so this is refused", replace(where or Where(), plugin=name),
               f"{fix}; or, to use it, name it './{name}' in the plugin definition: then it is a repository plugin, "
               f"and nothing granted to the built-in {name} applies to it", code="plugin-shadows-builtin")


def _refuse_entry_shadowing(name: str) -> None:
    refuse_shadowing(name, f"plugins.sources.{name} in .devlane.yaml", "give the entry another name (and the plugin "
                     "definitions that use it)", Where(file=".devlane.yaml"))


def _repo_candidate(name: str, repo_root: Path) -> Path:
    candidate = (repo_root / name).resolve()
    if not candidate.is_relative_to(repo_root):
        raise fail(
            f"plugin name {name!r} points outside the repository ({candidate}); plugin paths must stay "
            f"inside {repo_root}",
            Where(plugin=name),
            f"move the plugin into the repository, or map the name explicitly: {source_hint(name)}",
            code="plugin-source-escape",
        )
    return candidate


def git_spec(
    name: str,
    repo_root: Path,
    flag_sources: dict[str, str] | None = None,
    config_sources: dict[str, dict] | None = None,
) -> GitSpec | None:
    """The git source plugin `name` resolves to, or None when a flag, a path, or a built-in provides it.

    Same order as `resolve_plugin_source`; used by `devlane plugins lock` to decide what to pin.
    """
    flag_sources = flag_sources or {}
    config_sources = config_sources or {}
    if not isinstance(name, str) or not name.strip() or name in flag_sources:
        return None
    if name in config_sources:
        _refuse_entry_shadowing(name)
        entry = config_sources[name]
        return config_git_spec(name, entry) if isinstance(entry, dict) and "git" in entry else None
    located = git_url_for(name)
    if located is None:
        return None
    if not is_url(name):
        repo_root = Path(repo_root).resolve()
        if is_plugin_dir(_repo_candidate(name, repo_root)):
            return None
        builtin = _builtin_dir(name)
        if builtin is not None and is_plugin_dir(builtin):
            return None
    url, subdir = located
    return GitSpec(name, url, DEFAULT_REF, subdir, "name")


def _from_lock(spec: GitSpec, repo_root: Path, lock: Lock | None, looked: list[str] | None = None) -> PluginSource:
    """The cached checkout of the commit `devlane.lock` pins for `spec` (offline: reads files only).

    `looked`: where a name that is not obviously a URL was searched first (for the not-pinned message).
    """
    name = spec.name
    where = Where(plugin=name)
    if lock is None:
        lock = read_lock(repo_root)
    at = "" if spec.ref == DEFAULT_REF else f" @ {spec.ref}"
    entry = lock.entries.get(name)
    if entry is None and looked:
        raise fail(
            f"plugin {name!r} not found; looked in: {'; '.join(looked)}; and as a git plugin ({spec.url}) it is "
            f"not pinned in {LOCK_FILE}; run `devlane plugins lock`",
            where,
            f"{source_hint(name)}, to use a local copy; or pin the git source: run `devlane plugins lock` then "
            f"`devlane plugins fetch` in {repo_root} and commit {LOCK_FILE}",
            code="plugin-not-pinned",
        )
    if entry is None:
        raise fail(
            f"plugin {name!r} is a git plugin ({spec.url}{at}, from {spec.given_by}) that is not pinned in "
            f"{LOCK_FILE}; run `devlane plugins lock`",
            where,
            f"run `devlane plugins lock` then `devlane plugins fetch` in {repo_root} and commit {LOCK_FILE}; "
            f"or use a local copy: pass --plugin-source {name}=PATH, or set plugins.sources.{name!r}.path "
            "in .devlane.yaml",
            code="plugin-not-pinned",
        )
    if entry.url != spec.url or entry.ref != spec.ref:
        raise fail(
            f"{LOCK_FILE} pins plugin {name!r} to {entry.url} @ {entry.ref}, but {spec.given_by} now says "
            f"{spec.url} @ {spec.ref}; run `devlane plugins lock`",
            Where(plugin=name, file=LOCK_FILE),
            f"run `devlane plugins lock` to pin the new source, then `devlane plugins fetch`, and commit {LOCK_FILE}",
            code="plugin-lock-stale",
        )
    checkout = plugin_cache.checkout_path(entry.commit)
    if not checkout.is_dir():
        raise fail(
            f"plugin {name!r} is pinned to commit {entry.commit[:12]} in {LOCK_FILE} but not fetched into the "
            f"cache ({checkout}); run `devlane plugins fetch`",
            where,
            f"run `devlane plugins fetch` in {repo_root} (the cache is ${plugin_cache.CACHE_ENV}, default "
            "~/.cache/devlane)",
            code="plugin-not-fetched",
        )
    path = checkout / spec.subdir if spec.subdir else checkout
    if not is_plugin_dir(path):
        inside = f"/{spec.subdir}" if spec.subdir else " (repository root)"
        raise fail(f"commit {entry.commit[:12]} of {entry.url} has neither main.py nor plugin.yaml in {inside.strip()}",
                   where, f"pin a commit that holds the plugin: `devlane plugins lock --update {name}`",
                   code="plugin-source")
    return PluginSource(name, path.resolve(), "git", commit=entry.commit, url=entry.url)


def resolve_plugin_source(
    name: str,
    repo_root: Path,
    flag_sources: dict[str, str],
    config_sources: dict[str, dict],
    lock: Lock | None = None,
    allowed: tuple[str, ...] = (),
) -> PluginSource:
    """Find the directory of plugin `name`.

    Order: ``flag_sources[name]`` (``--plugin-source NAME=PATH``; relative to the current directory),
    ``config_sources[name]`` (``plugins.sources`` in ``.devlane.yaml``: a ``path`` relative to
    `repo_root`, or a ``git`` source), `name` as a path inside `repo_root` (never outside it), the
    built-in plugin of that plain name, and finally a git location spelled by the name itself.
    Git sources come from the commit `lock` pins (default: `devlane.lock` in `repo_root`), exported
    into the cache by `devlane plugins fetch`. The chosen directory must contain ``main.py`` or
    ``plugin.yaml``.
    """
    where = Where(plugin=name)
    if not isinstance(name, str) or not name.strip():
        raise fail("plugin definition has an empty `name`", where,
                   "set `name` to a built-in plugin name, a path in the repository or a git URL",
                   code="plugin-source")
    repo_root = Path(repo_root).resolve()

    if name in flag_sources:
        raw = flag_sources[name]
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        return PluginSource(name, _explicit_dir(name, path, f"--plugin-source {name}={raw}"), "flag")

    if name in config_sources:
        _refuse_entry_shadowing(name)
        entry = config_sources[name]
        if isinstance(entry, dict) and "git" in entry:
            return _from_lock(config_git_spec(name, entry), repo_root, lock)
        raw_path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(raw_path, str) or not raw_path:
            raise fail(f"plugins.sources.{name} in .devlane.yaml has no `path`", where,
                       f"set plugins.sources.{name}.path to the plugin directory (relative to the repository root)",
                       code="plugin-source")
        given_by = f"plugins.sources.{name}.path ({raw_path}) in .devlane.yaml"
        # the repository names it: it must resolve inside the repository (or a directory the operator allows)
        real = Fence.around(repo_root, allowed).resolve(repo_root / raw_path, given_by,
                                                        Where(file=".devlane.yaml", plugin=name))
        return PluginSource(name, _explicit_dir(name, Path(real), given_by), "config")

    located = git_url_for(name)
    if located is not None and is_url(name):
        return _from_lock(GitSpec(name, located[0], DEFAULT_REF, located[1], "name"), repo_root, lock)

    looked: list[str] = []
    candidate = _repo_candidate(name, repo_root)
    looked.append(f"{candidate} (path in the repository)")
    if is_plugin_dir(candidate):
        refuse_shadowing(name, f"the repository's directory {name}/ ({candidate})", "rename the directory")
        return PluginSource(name, candidate, "repo")

    builtin = _builtin_dir(name)
    if builtin is not None:
        looked.append(f"{builtin} (built-in plugin)")
        if is_plugin_dir(builtin):
            return PluginSource(name, builtin.resolve(), "builtin")

    if located is not None:
        return _from_lock(GitSpec(name, located[0], DEFAULT_REF, located[1], "name"), repo_root, lock, looked)

    raise fail(
        f"plugin {name!r} not found; looked in: " + "; ".join(looked),
        where,
        source_hint(name),
        code="plugin-not-found",
    )


def git_specs(repo_root: Path, names: Iterable[str], config_sources: dict[str, dict]) -> dict[str, GitSpec]:
    """The git sources among `names`, as render would resolve them without `--plugin-source` flags."""
    out: dict[str, GitSpec] = {}
    for name in names:
        spec = git_spec(name, repo_root, {}, config_sources)
        if spec is not None:
            out[name] = spec
    return out


def _from_ref(name: str, source: GitRefSource, scratch: Path) -> PluginSource | None:
    """A plugin kept in the repository, read from the rendered git ref rather than the work tree."""
    rel = name[2:] if name.startswith("./") else name
    if rel.startswith("/") or ".." in rel.split("/"):
        return None
    if not (source.exists(f"{rel.rstrip('/')}/main.py") or source.exists(f"{rel.rstrip('/')}/plugin.yaml")):
        return None
    dest = scratch / f"plugin-{len(list(scratch.iterdir()))}"
    source.export(rel, dest)
    return PluginSource(name, dest, "repo") if is_plugin_dir(dest) else None


@dataclass
class Resolver:
    """Finds plugin directories and manifests once per name (flags, config, lock, repo, built-in)."""

    repo_root: Path
    flag_sources: dict[str, str]
    config_sources: dict[str, dict]
    source: Source | None = None
    scratch: Path | None = None  # where plugins read from a git ref are exported
    allowed: tuple[str, ...] = ()  # directories beside the repository the operator lets it name
    found: dict[str, tuple[PluginSource, Manifest] | DevlaneError] = field(default_factory=dict)

    def get(self, name: str) -> tuple[PluginSource, Manifest]:
        if name not in self.found:
            try:
                src = self._source(name)
                self.found[name] = (src, load_manifest(src.path, name))
            except DevlaneError as exc:
                self.found[name] = exc
        value = self.found[name]
        if isinstance(value, DevlaneError):
            raise value
        return value

    def _source(self, name: str) -> PluginSource:
        explicit = name in self.flag_sources or name in self.config_sources
        lock = None
        if isinstance(self.source, GitRefSource):
            if self.scratch is not None and not explicit:
                found = _from_ref(name, self.source, self.scratch)
                if found is not None:
                    refuse_shadowing(name, f"the repository's directory {name}/ at {self.source.ref}",
                                     "rename the directory")
                    return found
            lock = parse_lock(self.source.read(LOCK_FILE) if self.source.exists(LOCK_FILE) else None, LOCK_FILE)
        return resolve_plugin_source(name, self.repo_root, self.flag_sources, self.config_sources, lock=lock,
                                     allowed=self.allowed)


def is_builtin_dir(path: Path) -> bool:
    """Whether `path` is a plugin of devlane's own catalogue, however it was named (a flag, a path): such a
    plugin runs in-process, where it may import the catalogue's shared modules (`plugins/_*.py`)."""
    root = builtin_root()
    return root is not None and path.resolve().parent == root.resolve() and is_plugin_dir(path)


_SHARED_NAMES: dict[tuple[str, bool, int, int], frozenset[str]] = {}  # (file, in_package, mtime, size) -> names


def _imported_shared_names(py_file: Path, in_package: bool) -> frozenset[str]:
    """The names of the catalogue modules `py_file` imports: `from plugins import _x`, `from plugins._x
    import ...`, `import plugins._x`, and, when it is a module of the package itself (`in_package`), `from .
    import _x` and `from ._x import ...`. Parsed once per version of the file (every digest of a built-in asks)."""
    try:
        st = py_file.stat()
    except OSError:
        return frozenset()
    key = (str(py_file), in_package, st.st_mtime_ns, st.st_size)
    if key not in _SHARED_NAMES:
        _SHARED_NAMES[key] = _parse_shared_names(py_file, in_package)
    return _SHARED_NAMES[key]


def _parse_shared_names(py_file: Path, in_package: bool) -> frozenset[str]:
    try:
        tree = ast.parse(py_file.read_bytes(), filename=str(py_file))
    except (SyntaxError, ValueError, OSError):
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):  # import plugins._x [as y]
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith(BUILTIN_PACKAGE + "."))
        if not isinstance(node, ast.ImportFrom) or node.level > (1 if in_package else 0):
            continue
        module = node.module or ""
        if (node.level == 0 and module == BUILTIN_PACKAGE) or (node.level == 1 and not module):
            names.update(a.name for a in node.names)
        elif node.level == 0 and module.startswith(BUILTIN_PACKAGE + "."):
            names.add(module.split(".")[1])
        elif node.level == 1:
            names.add(module.split(".")[0])
    return frozenset(n for n in names if n.startswith("_"))


def shared_modules(path: Path) -> list[Path]:
    """The catalogue's shared modules a built-in's main.py imports (`from plugins import _x`, `from
    plugins._x import ...`), directly or through another shared module (`_ack` imports `_common`): part of
    its code, so part of its digest."""
    main_py = path / "main.py"
    if not is_builtin_dir(path) or not main_py.is_file():
        return []
    root = path.resolve().parent
    found: dict[str, Path] = {}
    pending = sorted(_imported_shared_names(main_py, in_package=False))
    while pending:
        name = pending.pop()
        module = root / f"{name}.py"
        if name in found or not module.is_file():
            continue
        found[name] = module
        pending += sorted(_imported_shared_names(module, in_package=True) - found.keys())
    return [found[n] for n in sorted(found)]


def plugin_digest(path: Path) -> str:
    """Content hash of a plugin directory (ignoring caches) and of the shared modules a built-in imports,
    recorded in `flow.metadata`."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = f.relative_to(path).as_posix()
        if "__pycache__" in rel or rel.endswith(".pyc") or rel.startswith((".venv/", "venv/", ".git/")):
            continue
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    for f in shared_modules(path):
        h.update(f"../{f.name}".encode() + b"\0" + f.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True)
class Identity:
    """The code a grant belongs to (never a name a pull request can reuse): a built-in itself, a git source's
    directory at one commit, or whatever code has one content digest (`plugin_digest`)."""

    kind: Literal["builtin", "git", "digest"]
    value: str  # builtin: its name; git: the repository URL ("": the name is no git source); digest: sha256:...
    commit: str = ""  # git
    subdir: str = ""  # git: the plugin's directory in the repository
    given_by: str = ""  # who names it, for messages: "devlane.lock at the trusted ref main", "the grant's digest"
    any_url: bool = False  # git: the commit is the code, wherever it is fetched from (a grant's own `commit:`)

    def matches(self, src: PluginSource, digest: Callable[[Path], str] = plugin_digest) -> bool:
        if self.kind == "builtin":
            return src.origin == "builtin" and src.name == self.value
        if self.kind == "git":
            checkout = plugin_cache.checkout_path(self.commit)
            return (src.origin == "git" and bool(self.value) and src.commit == self.commit
                    and (self.any_url or src.url == self.value)
                    and src.path == (checkout / self.subdir if self.subdir else checkout).resolve())
        return digest(src.path) == self.value

    def __str__(self) -> str:
        by = f" ({self.given_by})" if self.given_by else ""
        if self.kind == "builtin":
            return f"the built-in plugin {self.value}"
        if self.kind == "git" and self.any_url:
            return f"the code of commit {self.commit[:12]}{' in ' + self.subdir if self.subdir else ''}{by}"
        if self.kind == "git":
            return f"{self.value}{'/' + self.subdir if self.subdir else ''} at commit {self.commit[:12]}{by}"
        return f"the code with digest {self.value}{by}"


def describe_source(src: PluginSource, digest: Callable[[Path], str] = plugin_digest) -> str:
    """Where plugin code comes from, and what identifies it, for a message that compares it with a grant's."""
    if src.origin == "builtin":
        return f"the built-in plugin {src.name}"
    if src.origin == "git":
        return f"{src.url} at commit {(src.commit or '')[:12]} (pinned in {LOCK_FILE})"
    where = {"flag": f"--plugin-source {src.name}={src.path}", "config": f"plugins.sources.{src.name} in "
             f".devlane.yaml ({src.path})", "repo": f"the repository's {src.name}"}[src.origin]
    return f"{where}, digest {digest(src.path)}"


def git_location(name: str, config_sources: dict[str, dict]) -> tuple[str, str] | None:
    """(URL, subdir) of the git source `name` is, by its `plugins.sources` entry or by itself; None if neither
    makes it one."""
    entry = config_sources.get(name)
    if isinstance(entry, dict) and isinstance(entry.get("git"), str) and entry["git"].strip():
        return entry["git"].strip(), ""
    return None if isinstance(entry, dict) else git_url_for(name)


def trusted_identity(name: str, ref: GitRefSource | None, config_sources: dict[str, dict],
                     lock: Lock) -> Identity | None:
    """The code the trusted side means by plugin `name`: a built-in's plain name is the built-in; otherwise, at the
    trusted ref (`ref`, with its `.devlane.yaml` `plugins.sources` and its `lock`), a git source at the commit that
    lock pins, or a repository plugin by its digest there. None: it names no code."""
    builtin = _builtin_dir(name)
    if builtin is not None and is_plugin_dir(builtin):
        return Identity("builtin", name)
    if ref is None:
        return None
    at = f"at the trusted ref {ref.ref}"

    def locked(spec: GitSpec) -> Identity | None:
        pinned = lock.entries.get(name)
        if pinned is None or (pinned.url, pinned.ref) != (spec.url, spec.ref):
            return None
        return Identity("git", pinned.url, pinned.commit, spec.subdir, f"{LOCK_FILE} {at}")

    def digest_at(path: object) -> Identity | None:
        if not isinstance(path, str) or not path:
            return None
        with tempdirs.scratch("plugins") as scratch:
            found = _from_ref(path, ref, Path(scratch))
            return Identity("digest", plugin_digest(found.path), given_by=f"{path} {at}") if found else None

    entry = config_sources.get(name)
    if entry is not None:  # the same order as `resolve_plugin_source`, without flags
        if isinstance(entry, dict) and "git" in entry:
            return locked(config_git_spec(name, entry))
        return digest_at(entry.get("path") if isinstance(entry, dict) else None)
    located = git_url_for(name)
    if located is not None and is_url(name):
        return locked(GitSpec(name, located[0], DEFAULT_REF, located[1], "name"))
    return digest_at(name) or (locked(GitSpec(name, located[0], DEFAULT_REF, located[1], "name")) if located else None)


def prepare_targets(names: list[str], primary: set[str], repo_root: Path, flag_sources: dict[str, str],
                    config_sources: dict[str, dict], lock: Lock) -> tuple[list[Target], list[Problem]]:
    """The plugins `devlane plugins prepare` builds virtualenvs for, and the fallbacks it cannot resolve.

    A primary plugin that cannot be resolved is an error; an `implementations` fallback is a warning
    (render skips it too). Built-ins run inside devlane and need no virtualenv.
    """
    targets, problems, warnings = [], [], []
    for name in names:
        try:
            src = resolve_plugin_source(name, repo_root, flag_sources, config_sources, lock=lock)
        except DevlaneError as exc:
            if name in primary:
                problems += exc.problems
            else:
                warnings += [Problem(f"fallback not prepared: {p.format()}", severity="warning", code="plugin-prepare")
                             for p in exc.problems]
            continue
        if src.origin != "builtin":
            targets.append(target_for(name, src.path))
    if problems:
        raise DevlaneError(problems)
    return targets, warnings
