"""Every shell block marked runnable in README.md and docs/*.md runs (issue 46 point 6).

A runnable block is a ```sh fence on the line after `<!-- runnable -->`. Each runs with bash, in a temporary
copy of the repository (examples/ always, and every other top-level entry the snippet names), from that copy's
root, with the `devlane` of this checkout first on PATH, and must exit 0. When the doc shows its output (the next
fence, on the line after `<!-- output -->`), every line shown must appear in the real output (stdout and stderr);
a `...` line stands for lines left out."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OPEN = re.compile(r"^(`{3,}|~{3,})(.*)$")
SKIP_TOP = {".git", ".venv", ".tools", "mutants", "out", "docs", "README.md", "devlane.egg-info", ".hypothesis",
            ".pytest_cache", ".ruff_cache", ".import_linter_cache", "mutation-report.txt"}


def blocks(page: Path):
    """(marker, info, body, line) for each fenced block, marker being the HTML comment on the line before."""
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2).strip(), i
        j = i + 1
        while j < len(lines) and not (lines[j].startswith(fence[0] * len(fence)) and not lines[j].strip(fence[0])):
            j += 1
        prev = lines[start - 1].strip() if start else ""
        yield prev, info, "\n".join(lines[start + 1 : j]), start + 1
        i = j + 1


def snippets():
    for page in PAGES:
        found = list(blocks(page))
        for k, (marker, info, body, line) in enumerate(found):
            if marker != "<!-- runnable -->":
                continue
            assert info == "sh", f"{page.name}:{line}: a runnable block must be ```sh"
            shown = None
            if k + 1 < len(found) and found[k + 1][0] == "<!-- output -->":
                shown = found[k + 1][2]
            yield pytest.param(body, shown, id=f"{page.relative_to(ROOT)}:{line}")


SNIPPETS = list(snippets())


def test_the_tour_is_runnable():
    ids = [p.id for p in SNIPPETS]
    assert sum(i.startswith("README.md:") for i in ids) >= 5, ids


def _copy(snippet: str, dest: Path) -> None:
    shutil.copytree(ROOT / "examples", dest / "examples", ignore=shutil.ignore_patterns("rendered", "__pycache__"))
    for entry in sorted(ROOT.iterdir()):
        if entry.name in SKIP_TOP or entry.name == "examples" or entry.name not in snippet:
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(entry, dest / entry.name)


@pytest.mark.parametrize(("snippet", "shown"), SNIPPETS)
def test_snippet_runs(snippet, shown, tmp_path):
    devlane = shutil.which("devlane")
    assert devlane, "devlane is not on PATH (pip install -e .)"
    repo = tmp_path / "repo"
    repo.mkdir()
    _copy(snippet, repo)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # a pipe: the docs show it unwrapped
    env.update(PATH=f"{Path(devlane).parent}{os.pathsep}{os.environ.get('PATH', '')}", TMPDIR=str(tmp_path),
               DEVLANE_PROGRESS="never", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", snippet], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120)
    said = done.stdout + done.stderr
    assert done.returncode == 0, f"exit {done.returncode}\n--- snippet\n{snippet}\n--- output\n{said}"
    if shown is None:
        return
    real = {line.rstrip() for line in said.splitlines()}
    missing = [line for line in shown.splitlines()
               if line.strip() and line.strip() != "..." and line.rstrip() not in real]
    assert not missing, "lines the doc shows that the command did not print:\n" + "\n".join(missing) + \
        f"\n--- real output\n{said}"
