"""A pull request's whole life as the shipped workflow runs it (issue 43, point 6): the composite action's devlane
step (pr.sh) on fresh clones of a bare remote, a fake `gh` (tests/support/pr_life.py). Open, push, a docs-only push,
close, a missed close caught by gc, two pull requests at once, a fork, a head that does not render. What is checked
is read from the remote with git (the lanes branch's trees and parents, every other ref) and from the comments the
fake GitHub holds, never from devlane's report."""

from __future__ import annotations

import threading

import pytest
from support.harness import git
from support.pr_life import LANES, Life

pytestmark = pytest.mark.e2e

ALLOWED = ("README.md", "flows/", ".devlane/state/")


@pytest.fixture
def life(harness, tmp_path) -> Life:
    return Life(harness, tmp_path)


def _invariants(life: Life) -> None:
    """After every job: devlane pushed nothing but the lanes branch, which holds nothing but lanes and is no
    descendant of any code commit."""
    assert life.refs_besides_the_lanes() == life.pushed
    tip = life.tip(LANES)
    if tip:
        assert all(f.startswith(ALLOWED) for f in life.lane_files()), life.lane_files()
        code = set(git(life.remote, "rev-list", *life.pushed.values()).split())
        lanes = git(life.remote, "rev-list", tip).split()
        assert not code & set(lanes)  # no code commit is in the lanes branch's history
        assert len(git(life.remote, "rev-list", "--max-parents=0", tip).split()) == 1
        assert git(life.remote, "rev-list", "--merges", tip) == ""


def _flow_files(life: Life, flow: str, commit: str | None = None) -> dict[str, str]:
    tip = commit or life.tip(LANES)
    return {f: git(life.remote, "show", f"{tip}:{f}") for f in life.lane_files(tip) if f.startswith(f"flows/{flow}/")}


def test_a_pull_requests_whole_life(life):
    # 1. open: orders' code changed -> a lane on a new lanes branch, the records of its External plugin, one comment
    head = life.open_pr(7, {"src/orders/main.py": "print('orders')\n"})
    job = life.job("open", 7)
    assert job.code == 0, job.log
    first = life.tip(LANES)  # two commits: the records at once after provision, then the rendered lane
    assert git(life.remote, "rev-list", "--count", first) == "2"
    files = life.lane_files()
    assert "flows/pr-7/deployment-orders-pr-7.yaml" in files and ".devlane/state/pr-7/stripe-test-mode.json" in files
    (comment,) = life.comments(7)
    assert comment["body"].startswith("<!-- devlane:flow=pr-7 -->\n")
    assert f"| orders | ghcr.io/acme/bookshop-orders:{head[:7]} | built by CI (--image-template) |" in comment["body"]
    assert f"Lane committed to `{LANES}` at `{first[:12]}`." in comment["body"]
    # the lane's objects are the same at the base with the same targets (only code changed): nothing to review there
    assert job.outputs["lane-commit"] == first and job.outputs["changed"] == "false"
    _invariants(life)

    # 2. a push changing orders' Deployment: the lane updated on top of the old tip, the same comment replaced
    life.push(7, {"k8s/orders.yaml": life.edit("k8s/orders.yaml", "image: ghcr.io/acme/bookshop-orders:1.9.0",
                                               "image: ghcr.io/acme/bookshop-orders:1.9.1", 7)})
    job = life.job("open", 7)
    assert job.code == 0, job.log
    second = life.tip(LANES)
    assert git(life.remote, "rev-list", "--parents", "-n1", second).split()[1:] in ([first], [
        git(life.remote, "rev-parse", f"{second}~1")])
    assert git(life.remote, "merge-base", "--is-ancestor", first, second) == ""  # on top of the old tip
    (again,) = life.comments(7)
    assert again["id"] == comment["id"] and f"at `{second[:12]}`" in again["body"]
    _invariants(life)

    # 3. a docs-only push: the pull request still changes orders; only the image CI built for this push differs
    before = _flow_files(life, "pr-7")
    head = life.push(7, {"docs/notes.md": "# notes\n"})
    job = life.job("open", 7)
    assert job.code == 0, job.log
    after = _flow_files(life, "pr-7")
    deployment = "flows/pr-7/deployment-orders-pr-7.yaml"
    assert set(after) == set(before)
    assert {f for f in after if after[f] != before[f]} <= {"flows/pr-7/flow.metadata", "flows/pr-7/README.md",
                                                           deployment}  # fmt: skip
    changed = [(a, b) for a, b in zip(before[deployment].splitlines(), after[deployment].splitlines(), strict=True)
               if a != b]
    assert changed == [(changed[0][0], f"        image: ghcr.io/acme/bookshop-orders:{head[:7]}")]
    assert len(life.comments(7)) == 1
    _invariants(life)

    # 4. close: the lane and its records leave the branch, the External plugin's delete_flow ran once
    life.close(7)
    job = life.job("close", 7)
    assert job.code == 0, job.log
    assert not any("pr-7" in f for f in life.lane_files()) and life.deletes() == ["stripe-test-mode-pr-7"]
    (closed,) = life.comments(7)
    assert "lane removed (pull request closed)" in closed["body"]
    job = life.job("close", 7)  # a second close event: done, nothing runs twice
    assert job.code == 0 and "no lane in branch devlane-lanes of origin; nothing to delete" in job.log, job.log
    assert life.deletes() == ["stripe-test-mode-pr-7"]
    _invariants(life)


def test_a_docs_only_pull_request_gets_no_lane_and_a_green_comment(life):
    life.open_pr(8, {"docs/guide.md": "# guide\n"})
    job = life.job("open", 8)
    assert job.code == 0, job.log
    (comment,) = life.comments(8)
    assert "**No service changed: no lane.**" in comment["body"]
    assert "(1 file changed: docs/guide.md)" in comment["body"]
    assert not any("pr-8" in f for f in life.lane_files())
    _invariants(life)


def test_a_store_bump_runs_its_committed_image_and_a_revert_removes_the_lane(life):
    db = (life.work / "k8s" / "orders-db.yaml").read_text()
    life.open_pr(9, {"k8s/orders-db.yaml": db.replace("image: postgres:16", "image: postgres:17")})
    job = life.job("open", 9)
    assert job.code == 0, job.log
    statefulset = git(life.remote, "show", f"{life.tip(LANES)}:flows/pr-9/statefulset-orders-db-pr-9.yaml")
    assert "image: postgres:17" in statefulset and "bookshop-orders-db" not in statefulset
    assert "| orders-db | postgres:17 | committed (not built by CI) |" in life.comments(9)[0]["body"]
    life.push(9, {"k8s/orders-db.yaml": db})  # reverted: the pull request changes nothing any more
    job = life.job("open", 9)
    assert job.code == 0, job.log
    assert not any("pr-9" in f for f in life.lane_files())
    (comment,) = life.comments(9)
    assert "No service changed: no lane" in comment["body"] and "lane of an earlier push was removed" in comment["body"]
    assert life.deletes() == ["stripe-test-mode-pr-9"]
    _invariants(life)


def test_a_missed_close_is_caught_by_the_daily_gc(life):
    life.open_pr(10, {"src/orders/main.py": "print(10)\n"})
    life.open_pr(11, {"src/catalog/main.py": "print(11)\n"})
    assert life.job("open", 10).code == 0 and life.job("open", 11).code == 0
    life.close(10)  # closed, and its close job never ran
    job = life.job("gc")
    assert job.code == 0, job.log
    names = {f.split("/")[1] for f in life.lane_files() if f.startswith("flows/")}
    assert names == {"pr-11"} and life.deletes() == ["stripe-test-mode-pr-10"]
    _invariants(life)


def test_two_pull_requests_opened_at_once_both_get_their_lane(life):
    life.open_pr(12, {"src/orders/main.py": "print(12)\n"})
    life.open_pr(13, {"src/web/main.py": "print(13)\n"})
    jobs: dict[int, object] = {}
    threads = [threading.Thread(target=lambda n=n: jobs.__setitem__(n, life.job("open", n))) for n in (12, 13)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(j.code == 0 for j in jobs.values()), [j.log for j in jobs.values()]
    assert {f.split("/")[1] for f in life.lane_files() if f.startswith("flows/pr-")} == {"pr-12", "pr-13"}
    assert git(life.remote, "rev-list", "--merges", LANES) == ""
    _invariants(life)


def test_a_fork_renders_without_publishing_and_its_comment_is_posted_after_checks(life):
    head = life.open_pr(14, {"src/orders/main.py": "print(14)\n"})
    job = life.job("open", 14, fork="true")
    assert job.code == 0, job.log
    assert life.tip(LANES) == "" and life.comments(14) == []
    artifact = job.workdir / "devlane-out"
    assert (artifact / "pr").read_text().strip() == "14"
    assert "Not published: a pull request from a fork" in (artifact / "comment.md").read_text()
    follow = life.job("comment", None, **{"comment-dir": str(artifact), "head-sha": head})
    assert follow.code == 0, follow.log
    assert life.comments(14)[0]["body"].startswith("<!-- devlane:flow=pr-14 -->")
    (artifact / "pr").write_text("7\n")  # a tampered artifact: another pull request's number
    refused = life.job("comment", None, **{"comment-dir": str(artifact), "head-sha": head})
    assert refused.code == 1 and "is not flow pr-7's" in refused.log
    (artifact / "pr").write_text("14\n")
    stale = life.job("comment", None, **{"comment-dir": str(artifact), "head-sha": "0" * 40})
    assert stale.code == 1 and "moved on since the run" in stale.log
    assert len(life.comments(14)) == 1 and life.comments(7) == []


def test_a_head_that_does_not_render_replaces_the_comment_and_fails(life):
    life.open_pr(15, {"src/orders/main.py": "print(15)\n"})
    assert life.job("open", 15).code == 0
    tip = life.tip(LANES)
    orders = (life.work / "k8s" / "orders.yaml").read_text()
    life.push(15, {"k8s/orders.yaml": orders.replace('"stripe-test-mode"', '"stripe-test-mode, nosuch-plugin"')})
    job = life.job("open", 15)
    assert job.code == 1, job.log
    (comment,) = life.comments(15)
    assert "## devlane flow `pr-15`: ❌ could not" in comment["body"] and "nosuch-plugin" in comment["body"]
    assert life.tip(LANES) == tip  # the last good lane stays; nothing was pushed
    _invariants(life)
