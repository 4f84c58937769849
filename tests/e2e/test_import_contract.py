"""`lint-imports` (as .ci/run calls it) fails on a deliberately added upward import, naming it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.skip("lint-imports (import-linter) is not installed")
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(exe), "--no-logo", "--no-cache"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


UPWARD = [
    ("host/budget.py", "from ..render import plan", "renderer.host is not allowed to import renderer.render"),
    ("sdk/channel.py", "from ..errors import Problem", "renderer.sdk.channel -> renderer.errors"),
    ("render/plan/planner.py", "from ...api import RenderResult",
     "renderer.render is not allowed to import renderer.api"),
    # inside render/: a stage imports only the stages before it in the pipeline
    ("render/model/records.py", "from ..plan import planner",
     "renderer.render.model is not allowed to import renderer.render.plan"),
    ("render/inputs/load.py", "from ..stored import memo",
     "renderer.render.inputs is not allowed to import renderer.render.stored"),
    ("render/plugins/calls.py", "from ..checks import invariants",
     "renderer.render.plugins is not allowed to import renderer.render.checks"),
]


@pytest.mark.parametrize(("module", "line", "broken"), UPWARD)
def test_an_upward_import_breaks_the_contract(tmp_path, module, line, broken):
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "renderer", copy / "renderer", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    assert lint_imports(copy).returncode == 0
    with (copy / "renderer" / module).open("a") as fh:
        fh.write(f"{line} as _upward  # noqa\n")
    out = lint_imports(copy)
    assert out.returncode == 1, out.stdout
    assert broken in out.stdout
