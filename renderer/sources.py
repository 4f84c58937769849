"""Where a plugin comes from: `--plugin-source`, `.devlane.yaml` `plugins.sources`, a path in the
repository, a built-in under the top-level `plugins` package, or a git source pinned in `devlane.lock`.

A plugin directory holds `main.py` (Kardinal Python) and/or `plugin.yaml` (any runtime).

Git sources: a `plugins.sources` entry ``{git: URL, ref: REF}``, a URL used as the name
(``https://``, ``ssh://``, ``git://``, ``file://``, ``git@host:path``), or a name such as
``github.com/org/repo[/sub/dir]`` that nothing else maps (-> ``https://github.com/org/repo``, the
plugin in ``sub/dir``). Render resolves them through `devlane.lock` and the cache only: it never
touches the network, and refuses an unpinned or unfetched plugin with the command that fixes it.
"""

from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import Where, fail

if TYPE_CHECKING:
    from .lock import Lock

BUILTIN_PACKAGE = "plugins"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_URL = re.compile(r"(https?|ssh|git|git\+ssh|file)://\S+\Z")
_SCP = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!/)\S+\Z")
_HOSTED = re.compile(
    r"(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::[0-9]+)?)/(?P<org>[A-Za-z0-9_.~-]+)/(?P<repo>[A-Za-z0-9_.~-]+)"
    r"(?P<sub>(?:/[A-Za-z0-9_.~-]+)*)/?\Z"
)
DEFAULT_REF = "HEAD"  # the remote's default branch


def is_plugin_dir(path: Path) -> bool:
    return (path / "main.py").is_file() or (path / "plugin.yaml").is_file()


@dataclass(frozen=True)
class PluginSource:
    name: str  # the plugin `name` from the plugin definition, e.g. "github.com/org/repo" or "./plugins/x"
    path: Path  # directory holding main.py
    origin: str  # "flag" | "config" | "repo" | "builtin" | "git"
    commit: str | None = None  # git: the commit pinned in devlane.lock
    url: str | None = None  # git: the repository URL


@dataclass(frozen=True)
class GitSpec:
    """A plugin that comes from a git repository: what `devlane plugins lock` pins."""

    name: str
    url: str
    ref: str = DEFAULT_REF  # branch, tag, full ref or commit; HEAD: the remote's default branch
    subdir: str = ""  # the plugin's directory inside the repository
    origin: str = "name"  # "config" (plugins.sources.NAME.git) | "name" (the name is the URL)

    @property
    def given_by(self) -> str:
        if self.origin == "config":
            return f"plugins.sources.{self.name!r}.git in .devlane.yaml"
        return "the plugin name"


def git_url_for(name: str) -> tuple[str, str] | None:
    """(URL, subdir) when the plugin name itself is a git location, else None.

    ``github.com/org/repo/sub`` -> (``https://github.com/org/repo``, ``sub``); full URLs and
    ``git@host:path`` are used as written.
    """
    if _URL.match(name) or _SCP.match(name):
        return name, ""
    m = _HOSTED.match(name)
    if m is None:
        return None
    segments = [m["org"], m["repo"], *m["sub"].strip("/").split("/")]
    if any(seg in (".", "..") for seg in segments if seg):
        return None
    return f"https://{m['host']}/{m['org']}/{m['repo']}", m["sub"].strip("/")


def _is_url(name: str) -> bool:
    return bool(_URL.match(name) or _SCP.match(name))


def _config_git_spec(name: str, entry: dict) -> GitSpec:
    url = entry.get("git")
    if not isinstance(url, str) or not url.strip():
        raise fail(f"plugins.sources.{name}.git in .devlane.yaml is empty", Where(plugin=name, file=".devlane.yaml"),
                   "set it to the plugin repository's URL (https://..., ssh://..., git@host:path or a local path)",
                   code="plugin-source")  # fmt: skip
    ref = entry.get("ref") or DEFAULT_REF
    return GitSpec(name, url.strip(), str(ref), "", "config")


def _builtin_root() -> Path | None:
    """Directory of the top-level ``plugins`` package that holds devlane's built-in plugins."""
    try:
        root = importlib.resources.files(BUILTIN_PACKAGE)
    except (ModuleNotFoundError, TypeError):
        return None
    path = Path(str(root))
    return path if path.is_dir() else None


def _source_hint(name: str) -> str:
    return f"pass --plugin-source {name}=PATH, or add plugins.sources.{name!r}.path to .devlane.yaml"


def _explicit_dir(name: str, path: Path, given_by: str) -> Path:
    """A directory named explicitly by a flag or config entry: it must exist and hold main.py."""
    path = path.resolve()
    where = Where(plugin=name)
    if not path.is_dir():
        raise fail(
            f"plugin source {given_by} is not a directory: {path}",
            where,
            f"point it at the plugin's directory (the one holding main.py); {_source_hint(name)}",
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
    root = _builtin_root()
    return root / name if root is not None else None


def _repo_candidate(name: str, repo_root: Path) -> Path:
    candidate = (repo_root / name).resolve()
    if not candidate.is_relative_to(repo_root):
        raise fail(
            f"plugin name {name!r} points outside the repository ({candidate}); plugin paths must stay "
            f"inside {repo_root}",
            Where(plugin=name),
            f"move the plugin into the repository, or map the name explicitly: {_source_hint(name)}",
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
        entry = config_sources[name]
        return _config_git_spec(name, entry) if isinstance(entry, dict) and "git" in entry else None
    located = git_url_for(name)
    if located is None:
        return None
    if not _is_url(name):
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
    from . import cache
    from .lock import LOCK_FILE, read_lock

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
            f"{_source_hint(name)}, to use a local copy; or pin the git source: run `devlane plugins lock` then "
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
    checkout = cache.checkout_path(entry.commit)
    if not checkout.is_dir():
        raise fail(
            f"plugin {name!r} is pinned to commit {entry.commit[:12]} in {LOCK_FILE} but not fetched into the "
            f"cache ({checkout}); run `devlane plugins fetch`",
            where,
            f"run `devlane plugins fetch` in {repo_root} (the cache is ${cache.CACHE_ENV}, default ~/.cache/devlane)",
            code="plugin-not-fetched",
        )
    path = checkout / spec.subdir if spec.subdir else checkout
    if not is_plugin_dir(path):
        inside = f"/{spec.subdir}" if spec.subdir else " (repository root)"
        raise fail(
            f"commit {entry.commit[:12]} of {entry.url} has neither main.py nor plugin.yaml in {inside.strip()}",
            where,
            f"pin a commit that holds the plugin: `devlane plugins lock --update {name}`",
            code="plugin-source",
        )
    return PluginSource(name, path.resolve(), "git", commit=entry.commit, url=entry.url)


def resolve_plugin_source(
    name: str,
    repo_root: Path,
    flag_sources: dict[str, str],
    config_sources: dict[str, dict],
    lock: Lock | None = None,
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
        entry = config_sources[name]
        if isinstance(entry, dict) and "git" in entry:
            return _from_lock(_config_git_spec(name, entry), repo_root, lock)
        raw_path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(raw_path, str) or not raw_path:
            raise fail(
                f"plugins.sources.{name} in .devlane.yaml has no `path`",
                where,
                f"set plugins.sources.{name}.path to the plugin directory (relative to the repository root)",
                code="plugin-source",
            )
        path = Path(raw_path).expanduser()
        if not path.is_absolute():
            path = repo_root / path
        given_by = f"plugins.sources.{name}.path ({raw_path}) in .devlane.yaml"
        return PluginSource(name, _explicit_dir(name, path, given_by), "config")

    located = git_url_for(name)
    if located is not None and _is_url(name):
        return _from_lock(GitSpec(name, located[0], DEFAULT_REF, located[1], "name"), repo_root, lock)

    looked: list[str] = []
    candidate = _repo_candidate(name, repo_root)
    looked.append(f"{candidate} (path in the repository)")
    if is_plugin_dir(candidate):
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
        _source_hint(name),
        code="plugin-not-found",
    )
