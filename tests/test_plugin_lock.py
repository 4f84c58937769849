"""Git plugin sources pinned in devlane.lock: `devlane plugins lock | fetch`, and render through the
lock and the cache only. Every upstream is a real git repository made in a temp dir (file:// URLs);
nothing touches the network."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import app_yaml, run_cli

from renderer import cache, sources
from renderer.errors import DevlaneError
from renderer.lock import LOCK_FILE, Lock, LockEntry, lock_plugins, parse_lock, read_lock
from renderer.sources import GitSpec, git_spec, git_url_for, resolve_plugin_source

NAME = "github.com/acme/label-plugin"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

PLUGIN_MAIN = '''
VERSION = {version!r}


def create_flow(service_specs, pod_specs, flow_uuid):
    for spec in pod_specs:
        spec["containers"][0].setdefault("env", []).append({{"name": "PLUGIN_VERSION", "value": VERSION}})
    return {{"pod_specs": pod_specs, "config_map": {{"version": VERSION}}}}
'''

APP = app_yaml("api", "label") + """apiVersion: v1
kind: Service
metadata:
  name: label-def
  annotations:
    kardinal.dev.service/plugin-definition: |
      - name: %s
        type: external
        servicename: label
"""


def git(*args: str, cwd: Path) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True,
                         check=True)  # fmt: skip
    return out.stdout.strip()


def make_upstream(path: Path, version: str = "one", files: dict[str, str] | None = None) -> str:
    """A plugin repository with one commit on `main`; returns the commit."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    return commit_plugin(path, version, files)


def commit_plugin(path: Path, version: str, files: dict[str, str] | None = None, subdir: str = "") -> str:
    target = path / subdir if subdir else path
    target.mkdir(parents=True, exist_ok=True)
    (target / "main.py").write_text(PLUGIN_MAIN.format(version=version))
    for rel, text in (files or {}).items():
        (target / rel).write_text(text)
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", f"version {version}", cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


def make_repo(root: Path, plugin_name: str = NAME, sources_cfg: dict | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.yaml").write_text(APP % plugin_name)
    if sources_cfg is not None:
        (root / ".devlane.yaml").write_text(yaml.safe_dump({"plugins": {"sources": sources_cfg}}))
    return root


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    return {"DEVLANE_CACHE": str(tmp_path / "cache"), **GIT_ENV}


@pytest.fixture
def setup(tmp_path, env):
    """An upstream plugin repo and a manifest repo mapping NAME to it with a git source."""
    upstream = tmp_path / "upstream"
    first = make_upstream(upstream)
    repo = make_repo(tmp_path / "repo", NAME, {NAME: {"git": upstream.as_uri(), "ref": "main"}})
    return {"upstream": upstream, "repo": repo, "first": first, "env": env, "cache": tmp_path / "cache"}


def devlane(*args: str, env: dict) -> subprocess.CompletedProcess:
    return run_cli(*args, env=env)


def render(repo: Path, env: dict) -> subprocess.CompletedProcess:
    return devlane("render", str(repo), "--flow", "pr-1", "--service", "api=api:2", "--stdout", env=env)


def plugin_version(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0, out.stderr
    for doc in yaml.safe_load_all(out.stdout):
        if doc and doc.get("kind") == "Deployment" and doc["metadata"]["name"].startswith("api-"):
            env = doc["spec"]["template"]["spec"]["containers"][0].get("env") or []
            return next(e["value"] for e in env if e["name"] == "PLUGIN_VERSION")
    raise AssertionError(f"no dev Deployment in:\n{out.stdout}")


def locked(repo: Path) -> dict:
    return yaml.safe_load((repo / LOCK_FILE).read_text())


# --------------------------------------------------------------------------------------------------
# the whole cycle through the CLI


def test_lock_fetch_render_cycle(setup):
    repo, env, first = setup["repo"], setup["env"], setup["first"]

    out = render(repo, env)  # nothing pinned yet
    assert out.returncode == 1
    assert NAME in out.stderr and "not pinned in devlane.lock" in out.stderr
    assert "`devlane plugins lock`" in out.stderr and "Traceback" not in out.stderr

    out = devlane("plugins", "lock", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    assert f"locked {NAME} at {first[:12]}" in out.stderr and "next: `devlane plugins fetch`" in out.stderr
    assert locked(repo) == {
        "apiVersion": "devlane.dev/v1alpha1",
        "kind": "Lock",
        "plugins": [{"name": NAME, "url": setup["upstream"].as_uri(), "ref": "main", "commit": first,
                     "requirementsHash": None}],
    }  # fmt: skip

    out = render(repo, env)  # pinned, not fetched
    assert out.returncode == 1
    assert NAME in out.stderr and "not fetched" in out.stderr and "`devlane plugins fetch`" in out.stderr

    out = devlane("plugins", "fetch", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    assert f"fetched {NAME} {first[:12]}" in out.stderr
    checkout = setup["cache"] / "plugins" / first
    assert (checkout / "main.py").is_file() and not (checkout / ".git").exists()
    assert plugin_version(render(repo, env)) == "one"

    out = devlane("plugins", "fetch", str(repo), env=env)  # idempotent
    assert out.returncode == 0 and "already in the cache" in out.stderr
    out = devlane("plugins", "lock", str(repo), env=env)  # nothing changed: the file stays as it is
    assert out.returncode == 0 and "devlane.lock is up to date" in out.stderr


def test_upstream_moves_nothing_changes_until_the_lock_moves(setup):
    repo, env, upstream, first = setup["repo"], setup["env"], setup["upstream"], setup["first"]
    assert devlane("plugins", "lock", str(repo), env=env).returncode == 0
    assert devlane("plugins", "fetch", str(repo), env=env).returncode == 0
    before = render(repo, env)
    text = (repo / LOCK_FILE).read_bytes()

    second = commit_plugin(upstream, "two")
    out = devlane("plugins", "lock", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    assert (repo / LOCK_FILE).read_bytes() == text
    assert devlane("plugins", "fetch", str(repo), env=env).returncode == 0
    after = render(repo, env)
    assert after.stdout == before.stdout and plugin_version(after) == "one"

    out = devlane("plugins", "lock", str(repo), "--update", NAME, env=env)
    assert out.returncode == 0, out.stderr
    assert f"moved {NAME} from {first[:12]} to {second[:12]}" in out.stderr
    assert locked(repo)["plugins"][0]["commit"] == second

    out = render(repo, env)  # the new commit is not in the cache yet
    assert out.returncode == 1 and "`devlane plugins fetch`" in out.stderr
    assert devlane("plugins", "fetch", str(repo), env=env).returncode == 0
    assert plugin_version(render(repo, env)) == "two"


def test_entries_no_longer_used_are_dropped(setup):
    repo, env = setup["repo"], setup["env"]
    assert devlane("plugins", "lock", str(repo), env=env).returncode == 0
    assert [p["name"] for p in locked(repo)["plugins"]] == [NAME]
    (repo / "app.yaml").write_text(APP % "dummy")  # a built-in instead
    (repo / ".devlane.yaml").write_text("plugins: {sources: {}}\n")
    out = devlane("plugins", "lock", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    assert f"dropped {NAME}" in out.stderr
    assert locked(repo)["plugins"] == []


def test_changed_ref_makes_the_lock_stale_until_relocked(setup):
    repo, env, upstream = setup["repo"], setup["env"], setup["upstream"]
    assert devlane("plugins", "lock", str(repo), env=env).returncode == 0
    assert devlane("plugins", "fetch", str(repo), env=env).returncode == 0
    git("checkout", "-q", "-b", "next", cwd=upstream)
    nxt = commit_plugin(upstream, "next")
    (repo / ".devlane.yaml").write_text(yaml.safe_dump({"plugins": {"sources": {NAME: {
        "git": upstream.as_uri(), "ref": "next"}}}}))  # fmt: skip

    for command in (("render", str(repo), "--flow", "pr-1", "--service", "api=api:2", "--stdout"),
                    ("plugins", "fetch", str(repo))):  # fmt: skip
        out = devlane(*command, env=env)
        assert out.returncode == 1, out.stderr
        assert "now says" in out.stderr and "@ next" in out.stderr and "`devlane plugins lock`" in out.stderr

    out = devlane("plugins", "lock", str(repo), env=env)  # a changed ref re-pins without --update
    assert out.returncode == 0 and locked(repo)["plugins"][0]["commit"] == nxt
    assert devlane("plugins", "fetch", str(repo), env=env).returncode == 0
    assert plugin_version(render(repo, env)) == "next"


def test_plugin_name_that_is_a_url_uses_the_default_branch(tmp_path, env):
    upstream = tmp_path / "upstream"
    first = make_upstream(upstream, "default-branch")
    url = upstream.as_uri()
    repo = make_repo(tmp_path / "repo", url)
    out = render(repo, env)
    assert out.returncode == 1 and "not pinned" in out.stderr and "`devlane plugins lock`" in out.stderr
    out = devlane("plugins", "lock", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    assert locked(repo)["plugins"] == [{"name": url, "url": url, "ref": "HEAD", "commit": first,
                                        "requirementsHash": None}]  # fmt: skip
    assert devlane("plugins", "fetch", str(repo), env=env).returncode == 0
    assert plugin_version(render(repo, env)) == "default-branch"


def test_unchanged_pins_need_no_network_and_fetch_uses_the_mirror(setup):
    repo, env, upstream = setup["repo"], setup["env"], setup["upstream"]
    assert devlane("plugins", "lock", str(repo), env=env).returncode == 0
    assert devlane("plugins", "fetch", str(repo), env=env).returncode == 0
    shutil.rmtree(setup["cache"] / "plugins")
    upstream.rename(upstream.with_name("gone"))  # the remote is unreachable from here on

    assert devlane("plugins", "lock", str(repo), env=env).returncode == 0  # kept pins: no git at all
    out = devlane("plugins", "fetch", str(repo), env=env)  # the commit is in the bare mirror
    assert out.returncode == 0, out.stderr
    assert plugin_version(render(repo, env)) == "one"

    out = devlane("plugins", "lock", str(repo), "--update", NAME, env=env)
    assert out.returncode == 1
    assert f"cannot fetch the branches and tags of plugin {NAME}" in out.stderr and "check the URL" in out.stderr


def test_commit_gone_upstream_names_the_fix(setup, tmp_path):
    repo, env, upstream = setup["repo"], setup["env"], setup["upstream"]
    commit_plugin(upstream, "two")
    assert devlane("plugins", "lock", str(repo), env=env).returncode == 0
    pinned = locked(repo)["plugins"][0]["commit"]
    git("reset", "-q", "--hard", "HEAD~1", cwd=upstream)  # force-push the pinned commit away
    git("reflog", "expire", "--expire=now", "--all", cwd=upstream)
    git("gc", "-q", "--prune=now", cwd=upstream)
    fresh = {**env, "DEVLANE_CACHE": str(tmp_path / "fresh-cache")}  # e.g. a new CI runner
    out = devlane("plugins", "fetch", str(repo), env=fresh)
    assert out.returncode == 1
    assert f"commit {pinned} of plugin {NAME} is no longer available" in out.stderr
    assert f"`devlane plugins lock --update {NAME}`" in out.stderr


def test_update_of_an_unknown_name_is_a_usage_error(setup):
    out = devlane("plugins", "lock", str(setup["repo"]), "--update", "nope", env=setup["env"])
    assert out.returncode == 2
    assert "--update nope: not a git plugin source" in out.stderr and NAME in out.stderr


def test_lock_refuses_ref(setup):
    out = devlane("plugins", "lock", str(setup["repo"]), "--ref", "HEAD", env=setup["env"])
    assert out.returncode == 2 and "takes no --ref" in out.stderr


def test_repo_without_git_plugins_needs_no_lock(tmp_path, env):
    repo = make_repo(tmp_path / "repo", "dummy")
    out = devlane("plugins", "lock", str(repo), env=env)
    assert out.returncode == 0 and "not needed" in out.stderr
    assert not (repo / LOCK_FILE).exists()
    out = devlane("plugins", "fetch", str(repo), env=env)
    assert out.returncode == 0 and "nothing to fetch" in out.stderr


# --------------------------------------------------------------------------------------------------
# lock_plugins and refs, in-process


def _spec(url: str, ref: str = "HEAD", subdir: str = "", name: str = NAME) -> GitSpec:
    return GitSpec(name, url, ref, subdir, "config")


def test_refs_tags_short_commits_and_unknown_refs(tmp_path, env):
    upstream = tmp_path / "up"
    first = make_upstream(upstream)
    git("tag", "-a", "v1", "-m", "release 1", cwd=upstream)  # annotated: peeled to the commit
    second = commit_plugin(upstream, "two")
    repo = tmp_path / "repo"
    repo.mkdir()
    url = upstream.as_uri()
    cases = {"v1": first, "main": second, "HEAD": second, first[:8]: first, first: first, "refs/heads/main": second}
    for ref, want in cases.items():
        report = lock_plugins(repo, {NAME: _spec(url, ref)}, log=lambda _: None)
        assert report.lock.entries[NAME].commit == want, ref
    with pytest.raises(DevlaneError) as info:
        lock_plugins(repo, {NAME: _spec(url, "no-such-branch")}, log=lambda _: None)
    problem = info.value.problems[0]
    assert "ref 'no-such-branch' of plugin" in problem.message and problem.where.plugin == NAME
    assert f"plugins.sources.{NAME!r}.ref" in problem.hint


def test_plain_path_url_and_subdirectory(tmp_path, env):
    upstream = tmp_path / "up"
    upstream.mkdir()
    git("init", "-q", "-b", "main", cwd=upstream)
    (upstream / "README.md").write_text("plugins live below\n")
    commit = commit_plugin(upstream, "sub", subdir="plugins/label")
    repo = tmp_path / "repo"
    repo.mkdir()
    report = lock_plugins(repo, {NAME: _spec(str(upstream), "main", "plugins/label")}, log=lambda _: None)
    assert report.lock.entries[NAME].commit == commit
    with pytest.raises(DevlaneError) as info:  # the repository root holds no plugin
        lock_plugins(repo, {"other": _spec(str(upstream), "main", "", "other")}, log=lambda _: None)
    assert "neither main.py nor plugin.yaml" in str(info.value)


def test_requirements_hash_is_recorded(tmp_path, env):
    upstream = tmp_path / "up"
    req = b"# pinned deps\nsix==1.16.0\n"
    make_upstream(upstream, files={"requirements.txt": req.decode()})
    repo = tmp_path / "repo"
    repo.mkdir()
    report = lock_plugins(repo, {NAME: _spec(upstream.as_uri())}, log=lambda _: None)
    assert report.lock.entries[NAME].requirements_hash == hashlib.sha256(req).hexdigest()
    assert read_lock(repo).entries[NAME].requirements_hash == hashlib.sha256(req).hexdigest()


def test_lock_file_is_deterministic_and_sorted(tmp_path):
    commit = "a" * 40
    lock = Lock({n: LockEntry(n, f"https://h.example/{n}", "HEAD", commit, None) for n in ("z/b", "a/c")})
    text = lock.dump()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert body == textwrap.dedent(f"""\
        apiVersion: devlane.dev/v1alpha1
        kind: Lock
        plugins:
        - name: a/c
          url: https://h.example/a/c
          ref: HEAD
          commit: {commit}
          requirementsHash: null
        - name: z/b
          url: https://h.example/z/b
          ref: HEAD
          commit: {commit}
          requirementsHash: null""")
    assert parse_lock(text.encode()).entries == lock.entries


@pytest.mark.parametrize("text, expected", [
    ("plugins: {}", "`plugins` must be a list"),
    ("plugins: [{name: a, url: u, ref: HEAD, commit: abc}]", "not a full commit id"),
    ("kind: Config", "expected apiVersion"),
    ("plugins: [{name: a, url: u, ref: HEAD}]", "plugins[0].commit is missing"),
    (": [", "not valid YAML"),
])  # fmt: skip
def test_broken_lock_files_name_the_file_and_the_fix(text, expected):
    with pytest.raises(DevlaneError) as info:
        parse_lock(text.encode())
    problem = info.value.problems[0]
    assert expected in problem.message and problem.where.file == LOCK_FILE
    assert "`devlane plugins lock`" in problem.hint


# --------------------------------------------------------------------------------------------------
# names and resolution order


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


def test_resolution_order_with_git_names(tmp_path, monkeypatch, env):
    repo = tmp_path / "repo"
    vendored = repo / NAME
    builtins = tmp_path / "builtins"
    (builtins / "dummy").mkdir(parents=True)
    (builtins / "dummy" / "main.py").write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n    pass\n")
    monkeypatch.setattr(sources, "_builtin_root", lambda: builtins)
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
    (vendored / "main.py").write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n    pass\n")
    assert git_spec(NAME, repo) is None
    assert resolve_plugin_source(NAME, repo, {}, {}).origin == "repo"
    # ...but an explicit git entry in the config wins over the repository path
    config = {NAME: {"git": "https://example.com/fork.git", "ref": "v2"}}
    assert git_spec(NAME, repo, {}, config) == GitSpec(NAME, "https://example.com/fork.git", "v2", "", "config")
    assert git_spec(NAME, repo, {NAME: "x"}, config) is None  # and a flag wins over everything
    assert git_spec("dummy", repo) is None


def test_resolve_uses_the_given_lock_and_the_cache(tmp_path, env):
    repo = tmp_path / "repo"
    repo.mkdir()
    commit = "b" * 40
    lock = Lock({NAME: LockEntry(NAME, f"https://{NAME}", "HEAD", commit)}, present=True)
    with pytest.raises(DevlaneError) as info:
        resolve_plugin_source(NAME, repo, {}, {}, lock=lock)
    assert info.value.problems[0].code == "plugin-not-fetched"
    checkout = cache.checkout_path(commit)
    checkout.mkdir(parents=True)
    (checkout / "main.py").write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n    pass\n")
    src = resolve_plugin_source(NAME, repo, {}, {}, lock=lock)
    assert (src.origin, src.path, src.commit, src.url) == ("git", checkout.resolve(), commit, f"https://{NAME}")
    assert checkout.is_relative_to(Path(env["DEVLANE_CACHE"]))
