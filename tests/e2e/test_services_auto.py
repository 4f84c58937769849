"""`devlane render --services auto` (in-process CLI): the targets are the services a real two-commit git history
of the bookshop example changed, with the image CI builds (`--image-template`) where CI builds it, the committed one
where it does not (a store, a third-party image); a pull request that changes no service is no lane (exit 0)."""

from __future__ import annotations

import pytest
from support import EXAMPLE

TEMPLATE = "ghcr.io/acme/bookshop-{service}:{short_sha}-pr{pr}"


@pytest.fixture
def shop(harness):
    harness.copy(EXAMPLE)
    harness.commit("base")
    return harness


def _edit(harness, rel: str, old: str, new: str) -> None:
    path = harness.root / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1))


def _render(harness, *extra: str, base: str = "HEAD~1", to: tuple[str, ...] = ("--stdout",)):
    return harness.cli("render", "--flow", "pr-9", "--services", "auto", "--base", base,
                       "--image-template", TEMPLATE, "--pr", "9", *to, *extra)  # fmt: skip


def _manifest(harness) -> str:
    return next(
        p.relative_to(harness.root).as_posix()
        for p in sorted(harness.root.rglob("*.yaml"))
        if "name: catalog" in p.read_text() and "kind: Deployment" in p.read_text()
    )


def test_a_changed_deployment_makes_its_service_the_target_with_the_templated_image(shop):
    rel = _manifest(shop)
    _edit(shop, rel, "image: ghcr.io/acme/bookshop-catalog:2.0.1", "image: ghcr.io/acme/bookshop-catalog:2.1.0")
    head = shop.commit("catalog 1.5")
    out = _render(shop)
    assert out.returncode == 0, out.stderr
    assert "devlane: target catalog: Deployment/catalog changed in" in out.stderr
    assert f"(image ghcr.io/acme/bookshop-catalog:{head[:7]}-pr9, built by CI)" in out.stderr
    assert f"image: ghcr.io/acme/bookshop-catalog:{head[:7]}-pr9" in out.stdout
    assert "name: catalog-pr-9" in out.stdout and "name: orders-pr-9" not in out.stdout


def test_reformatting_only_changes_no_service(shop):
    rel = _manifest(shop)
    shop.write(rel, "# a comment\n" + (shop.root / rel).read_text().replace("\n---\n", "\n\n---\n"))
    shop.commit("reformat")
    out = _render(shop)
    assert out.returncode == 0 and out.stdout == "", out.stderr
    assert out.stderr == f"devlane: flow pr-9: no service changed between HEAD~1 and HEAD (1 file changed: {rel}); " \
                         "no lane\n"


def test_a_docs_only_push_is_no_lane_and_removes_the_lane_of_an_earlier_push(shop, tmp_path):
    shop.write("src/orders/app.py", "print('orders')\n")
    shop.commit("orders code")
    out_dir = tmp_path / "out"
    first = _render(shop, to=("--out", str(out_dir)))
    assert first.returncode == 0 and (out_dir / "flows" / "pr-9").is_dir(), first.stderr
    shop.write("docs/guide.md", "# guide\n")
    shop.commit("docs")
    again = _render(shop, to=("--out", str(out_dir)))
    assert again.returncode == 0, again.stderr
    assert "no service changed between HEAD~1 and HEAD (1 file changed: docs/guide.md); no lane; removed the lane " \
           "of an earlier push" in again.stderr
    assert not (out_dir / "flows" / "pr-9").exists()
    third = _render(shop, to=("--out", str(out_dir)))
    assert third.returncode == 0 and "removed" not in third.stderr, third.stderr


def test_a_bumped_store_image_runs_as_committed_not_as_a_ci_build(shop):
    """Renovate bumps postgres: orders-db is the target, running postgres:17 (CI never built a bookshop-orders-db)."""
    _edit(shop, "k8s/orders-db.yaml", "image: postgres:16", "image: postgres:17")
    shop.commit("postgres 17")
    out = _render(shop)
    assert out.returncode == 0, out.stderr
    assert "target orders-db: StatefulSet/orders-db changed in k8s/orders-db.yaml; its image postgres:17 is not " \
           "built by CI (--image-template builds ghcr.io/acme/bookshop-orders-db): the committed image runs (image " \
           "postgres:17, committed, not built by CI)" in out.stderr
    assert "bookshop-orders-db" not in out.stdout and "image: postgres:17" in out.stdout


def test_a_sidecar_bump_builds_the_service_and_keeps_the_sidecar(shop):
    _edit(shop, "k8s/orders.yaml", "image: prom/statsd-exporter:v0.27.1", "image: prom/statsd-exporter:v0.28.0")
    head = shop.commit("statsd exporter")
    out = _render(shop)
    assert out.returncode == 0, out.stderr
    assert f"(image ghcr.io/acme/bookshop-orders:{head[:7]}-pr9, built by CI)" in out.stderr
    assert f"image: ghcr.io/acme/bookshop-orders:{head[:7]}-pr9" in out.stdout
    assert "image: prom/statsd-exporter:v0.28.0" in out.stdout


def test_code_of_a_service_ci_does_not_build_is_no_target(shop):
    shop.write("services/orders-db/migrations/001.sql", "create table t (id int);\n")
    shop.commit("a migration")
    out = _render(shop)
    assert out.returncode == 0 and out.stdout == "", out.stderr
    assert "no service changed" in out.stderr


def test_only_the_pull_requests_own_change_counts_when_the_base_moved_on(shop):
    """The base gained a catalog change after the branch was cut: like GitHub's "Files changed", the merge-base is
    compared, so only the branch's orders change is a target."""
    shop.git("checkout", "-q", "-b", "feature")
    shop.write("src/orders/app.py", "print('orders')\n")
    shop.commit("orders code")
    shop.git("checkout", "-q", "main")
    _edit(shop, _manifest(shop), "image: ghcr.io/acme/bookshop-catalog:2.0.1", "image: ghcr.io/acme/bookshop-catalog:3")
    shop.commit("catalog on main")
    shop.git("checkout", "-q", "feature")
    out = _render(shop, base="main")
    assert out.returncode == 0, out.stderr
    assert "target orders:" in out.stderr and "catalog" not in out.stderr


def test_an_unknown_base_or_a_shallow_history_is_an_error_naming_it(shop, tmp_path):
    shop.write("src/orders/app.py", "print('orders')\n")
    shop.commit("orders code")
    out = _render(shop, base="nosuch")
    assert out.returncode == 1 and "unknown git ref 'nosuch'" in out.stderr, out.stderr
    orphan = shop.git("commit-tree", shop.git("rev-parse", "HEAD^{tree}"), "-m", "unrelated")
    out = _render(shop, base=orphan)
    assert out.returncode == 1 and f"no common ancestor of --base {orphan} and HEAD" in out.stderr
    assert "fetch-depth: 0" in out.stderr


def test_code_under_a_directory_named_after_a_service_targets_it(shop):
    shop.write("src/orders/app.py", "print('orders')\n")
    shop.commit("orders code")
    out = _render(shop)
    assert out.returncode == 0, out.stderr
    assert "target orders: src/orders/app.py is under a directory named orders" in out.stderr
    assert "name: orders-pr-9" in out.stdout


def test_unknown_template_field_is_a_usage_error(shop):
    shop.write("src/orders/app.py", "x = 1\n")
    shop.commit("orders code")
    out = shop.cli("render", "--flow", "pr-9", "--services", "auto", "--base", "HEAD~1",
                   "--image-template", "ghcr.io/acme/{service}:{tag}", "--stdout")  # fmt: skip
    assert out.returncode == 2 and "unknown field(s) tag" in out.stderr
