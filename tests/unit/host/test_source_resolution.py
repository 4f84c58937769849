"""Where a plugin comes from (`renderer.host.resolve.resolve_plugin_source`): the order flag, config, repo,
built-in; names that escape the repository; git sources that must be pinned in devlane.lock; what a
miss says; and the built-in root being the top-level `plugins` package."""

from __future__ import annotations

from pathlib import Path

import pytest

import plugins as builtin_plugins_package
from renderer.errors import DevlaneError
from renderer.host import resolve
from renderer.host.resolve import resolve_plugin_source


def _plugin_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "main.py").write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n    pass\n")
    return path


@pytest.fixture
def layout(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    _plugin_dir(repo / "plugins" / "seed")
    _plugin_dir(repo / "vendor" / "seed-from-config")
    flag = _plugin_dir(tmp_path / "elsewhere" / "seed-from-flag")
    builtins = tmp_path / "builtins"
    _plugin_dir(builtins / "dummy")
    _plugin_dir(builtins / "redis-sidecar")
    _plugin_dir(tmp_path / "outside")
    monkeypatch.setattr(resolve, "builtin_root", lambda: builtins)
    return {"tmp": tmp_path, "repo": repo, "flag": flag, "builtins": builtins}


def test_resolution_order_flag_config_repo_builtin(layout, monkeypatch):
    repo, flag = layout["repo"], layout["flag"]
    name = "plugins/seed"
    config = {name: {"path": "vendor/seed-from-config"}}

    src = resolve_plugin_source(name, repo, {name: str(flag)}, config)
    assert (src.origin, src.path, src.name) == ("flag", flag.resolve(), name)

    monkeypatch.chdir(layout["tmp"])  # relative flag paths are relative to the current directory
    src = resolve_plugin_source(name, repo, {name: "elsewhere/seed-from-flag"}, config)
    assert (src.origin, src.path) == ("flag", flag.resolve())

    src = resolve_plugin_source(name, repo, {}, config)
    assert (src.origin, src.path) == ("config", (repo / "vendor" / "seed-from-config").resolve())

    for spelled in ("plugins/seed", "./plugins/seed"):
        src = resolve_plugin_source(spelled, repo, {}, {})
        assert (src.origin, src.path) == ("repo", (repo / "plugins" / "seed").resolve())

    src = resolve_plugin_source("dummy", repo, {}, {})
    assert (src.origin, src.path) == ("builtin", (layout["builtins"] / "dummy").resolve())


def test_repo_directory_without_main_py_falls_through_to_builtin(layout):
    repo = layout["repo"]
    (repo / "redis-sidecar").mkdir()  # e.g. a directory of manifests that happens to share the name
    (repo / "redis-sidecar" / "deploy.yaml").write_text("kind: Deployment\n")
    src = resolve_plugin_source("redis-sidecar", repo, {}, {})
    assert src.origin == "builtin"
    _plugin_dir(repo / "redis-sidecar")  # a plugin there would take the built-in's name: refused, naming both
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source("redis-sidecar", repo, {}, {})
    problem = info.value.problems[0]
    assert problem.code == "plugin-shadows-builtin" and str(repo / "redis-sidecar") in problem.message
    assert str(layout["builtins"] / "redis-sidecar") in problem.message and "'./redis-sidecar'" in problem.hint
    assert resolve_plugin_source("./redis-sidecar", repo, {}, {}).origin == "repo"  # named explicitly: its own


def test_escaping_the_repository_is_rejected(layout):
    for name in ("../outside", "plugins/../../outside", str(layout["tmp"] / "outside")):
        with pytest.raises(DevlaneError) as info:
            resolve_plugin_source(name, layout["repo"], {}, {})
        assert "points outside the repository" in str(info.value)
        assert info.value.problems[0].where.plugin == name
        assert "--plugin-source" in info.value.problems[0].hint


def test_git_source_needs_pinning(layout):
    name = "github.com/kurtosis-tech/postgres-seed-plugin"
    config = {name: {"git": "https://github.com/kurtosis-tech/postgres-seed-plugin", "ref": "05e71bc"}}
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source(name, layout["repo"], {}, config)
    problem = info.value.problems[0]
    assert name in problem.message and "05e71bc" in problem.message
    assert "devlane plugins lock" in problem.message and "not pinned in devlane.lock" in problem.message
    assert "--plugin-source" in problem.hint and "path" in problem.hint
    # a flag still wins over the git entry
    src = resolve_plugin_source(name, layout["repo"], {name: str(layout["flag"])}, config)
    assert src.origin == "flag"


def test_not_found_lists_where_it_looked(layout):
    name = "github.com/kurtosis-tech/neondb-plugin"
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source(name, layout["repo"], {}, {})
    problem = info.value.problems[0]
    assert f"plugin '{name}' not found" in problem.message
    assert str(layout["repo"].resolve() / name) in problem.message
    assert problem.hint.startswith(f"pass --plugin-source {name}=PATH, or add plugins.sources.")
    assert problem.where.plugin == name

    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source("no-such-builtin", layout["repo"], {}, {})
    assert str(layout["builtins"] / "no-such-builtin") in str(info.value)


def test_explicit_sources_must_hold_main_py(layout):
    empty = layout["tmp"] / "empty"
    empty.mkdir()
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source("x", layout["repo"], {"x": str(empty)}, {})
    assert "--plugin-source x=" in str(info.value) and "has neither main.py nor plugin.yaml" in str(info.value)
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source("x", layout["repo"], {}, {"x": {"path": "nope"}})
    assert "plugins.sources.x.path" in str(info.value) and "not a directory" in str(info.value)
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source("x", layout["repo"], {}, {"x": {}})
    assert "has no `path`" in str(info.value)


def test_builtin_root_is_the_top_level_plugins_package():
    assert resolve.builtin_root() == Path(builtin_plugins_package.__file__).resolve().parent
