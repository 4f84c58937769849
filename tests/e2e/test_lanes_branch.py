"""The lanes branch (issue 43, point 1 and 2): one branch of the remote holds every lane and the provision records
its External plugins need, written by render and provision, emptied by delete and gc, from any fresh checkout.

Each test has a bare "remote" repository and clones of it, as CI jobs do; devlane runs through the in-process CLI
with a real External plugin subprocess that logs its calls to `$DEVLANE_TEST_MARKER`. What is checked is read back
from the remote with git itself (trees, parents, refs), never from devlane's report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import Harness, app_yaml, plugin_definition
from support.harness import git

from renderer import api
from renderer.errors import DevlaneError
from renderer.lanes import branch
from renderer.lanes.branch import Checkout, LanesRef

pytestmark = pytest.mark.e2e

EXTERNAL = """
import json, os

def create_flow(service_specs, pod_specs, flow_uuid):
    with open(os.environ["DEVLANE_TEST_MARKER"], "a") as fh:
        fh.write(json.dumps({"create": flow_uuid}) + "\\n")
    return {"pod_specs": pod_specs, "config_map": {"branch": "dev-" + flow_uuid}}

def delete_flow(config_map, flow_uuid):
    with open(os.environ["DEVLANE_TEST_MARKER"], "a") as fh:
        fh.write(json.dumps({"delete": flow_uuid, "config_map": config_map}) + "\\n")
"""
LANES = "devlane-lanes"


class World:
    """A bare remote seeded with the app, the job's clone (`harness.root`) and the plugin's marker."""

    def __init__(self, harness: Harness, tmp: Path):
        self.harness, self.tmp = harness, tmp
        self.marker = tmp / "marker" / "calls.jsonl"
        self.marker.parent.mkdir()
        self.plugin = harness.plugin("branch", EXTERNAL, where=tmp)
        self.source = f"--plugin-source=branch={self.plugin}"
        self.env = {"DEVLANE_TEST_MARKER": str(self.marker), "DEVLANE_SANDBOX_WRITABLE": str(self.marker.parent)}
        harness.write("app.yaml", app_yaml("api", "db") + plugin_definition(
            [{"name": "branch", "type": "external", "servicename": "db", "sideEffects": "External"}]))
        harness.commit("the app")
        self.remote = tmp / "remote.git"
        git(tmp, "clone", "-q", "--bare", str(harness.root), str(self.remote))
        harness.git("remote", "add", "origin", str(self.remote))
        harness.git("fetch", "-q", "origin")

    def clone(self, name: str) -> Path:
        """A fresh checkout of the remote's main, as a new CI job has: no rendered/, no .devlane/."""
        path = self.tmp / name
        git(self.tmp, "clone", "-q", str(self.remote), str(path))
        return path

    def cli(self, *args: str, repo: Path | None = None):
        where = [str(repo)] if repo is not None else []
        return self.harness.cli(args[0], *where, *args[1:], self.source, env=self.env)

    def calls(self) -> list[dict]:
        return [json.loads(line) for line in self.marker.read_text().splitlines()] if self.marker.exists() else []

    def tip(self) -> str:
        return git(self.remote, "rev-parse", "--verify", "-q", f"refs/heads/{LANES}")

    def files(self, commit: str | None = None) -> list[str]:
        return git(self.remote, "ls-tree", "-r", "--name-only", commit or self.tip()).splitlines()

    def show(self, path: str) -> str:
        return git(self.remote, "show", f"{self.tip()}:{path}")

    def refs(self) -> str:
        return git(self.remote, "for-each-ref", "--format=%(refname) %(objectname)")


@pytest.fixture
def world(harness, tmp_path) -> World:
    return World(harness, tmp_path)


FLOW = ("--flow", "pr-1", "--service", "api=api:2")


def test_a_lane_lives_on_the_branch_from_provision_to_delete(world):
    """provision and render commit to the lanes branch (never the user's branches, index or work tree), render
    replays the records stored there, and delete from a fresh clone without rendered/ ends the plugins once."""
    repo = world.harness.root
    before = (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "branch", "--list"))

    out = world.cli("provision", *FLOW, "--lanes-branch", LANES)
    assert out.returncode == 0, out.stderr
    first = world.tip()
    assert git(world.remote, "rev-list", "--parents", "-n1", first).split() == [first]  # an orphan: no code in it
    assert world.files() == [".devlane/state/pr-1/db.json", "README.md"]
    assert json.loads(world.show(".devlane/state/pr-1/db.json"))["result"]["configMap"] == {"branch": "dev-db-pr-1"}
    assert f"recorded .devlane/state/pr-1/db.json on branch {LANES} of origin" in out.stderr
    assert world.calls() == [{"create": "db-pr-1"}]

    job = world.clone("render-job")  # the render runs in another job: the records come from the branch
    out = world.cli("render", *FLOW, "--lanes-branch", LANES, "--json-out", str(world.tmp / "lane.json"), repo=job)
    assert out.returncode == 0, out.stderr
    second = world.tip()
    assert git(world.remote, "rev-list", "--parents", "-n1", second).split() == [second, first]
    assert "flows/pr-1/deployment-api-pr-1.yaml" in world.files() and "flows/pr-1/kustomization.yaml" in world.files()
    assert ".devlane/state/pr-1/db.json" in world.files()
    state = world.show("flows/pr-1/configmap-devlane-state-db-pr-1.yaml")
    assert "dev-db-pr-1" in state and world.calls() == [{"create": "db-pr-1"}]  # replayed, not run again
    assert json.loads((world.tmp / "lane.json").read_text()) == {
        "flow": "pr-1", "lanesBranch": LANES, "action": "written", "commit": second, "attempts": 1}

    out = world.cli("render", *FLOW, "--lanes-branch", LANES, repo=job)  # the same again: nothing to push
    assert out.returncode == 0 and world.tip() == second and f"unchanged at {second[:12]}" in out.stderr, out.stderr

    closing = world.clone("close-job")
    assert not (closing / "rendered").exists() and not (closing / ".devlane").exists()
    out = world.cli("delete", "--flow", "pr-1", "--lanes-branch", LANES, repo=closing)
    assert out.returncode == 0, out.stderr
    assert [line for line in out.stderr.splitlines() if "removed" in line] == [
        f"devlane: removed flows/pr-1 from branch {LANES} of origin",
        f"devlane: removed .devlane/state/pr-1 from branch {LANES} of origin"]
    assert world.calls()[1:] == [{"delete": "db-pr-1", "config_map": {"branch": "dev-db-pr-1"}}]
    assert world.files() == ["README.md"]
    assert git(world.remote, "rev-list", "--parents", "-n1", world.tip()).split()[1:] == [second]

    again = world.cli("delete", "--flow", "pr-1", "--lanes-branch", LANES, repo=closing)
    assert again.returncode == 0, again.stderr
    assert again.stderr == f"devlane: flow pr-1: no lane in branch {LANES} of origin; nothing to delete\n"
    assert len(world.calls()) == 2
    after = (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "branch", "--list"))
    assert after == before and not (repo / "rendered").exists() and not (repo / ".devlane").exists()
    assert git(world.remote, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/devlane-lanes",
                                                                                 "refs/heads/main"]


def test_gc_ends_every_lane_not_kept_in_one_commit(world):
    """A missed close: gc from a fresh clone ends pr-2 (rendered) and pr-3 (provisioned, never rendered) from the
    state on the branch, keeps pr-1, and removes both lanes in one commit."""
    for flow in ("pr-1", "pr-2", "pr-3"):
        assert world.cli("provision", "--flow", flow, "--service", "api=api:2",
                         "--lanes-branch", LANES).returncode == 0
    for flow in ("pr-1", "pr-2"):
        assert world.cli("render", "--flow", flow, "--service", "api=api:2", "--lanes-branch", LANES).returncode == 0
    before = world.tip()
    (world.tmp / "open-prs").write_text("pr-1\n")
    job = world.clone("gc-job")

    dry = world.cli("gc", "--keep-file", str(world.tmp / "open-prs"), "--lanes-branch", LANES, "--dry-run", repo=job)
    assert dry.returncode == 0 and world.tip() == before and "would remove flow pr-3" in dry.stderr, dry.stderr

    out = world.cli("gc", "--keep-file", str(world.tmp / "open-prs"), "--lanes-branch", LANES, repo=job)
    assert out.returncode == 0, out.stderr
    assert git(world.remote, "rev-list", "--parents", "-n1", world.tip()).split()[1:] == [before]  # one commit
    assert sorted(c["delete"] for c in world.calls() if "delete" in c) == ["db-pr-2", "db-pr-3"]
    assert {f.split("/")[1] for f in world.files() if f != "README.md"} == {"pr-1", "state"}
    assert [f for f in world.files() if "pr-2" in f or "pr-3" in f] == []


@pytest.mark.parametrize(("name", "why", "extra"), [
    ("main", "is the checked-out branch", ()),
    ("bad..name", "is not a branch name", ()),
    ("refs/heads/x", "is not a branch name", ()),
    (LANES, "--push-attempts 0: expected 1 to 20", ("--push-attempts", "0")),
    (LANES, "--lanes-branch writes to the lanes branch: drop --out / --stdout", ("--stdout",)),
])  # fmt: skip
def test_a_code_branch_is_never_a_lanes_branch(world, name, why, extra):
    out = world.cli("render", *FLOW, "--lanes-branch", name, *extra)
    assert out.returncode == 2 and why in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert world.refs() == git(world.remote, "for-each-ref", "--format=%(refname) %(objectname)")
    assert "devlane-lanes" not in world.refs() and world.calls() == []


def test_the_remotes_default_branch_and_the_base_are_refused(world):
    job = world.clone("job")
    git(job, "checkout", "-q", "-b", "feature")
    out = world.cli("render", *FLOW, "--lanes-branch", "main", repo=job)
    assert out.returncode == 2 and "is the default branch of origin" in out.stderr, out.stderr
    git(world.remote, "branch", "release", "main")
    out = world.cli("render", *FLOW, "--lanes-branch", "release", "--base", "origin/release", repo=job)
    assert out.returncode == 2 and "is the pull request's base" in out.stderr, out.stderr


def test_a_branch_holding_anything_else_is_refused(world):
    git(world.remote, "branch", LANES, "main")  # the app's own files: a code branch named like a lanes branch
    before = world.refs()
    out = world.cli("render", *FLOW, "--lanes-branch", LANES)
    assert out.returncode == 1, out.stderr
    assert f"branch {LANES} of origin holds app.yaml (a file), which devlane never writes there" in out.stderr
    assert "is --lanes-branch a code branch?" in out.stderr and world.refs() == before


def test_a_remote_that_refuses_the_push_is_named_and_not_retried(world):
    hook = world.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch: bots may not push' >&2\nexit 1\n")
    hook.chmod(0o755)
    out = world.cli("provision", *FLOW, "--lanes-branch", LANES)
    assert out.returncode == 1, out.stderr
    assert f"the remote refused the push to branch {LANES} of origin: pre-receive hook declined (protected branch: " \
           "bots may not push)" in out.stderr
    assert "retrying" not in out.stderr and LANES not in world.refs()


def test_an_unreachable_remote_fails_at_once_and_masks_its_credentials(world):
    out = world.cli("render", *FLOW, "--lanes-branch", LANES, "--remote", "http://bot:s3cr3t-t0ken@127.0.0.1:9/x.git")
    assert out.returncode == 1 and "git fetch failed" in out.stderr, out.stderr
    assert "s3cr3t-t0ken" not in out.stderr and "Traceback" not in out.stderr


def test_two_jobs_racing_both_land(world, monkeypatch):
    """pr-2's job pushes between pr-1's fetch and push: pr-1's push is refused as non-fast-forward, and it fetches
    pr-2's tip, writes its lane again (no plugin runs again) and lands on top: both lanes, a linear history."""
    monkeypatch.setattr(branch, "RETRY_DELAY", 0.01)
    for flow in ("pr-1", "pr-2"):
        assert world.cli("provision", "--flow", flow, "--service", "api=api:2", "--lanes-branch", LANES).returncode == 0
    for key, value in world.env.items():
        monkeypatch.setenv(key, value)
    a, b = world.clone("job-a"), world.clone("job-b")
    sources = {"branch": str(world.plugin)}
    said: list[str] = []

    def other_job_first(_result: api.RenderResult) -> None:
        if not said:
            said.append("raced")
            api.render_to_lanes(api.Options(repo=b, plugin_sources=sources), flow("pr-2"), LanesRef(b, LANES))

    def flow(flow_id: str) -> api.FlowInput:
        return world.harness.flow(flow_id, {"api": "api:2"})

    lane = api.render_to_lanes(api.Options(repo=a, plugin_sources=sources), flow("pr-1"), LanesRef(a, LANES),
                               other_job_first, said.append)
    assert lane.published.attempts == 2 and f"lanes branch {LANES} of origin moved; retrying (attempt 2/5)" in said
    assert {f.split("/")[1] for f in world.files() if f.startswith("flows/")} == {"pr-1", "pr-2"}
    assert git(world.remote, "rev-list", "--count", LANES) == "4"
    assert git(world.remote, "rev-list", "--merges", LANES) == ""
    assert len(world.calls()) == 2  # the two provisions; both renders replayed


def test_the_retries_are_bounded(world, monkeypatch):
    """A branch that moves before every push: after --push-attempts tries, an error that says so; nothing of this
    job's change is on the remote."""
    monkeypatch.setattr(branch, "RETRY_DELAY", 0.01)
    rival = world.clone("rival")
    pushed: list[str] = []

    def apply(tree: Path) -> None:
        (tree / "flows" / "pr-1").mkdir(parents=True, exist_ok=True)
        (tree / "flows" / "pr-1" / "flow.metadata").write_text("{}\n")
        with Checkout(LanesRef(rival, LANES, attempts=1)) as other:  # another job lands first, every time
            other.publish(lambda t: (t / "flows" / f"pr-{len(pushed) + 2}").mkdir(parents=True) or
                          (t / "flows" / f"pr-{len(pushed) + 2}" / "flow.metadata").write_text("{}\n"), "rival")
            pushed.append(other.tip or "")

    with Checkout(LanesRef(world.harness.root, LANES, attempts=3)) as mine, \
            pytest.raises(DevlaneError, match=f"branch {LANES} of origin kept moving: 3 attempts"):
        mine.publish(apply, "mine")
    assert len(pushed) == 3 and world.tip() == pushed[-1]
    assert not any(f.startswith("flows/pr-1/") for f in world.files())
