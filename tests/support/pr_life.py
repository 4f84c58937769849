"""A pull request's life as the shipped workflow runs it (issue 43, point 6), without GitHub: a bare "remote" holding
the bookshop example, pull-request branches pushed to it, and for each workflow job a fresh clone at the PR's head
where the composite action's devlane step runs exactly as the runner would: its `env:` evaluated against a GitHub
context built from the event, then its `run:` line with bash (it runs pr.sh). `gh` is tests/support/fake_gh.py.

The bookshop's stripe-test-mode plugin is made External here, and its delete_flow logs each call to
`$DEVLANE_TEST_MARKER`, so a test sees how often a lane's external state was ended."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import fake_gh, yamlc
from .harness import GIT_ENV, Harness, git
from .paths import ACTION_DIR, EXAMPLE, ROOT

LANES = "devlane-lanes"
REPOSITORY = "acme/bookshop"
TEMPLATE = "ghcr.io/acme/bookshop-{service}:{short_sha}"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
DELETE_LOG = '''

def delete_flow(config_map, flow_uuid):
    import json, os
    with open(os.environ["DEVLANE_TEST_MARKER"], "a") as fh:
        fh.write(json.dumps({"delete": flow_uuid}) + "\\n")
'''


def evaluate(text: str, context: dict) -> str:
    """Each `${{ }}` of `text`, in the tiny part of GitHub's expression language the action's env uses: dotted
    lookups joined by `||`."""

    def one(expr: str) -> str:
        for alternative in expr.split("||"):
            value: object = context
            for part in alternative.strip().split("."):
                value = value.get(part, "") if isinstance(value, dict) else ""
            if value:
                return str(value)
        return ""

    return EXPR.sub(lambda m: one(m.group(1)), text)


@dataclass
class Job:
    """One run of the action's devlane step: how it ended, its comment file and its step outputs."""

    process: subprocess.CompletedProcess
    workdir: Path
    outputs: dict[str, str]

    @property
    def code(self) -> int:
        return self.process.returncode

    @property
    def log(self) -> str:
        return self.process.stdout + self.process.stderr


class Life:
    """The remote, the pull requests pushed to it, the jobs run on them, and what the fake GitHub holds."""

    def __init__(self, harness: Harness, tmp: Path, namespace: str = "bookshop"):
        self.tmp = tmp
        self.work = harness.root  # the developers' clone: where pull-request branches are made
        harness.copy(EXAMPLE)
        if namespace != "bookshop":  # the app in a namespace of its own (a cluster other tests use too)
            for f in (self.work / "k8s").glob("*.yaml"):
                f.write_text(f.read_text().replace("namespace: bookshop", f"namespace: {namespace}")
                             .replace("  name: bookshop\n", f"  name: {namespace}\n")
                             .replace(".bookshop.svc", f".{namespace}.svc"))
        defs = self.work / "k8s" / "plugins.yaml"
        defs.write_text(defs.read_text().replace("        servicename: stripe-test-mode\n",
                                                 "        servicename: stripe-test-mode\n"
                                                 "        sideEffects: External\n"))
        main_py = self.work / "plugins" / "stripe-test-mode" / "main.py"
        main_py.write_text(main_py.read_text() + DELETE_LOG)
        harness.commit("the bookshop")
        self.remote = tmp / "remote.git"
        git(tmp, "clone", "-q", "--bare", str(self.work), str(self.remote))
        git(self.work, "remote", "add", "origin", str(self.remote))
        self.marker = tmp / "marker" / "calls.jsonl"
        self.marker.parent.mkdir()
        self.store = tmp / "gh.json"
        self.env = {**fake_gh.install(tmp / "bin", self.store, REPOSITORY), "DEVLANE_TEST_MARKER": str(self.marker),
                    "DEVLANE_SANDBOX_WRITABLE": str(self.marker.parent)}
        self.pushed: dict[str, str] = {"refs/heads/main": self.tip("main")}  # every ref the test itself pushed
        self.bases: dict[int, str] = {}
        self.runs = 0

    # -- the pull requests ---------------------------------------------------------------------------------------

    def open_pr(self, number: int, files: dict[str, str | None], labels: tuple[str, ...] = ("devlane-preview",)) -> str:
        """Branch pr-N off main with `files` changed (None: deleted), pushed; listed open with `labels`."""
        git(self.work, "checkout", "-q", "-B", f"pr-{number}", "main")
        self.bases[number] = git(self.work, "rev-parse", "HEAD")
        self._set_open(number, labels)
        return self.push(number, files)

    def push(self, number: int, files: dict[str, str | None], message: str = "change") -> str:
        git(self.work, "checkout", "-q", f"pr-{number}")
        for rel, text in files.items():
            path = self.work / rel
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "--allow-empty", "-m", message)
        git(self.work, "push", "-q", "-f", "origin", f"pr-{number}")
        head = git(self.work, "rev-parse", "HEAD")
        self.pushed[f"refs/heads/pr-{number}"] = head
        data = fake_gh.load(self.store)
        data["heads"][str(number)] = head
        self.store.write_text(json.dumps(data))
        return head

    def edit(self, rel: str, old: str, new: str, number: int) -> str:
        git(self.work, "checkout", "-q", f"pr-{number}")
        text = (self.work / rel).read_text()
        assert old in text, (rel, old)
        return text.replace(old, new, 1)

    def close(self, number: int) -> None:
        self._set_open(number, None)

    def _set_open(self, number: int, labels: tuple[str, ...] | None) -> None:
        data = fake_gh.load(self.store)
        data["open"] = [p for p in data["open"] if p["number"] != number]
        if labels is not None:
            data["open"].append({"number": number, "labels": list(labels)})
        self.store.write_text(json.dumps(data))

    def tip(self, branch: str) -> str:
        """The branch's commit on the remote; '' when it has none."""
        done = subprocess.run(["git", "-C", str(self.remote), "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
                              capture_output=True, text=True)  # fmt: skip
        return done.stdout.strip()

    # -- the jobs -----------------------------------------------------------------------------------------------

    def job(self, command: str, number: int | None = None, **inputs: str) -> Job:
        """The workflow's job for `command` on a fresh clone at the PR's head (the default branch for gc): the
        inputs the example workflow gives (its repo: this repository's top), the action's defaults for the rest."""
        self.runs += 1
        workdir = self.tmp / f"job-{self.runs}"
        git(self.tmp, "clone", "-q", str(self.remote), str(workdir))
        if number is not None and command != "comment":
            git(workdir, "checkout", "-q", "--detach", fake_gh.load(self.store)["heads"][str(number)])
        action = yamlc.safe_load((ACTION_DIR / "action.yml").read_text())
        given = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
        given.update(_workflow_inputs(command, inputs.pop("fork", "false") == "true"))
        given.update({"repo": ".", **inputs})
        event = {"pull_request": {"number": number, "base": {"sha": self.bases.get(number or 0, "")}}} \
            if number is not None else {}
        context = {"inputs": given, "github": {"event": event, "token": "fake-token", "repository": REPOSITORY,
                                               "server_url": "https://github.example", "run_id": str(self.runs),
                                               "action_path": str(ACTION_DIR)}}
        (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "devlane"]
        env = {key: evaluate(str(value), context) for key, value in step["env"].items()}
        output = workdir / ".github-output"
        output.write_text("")
        path = os.pathsep.join([str(self.tmp / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]])
        process = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=workdir, capture_output=True,
                                 text=True, timeout=600, env={**GIT_ENV, "PATH": path, "HOME": str(self.tmp),
                                                              "PYTHONPATH": str(ROOT), "GITHUB_OUTPUT": str(output),
                                                              **self.env, **env})  # fmt: skip
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return Job(process, workdir, outputs)

    # -- what the world holds -----------------------------------------------------------------------------------

    def comments(self, number: int) -> list[dict]:
        return [c for c in fake_gh.load(self.store)["comments"] if c["pr"] == number]

    def lane_files(self, commit: str | None = None) -> list[str]:
        tip = commit or self.tip(LANES)
        return git(self.remote, "ls-tree", "-r", "--name-only", tip).splitlines() if tip else []

    def deletes(self) -> list[str]:
        lines = self.marker.read_text().splitlines() if self.marker.exists() else []
        return [json.loads(line)["delete"] for line in lines]

    def refs_besides_the_lanes(self) -> dict[str, str]:
        out = git(self.remote, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
        return dict(line.split() for line in out if not line.startswith(f"refs/heads/{LANES} "))


def _workflow_inputs(command: str, fork: bool) -> dict[str, str]:
    """The `with:` of the example workflow's job for `command`."""
    doc = yamlc.safe_load((ROOT / "examples" / "github" / "devlane-preview.yml").read_text())
    job = {"open": "preview-fork" if fork else "preview", "close": "close", "gc": "gc"}.get(command)
    if job is None:
        doc = yamlc.safe_load((ROOT / "examples" / "github" / "devlane-comment.yml").read_text())
        job = "comment"
    (step,) = [s for s in doc["jobs"][job]["steps"] if "devlane/.github/actions/devlane@" in s.get("uses", "")]
    return {k: str(v) for k, v in step["with"].items()}
