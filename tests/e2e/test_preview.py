"""`devlane preview` (in-process CLI) on the bookshop example with its real plugins: the terminal tree (readable
without colour) and the self-contained, deterministic HTML page, opened in headless Chromium to check the flow's
nodes are really drawn (and, on a mesh, the edges the header routes drawn apart)."""

from __future__ import annotations

import contextlib
import html
import re
import shutil
import subprocess

import pytest
from support import EXAMPLE, ROOT

FLOW = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]
SERVICES = {"web": "dev", "orders": "dev", "orders-db": "dev", "catalog": "baseline", "stripe-test-mode": "dev"}
# on a mesh web carries the header to orders' dev version; catalog, two hops from the lane, is counted, not drawn
MESH_SERVICES = {k: v for k, v in {**SERVICES, "web": "baseline"}.items() if k != "catalog"}
ENTRY_URL = "http://pr-7.preview.bookshop.example.com/"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
SETUP = ROOT / "tests" / "setup_chromium.sh"
# injected into a copy of the page (the page itself has no script): record each node's laid-out size
MEASURE = """<script>
window.addEventListener("load", () => {
  for (const g of document.querySelectorAll("g.node[data-service]")) {
    const b = g.getBBox();
    g.setAttribute("data-drawn", Math.round(b.width) + "x" + Math.round(b.height));
  }
  for (const line of document.querySelectorAll("line.edge")) {
    line.setAttribute("data-stroke", getComputedStyle(line).stroke);
  }
});
</script></body>"""


def _depth(line: str) -> int:
    """Tree depth of a line: rich indents each level by four columns."""
    return (len(line) - len(line.lstrip(" │├└─"))) // 4


def test_terminal_tree_without_colour(harness, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # a pipe must not wrap at 80 columns
    out = harness.cli("preview", str(EXAMPLE), *FLOW, env={"NO_COLOR": "1"})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "\x1b[" not in text
    lines = text.splitlines()
    assert lines[0] == "flow pr-7 (routing none)"
    # the tree starts at the entry; every service hangs under its caller with its version and why
    expected = [
        (1, f"entry Ingress/shop {ENTRY_URL}"),
        (2, "web dev (routing: on path from entry Ingress/shop to a dev service)"),
        (3, "catalog baseline (called by web)"),
        (3, "orders dev (target; parent of TCP stateful orders-db; carries external stripe-test-mode downstream "
            "of orders)"),
        (4, "plugin stripe-test-mode: ./plugins/stripe-test-mode (kardinal-python)"),
        (5, "ran create_flow as stripe-test-mode-pr-7 for orders"),
        (4, "orders-db dev (stateful downstream of orders)"),
        (5, "plugin seed-orders-db: postgres-seed (kardinal-python)"),
        (6, "ran create_flow as seed-orders-db-pr-7 for orders-db"),
        (4, "stripe-test-mode dev, external service (external plugin runs for orders)"),
    ]  # fmt: skip
    found = {line.lstrip(" │├└─"): _depth(line) for line in lines[1:]}
    for depth, line in expected:
        assert found.get(line) == depth, (line, text)
    order = [next(i for i, ln in enumerate(lines) if ln.endswith(want)) for _, want in expected]
    assert order == sorted(order), text


def _page(harness, directory, *extra: str):
    directory.mkdir(exist_ok=True)
    page = directory / "flow.html"
    out = harness.cli("preview", str(EXAMPLE), *FLOW, *extra, "--html", str(page))
    assert out.returncode == 0, out.stderr
    assert f"wrote {page}" in out.stderr and out.stdout == ""
    return page, page.read_text(encoding="utf-8")


def test_html_is_self_contained_and_deterministic(harness, tmp_path):
    _, text = _page(harness, tmp_path / "first")
    # no resource from anywhere: outside the escaped object texts, http(s) only names the SVG namespace and
    # the entry host (text, titles and <a href> links), never something the browser would load
    markup = re.sub(r"<pre>.*?</pre>", "", text, flags=re.S)
    assert set(re.findall(r"https?://[^\s\"'<>)]*", markup)) == {"http://www.w3.org/2000/svg", ENTRY_URL}
    attributes = re.findall(r'<(\w+)[^>]*?\s([\w:-]+)="(https?://[^"]*)"', markup)
    assert sorted(set(attributes)) == [("a", "href", ENTRY_URL), ("svg", "xmlns", "http://www.w3.org/2000/svg")]
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b|@import|url\((?!#)", text)
    assert f'<a href="{ENTRY_URL}">{ENTRY_URL}</a>' in text
    for name, version in SERVICES.items():
        assert f'<g class="node {version}" data-service="{name}"' in text
    assert '<g class="node entry" data-entry="shop">' in text
    assert re.search(r'class="edge entry" data-from="shop" data-to="web"', text)
    for a, b in [("web", "catalog"), ("web", "orders"), ("orders", "orders-db"), ("orders", "stripe-test-mode")]:
        assert f'data-from="{a}" data-to="{b}"' in text
    for plugin in ["seed-orders-db", "stripe-test-mode"]:
        assert f'<g class="plugin" data-plugin="{plugin}">' in text
    assert "<tr><td>orders-db</td><td>dev</td><td>stateful downstream of orders</td></tr>" in text
    # the rendered objects, escaped, one <details> each
    details = re.findall(r"<details><summary>([^<]+)</summary><pre>(.*?)</pre></details>", text, re.S)
    assert "flows/pr-7/deployment-orders-pr-7.yaml" in dict(details)
    assert any("kind: Deployment" in body for _, body in details)
    assert all("<" not in body for _, body in details)
    seed = next(body for name, body in details if name.endswith("statefulset-orders-db-pr-7.yaml"))
    assert "orders-db-pr-7" in html.unescape(seed)
    assert _page(harness, tmp_path / "again")[1] == text


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and SETUP.exists():  # the setup script installs it when it can, and never fails
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(["bash", str(SETUP)], capture_output=True, timeout=900, check=False)
        found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed and could not be installed (tests/setup_chromium.sh)")
    return found


@pytest.mark.parametrize("routing,services", [("none", SERVICES), ("istio", MESH_SERVICES)])
def test_the_picture_is_drawn_in_headless_chromium(harness, tmp_path, routing, services):
    chromium = _chromium()
    _, text = _page(harness, tmp_path / "page", "--routing", routing)
    measured = tmp_path / "measured.html"
    measured.write_text(text.replace("</body>", MEASURE), encoding="utf-8")
    out = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          measured.as_uri()], capture_output=True, text=True, timeout=120)  # fmt: skip
    if out.returncode != 0 or "<svg" not in out.stdout:
        pytest.skip(f"chromium could not render here: {out.stderr[-300:]}")
    nodes = re.findall(r'<g class="node (\w+)" data-service="([^"]+)"[^>]*data-drawn="(\d+)x(\d+)"', out.stdout)
    assert {name: version for version, name, _, _ in nodes} == services
    for version, name, w, h in nodes:
        assert int(w) >= 150 and int(h) >= 40, (name, version, w, h)
    strokes = dict(re.findall(r'<line class="edge ([\w ]+)" data-from="web" data-to="orders"[^>]*data-stroke="([^"]+)"',
                              out.stdout))
    assert strokes == ({"http header": "rgb(45, 122, 20)"} if routing == "istio" else {"http": "rgb(85, 85, 85)"})
