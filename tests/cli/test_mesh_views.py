"""`devlane preview` and `devlane diff -o markdown` in-process on the bookshop example with `--routing gateway-api`
and `--routing istio`: both front doors name the mode and the header, and tell the dev versions the mesh reaches by
the header from those reached through rewritten references. The views alone are in tests/unit/views/."""

from __future__ import annotations

import pytest
from support.repos import bookshop_builtins

FLOW = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]
MEMBER = "baggage devlane-flow=pr-7"
MODES = ["gateway-api", "istio"]


@pytest.mark.parametrize("routing", MODES)
def test_preview_names_the_mode_and_the_header(harness, monkeypatch, routing):
    monkeypatch.delenv("COLUMNS", raising=False)
    bookshop_builtins(harness)
    out = harness.cli("preview", *FLOW, "--routing", routing, env={"NO_COLOR": "1"})
    assert out.returncode == 0, out.stderr
    lines = [line.lstrip(" │├└─") for line in out.stdout.splitlines()]
    assert lines[:2] == [f"flow pr-7 (routing {routing})", f"routing {routing}: requests carrying {MEMBER} reach "
                         "this flow's dev versions; the rest reach the baseline"]  # fmt: skip
    assert ("the per-host VirtualServices are in flows/_mesh/ (shared by every flow)" in lines) == (routing == "istio")
    assert any(line.startswith("orders dev, by header (target;") for line in lines)
    assert "orders-db dev, by rewritten references (stateful downstream of orders)" in lines
    assert "web baseline (calls orders)" in lines


@pytest.mark.parametrize("routing", MODES)
def test_the_pr_comment_draws_the_header_on_the_calls_it_routes(harness, routing):
    bookshop_builtins(harness)
    harness.commit("base")
    out = harness.cli("diff", "--base", "HEAD", "--head", "HEAD", *FLOW, "--routing", routing, "-o", "markdown")
    assert out.returncode == 0, out.stderr
    body = out.stdout
    assert f"Routing `{routing}`: requests carrying `{MEMBER}` reach this flow's dev versions" in body
    picture = body[body.index("```mermaid"):]
    assert f'  routing>"routing {routing}:<br/>requests carrying {MEMBER}' in picture
    assert f'  entry(["pr-7.preview.bookshop.example.com<br/>adds {MEMBER}"])' in picture
    assert f'  n_web -->|"{MEMBER}"| n_orders' in picture and "  entry --> n_web" in picture
    assert ("flows/_mesh/" in picture) == (routing == "istio")
