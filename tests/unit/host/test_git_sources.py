"""Git plugin names and resolution through `devlane.lock` (`renderer.host.supply.gitspec`,
`renderer.host.resolve`): which names are git locations, the resolution order (flag > config > repo
path > built-in > git name), and render's offline use of a lock and the cache. No git runs here."""

from __future__ import annotations

from pathlib import Path

import pytest

from renderer.errors import DevlaneError
from renderer.host import resolve
from renderer.host.resolve import git_spec, resolve_plugin_source
from renderer.host.supply import plugin_cache
from renderer.host.supply.gitspec import GitSpec, git_url_for
from renderer.host.supply.lock import Lock, LockEntry

NAME = "github.com/acme/label-plugin"
NOOP_PLUGIN = "def create_flow(service_specs, pod_specs, flow_uuid):\n    pass\n"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(plugin_cache.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("name, expected", [
    ("github.com/kurtosis-tech/postgres-seed-plugin", ("https://github.com/kurtosis-tech/postgres-seed-plugin", "")),
    ("gitlab.example.com:8443/org/repo/plugins/seed/", ("https://gitlab.example.com:8443/org/repo", "plugins/seed")),
    ("https://github.com/org/repo.git", ("https://github.com/org/repo.git", "")),
    ("ssh://git@example.com/org/repo", ("ssh://git@example.com/org/repo", "")),
    ("git@github.com:org/repo.git", ("git@github.com:org/repo.git", "")),
    ("file:///srv/plugins/repo", ("file:///srv/plugins/repo", "")),
    ("plugins/seed", None),
    ("./plugins/seed", None),
    ("dummy", None),
    ("github.com/org", None),
    ("github.com/org/../x", None),
])  # fmt: skip
def test_git_locations_in_names(name, expected):
    assert git_url_for(name) == expected


def test_resolution_order_with_git_names(tmp_path, monkeypatch, cache_dir):
    repo = tmp_path / "repo"
    vendored = repo / NAME
    builtins = tmp_path / "builtins"
    (builtins / "dummy").mkdir(parents=True)
    (builtins / "dummy" / "main.py").write_text(NOOP_PLUGIN)
    monkeypatch.setattr(resolve, "builtin_root", lambda: builtins)
    repo.mkdir()

    spec = git_spec(NAME, repo)
    assert spec == GitSpec(NAME, f"https://{NAME}", "HEAD", "", "name")
    with pytest.raises(DevlaneError) as info:  # never touches the network: the lock is missing
        resolve_plugin_source(NAME, repo, {}, {})
    problem = info.value.problems[0]
    assert problem.code == "plugin-not-pinned" and problem.where.plugin == NAME
    assert f"https://{NAME}" in problem.message and "`devlane plugins lock`" in problem.message
    assert f"--plugin-source {NAME}=PATH" in problem.hint

    vendored.mkdir(parents=True)  # a copy kept in the repository wins over the git location
    (vendored / "main.py").write_text(NOOP_PLUGIN)
    assert git_spec(NAME, repo) is None
    assert resolve_plugin_source(NAME, repo, {}, {}).origin == "repo"
    # ...but an explicit git entry in the config wins over the repository path
    config = {NAME: {"git": "https://example.com/fork.git", "ref": "v2"}}
    assert git_spec(NAME, repo, {}, config) == GitSpec(NAME, "https://example.com/fork.git", "v2", "", "config")
    assert git_spec(NAME, repo, {NAME: "x"}, config) is None  # and a flag wins over everything
    assert git_spec("dummy", repo) is None


def test_resolve_uses_the_given_lock_and_the_cache(tmp_path, cache_dir):
    repo = tmp_path / "repo"
    repo.mkdir()
    commit = "b" * 40
    lock = Lock({NAME: LockEntry(NAME, f"https://{NAME}", "HEAD", commit)}, present=True)
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source(NAME, repo, {}, {}, lock=lock)
    assert info.value.problems[0].code == "plugin-not-fetched"
    checkout = plugin_cache.checkout_path(commit)
    checkout.mkdir(parents=True)
    (checkout / "main.py").write_text(NOOP_PLUGIN)
    src = resolve_plugin_source(NAME, repo, {}, {}, lock=lock)
    assert (src.origin, src.path, src.commit, src.url) == ("git", checkout.resolve(), commit, f"https://{NAME}")
    assert checkout.is_relative_to(cache_dir)
