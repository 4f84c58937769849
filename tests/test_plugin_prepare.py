"""`devlane plugins prepare`: one virtualenv per requirements hash, built with pip from a wheel made
by hand in the test (pip runs with --no-index: no network), used by render through the plugin's
interpreter; render never runs pip and refuses when the virtualenv is missing."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from conftest import run_cli
from test_plugin_lock import NAME, commit_plugin, git, locked, make_repo, plugin_version, render

from renderer import cache, venvs
from renderer.errors import DevlaneError

PKG = "devlane_testpkg"

PLUGIN_MAIN = f'''
import {PKG}


def create_flow(service_specs, pod_specs, flow_uuid):
    for spec in pod_specs:
        spec["containers"][0].setdefault("env", []).append({{"name": "PLUGIN_VERSION", "value": {PKG}.VALUE}})
    return {{"pod_specs": pod_specs, "config_map": {{}}}}
'''


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
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "main.py").write_text(PLUGIN_MAIN)
    (directory / "requirements.txt").write_text(f"# built by the test\n{wheel}\n")


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    from test_plugin_lock import GIT_ENV

    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    return {"DEVLANE_CACHE": str(tmp_path / "cache"), "PIP_NO_INDEX": "1", **GIT_ENV}


def test_prepare_builds_the_venv_render_uses_it(tmp_path, env):
    wheel = build_wheel(tmp_path / "wheels")
    repo = make_repo(tmp_path / "repo", "./plugins/label")
    write_plugin(repo / "plugins" / "label", wheel)

    out = render(repo, env)  # render never installs anything
    assert out.returncode == 1
    assert "not prepared" in out.stderr and "`devlane plugins prepare`" in out.stderr
    assert "requirements.txt" in out.stderr and "Traceback" not in out.stderr

    out = run_cli("plugins", "prepare", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    digest = venvs.requirements_hash(repo / "plugins" / "label")
    assert f"[1/1] ./plugins/label: building virtualenv {digest[:12]}" in out.stderr
    assert "ready in" in out.stderr and "1 virtualenv(s) built" in out.stderr
    venv = Path(env["DEVLANE_CACHE"]) / "venvs" / digest
    assert json.loads((venv / venvs.READY).read_text())["requirementsHash"] == digest
    assert plugin_version(render(repo, env)) == "from-wheel"  # imported through the venv's python

    out = run_cli("plugins", "prepare", str(repo), env=env)
    assert out.returncode == 0 and "already prepared" in out.stderr and "0 virtualenv(s) built" in out.stderr

    assert venvs.python_for(repo / "plugins" / "label") == str(venvs.venv_python(venv))
    (venv / venvs.READY).unlink()  # as if the build had been interrupted: never used
    with pytest.raises(DevlaneError) as info:
        venvs.python_for(repo / "plugins" / "label", "label")
    assert info.value.problems[0].code == "plugin-not-prepared"
    assert info.value.problems[0].where.plugin == "label"
    out = render(repo, env)
    assert out.returncode == 1 and "`devlane plugins prepare`" in out.stderr
    out = run_cli("plugins", "prepare", str(repo), "--no-index", env=env)  # rebuilt from scratch
    assert out.returncode == 0 and "1 virtualenv(s) built" in out.stderr, out.stderr
    assert plugin_version(render(repo, env)) == "from-wheel"


def test_git_plugin_with_requirements(tmp_path, env):
    wheel = build_wheel(tmp_path / "wheels", "git-wheel")
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git("init", "-q", "-b", "main", cwd=upstream)
    write_plugin(upstream, wheel)
    commit = commit_plugin(upstream, "unused", files={"main.py": PLUGIN_MAIN})
    repo = make_repo(tmp_path / "repo", NAME, {NAME: {"git": upstream.as_uri(), "ref": "main"}})

    assert run_cli("plugins", "lock", str(repo), env=env).returncode == 0
    req = (upstream / "requirements.txt").read_bytes()
    assert locked(repo)["plugins"][0]["requirementsHash"] == hashlib.sha256(req).hexdigest()

    out = run_cli("plugins", "prepare", str(repo), env=env)  # not fetched yet
    assert out.returncode == 1 and "`devlane plugins fetch`" in out.stderr and NAME in out.stderr

    assert run_cli("plugins", "fetch", str(repo), env=env).returncode == 0
    out = run_cli("plugins", "prepare", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    assert f"[1/1] {NAME}: building virtualenv" in out.stderr
    assert plugin_version(render(repo, env)) == "git-wheel"
    assert (cache.checkout_path(commit) / "requirements.txt").is_file()


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
    report = venvs.prepare(targets, ["--no-index"], stream=stream)
    assert len(report.built) == 1 and report.without == ["c"]
    assert "[1/1] a, b: building virtualenv" in stream.getvalue()
    assert venvs.python_for(a) == venvs.python_for(b) != sys.executable
    assert venvs.python_for(c) == sys.executable


def test_failed_install_names_the_plugin_and_leaves_nothing_usable(tmp_path, env):
    plugin = tmp_path / "broken"
    write_plugin(plugin, tmp_path / "missing" / "nope-1.0-py3-none-any.whl")
    stream = io.StringIO()
    with pytest.raises(DevlaneError) as info:
        venvs.prepare([venvs.target_for("broken", plugin)], ["--no-index"], stream=stream)
    problem = info.value.problems[0]
    assert problem.where.plugin == "broken" and problem.code == "plugin-prepare"
    assert "installing the requirements of plugin broken failed" in problem.message
    assert "devlane plugins prepare" in problem.hint and ".log" in problem.hint
    digest = venvs.requirements_hash(plugin)
    assert not cache.venv_path(digest).exists()
    assert "failed after" in stream.getvalue()


@pytest.mark.parametrize("text, needs_venv", [
    (None, False), (b"", False), (b"# comment\n\n   \n", False), (b"six\n", True), (b"# x\nsix==1.0\n", True),
])  # fmt: skip
def test_requirements_hash(text, needs_venv):
    digest = venvs.requirements_hash_of(text)
    assert (digest is not None) == needs_venv
    if needs_venv:
        assert digest == hashlib.sha256(text).hexdigest()


def test_no_requirements_means_devlane_python(tmp_path):
    (tmp_path / "main.py").write_text("")
    assert venvs.python_for(tmp_path) == sys.executable


def test_prepare_cli_with_a_repo_plugin_and_builtin(tmp_path, env):
    repo = make_repo(tmp_path / "repo", "dummy")  # built-ins run inside devlane: nothing to prepare
    out = run_cli("plugins", "prepare", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    assert "prepared 0 plugin(s)" in out.stderr


def test_prepare_without_pip_in_devlanes_environment(tmp_path, env, monkeypatch):
    """When devlane's own pip cannot install into another interpreter, the venv gets its own pip."""
    monkeypatch.setattr(venvs, "_outer_pip", lambda: None)
    wheel = build_wheel(tmp_path / "wheels", "own-pip")
    plugin = tmp_path / "p"
    write_plugin(plugin, wheel)
    venvs.prepare([venvs.target_for("p", plugin)], ["--no-index"], stream=io.StringIO())
    python = venvs.python_for(plugin)
    out = subprocess.run([python, "-c", f"import {PKG}; print({PKG}.VALUE)"], capture_output=True, text=True)
    assert out.stdout.strip() == "own-pip", out.stderr


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_live_on_a_terminal(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    stream = _Terminal()
    progress = venvs.Progress(stream)
    progress.begin("[1/1] x: building virtualenv abc")
    progress.detail("Processing ./devlane_testpkg-1.0-py3-none-any.whl")
    time.sleep(0.35)
    progress.end("[1/1] x: virtualenv abc ready")
    text = stream.getvalue()
    assert "\r\x1b[2K[1/1] x: building virtualenv abc" in text and "Processing" in text
    assert text.endswith("\r\x1b[2K[1/1] x: virtualenv abc ready\n")
    plain = io.StringIO()
    progress = venvs.Progress(plain)
    progress.begin("start")
    progress.end("done")
    assert plain.getvalue() == "start\ndone\n"
