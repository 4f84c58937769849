"""The preview view in-process, from a `RenderResult` of the bookshop manifests whose two plugins are the
built-in `dummy` (run in devlane's process): the View, the terminal tree and the HTML page, and the page's
escaping of hostile names; on a mesh (`gateway-api`, `istio`) the header that selects the flow and the dev versions
reached by it. The real example with its real plugins, the CLI and Chromium are in tests/e2e/test_preview.py."""

from __future__ import annotations

import html
import io
import re

import pytest
from support import EXAMPLE, plugin_definition

from renderer.render.routing import mesh
from renderer.views.preview import View, build_view, console, print_terminal, render_html

ENTRY_URL = "http://pr-7.preview.bookshop.example.com/"
SERVICES = {"web": "dev", "orders": "dev", "orders-db": "dev", "catalog": "baseline", "stripe-test-mode": "dev"}
MEMBER = "baggage devlane-flow=pr-7"
ROUTED = {"gateway-api": "HTTPRoute", "istio": "VirtualService"}  # what the bookshop's Ingress entry becomes
# on a mesh: only orders (and its stateful database) get dev versions; web stays the baseline and carries the header
# on a mesh web stays baseline (one hop: it calls orders); catalog, two hops away, is counted, not shown
MESH_SERVICES = {"web": ("baseline", ""), "orders": ("dev", "header"), "orders-db": ("dev", "rewrite"),
                 "stripe-test-mode": ("dev", "")}  # fmt: skip


def bookshop_view(harness, routing: str | None = None) -> View:
    """The bookshop with two `dummy` plugins, rendered in-process (routing from its config unless given)."""
    harness.write(".devlane.yaml", (EXAMPLE / ".devlane.yaml").read_text())
    for path in sorted((EXAMPLE / "k8s").glob("*.yaml")):
        if path.name != "plugins.yaml":
            harness.write(f"k8s/{path.name}", path.read_text())
    harness.write("k8s/plugins.yaml",
                  plugin_definition([{"name": "dummy", "type": "stateful", "servicename": "seed-orders-db"}],
                                    "seed-orders-db")
                  + plugin_definition([{"name": "dummy", "type": "external", "servicename": "stripe-test-mode"}],
                                      "stripe-test-mode"))  # fmt: skip
    result = harness.render("pr-7", {"orders": "ghcr.io/acme/bookshop-orders:pr-7"}, routing=routing)
    return build_view(result)


@pytest.fixture
def view(harness) -> View:
    return bookshop_view(harness)


@pytest.fixture(params=["gateway-api", "istio"])
def mesh_view(harness, request) -> View:
    return bookshop_view(harness, request.param)


def tree_lines(view: View) -> list[tuple[int, str]]:
    """The terminal tree as (depth, text) lines, the first line (depth 0) included; rich indents by four columns."""
    buf = io.StringIO()
    print_terminal(view, console(buf))
    text = buf.getvalue()
    assert "\x1b[" not in text
    return [((len(ln) - len(ln.lstrip(" │├└─"))) // 4, ln.lstrip(" │├└─")) for ln in text.splitlines()]


def in_tree_order(found: list[tuple[int, str]], expected: list[tuple[int, str]]) -> bool:
    """Each expected line present at its depth, and in tree order."""
    positions = [found.index(item) for item in expected]
    return positions == sorted(positions)


def test_the_view_of_a_render(view):
    assert (view.flow_id, view.routing, view.urls) == ("pr-7", "none", [ENTRY_URL])
    assert {s["name"]: s["version"] for s in view.services} == SERVICES
    assert {(a, b) for a, b, _ in view.edges} >= {("web", "catalog"), ("web", "orders"), ("orders", "orders-db"),
                                                  ("orders", "stripe-test-mode")}  # fmt: skip
    plugins = {p["instance"]: p for p in view.plugins}
    assert set(plugins) == {"seed-orders-db", "stripe-test-mode"}
    assert plugins["seed-orders-db"]["dependents"] == ["orders-db"]
    assert plugins["seed-orders-db"]["actions"][0] == "ran create_flow as seed-orders-db-pr-7 for orders-db"
    assert "flows/pr-7/deployment-orders-pr-7.yaml" in view.files


def test_terminal_tree(view, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    found = tree_lines(view)
    assert found[0] == (0, "flow pr-7 (routing none)")
    assert found[1][1].startswith("entry Ingress/shop")  # routing none: no routing line, no header, no reach
    assert not [t for _, t in found if "baggage" in t or ", by " in t]
    expected = [
        (1, f"entry Ingress/shop {ENTRY_URL}"),
        (2, "web dev (routing: on path from entry Ingress/shop to a dev service)"),
        (3, "catalog baseline (called by web)"),
        (3, "orders dev (target; parent of TCP stateful orders-db; carries external stripe-test-mode downstream "
            "of orders)"),
        (4, "plugin stripe-test-mode: dummy (kardinal-python)"),
        (5, "ran create_flow as stripe-test-mode-pr-7 for orders"),
        (5, "runs delete_flow when the flow is deleted"),
        (4, "orders-db dev (stateful downstream of orders)"),
        (5, "plugin seed-orders-db: dummy (kardinal-python)"),
        (6, "ran create_flow as seed-orders-db-pr-7 for orders-db"),
        (4, "stripe-test-mode dev, external service (external plugin runs for orders)"),
    ]  # fmt: skip
    assert in_tree_order(found, expected), found


def test_html_page(view):
    text = render_html(view)
    markup = re.sub(r"<pre>.*?</pre>", "", text, flags=re.S)
    assert set(re.findall(r"https?://[^\s\"'<>)]*", markup)) == {"http://www.w3.org/2000/svg", ENTRY_URL}
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b|@import|url\((?!#)", text)
    for name, version in SERVICES.items():
        assert f'<g class="node {version}" data-service="{name}"' in text
    assert re.search(r'class="edge entry" data-from="shop" data-to="web"', text)
    for plugin in ["seed-orders-db", "stripe-test-mode"]:
        assert f'<g class="plugin" data-plugin="{plugin}">' in text
    details = re.findall(r"<details><summary>([^<]+)</summary><pre>(.*?)</pre></details>", text, re.S)
    assert len(details) == len(view.files) and all("<" not in body for _, body in details)
    assert render_html(view) == text
    assert "<h2>Routing" not in text and "data-reach" not in text and "baggage" not in text  # routing none


def test_html_escapes_every_name():
    evil = '<img src=x onerror="alert(1)">'
    view = View(flow_id=evil, routing=evil,
                services=[{"name": evil, "version": "dev", "kind": "service", "reasons": [evil]}], edges=[],
                plugins=[{"instance": evil, "flow_uuid": evil, "plugin": evil, "runtime": evil, "reason": evil,
                          "status": "ok", "dependents": [evil], "actions": [evil]}],
                entries=[{"kind": "Ingress", "name": evil, "urls": [f"http://{evil}/"], "backends": [evil]}],
                files={evil: evil})  # fmt: skip
    text = render_html(view)
    assert "<img" not in text and 'onerror="' not in text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text


# --- on a mesh -----------------------------------------------------------------------------------------------


def test_a_mesh_view_says_which_dev_versions_the_header_reaches(mesh_view):
    assert mesh_view.mesh["mode"] == mesh_view.routing and mesh_view.mesh["member"] == "devlane-flow=pr-7"
    assert {s["name"]: (s["version"], s["reach"]) for s in mesh_view.services} == MESH_SERVICES
    assert mesh_view.hidden == 1
    (entry,) = mesh_view.entries  # the Ingress became a route on mesh.gateway: its URL is that route's host
    assert entry["urls"] == [ENTRY_URL] and entry["adds"] == MEMBER
    assert entry["as"] == [f"{ROUTED[mesh_view.routing]}/shop-pr-7"]
    shared = sorted(f for f in mesh_view.files if f.startswith("flows/_mesh/"))
    assert shared == (["flows/_mesh/virtualservice-devlane-orders.yaml"] if mesh_view.routing == "istio" else [])


def test_mesh_terminal_tree(mesh_view, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    routing = mesh_view.routing
    found = tree_lines(mesh_view)
    assert found[0] == (0, f"flow pr-7 (routing {routing})")
    assert found[1] == (1, f"routing {routing}: requests carrying {MEMBER} reach this flow's dev versions; the rest "
                           "reach the baseline")
    shared = [(2, "the per-host VirtualServices are in flows/_mesh/ (shared by every flow)"),
              (3, "orders -> orders-pr-7 (port 8080)")]
    assert (shared[0] in found) == (routing == "istio")
    expected = [
        *(shared if routing == "istio" else []),
        (1, f"entry Ingress/shop {ENTRY_URL} (as {ROUTED[routing]}/shop-pr-7, adds {MEMBER})"),
        (2, "web baseline (calls orders)"),
        (3, "orders dev, by header (target; parent of TCP stateful orders-db; carries external stripe-test-mode "
            "downstream of orders)"),
        (4, "orders-db dev, by rewritten references (stateful downstream of orders)"),
        (4, "stripe-test-mode dev, external service (external plugin runs for orders)"),
        (1, "... and 1 other baseline service the lane does not touch (--all shows them)"),
    ]  # fmt: skip
    assert in_tree_order(found, expected), found
    assert not [t for _, t in found if t.startswith("catalog")]


def test_mesh_html_page(mesh_view):
    routing = mesh_view.routing
    text = render_html(mesh_view)
    markup = re.sub(r"<pre>.*?</pre>", "", text, flags=re.S)
    assert set(re.findall(r"https?://[^\s\"'<>)]*", markup)) == {"http://www.w3.org/2000/svg", ENTRY_URL}
    assert f"<h2>Routing: {routing}</h2>" in text
    assert f"requests carrying <code>{MEMBER}</code> reach this flow's dev versions" in text
    assert f"Matched with <code>{html.escape(mesh.header_regex('pr-7'))}</code>" in text
    assert f"by header: {MEMBER}</span></p>" in text  # the legend names the header
    assert '<g class="node dev" data-service="orders" data-reach="header">' in text
    assert '<g class="node dev" data-service="orders-db" data-reach="rewrite">' in text
    assert '<g class="node baseline" data-service="web">' in text
    assert re.search(r'<line class="edge http header" data-from="web" data-to="orders" [^>]*><title>http, '
                     + MEMBER + "</title>", text)
    assert re.search(r'<line class="edge tcp" data-from="orders" data-to="orders-db"', text)  # rewritten, no header
    assert f'<g class="node entry" data-entry="shop" data-adds="{MEMBER}">' in text
    assert "<tr><td>orders</td><td>dev, by header</td>" in text
    assert "<tr><td>orders-db</td><td>dev, by rewritten references</td>" in text
    assert f"<li>Ingress/shop (as {ROUTED[routing]}/shop-pr-7, adds {MEMBER}) → " in text
    hosts = '<ul class="hosts"><li>orders -&gt; orders-pr-7 (port 8080)</li></ul>'
    assert (hosts in text) == ("<summary>flows/_mesh/virtualservice-devlane-orders.yaml</summary>" in text) == (
        routing == "istio")
