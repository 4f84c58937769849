"""An upgrade, or an edit of any module that shapes the stored model, is a new cache kind: the model a previous
version stored is not reused (the real CLI, run from a copy of the package whose code is edited between
renders, with one persistent cache, as a user's `$DEVLANE_CACHE` outlives an upgrade)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, app_yaml

RENDER = ["render", "--flow", "pr-1", "--service", "api=api:2", "--stdout"]
MODEL = re.compile(r"\bmodel-([0-9a-f]+) (\d+) hit\(s\) (\d+) miss\(es\)")


def devlane(code: Path, repo: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(code), "DEVLANE_CACHE": str(cache)}
    out = subprocess.run([sys.executable, "-m", "renderer.cli", *RENDER, *extra], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out


def model_counts(out: subprocess.CompletedProcess) -> tuple[str, int, int]:
    """The stored model's cache kind, hits and misses, as `--debug` reports them."""
    found = MODEL.search(out.stderr)
    assert found, out.stderr
    return found.group(1), int(found.group(2)), int(found.group(3))


@pytest.mark.parametrize("module", [
    "render/model/cycles.py",  # the model's own code
    "render/inputs/config_annotations.py",  # what loading adds to the documents the model is built from
    "core/jsonio.py",  # how the stored passes are written
])
def test_a_model_stored_by_other_code_is_not_reused(harness, tmp_path, module):
    code = tmp_path / "code"
    # with its bytecode (copied with the sources' times, so still valid): only the edited module compiles again
    shutil.copytree(ROOT / "renderer", code / "renderer")
    harness.write("api.yaml", app_yaml("api").replace(
        "annotations: {}", "annotations: {kardinal.dev.service/dependencies: 'db:http'}"))
    harness.write("db.yaml", app_yaml("db"))
    cache = tmp_path / "cache"
    first = devlane(code, harness.root, cache, "--debug")
    kind, hits, misses = model_counts(first)
    assert (hits, misses) == (0, 1)
    assert model_counts(devlane(code, harness.root, cache, "--debug"))[1:] == (1, 0)  # the same code reuses it

    path = code / "renderer" / module
    path.write_text(path.read_text() + "\n# a new version of this module\n")
    after = devlane(code, harness.root, cache, "--debug")
    new_kind, hits, misses = model_counts(after)
    assert new_kind != kind and (hits, misses) == (0, 1)
    assert after.stdout == first.stdout == devlane(code, harness.root, cache, "--no-cache").stdout
    assert sorted(p.name.split("-")[0] for p in (cache / "v1").iterdir() if p.name.startswith("model-")) == \
        ["model", "model"]  # the old entry is still there, in the old kind's directory: never read again
