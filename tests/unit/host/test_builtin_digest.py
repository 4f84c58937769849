"""A built-in's digest (`renderer.host.resolve.plugin_digest`, recorded in flow.metadata) covers the catalogue's
shared modules it runs: those its main.py imports and, transitively, those they import (a family module such as
`_ack` built on `_common`), so a change to any of them changes the digest of every plugin that depends on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from renderer.host import resolve

MAIN = "def create_flow(service_specs, pod_specs, flow_uuid):\n    return {'pod_specs': pod_specs}\n"


@pytest.fixture
def catalogue(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "plugins"
    files = {
        "__init__.py": "",
        "_common.py": "from . import _family  # a cycle must not loop\nVALUE = 1\n",
        "_family.py": "from plugins._common import VALUE\nimport plugins._extra as extra\n",
        "_extra.py": "from ._common import VALUE\n",
        "_unused.py": "VALUE = 2\n",
        "family-user/main.py": "from plugins import _family\n" + MAIN,
        "common-user/main.py": "from plugins._common import VALUE\n" + MAIN,
        "standalone/main.py": "from . import _unused  # not the catalogue: a main.py is no module of it\n" + MAIN,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.setattr(resolve, "builtin_root", lambda: root)
    return root


def test_shared_modules_follow_imports_through_shared_modules(catalogue):
    names = [p.name for p in resolve.shared_modules(catalogue / "family-user")]
    assert names == ["_common.py", "_extra.py", "_family.py"]
    assert [p.name for p in resolve.shared_modules(catalogue / "common-user")] == ["_common.py", "_extra.py",
                                                                                  "_family.py"]
    assert resolve.shared_modules(catalogue / "standalone") == []


def test_a_change_to_a_module_imported_only_by_another_changes_the_digest(catalogue):
    user, standalone = catalogue / "family-user", catalogue / "standalone"
    before = resolve.plugin_digest(user), resolve.plugin_digest(standalone)
    (catalogue / "_extra.py").write_text("from ._common import VALUE\nOTHER = 3\n")
    after = resolve.plugin_digest(user), resolve.plugin_digest(standalone)
    assert after[0] != before[0]
    assert after[1] == before[1]


def test_the_real_catalogue_digests_cover_common():
    root = resolve.builtin_root()
    assert root is not None
    for name in ("aws-rds", "cloud-sql", "mysql-seed", "neon-branch", "redis-sidecar"):  # mysql-seed: via _dbseed
        assert root / "_common.py" in resolve.shared_modules(root / name), name
    assert resolve.shared_modules(root / "dummy") == []
