"""Which interpreter a Kardinal Python plugin gets (`renderer.host.supply.venvs`): a requirements.txt
with something to install is hashed and needs a prepared virtualenv; none, or one of only comments
and blank lines, means devlane's own Python. Nothing is built here (see tests/e2e/test_plugin_supply.py)."""

from __future__ import annotations

import hashlib
import sys

import pytest

from renderer.host.supply import venvs


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
