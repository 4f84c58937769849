"""The GitHub composite action and the example workflow: inputs, outputs and steps are consistent, every devlane
flag their scripts use exists (`devlane COMMAND --help`, in-process), and the workflow runs on pull requests with
an opt-in label and cleans up. Bash, actionlint and a real run of the action's steps are in
tests/e2e/test_github_action_run.py."""

from __future__ import annotations

import re

from support import ROOT, yamlc

ACTION = ROOT / ".github" / "actions" / "devlane" / "action.yml"
WORKFLOW = ROOT / "examples" / "github" / "devlane-preview.yml"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _action() -> dict:
    return yamlc.safe_load(ACTION.read_text())


def _workflow() -> dict:
    doc = yamlc.safe_load(WORKFLOW.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def test_action_inputs_outputs_and_steps_are_consistent():
    action = _action()
    assert action["runs"]["using"] == "composite"
    inputs = set(action["inputs"])
    assert inputs == {"path", "base-ref", "flow-id", "services", "image-template", "kube-version", "validate",
                      "comment", "fail-on", "publish", "e2e-command", "wait-timeout"}  # fmt: skip
    assert set(action["outputs"]) == {"flow-id", "rendered-dir", "changed", "counts", "comment-body-file"}
    steps = action["runs"]["steps"]
    ids = {s["id"] for s in steps if "id" in s}
    used_inputs = {m for e in EXPR.findall(ACTION.read_text()) for m in re.findall(r"inputs\.([\w-]+)", e)}
    assert used_inputs <= inputs, used_inputs - inputs
    for name, out in action["outputs"].items():
        (step,) = re.findall(r"steps\.([\w-]+)\.outputs", out["value"])
        assert step in ids, (name, step)
    assert all(s.get("shell") == "bash" for s in steps if "run" in s)


def test_the_devlane_flags_the_scripts_use_exist(harness):
    steps = _action()["runs"]["steps"] + [s for j in _workflow()["jobs"].values() for s in j["steps"]]
    scripts = [EXPR.sub("X", s["run"]) for s in steps if "run" in s]
    helps: dict[str, str] = {}
    checked = set()
    for script in scripts:
        found = re.findall(r"args=\((\w+)|devlane (render|diff|delete|provision)\b", script)
        commands = {a or b for a, b in found}
        if not commands:
            continue
        (command,) = commands
        if command not in helps:
            out = harness.cli(command, "--help")
            assert out.returncode == 0 and out.stdout.startswith(f"usage: devlane {command}"), out
            helps[command] = out.stdout
        for line in script.splitlines():
            if "args" in line or "devlane " in line:
                for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*|-o)\b", line):
                    assert flag in helps[command], (command, flag)
                    checked.add((command, flag))
    assert {("render", "--services"), ("render", "--validate"), ("diff", "--artifact-url"), ("diff", "-o")} <= checked


def test_example_workflow_runs_on_pull_requests_with_opt_in_label_and_cleans_up():
    wf = _workflow()
    assert set(wf["on"]["pull_request"]["types"]) == {"opened", "synchronize", "reopened", "labeled", "closed"}
    assert wf["concurrency"]["group"] == "devlane-${{ github.event.pull_request.number || 'gc' }}"
    assert wf["permissions"] == {"contents": "read", "pull-requests": "write"}
    preview, cleanup = wf["jobs"]["preview"], wf["jobs"]["cleanup"]
    assert "devlane-preview" in preview["if"] and "closed" in cleanup["if"]
    (use,) = [s for s in preview["steps"] if s.get("uses") == "./.github/actions/devlane"]
    assert set(use["with"]) <= set(_action()["inputs"])
    assert (ROOT / use["with"]["path"] / ".devlane.yaml").is_file()
    assert any("devlane delete" in s.get("run", "") for s in cleanup["steps"])
    # the sweep from the truth: daily and on close, keeping the open pull requests' lanes, removing expired ones
    gc = wf["jobs"]["gc"]
    assert wf["on"]["schedule"] and "schedule" in gc["if"] and "closed" in gc["if"] and "!cancelled()" in gc["if"]
    run = " ".join(s.get("run", "") for s in gc["steps"])
    assert "gh pr list --state open" in run and "devlane gc examples/bookshop --keep-file open-prs --expired" in run
