"""`devlane render --services auto` (in-process CLI): the targets are the services a real two-commit git history
of the bookshop example changed, with the image from `--image-template`."""

from __future__ import annotations

import pytest
from support import EXAMPLE

TEMPLATE = "ghcr.io/acme/{service}:{short_sha}-pr{pr}"


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


def _render(harness, *extra: str):
    return harness.cli("render", "--flow", "pr-9", "--services", "auto", "--base", "HEAD~1",
                       "--image-template", TEMPLATE, "--pr", "9", "--stdout", *extra)  # fmt: skip


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
    assert f"image: ghcr.io/acme/catalog:{head[:7]}-pr9" in out.stdout
    assert "name: catalog-pr-9" in out.stdout and "name: orders-pr-9" not in out.stdout


def test_reformatting_only_changes_no_service(shop):
    rel = _manifest(shop)
    shop.write(rel, "# a comment\n" + (shop.root / rel).read_text().replace("\n---\n", "\n\n---\n"))
    shop.commit("reformat")
    out = _render(shop)
    assert out.returncode == 1
    assert "no service changed between HEAD~1 and HEAD" in out.stderr


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
