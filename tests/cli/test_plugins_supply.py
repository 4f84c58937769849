"""`devlane plugins lock | fetch | prepare` where no git, pip or plugin process is needed: usage errors,
repositories without git plugins, built-ins (nothing to prepare), and the progress display of
`prepare`. The git and virtualenv cycles are in tests/e2e/test_plugin_supply.py."""

from __future__ import annotations

import io
import time

import pytest

from renderer.cli.common import Progress
from renderer.host.supply.lock import LOCK_FILE

NAME = "github.com/acme/label-plugin"


@pytest.fixture
def repo(harness, tmp_path, monkeypatch):
    """The harness repository using plugin instance `label`; DEVLANE_CACHE in a temp dir."""
    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    harness.app("api", "label")

    def use(plugin: str):
        harness.plugin_definition({"name": plugin, "type": "external", "servicename": "label"}, name="label-def")
        return harness.root

    return use


def test_update_of_an_unknown_name_is_a_usage_error(harness, repo, tmp_path):
    root = repo(NAME)
    harness.config({"plugins": {"sources": {NAME: {"git": (tmp_path / "upstream").as_uri(), "ref": "main"}}}})
    out = harness.cli("plugins", "lock", root, "--update", "nope")
    assert out.returncode == 2
    assert "--update nope: not a git plugin source" in out.stderr and NAME in out.stderr


def test_lock_refuses_ref(harness, repo, tmp_path):
    root = repo(NAME)
    harness.config({"plugins": {"sources": {NAME: {"git": (tmp_path / "upstream").as_uri(), "ref": "main"}}}})
    out = harness.cli("plugins", "lock", root, "--ref", "HEAD")
    assert out.returncode == 2 and "takes no --ref" in out.stderr


def test_repo_without_git_plugins_needs_no_lock(harness, repo):
    root = repo("dummy")
    out = harness.cli("plugins", "lock", root)
    assert out.returncode == 0 and "not needed" in out.stderr
    assert not (root / LOCK_FILE).exists()
    out = harness.cli("plugins", "fetch", root)
    assert out.returncode == 0 and "nothing to fetch" in out.stderr


def test_prepare_cli_with_a_repo_plugin_and_builtin(harness, repo):
    root = repo("dummy")  # built-ins run inside devlane: nothing to prepare
    out = harness.cli("plugins", "prepare", root)
    assert out.returncode == 0, out.stderr
    assert "prepared 0 plugin(s)" in out.stderr


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_live_on_a_terminal(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    stream = _Terminal()
    progress = Progress(stream)
    progress.begin("[1/1] x: building virtualenv abc")
    progress.detail("Processing ./devlane_testpkg-1.0-py3-none-any.whl")
    time.sleep(0.35)
    progress.end("[1/1] x: virtualenv abc ready")
    text = stream.getvalue()
    assert "\r\x1b[2K[1/1] x: building virtualenv abc" in text and "Processing" in text
    assert text.endswith("\r\x1b[2K[1/1] x: virtualenv abc ready\n")
    plain = io.StringIO()
    progress = Progress(plain)
    progress.begin("start")
    progress.end("done")
    assert plain.getvalue() == "start\ndone\n"
