"""The GitHub composite action and the example workflows, usable as-is in another repository (issue 43, point 5):
actions pinned by commit with the version in a comment, no `${{ }}` inside a script, inputs named as the CLI's
flags (each one a real flag of the command pr.sh runs), least-privilege permissions per job, forks without secrets,
the pip cache before the install. actionlint, shellcheck and real runs are in tests/e2e/test_github_action_run.py
and tests/e2e/test_pr_life.py."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from support import ROOT, yamlc
from support.paths import ACTION_DIR, WORKFLOWS

ACTION = ACTION_DIR / "action.yml"
PR_SH = ACTION.parent / "pr.sh"
PREVIEW = ROOT / "examples" / "github" / "devlane-preview.yml"
FOLLOW_UP = ROOT / "examples" / "github" / "devlane-comment.yml"
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40} # v\d+\.\d+\.\d+$")
OWN = "OWNER/devlane/.github/actions/devlane@v"
# the action's inputs that are no flag of the CLI: what pr.sh does around devlane
ACTION_ONLY = {"command", "comment", "fork", "label", "comment-dir", "head-sha", "e2e-command", "wait-timeout"}
COMMANDS = {"repo": "render", "base": "render", "flow": "render", "services": "render", "image-template": "render",
            "pr": "render", "validate": "render", "kube-version": "render", "fail-on": "diff", "ttl": "render",
            "lanes-branch": "render", "remote": "render", "trusted-ref": "render"}  # fmt: skip


def _load(path: Path) -> dict:
    doc = yamlc.safe_load(path.read_text())
    if True in doc:
        doc["on"] = doc.pop(True)  # YAML 1.1 reads the key `on` as True
    return doc


def _steps(path: Path) -> list[dict]:
    doc = _load(path)
    if "runs" in doc:
        return doc["runs"]["steps"]
    return [s for job in doc["jobs"].values() for s in job.get("steps", [])]


def _uses(path: Path) -> list[str]:
    """Every `uses:` line as written, comment included (the version a pin stands for)."""
    return [m.group(1).strip() for m in re.finditer(r"^\s*(?:- )?uses:\s*(.+)$", path.read_text(), re.M)]


@pytest.mark.parametrize("path", [ACTION, *WORKFLOWS], ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_and_no_script_holds_an_expression(path):
    uses = _uses(path)
    assert uses or path == ACTION
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for use in uses:
        if use.startswith(OWN):  # devlane's own action: the release these examples ship in
            assert use == f"{OWN}{version}", use
            continue
        assert not use.startswith("./"), f"{path.name}: {use} works only inside devlane's own repository"
        assert PINNED.match(use), f"{path.name}: {use} is not pinned by a full commit with its version in a comment"
    for step in _steps(path):
        assert "${{" not in step.get("run", ""), (path.name, step.get("name"), "pass values through env:")


def test_the_actions_inputs_are_the_clis_flags():
    """Each input is named as the flag pr.sh passes it to, and that flag exists on that command."""
    action = _load(ACTION)
    inputs = set(action["inputs"])
    assert inputs == ACTION_ONLY | set(COMMANDS)
    script = PR_SH.read_text()
    for name in COMMANDS:
        assert f"INPUT_{name.upper().replace('-', '_')}" in script, name
        if name in ("repo", "services"):  # REPO is positional; `services` is --services auto or --service lines
            continue
        assert f"--{name}" in script, name
    from renderer.cli import build_parser

    def flags(command: str) -> set[str]:
        parser = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
        return {o for a in parser._actions for o in a.option_strings}

    for name, command in COMMANDS.items():
        if name != "repo":
            assert f"--{'services' if name == 'services' else name}" in flags(command), (name, command)
    diff_fail_on = next(a for a in build_parser()._subparsers._group_actions[0].choices["diff"]._actions
                        if "--fail-on" in a.option_strings)  # type: ignore[union-attr]
    assert action["inputs"]["fail-on"]["default"] in diff_fail_on.choices
    assert set(re.findall(r"problems \| changes \| never", script)) == {"problems | changes | never"}


def test_the_action_installs_devlane_from_its_own_commit_with_a_pip_cache_first():
    steps = _load(ACTION)["runs"]["steps"]
    names = [s.get("uses", s.get("run", "")) for s in steps]
    cache = next(i for i, n in enumerate(names) if n.startswith("actions/cache@"))
    install = next(i for i, n in enumerate(names) if "pip install" in n)
    assert cache < install and '"$ACTION_DIR/../../..[validate]"' in names[install]
    assert all(s.get("shell") == "bash" for s in steps if "run" in s)
    # DEVLANE_* variables reach plugins: the action's values travel as INPUT_*
    assert not any(k.startswith("DEVLANE_") for s in steps for k in (s.get("env") or {}) if k != "DEVLANE_FLOW")


def test_each_job_has_only_the_permissions_it_needs():
    wf = _load(PREVIEW)
    assert wf["permissions"] == {}
    jobs = {name: job["permissions"] for name, job in wf["jobs"].items()}
    assert jobs == {"preview": {"contents": "write", "pull-requests": "write"}, "preview-fork": {"contents": "read"},
                    "close": {"contents": "write", "pull-requests": "write"},
                    "gc": {"contents": "write", "pull-requests": "read"}}  # fmt: skip
    assert wf["concurrency"] == {"group": "devlane-pr-${{ github.event.pull_request.number || 'gc' }}",
                                 "cancel-in-progress": False}  # fmt: skip
    for job in wf["jobs"].values():
        checkout = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
        assert checkout and checkout[0]["with"]["persist-credentials"] is False
    follow = _load(FOLLOW_UP)
    assert follow["permissions"] == {} and follow["on"] == {"workflow_run": {"workflows": [wf["name"]],
                                                                             "types": ["completed"]}}
    (job,) = follow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert not any(s.get("uses", "").startswith("actions/checkout@") for s in job["steps"])  # never the fork's code


def test_the_workflow_opens_comments_closes_and_sweeps():
    wf = _load(PREVIEW)
    assert set(wf["on"]["pull_request"]["types"]) == {"opened", "synchronize", "reopened", "labeled", "unlabeled",
                                                      "closed"}  # fmt: skip
    assert wf["on"]["schedule"] and "workflow_dispatch" in wf["on"]
    commands = {name: next(s["with"] for s in job["steps"] if s.get("uses", "").startswith(OWN))
                for name, job in wf["jobs"].items()}  # fmt: skip
    assert {n: w["command"] for n, w in commands.items()} == {"preview": "open", "preview-fork": "open",
                                                              "close": "close", "gc": "gc"}  # fmt: skip
    assert commands["preview-fork"]["fork"] == "true" and commands["preview-fork"]["lanes-branch"] == ""
    assert {w.get("lanes-branch") for n, w in commands.items() if n != "preview-fork"} == {"devlane-lanes"}
    assert "head.repo.full_name == github.repository" in wf["jobs"]["preview"]["if"]
    assert "head.repo.full_name != github.repository" in wf["jobs"]["preview-fork"]["if"]
    for w in commands.values():
        assert set(w) <= set(_load(ACTION)["inputs"]), w
        assert (ROOT / w["repo"] / ".devlane.yaml").is_file()
