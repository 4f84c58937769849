"""Files devlane writes for people are readable by them (issue 46, point 4): the preview page a reviewer's browser
opens, the `devlane.lock` a teammate's checkout reads and the rendered files Argo CD's repo-server reads get the
mode a plain `open()` gives (0666 less the umask), not mkstemp's 0600; a file replaced keeps its mode, and a
caller that writes a secret asks for 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from support import yaml_doc

from renderer.core.files import write_atomic
from renderer.host.supply.lock import Lock, write_lock


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o022, 0o027, 0o077])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def test_a_new_file_gets_the_mode_open_gives(tmp_path, umask):
    assert mode(write_atomic(tmp_path / "preview.html", "<html/>")) == 0o666 & ~umask


def test_a_replaced_file_keeps_its_mode_and_a_secret_gets_0600(tmp_path, umask):
    page = tmp_path / "page.html"
    page.write_text("old")
    page.chmod(0o640)
    write_atomic(page, "new")
    assert (page.read_text(), mode(page)) == ("new", 0o640)
    assert mode(write_atomic(tmp_path / "token", "s3cret", mode=0o600)) == 0o600


def test_the_lock_file_and_the_preview_page_are_readable_by_others(tmp_path, harness):
    old = os.umask(0o022)
    try:
        lock = write_lock(tmp_path, Lock([]))
        assert mode(lock) == 0o644
        page = tmp_path / "lane.html"
        harness.write("app.yaml", yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
                                            "spec": {"selector": {"app": "api"}, "ports": [{"port": 80}]}})
                      + yaml_doc({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
                                  "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": {
                                      "metadata": {"labels": {"app": "api"}},
                                      "spec": {"containers": [{"name": "api", "image": "api:1"}]}}}}))
        out = harness.cli("preview", "--flow", "pr-1", "--service", "api=api:2", "--html", str(page))
        assert out.returncode == 0, out.stderr
        assert mode(page) == 0o644
    finally:
        os.umask(old)
