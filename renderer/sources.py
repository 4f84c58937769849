"""Where a plugin comes from: `--plugin-source`, `.devlane.yaml` `plugins.sources`, a path in the
repository, a git source pinned in `devlane.lock`, or a built-in under the top-level `plugins` package.

A plugin directory holds `main.py` (Kardinal Python) and/or `plugin.yaml` (any runtime).
"""

from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import Where, fail

BUILTIN_PACKAGE = "plugins"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


def is_plugin_dir(path: Path) -> bool:
    return (path / "main.py").is_file() or (path / "plugin.yaml").is_file()


@dataclass(frozen=True)
class PluginSource:
    name: str  # the plugin `name` from the plugin definition, e.g. "github.com/org/repo" or "./plugins/x"
    path: Path  # directory holding main.py
    origin: str  # "flag" | "config" | "repo" | "builtin"


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


def resolve_plugin_source(
    name: str, repo_root: Path, flag_sources: dict[str, str], config_sources: dict[str, dict]
) -> PluginSource:
    """Find the directory of plugin `name`.

    Order: ``flag_sources[name]`` (``--plugin-source NAME=PATH``; relative to the current directory),
    ``config_sources[name]["path"]`` (``plugins.sources`` in ``.devlane.yaml``; relative to
    `repo_root`), `name` as a path inside `repo_root` (never outside it), and finally the built-in
    plugin of that plain name. The chosen directory must contain ``main.py``.
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
            ref = entry.get("ref")
            at = f" @ {ref}" if ref else ""
            raise fail(
                f"plugins.sources.{name} in .devlane.yaml is a git source ({entry['git']}{at}); git plugin "
                "sources must be pinned with `devlane plugins lock`, which is not available in this version",
                where,
                f"use a path source meanwhile: check the plugin out and set plugins.sources.{name}.path "
                f"in .devlane.yaml, or pass --plugin-source {name}=PATH",
                code="plugin-source-git",
            )
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

    looked: list[str] = []
    candidate = (repo_root / name).resolve()
    if not candidate.is_relative_to(repo_root):
        raise fail(
            f"plugin name {name!r} points outside the repository ({candidate}); plugin paths must stay "
            f"inside {repo_root}",
            where,
            f"move the plugin into the repository, or map the name explicitly: {_source_hint(name)}",
            code="plugin-source-escape",
        )
    looked.append(f"{candidate} (path in the repository)")
    if is_plugin_dir(candidate):
        return PluginSource(name, candidate, "repo")

    if _PLAIN_NAME.match(name):
        root = _builtin_root()
        if root is not None:
            builtin = root / name
            looked.append(f"{builtin} (built-in plugin)")
            if is_plugin_dir(builtin):
                return PluginSource(name, builtin.resolve(), "builtin")

    raise fail(
        f"plugin {name!r} not found; looked in: " + "; ".join(looked),
        where,
        _source_hint(name),
        code="plugin-not-found",
    )
