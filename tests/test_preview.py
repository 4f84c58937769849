"""`devlane preview`: the terminal tree (readable without colour) and the self-contained HTML page, opened
in headless Chromium to check the flow's nodes are really drawn."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from conftest import EXAMPLE, run_cli

FLOW = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]
SERVICES = {"web": "dev", "orders": "dev", "orders-db": "dev", "catalog": "baseline", "stripe-test-mode": "dev"}
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
MEASURE = """<script>
window.addEventListener("load", () => {
  for (const g of document.querySelectorAll("g.node[data-service]")) {
    const b = g.getBBox();
    g.setAttribute("data-drawn", Math.round(b.width) + "x" + Math.round(b.height));
  }
});
</script></body>"""


def test_terminal_tree_without_colour():
    out = run_cli("preview", str(EXAMPLE), *FLOW, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "\x1b[" not in text
    assert "entry http://pr-7.preview.bookshop.example.com/" in text
    assert "web dev (routing: on path from entry Ingress/shop to a dev service)" in text
    assert "orders-db dev (stateful downstream of orders)" in text
    assert "catalog baseline (not affected by the flow)" in text
    assert "plugin seed-orders-db: ./plugins/seed-postgres (kardinal-python)" in text


def _page(tmp_path):
    page = tmp_path / "flow.html"
    out = run_cli("preview", str(EXAMPLE), *FLOW, "--html", str(page))
    assert out.returncode == 0, out.stderr
    return page, page.read_text()


def test_html_is_self_contained_and_deterministic(tmp_path):
    _, text = _page(tmp_path)
    assert re.findall(r'(?:src|href)="https?://', text) == []
    assert "<script" not in text and "@import" not in text
    for name, version in SERVICES.items():
        assert f'<g class="node {version}" data-service="{name}">' in text
    assert "kind: Deployment" in text and "flows/pr-7/deployment-orders-pr-7.yaml" in text
    again = tmp_path / "again"
    again.mkdir()
    assert _page(again)[1] == text


def test_the_picture_is_drawn_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (tests/setup_chromium.sh installs it where it can)")
    _, text = _page(tmp_path)
    measured = tmp_path / "measured.html"
    measured.write_text(text.replace("</body>", MEASURE))
    out = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          measured.as_uri()], capture_output=True, text=True, timeout=120)  # fmt: skip
    if out.returncode != 0 or "<svg" not in out.stdout:
        pytest.skip(f"chromium could not render here: {out.stderr[-300:]}")
    drawn = dict(re.findall(r'data-service="([^"]+)"[^>]*data-drawn="(\d+x\d+)"', out.stdout))
    assert set(drawn) == set(SERVICES)
    for name, size in drawn.items():
        w, h = map(int, size.split("x"))
        assert w >= 150 and h >= 40, (name, size)
