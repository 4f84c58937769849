"""`--services auto`: the targets are the services a real two-commit git history changed."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import EXAMPLE, run_cli

TEMPLATE = "ghcr.io/acme/{service}:{short_sha}-pr{pr}"


def git(repo, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                         check=True, capture_output=True, text=True)  # fmt: skip
    return out.stdout.strip()


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "shop"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("rendered"))
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def _commit(repo, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def _edit(repo, rel: str, old: str, new: str) -> None:
    path = repo / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1))


def _render(repo, *extra: str):
    return run_cli("render", str(repo), "--flow", "pr-9", "--services", "auto", "--base", "HEAD~1",
                   "--image-template", TEMPLATE, "--pr", "9", "--stdout", *extra)  # fmt: skip


def _manifest(repo) -> str:
    return next(p.relative_to(repo).as_posix() for p in sorted(repo.rglob("*.yaml"))
                if "name: catalog" in p.read_text() and "kind: Deployment" in p.read_text())


def test_a_changed_deployment_makes_its_service_the_target_with_the_templated_image(repo):
    rel = _manifest(repo)
    _edit(repo, rel, "image: ghcr.io/acme/bookshop-catalog:2.0.1", "image: ghcr.io/acme/bookshop-catalog:2.1.0")
    head = _commit(repo, "catalog 1.5")
    out = _render(repo)
    assert out.returncode == 0, out.stderr
    assert "devlane: target catalog: Deployment/catalog changed in" in out.stderr
    assert f"image: ghcr.io/acme/catalog:{head[:7]}-pr9" in out.stdout
    assert "name: catalog-pr-9" in out.stdout and "name: orders-pr-9" not in out.stdout


def test_reformatting_only_changes_no_service(repo):
    rel = _manifest(repo)
    (repo / rel).write_text("# a comment\n" + (repo / rel).read_text().replace("\n---\n", "\n\n---\n"))
    _commit(repo, "reformat")
    out = _render(repo)
    assert out.returncode == 1
    assert "no service changed between HEAD~1 and HEAD" in out.stderr


def test_code_under_a_directory_named_after_a_service_targets_it(repo):
    (repo / "src" / "orders").mkdir(parents=True)
    (repo / "src" / "orders" / "app.py").write_text("print('orders')\n")
    _commit(repo, "orders code")
    out = _render(repo)
    assert out.returncode == 0, out.stderr
    assert "target orders: src/orders/app.py is under a directory named orders" in out.stderr
    assert "name: orders-pr-9" in out.stdout


def test_unknown_template_field_is_a_usage_error(repo):
    (repo / "src" / "orders").mkdir(parents=True)
    (repo / "src" / "orders" / "app.py").write_text("x = 1\n")
    _commit(repo, "orders code")
    out = run_cli("render", str(repo), "--flow", "pr-9", "--services", "auto", "--base", "HEAD~1",
                  "--image-template", "ghcr.io/acme/{service}:{tag}", "--stdout")  # fmt: skip
    assert out.returncode == 2 and "unknown field(s) tag" in out.stderr
