"""The preview view in-process, from a `RenderResult` of the bookshop manifests whose two plugins are the
built-in `dummy` (run in devlane's process): the View, the terminal tree and the HTML page, and the page's
escaping of hostile names. The real example with its real plugins, the CLI and Chromium are in
tests/e2e/test_preview.py."""

from __future__ import annotations

import io
import re

import pytest
from support import EXAMPLE, plugin_definition

from renderer.views.preview import View, build_view, console, print_terminal, render_html

ENTRY_URL = "http://pr-7.preview.bookshop.example.com/"
SERVICES = {"web": "dev", "orders": "dev", "orders-db": "dev", "catalog": "baseline", "stripe-test-mode": "dev"}


@pytest.fixture
def view(harness) -> View:
    harness.write(".devlane.yaml", (EXAMPLE / ".devlane.yaml").read_text())
    for path in sorted((EXAMPLE / "k8s").glob("*.yaml")):
        if path.name != "plugins.yaml":
            harness.write(f"k8s/{path.name}", path.read_text())
    harness.write("k8s/plugins.yaml",
                  plugin_definition([{"name": "dummy", "type": "stateful", "servicename": "seed-orders-db"}],
                                    "seed-orders-db")
                  + plugin_definition([{"name": "dummy", "type": "external", "servicename": "stripe-test-mode"}],
                                      "stripe-test-mode"))  # fmt: skip
    result = harness.render("pr-7", {"orders": "ghcr.io/acme/bookshop-orders:pr-7"})
    return build_view(result)


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
    buf = io.StringIO()
    print_terminal(view, console(buf))
    text = buf.getvalue()
    assert "\x1b[" not in text
    lines = text.splitlines()
    assert lines[0] == "flow pr-7 (routing none)"
    expected = [
        (1, f"entry Ingress/shop {ENTRY_URL}"),
        (2, "web dev (routing: on path from entry Ingress/shop to a dev service)"),
        (3, "catalog baseline (not affected by the flow)"),
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
    found = [((len(ln) - len(ln.lstrip(" │├└─"))) // 4, ln.lstrip(" │├└─")) for ln in lines[1:]]  # (depth, text)
    positions = [found.index(item) for item in expected]  # each line present, at its depth ...
    assert positions == sorted(positions), text  # ... and in tree order


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
