"""Plugin supply end to end: git plugin sources pinned in devlane.lock (`devlane plugins lock | fetch`,
render through the lock and the cache only) and `devlane plugins prepare` (one virtualenv per
requirements hash, built by pip from a wheel made by hand in the test, used by render through the
plugin's interpreter; render never runs pip).

Every upstream is a real git repository in a temp dir (file:// URLs) and pip runs with --no-index:
nothing touches the network. DEVLANE_CACHE points at a temp dir. The CLI runs in-process
(`harness.cli`); the plugins run as real processes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support import Result, app_yaml, git, plugin_definition, yamlc

from renderer.cli.common import Progress
from renderer.errors import DevlaneError
from renderer.host.supply import plugin_cache, venvs
from renderer.host.supply.gitspec import GitSpec
from renderer.host.supply.lock import LOCK_FILE, lock_plugins, read_lock

NAME = "github.com/acme/label-plugin"
RENDER = ("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout")
PKG = "devlane_testpkg"

VERSIONED_MAIN = '''
VERSION = {version!r}


def create_flow(service_specs, pod_specs, flow_uuid):
    for spec in pod_specs:
        spec["containers"][0].setdefault("env", []).append({{"name": "PLUGIN_VERSION", "value": VERSION}})
    return {{"pod_specs": pod_specs, "config_map": {{"version": VERSION}}}}
'''

WHEEL_MAIN = f'''
import {PKG}


def create_flow(service_specs, pod_specs, flow_uuid):
    for spec in pod_specs:
        spec["containers"][0].setdefault("env", []).append({{"name": "PLUGIN_VERSION", "value": {PKG}.VALUE}})
    return {{"pod_specs": pod_specs, "config_map": {{}}}}
'''


# --------------------------------------------------------------------------------------------------
# helpers


def commit_plugin(path: Path, version: str, files: dict[str, str] | None = None, subdir: str = "") -> str:
    """Write the versioned plugin (and `files`) into `path/subdir` and commit everything; the commit."""
    target = path / subdir if subdir else path
    target.mkdir(parents=True, exist_ok=True)
    (target / "main.py").write_text(VERSIONED_MAIN.format(version=version))
    for rel, text in (files or {}).items():
        (target / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", f"version {version}")
    return git(path, "rev-parse", "HEAD")


def make_upstream(path: Path, version: str = "one", files: dict[str, str] | None = None) -> str:
    """A plugin repository with one commit on `main`; returns the commit."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return commit_plugin(path, version, files)


def use_plugin(harness, name: str, sources: dict | None = None) -> None:
    """app.yaml: Deployment+Service `api` using instance `label` of plugin `name`; `sources`: plugins.sources."""
    definition = plugin_definition([{"name": name, "type": "external", "servicename": "label"}], "label-def")
    harness.write("app.yaml", app_yaml("api", "label") + definition)
    if sources is not None:
        harness.config({"plugins": {"sources": sources}})


def plugins(harness, *args: str, env: dict[str, str] | None = None) -> Result:
    """`devlane plugins SUBCOMMAND REPO ...` in-process."""
    return harness.cli("plugins", args[0], harness.root, *args[1:], env=env)


def plugin_version(out: Result) -> str:
    assert out.returncode == 0, out.stderr
    for doc in yamlc.safe_load_all(out.stdout):
        if doc and doc.get("kind") == "Deployment" and doc["metadata"]["name"].startswith("api-"):
            env = doc["spec"]["template"]["spec"]["containers"][0].get("env") or []
            return next(e["value"] for e in env if e["name"] == "PLUGIN_VERSION")
    raise AssertionError(f"no dev Deployment in:\n{out.stdout}")


def locked(repo: Path) -> dict:
    return yamlc.safe_load((repo / LOCK_FILE).read_text())


def build_wheel(directory: Path, value: str = "from-wheel") -> Path:
    """A pure-Python wheel of `devlane_testpkg`, written by hand (a zip with dist-info and RECORD)."""
    directory.mkdir(parents=True, exist_ok=True)
    dist = f"{PKG}-1.0.dist-info"
    files = {
        f"{PKG}/__init__.py": f"VALUE = {value!r}\n".encode(),
        f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: devlane-testpkg\nVersion: 1.0\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: devlane-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = io.StringIO()
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{path},sha256={digest},{len(data)}\n")
    record.write(f"{dist}/RECORD,,\n")
    files[f"{dist}/RECORD"] = record.getvalue().encode()
    wheel = directory / f"{PKG}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return wheel


def write_plugin(directory: Path, wheel: Path) -> None:
    """A Kardinal plugin importing `devlane_testpkg`, whose requirements.txt names `wheel`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "main.py").write_text(WHEEL_MAIN)
    (directory / "requirements.txt").write_text(f"# built by the test\n{wheel}\n")


@pytest.fixture
def env(tmp_path, monkeypatch) -> Path:
    """DEVLANE_CACHE in a temp dir, pip offline, git without the user's or the system's config; the cache."""
    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    return tmp_path / "cache"


@pytest.fixture
def setup(harness, env) -> dict:
    """An upstream plugin repo and the harness repo mapping NAME to it with a git source."""
    upstream = harness.tmp / "upstream"
    first = make_upstream(upstream)
    use_plugin(harness, NAME, {NAME: {"git": upstream.as_uri(), "ref": "main"}})
    return {"upstream": upstream, "repo": harness.root, "first": first, "cache": env}


# --------------------------------------------------------------------------------------------------
# lock, fetch and render: the whole cycle through the CLI


def test_lock_fetch_render_cycle(harness, setup):
    repo, first = setup["repo"], setup["first"]

    out = harness.cli(*RENDER)  # nothing pinned yet
    assert out.returncode == 1
    assert NAME in out.stderr and "not pinned in devlane.lock" in out.stderr
    assert "`devlane plugins lock`" in out.stderr and "Traceback" not in out.stderr

    out = plugins(harness, "lock")
    assert out.returncode == 0, out.stderr
    assert f"locked {NAME} at {first[:12]}" in out.stderr and "next: `devlane plugins fetch`" in out.stderr
    assert locked(repo) == {
        "apiVersion": "devlane.dev/v1alpha1",
        "kind": "Lock",
        "plugins": [{"name": NAME, "url": setup["upstream"].as_uri(), "ref": "main", "commit": first,
                     "requirementsHash": None}],
    }  # fmt: skip

    out = harness.cli(*RENDER)  # pinned, not fetched
    assert out.returncode == 1
    assert NAME in out.stderr and "not fetched" in out.stderr and "`devlane plugins fetch`" in out.stderr

    out = plugins(harness, "fetch")
    assert out.returncode == 0, out.stderr
    assert f"fetched {NAME} {first[:12]}" in out.stderr
    checkout = setup["cache"] / "plugins" / first
    assert (checkout / "main.py").is_file() and not (checkout / ".git").exists()
    assert plugin_version(harness.cli(*RENDER)) == "one"

    out = plugins(harness, "fetch")  # idempotent
    assert out.returncode == 0 and "already in the cache" in out.stderr
    out = plugins(harness, "lock")  # nothing changed: the file stays as it is
    assert out.returncode == 0 and "devlane.lock is up to date" in out.stderr


def test_upstream_moves_nothing_changes_until_the_lock_moves(harness, setup):
    repo, upstream, first = setup["repo"], setup["upstream"], setup["first"]
    assert plugins(harness, "lock").returncode == 0
    assert plugins(harness, "fetch").returncode == 0
    before = harness.cli(*RENDER)
    text = (repo / LOCK_FILE).read_bytes()

    second = commit_plugin(upstream, "two")
    out = plugins(harness, "lock")
    assert out.returncode == 0, out.stderr
    assert (repo / LOCK_FILE).read_bytes() == text
    assert plugins(harness, "fetch").returncode == 0
    after = harness.cli(*RENDER)
    assert after.stdout == before.stdout and plugin_version(after) == "one"

    out = plugins(harness, "lock", "--update", NAME)
    assert out.returncode == 0, out.stderr
    assert f"moved {NAME} from {first[:12]} to {second[:12]}" in out.stderr
    assert locked(repo)["plugins"][0]["commit"] == second

    out = harness.cli(*RENDER)  # the new commit is not in the cache yet
    assert out.returncode == 1 and "`devlane plugins fetch`" in out.stderr
    assert plugins(harness, "fetch").returncode == 0
    assert plugin_version(harness.cli(*RENDER)) == "two"


def test_entries_no_longer_used_are_dropped(harness, setup):
    repo = setup["repo"]
    assert plugins(harness, "lock").returncode == 0
    assert [p["name"] for p in locked(repo)["plugins"]] == [NAME]
    use_plugin(harness, "dummy", {})  # a built-in instead, and no sources
    out = plugins(harness, "lock")
    assert out.returncode == 0, out.stderr
    assert f"dropped {NAME}" in out.stderr
    assert locked(repo)["plugins"] == []


def test_changed_ref_makes_the_lock_stale_until_relocked(harness, setup):
    repo, upstream = setup["repo"], setup["upstream"]
    assert plugins(harness, "lock").returncode == 0
    assert plugins(harness, "fetch").returncode == 0
    git(upstream, "checkout", "-q", "-b", "next")
    nxt = commit_plugin(upstream, "next")
    harness.config({"plugins": {"sources": {NAME: {"git": upstream.as_uri(), "ref": "next"}}}})

    for out in (harness.cli(*RENDER), plugins(harness, "fetch")):
        assert out.returncode == 1, out.stderr
        assert "now says" in out.stderr and "@ next" in out.stderr and "`devlane plugins lock`" in out.stderr

    out = plugins(harness, "lock")  # a changed ref re-pins without --update
    assert out.returncode == 0 and locked(repo)["plugins"][0]["commit"] == nxt
    assert plugins(harness, "fetch").returncode == 0
    assert plugin_version(harness.cli(*RENDER)) == "next"


def test_plugin_name_that_is_a_url_uses_the_default_branch(harness, env):
    upstream = harness.tmp / "upstream"
    first = make_upstream(upstream, "default-branch")
    url = upstream.as_uri()
    use_plugin(harness, url)
    out = harness.cli(*RENDER)
    assert out.returncode == 1 and "not pinned" in out.stderr and "`devlane plugins lock`" in out.stderr
    out = plugins(harness, "lock")
    assert out.returncode == 0, out.stderr
    assert locked(harness.root)["plugins"] == [{"name": url, "url": url, "ref": "HEAD", "commit": first,
                                                "requirementsHash": None}]  # fmt: skip
    assert plugins(harness, "fetch").returncode == 0
    assert plugin_version(harness.cli(*RENDER)) == "default-branch"


def test_unchanged_pins_need_no_network_and_fetch_uses_the_mirror(harness, setup):
    upstream = setup["upstream"]
    assert plugins(harness, "lock").returncode == 0
    assert plugins(harness, "fetch").returncode == 0
    shutil.rmtree(setup["cache"] / "plugins")
    upstream.rename(upstream.with_name("gone"))  # the remote is unreachable from here on

    assert plugins(harness, "lock").returncode == 0  # kept pins: no git at all
    out = plugins(harness, "fetch")  # the commit is in the bare mirror
    assert out.returncode == 0, out.stderr
    assert plugin_version(harness.cli(*RENDER)) == "one"

    out = plugins(harness, "lock", "--update", NAME)
    assert out.returncode == 1
    assert f"cannot fetch the branches and tags of plugin {NAME}" in out.stderr and "check the URL" in out.stderr


def test_commit_gone_upstream_names_the_fix(harness, setup):
    repo, upstream = setup["repo"], setup["upstream"]
    commit_plugin(upstream, "two")
    assert plugins(harness, "lock").returncode == 0
    pinned = locked(repo)["plugins"][0]["commit"]
    git(upstream, "reset", "-q", "--hard", "HEAD~1")  # force-push the pinned commit away
    git(upstream, "reflog", "expire", "--expire=now", "--all")
    git(upstream, "gc", "-q", "--prune=now")
    out = plugins(harness, "fetch", env={"DEVLANE_CACHE": str(harness.tmp / "fresh-cache")})  # e.g. a new CI runner
    assert out.returncode == 1
    assert f"commit {pinned} of plugin {NAME} is no longer available" in out.stderr
    assert f"`devlane plugins lock --update {NAME}`" in out.stderr


# --------------------------------------------------------------------------------------------------
# lock_plugins and refs, in-process (real git upstreams)


def _spec(url: str, ref: str = "HEAD", subdir: str = "", name: str = NAME) -> GitSpec:
    return GitSpec(name, url, ref, subdir, "config")


def test_refs_tags_short_commits_and_unknown_refs(tmp_path, env):
    upstream = tmp_path / "up"
    first = make_upstream(upstream)
    git(upstream, "tag", "-a", "v1", "-m", "release 1")  # annotated: peeled to the commit
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
    git(upstream, "init", "-q", "-b", "main")
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


# --------------------------------------------------------------------------------------------------
# prepare: virtualenvs


def test_prepare_builds_the_venv_render_uses_it(harness, env):
    wheel = build_wheel(harness.tmp / "wheels")
    use_plugin(harness, "./plugins/label")
    plugin = harness.root / "plugins" / "label"
    write_plugin(plugin, wheel)

    out = harness.cli(*RENDER)  # render never installs anything
    assert out.returncode == 1
    assert "not prepared" in out.stderr and "`devlane plugins prepare`" in out.stderr
    assert "requirements.txt" in out.stderr and "Traceback" not in out.stderr

    out = plugins(harness, "prepare")
    assert out.returncode == 0, out.stderr
    digest = venvs.requirements_hash(plugin)
    assert f"[1/1] ./plugins/label: building virtualenv {digest[:12]}" in out.stderr
    assert "ready in" in out.stderr and "1 virtualenv(s) built" in out.stderr
    venv = env / "venvs" / digest
    assert json.loads((venv / venvs.READY).read_text())["requirementsHash"] == digest
    assert plugin_version(harness.cli(*RENDER)) == "from-wheel"  # imported through the venv's python

    out = plugins(harness, "prepare")
    assert out.returncode == 0 and "already prepared" in out.stderr and "0 virtualenv(s) built" in out.stderr

    assert venvs.python_for(plugin) == str(venvs.venv_python(venv))
    (venv / venvs.READY).unlink()  # as if the build had been interrupted: never used
    with pytest.raises(DevlaneError) as info:
        venvs.python_for(plugin, "label")
    assert info.value.problems[0].code == "plugin-not-prepared"
    assert info.value.problems[0].where.plugin == "label"
    out = harness.cli(*RENDER)
    assert out.returncode == 1 and "`devlane plugins prepare`" in out.stderr
    out = plugins(harness, "prepare", "--no-index")  # rebuilt from scratch
    assert out.returncode == 0 and "1 virtualenv(s) built" in out.stderr, out.stderr
    assert plugin_version(harness.cli(*RENDER)) == "from-wheel"


def test_git_plugin_with_requirements(harness, env):
    wheel = build_wheel(harness.tmp / "wheels", "git-wheel")
    upstream = harness.tmp / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    write_plugin(upstream, wheel)
    commit = commit_plugin(upstream, "unused", files={"main.py": WHEEL_MAIN})
    use_plugin(harness, NAME, {NAME: {"git": upstream.as_uri(), "ref": "main"}})

    assert plugins(harness, "lock").returncode == 0
    req = (upstream / "requirements.txt").read_bytes()
    assert locked(harness.root)["plugins"][0]["requirementsHash"] == hashlib.sha256(req).hexdigest()

    out = plugins(harness, "prepare")  # not fetched yet
    assert out.returncode == 1 and "`devlane plugins fetch`" in out.stderr and NAME in out.stderr

    assert plugins(harness, "fetch").returncode == 0
    out = plugins(harness, "prepare")
    assert out.returncode == 0, out.stderr
    assert f"[1/1] {NAME}: building virtualenv" in out.stderr
    assert plugin_version(harness.cli(*RENDER)) == "git-wheel"
    assert (plugin_cache.checkout_path(commit) / "requirements.txt").is_file()


def test_plugins_with_the_same_requirements_share_one_venv(tmp_path, env):
    wheel = build_wheel(tmp_path / "wheels")
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    write_plugin(a, wheel)
    write_plugin(b, wheel)
    c.mkdir()
    (c / "main.py").write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n    pass\n")
    (c / "requirements.txt").write_text("# nothing yet\n\n")
    targets = [venvs.target_for(n, p) for n, p in (("a", a), ("b", b), ("c", c))]
    stream = io.StringIO()
    report = venvs.prepare(targets, ["--no-index"], Progress(stream))
    assert len(report.built) == 1 and report.without == ["c"]
    assert "[1/1] a, b: building virtualenv" in stream.getvalue()
    assert venvs.python_for(a) == venvs.python_for(b) != sys.executable
    assert venvs.python_for(c) == sys.executable


def test_failed_install_names_the_plugin_and_leaves_nothing_usable(tmp_path, env):
    plugin = tmp_path / "broken"
    write_plugin(plugin, tmp_path / "missing" / "nope-1.0-py3-none-any.whl")
    stream = io.StringIO()
    with pytest.raises(DevlaneError) as info:
        venvs.prepare([venvs.target_for("broken", plugin)], ["--no-index"], Progress(stream))
    problem = info.value.problems[0]
    assert problem.where.plugin == "broken" and problem.code == "plugin-prepare"
    assert "installing the requirements of plugin broken failed" in problem.message
    assert "devlane plugins prepare" in problem.hint and ".log" in problem.hint
    digest = venvs.requirements_hash(plugin)
    assert not plugin_cache.venv_path(digest).exists()
    assert "failed after" in stream.getvalue()


def test_prepare_without_pip_in_devlanes_environment(tmp_path, env, monkeypatch):
    """When devlane's own pip cannot install into another interpreter, the venv gets its own pip."""
    monkeypatch.setattr(venvs, "_outer_pip", lambda: None)
    wheel = build_wheel(tmp_path / "wheels", "own-pip")
    plugin = tmp_path / "p"
    write_plugin(plugin, wheel)
    venvs.prepare([venvs.target_for("p", plugin)], ["--no-index"], venvs.Quiet())
    python = venvs.python_for(plugin)
    out = subprocess.run([python, "-c", f"import {PKG}; print({PKG}.VALUE)"], capture_output=True, text=True)
    assert out.stdout.strip() == "own-pip", out.stderr
