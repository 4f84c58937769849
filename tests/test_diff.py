"""`devlane diff` on real two-commit repositories: exactly the changed objects, a PR comment with a sticky
marker, tables, a Mermaid picture and per-service diffs, kept under GitHub's 65,536-character cap."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from conftest import EXAMPLE, app_yaml, run_cli

from renderer.markdown import MAX_COMMENT

FLOW = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]


def git(repo, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                         check=True, capture_output=True, text=True)  # fmt: skip
    return out.stdout.strip()


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def pr_repo(tmp_path):
    """Base: the bookshop example. Head: web's image and one seed-postgres arg changed."""
    repo = tmp_path / "shop"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("rendered"))
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    _edit(repo / "k8s" / "web.yaml", "bookshop-web:1.4.2", "bookshop-web:1.5.0")
    _edit(repo / "k8s" / "plugins.yaml", "'The Hobbit', 1,", "'The Hobbit', 3,")
    git(repo, "commit", "-qam", "head")
    return repo


def _diff(repo, *extra: str):
    return run_cli("diff", str(repo), "--base", "HEAD~1", "--head", "HEAD", *FLOW, *extra)


def test_reports_exactly_the_changed_image_and_plugin_arg(pr_repo):
    out = _diff(pr_repo, "-o", "json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["counts"] == {"added": 0, "changed": 2, "removed": 0}
    changed = {(o["kind"], o["name"]): o for o in report["objects"]}
    assert set(changed) == {("Deployment", "web-pr-7"), ("StatefulSet", "orders-db-pr-7")}
    web = changed[("Deployment", "web-pr-7")]["diff"]
    assert [line for line in web.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-        image: ghcr.io/acme/bookshop-web:1.4.2", "+        image: ghcr.io/acme/bookshop-web:1.5.0"]
    seed = changed[("StatefulSet", "orders-db-pr-7")]["diff"]
    assert "+              ('9780547928227', 'The Hobbit', 3, 'linus@example.com');" in seed
    assert {r["service"]: (r["changed"], r["plugins"]) for r in report["services"]}["orders-db"] == (
        1, ["seed-orders-db"])


def test_markdown_comment_snapshot(pr_repo, snapshot):
    out = _diff(pr_repo, "-o", "markdown")
    assert out.returncode == 0, out.stderr
    body = out.stdout
    assert body.startswith("<!-- devlane:flow=pr-7 -->\n")
    assert "| service | change | objects +/~/- | plugins |" in body
    assert "### Stateful and external dependencies" in body and "```mermaid" in body
    assert "entry --> n_web" in body and 'n_orders_db["orders-db<br/>dev"]:::dev' in body
    assert "<details><summary>web: 1 object(s)</summary>" in body
    assert body == snapshot


def test_text_and_identical_refs(pr_repo):
    same = run_cli("diff", str(pr_repo), "--base", "HEAD", "--head", "HEAD", *FLOW)
    assert same.returncode == 0 and same.stdout.startswith("flow pr-7: 0 added, 0 changed, 0 removed")
    out = _diff(pr_repo)
    assert "changed  Deployment/web-pr-7  (flows/pr-7/deployment-web-pr-7.yaml)" in out.stdout


def test_a_flow_of_200_services_fits_one_comment(tmp_path):
    repo = tmp_path / "big"
    repo.mkdir()
    names = [f"svc-{i:03d}" for i in range(200)]

    def write(tag: str) -> None:
        text = "".join(app_yaml(n, containers=[{"name": "main", "image": f"{n}:{tag}",
                                               "env": [{"name": f"V{j}", "value": tag} for j in range(12)]}])
                       for n in names)  # fmt: skip
        (repo / "app.yaml").write_text(text)

    write("1")
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    write("2")
    git(repo, "commit", "-qam", "head")
    flags = [f"--service={n}=img/{n}:pr" for n in names]
    out = run_cli("diff", str(repo), "--base", "HEAD~1", "--head", "HEAD", "--flow", "pr-1", *flags, "-o", "markdown",
                  "--artifact-url", "https://ci.example.com/run/1")  # fmt: skip
    assert out.returncode == 0, out.stderr
    body = out.stdout
    assert len(body) <= MAX_COMMENT
    assert body.startswith("<!-- devlane:flow=pr-1 -->")
    assert all(f"| {n} | dev: target" in body for n in names)  # the summary table is whole
    assert "see https://ci.example.com/run/1" in body and "<details>" not in body
    assert "```mermaid" in body
