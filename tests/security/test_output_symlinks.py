"""No path devlane writes or removes leaves the output root (issue 40, point 4): a repository that plants a symlink
where devlane writes (the output directory, `flows/`, `flows/<id>`, `flows/_mesh`, the lock file) or removes
(`.devlane/state/`, a flow's provision records) gets one error naming the link and where it points, exit 1, and
nothing written or removed anywhere: not in the directory the link points to (another tenant's lanes and
records, byte for byte), not in the repository's own lanes, and no plugin's `delete_flow` called.

The rule (`renderer/core/anchored.py`): a symlink is followed only where the operator owns the path, outside the
repository (`--out` may be a link the operator made); from the repository root down, and anywhere under the output
directory, none is, even one that stays inside the repository (a delete through it could reach any directory of
the repository). Kustomize's load restrictor and Argo CD's repo-server refuse links that leave the repository when
they read; devlane writes and deletes, so it is stricter.

Each case runs the in-process CLI (`main(argv)`, the exit code as the shell sees it); the two attacks of the issue
also run as real `devlane` processes, the `gc` one as the bundled workflow runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from support import Harness, app_yaml, plugin_definition

from renderer.core.dirlock import LOCK_NAME
from renderer.render.output import write

RECORDER = """
import json, os

def create_flow(service_specs, pod_specs, flow_uuid):
    return {"pod_specs": pod_specs, "config_map": {"uuid": flow_uuid}}

def delete_flow(config_map, flow_uuid):
    with open(os.environ["DEVLANE_TEST_MARKER"], "a") as fh:
        fh.write(json.dumps([flow_uuid, config_map]) + "\\n")
"""

EXPIRED = ["--ttl", "1h", "--created", "2020-01-01T00:00:00Z"]  # every lane here is past its expiry at NOW
NOW = "2030-01-01T00:00:00Z"


def snapshot(root: Path) -> dict[str, object]:
    """Everything under `root`, links not followed: each directory, each link's target and each file's bytes."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            out[rel] = (f"-> {os.readlink(path)}" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode)
                        else path.read_bytes())
    return out


class Scene:
    """The repository (`repo/`, one `api` whose `db` is an External plugin recording its delete_flow calls) with
    its own lane pr-1 in `repo/rendered` and its records, and another tenant's checkout beside it (`tenant-b/`:
    lanes pr-1 and pr-7 in `tenant-b/rendered/flows` with a `_mesh`, their records in `tenant-b/.devlane/state`,
    a file `tenant-b/important`), every lane past its expiry."""

    def __init__(self, harness: Harness, tmp_path: Path):
        self.harness, self.tmp = harness, tmp_path
        self.repo = harness.root
        self.tenant = tmp_path / "tenant-b"
        self.marker = tmp_path / "marker.jsonl"
        self.env = {"DEVLANE_TEST_MARKER": str(self.marker)}
        harness.builtin("rec", RECORDER)
        harness.write("app.yaml", app_yaml("api", "db") + plugin_definition(
            [{"name": "rec", "type": "external", "servicename": "db", "sideEffects": "External"}]))
        for flow in ("pr-1", "pr-7"):
            self.ok("provision", "--flow", flow, "--service", "api=api:2")
            self.ok("render", "--flow", flow, "--service", "api=api:2", "--out", self.tenant / "rendered", *EXPIRED)
        (self.tenant / "rendered" / "flows" / "_mesh").mkdir()
        (self.tenant / "rendered" / "flows" / "_mesh" / "kustomization.yaml").write_text("resources: []\n")
        shutil.copytree(self.repo / ".devlane", self.tenant / ".devlane")
        shutil.rmtree(self.repo / ".devlane" / "state" / "pr-7")
        (self.tenant / "important").write_text("tenant-b's data\n")
        self.ok("render", "--flow", "pr-1", "--service", "api=api:2", *EXPIRED)
        self.marker.unlink(missing_ok=True)

    def ok(self, *argv: object) -> None:
        done = self.harness.cli(*map(str, argv), env=self.env)
        assert done.returncode == 0, done.stderr

    def link(self, rel: str, target: str) -> Path:
        """Replace `repo/<rel>` (whatever is there) by a symlink to `target` (relative to the link's directory)."""
        path = self.repo / rel
        if path.is_symlink():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)
        return path

    def both(self) -> tuple[dict, dict]:
        return snapshot(self.tenant), snapshot(self.repo)

    def deleted(self) -> list:
        return self.marker.read_text().splitlines() if self.marker.exists() else []


@pytest.fixture
def scene(harness, tmp_path) -> Scene:
    return Scene(harness, tmp_path)


# Where the repository plants the link: (path in the repository, its target, the flow the commands act on).
OUTPUT_LINKS = {
    "output directory": ("rendered", "../tenant-b/rendered", "pr-7"),
    "flows": ("rendered/flows", "../../tenant-b/rendered/flows", "pr-7"),
    "a flow": ("rendered/flows/pr-7", "../../../tenant-b/rendered/flows/pr-7", "pr-7"),
    "_mesh": ("rendered/flows/_mesh", "../../../tenant-b/rendered/flows/_mesh", "pr-1"),
    "the lock file": (f"rendered/flows/{LOCK_NAME}", "../../../tenant-b/important", "pr-1"),
}
STATE_LINKS = {
    ".devlane": (".devlane", "../tenant-b/.devlane", "pr-1"),
    "state directory": (".devlane/state", "../../tenant-b/.devlane/state", "pr-1"),
    "provision records": (".devlane/state/pr-1", "../../../tenant-b/.devlane/state/pr-1", "pr-1"),
}
SWEEPS = {
    "delete": lambda flow, keep_file: ["delete", "--flow", flow],
    "gc --keep": lambda flow, keep_file: ["gc", "--keep", "pr-9"],
    "gc --keep-file": lambda flow, keep_file: ["gc", "--keep-file", str(keep_file)],
    "gc --expired": lambda flow, keep_file: ["gc", "--expired", "--now", NOW],
}
OUTPUT_COMMANDS = {"render": lambda flow, keep_file: ["render", "--flow", flow, "--service", "api=api:3"], **SWEEPS}
STATE_COMMANDS = {"provision": lambda flow, keep_file: ["provision", "--flow", flow, "--service", "api=api:3"],
                  **SWEEPS}


def assert_refused(scene: Scene, link: Path, target: str, argv: list[str]) -> None:
    before = scene.both()
    done = scene.harness.cli(*argv, env=scene.env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("devlane: error:") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "internal error" not in done.stderr
    assert f"{link} is a symlink (to {target})" in done.stderr, done.stderr
    assert "hint: remove the symlink" in done.stderr
    assert scene.both() == before  # the other tenant's lanes and records, and the repository's own, byte for byte
    assert scene.deleted() == []  # no plugin was told to delete anything


CASES = [*((kind, command) for kind in OUTPUT_LINKS for command in OUTPUT_COMMANDS),
         *((kind, command) for kind in STATE_LINKS for command in STATE_COMMANDS)]


@pytest.mark.parametrize(("kind", "command"), CASES)
def test_a_symlink_on_the_way_is_refused_and_nothing_moves(scene, kind, command, tmp_path):
    rel, target, flow = {**OUTPUT_LINKS, **STATE_LINKS}[kind]
    keep_file = tmp_path / "open-prs"
    keep_file.write_text("pr-9\n")
    link = scene.link(rel, target)
    assert_refused(scene, link, target, {**OUTPUT_COMMANDS, **STATE_COMMANDS}[command](flow, keep_file))


@pytest.mark.parametrize("command", OUTPUT_COMMANDS)
def test_out_through_a_link_inside_the_repository_is_refused(scene, command, tmp_path):
    """`--out repo/rendered` is the operator's flag, but `rendered` is the repository's: its link is not followed."""
    keep_file = tmp_path / "open-prs"
    keep_file.write_text("pr-9\n")
    link = scene.link("rendered", "../tenant-b/rendered")
    argv = OUTPUT_COMMANDS[command]("pr-7", keep_file)
    assert_refused(scene, link, "../tenant-b/rendered", [*argv, "--out", str(scene.repo / "rendered")])
    deeper = scene.link("lanes", "../tenant-b")  # and one further down the path the operator gave
    assert_refused(scene, deeper, "../tenant-b", [*argv, "--out", str(scene.repo / "lanes" / "rendered")])


def test_a_link_that_stays_inside_the_repository_is_refused_too(scene):
    """`output: out` with `out -> rendered` never leaves the repository, but a delete through such a link can reach
    any directory of it: devlane follows no link of the repository on its way to what it writes or removes."""
    scene.harness.config({"output": "out"})
    link = scene.link("out", "rendered")
    assert_refused(scene, link, "rendered", ["delete", "--flow", "pr-1"])
    assert_refused(scene, link, "rendered", ["render", "--flow", "pr-1", "--service", "api=api:3"])


def test_the_operators_own_link_outside_the_repository_is_followed(scene, tmp_path):
    """`--out` is the operator's: a link they made outside the repository (a lanes checkout mounted elsewhere) is
    where the lanes go, and gc and delete work there."""
    lanes = tmp_path / "lanes-checkout"
    lanes.mkdir()
    (tmp_path / "lanes").symlink_to(lanes)
    scene.ok("render", "--flow", "pr-1", "--service", "api=api:2", "--out", tmp_path / "lanes")
    assert sorted(os.listdir(lanes / "flows")) == ["pr-1"]
    assert (lanes / "flows" / "pr-1" / "deployment-api-pr-1.yaml").is_file()
    scene.ok("gc", "--keep", "pr-9", "--out", tmp_path / "lanes")
    assert os.listdir(lanes / "flows") == [] and (tmp_path / "lanes").is_symlink()
    assert len(scene.deleted()) == 1 and not (scene.repo / ".devlane" / "state" / "pr-1").exists()


def test_gc_removes_a_dead_runs_leftover_without_following_the_links_in_it(scene):
    """A `.devlane-delete-*` tree a killed delete left (reclaimed by the next run under the lock) that holds a link
    to another tenant's lane: the link goes, never what it points to."""
    flows = scene.repo / "rendered" / "flows"
    leftover = flows / ".devlane-delete-pr-5.4194305.ab12"
    leftover.mkdir()
    (leftover / "lane").symlink_to(scene.tenant / "rendered" / "flows" / "pr-7")
    (leftover / "flow.metadata").write_text("{}")
    tenant = snapshot(scene.tenant)
    scene.ok("gc", "--keep", "pr-1")
    assert not leftover.exists() and snapshot(scene.tenant) == tenant
    assert sorted(os.listdir(flows)) == ["pr-1"]


def test_a_symlink_inside_a_flow_is_never_read_through_by_delete(scene):
    """A flow's state ConfigMap replaced by a link to another tenant's: `delete` would call delete_flow with that
    tenant's state. It is refused, naming the link, and the lane stays."""
    flow = scene.repo / "rendered" / "flows" / "pr-1"
    name = "configmap-devlane-state-db-pr-1.yaml"
    (flow / name).unlink()
    (flow / name).symlink_to(scene.tenant / "rendered" / "flows" / "pr-7" / "configmap-devlane-state-db-pr-7.yaml")
    before = scene.both()
    done = scene.harness.cli("delete", "--flow", "pr-1", env=scene.env)
    assert done.returncode == 1 and f"{flow / name} is a symlink" in done.stderr, done.stderr
    assert scene.both() == before and scene.deleted() == []


def test_a_directory_swapped_for_a_link_after_the_check_redirects_nothing(scene, tmp_path):
    """TOCTOU: `flows/` is checked and opened when the output is entered (before plugins run); a process that then
    moves it away and plants a link in its place (a plugin, without a sandbox) changes nothing: the flow is written
    into the directory devlane opened, wherever it now is, and nothing reaches the link's target."""
    out = tmp_path / "out"
    flows = scene.harness.render("pr-1", {"api": "api:2"}).flows
    tenant = snapshot(scene.tenant)
    with write.Output(out, repository=scene.repo) as output:
        os.rename(out / "flows", tmp_path / "moved")
        (out / "flows").symlink_to(scene.tenant / "rendered" / "flows")
        output.write(flows)
        assert output.remove("pr-7") is None  # the other tenant's pr-7, through the link: not there for devlane
    assert snapshot(scene.tenant) == tenant
    assert sorted(os.listdir(tmp_path / "moved")) == ["pr-1"]


def test_the_issues_attacks_as_real_processes(scene, tmp_path):
    """`rendered -> ../victim`: render wrote 7 files outside the repository; `rendered -> ../tenant-b/rendered`:
    `gc --keep-file open-prs --expired` (the bundled workflow's step) deleted the other tenant's lanes."""
    victim = tmp_path / "victim"
    victim.mkdir()
    scene.link("rendered", "../victim")
    done = scene.harness.run("render", "--flow", "pr-1", "--service", "api=api:2", env=scene.env)
    assert done.returncode == 1 and f"{scene.repo / 'rendered'} is a symlink (to ../victim)" in done.stderr
    assert os.listdir(victim) == []
    scene.link("rendered", "../tenant-b/rendered")
    (tmp_path / "open-prs").write_text("pr-1\n")
    before = snapshot(scene.tenant)
    done = scene.harness.run("gc", str(scene.repo), "--keep-file", str(tmp_path / "open-prs"), "--expired",
                             env=scene.env)
    assert done.returncode == 1 and "is a symlink (to ../tenant-b/rendered)" in done.stderr, done.stderr
    assert snapshot(scene.tenant) == before and scene.deleted() == []
    assert json.loads((scene.tenant / "rendered" / "flows" / "pr-7" / "flow.metadata").read_text())["flow"] == "pr-7"


@pytest.mark.parametrize("command", ["render", "delete", "gc --keep", "gc --expired"])
def test_a_repository_path_reached_through_a_link_of_the_checkout_is_refused(scene, tmp_path, command):
    """CI runs `devlane render apps/shop` in the pull request's checkout: the path is the operator's, the tree is the
    pull request's, and `apps` may be a link to another tenant's repository. A link of the current directory's tree
    that leads out of it is refused before anything is read; the operator's own absolute path is theirs."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "apps").symlink_to(scene.repo)  # the pull request's link to another tenant's repository
    keep_file = tmp_path / "open-prs"
    keep_file.write_text("pr-9\n")
    argv = [*{**OUTPUT_COMMANDS}[command]("pr-1", keep_file)]
    argv.insert(1, "apps")
    before = scene.both()
    done = scene.harness.cli(*argv, cwd=checkout, env=scene.env)
    assert done.returncode == 1, done.stderr
    assert f"{checkout / 'apps'} is a symlink (to {scene.repo}) that leads out of {checkout}" in done.stderr
    assert done.stderr.count("devlane: error:") == 1 and "Traceback" not in done.stderr, done.stderr
    assert scene.both() == before and scene.deleted() == []
    (checkout / "inside").mkdir()  # a link that stays inside the checkout is its own business
    (checkout / "here").symlink_to("inside")
    assert "leads out of" not in scene.harness.cli("lint", "here", cwd=checkout).stderr
    done = scene.harness.cli(*argv[:1], str(scene.repo), *argv[2:], cwd=checkout, env=scene.env)
    assert "leads out of" not in done.stderr  # the operator's own path outside the checkout
