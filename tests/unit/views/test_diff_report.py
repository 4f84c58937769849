"""The diff report's views, in-process: Secret values are masked before anything is compared or shown, and the
pull-request comment degrades under GitHub's size cap (marker kept, tables cut, picture shrunk) but never exceeds
it; on a mesh, the comment and its Mermaid picture name the routing mode and the header, and label the calls the
mesh sends to a dev version by it. `devlane diff` on real git histories is in tests/e2e/test_diff.py."""

from __future__ import annotations

import pytest
from support.repos import bookshop_builtins

from renderer.errors import Problem
from renderer.render.routing import mesh
from renderer.views import diff, markdown
from renderer.views.markdown import MAX_COMMENT


def test_secret_values_never_reach_the_report():
    text = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  key: c2VjcmV0\nstringData:\n  pw: hunter2\n"
    masked = diff.masked_object(text, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                                 "data": {"key": "c2VjcmV0"}, "stringData": {"pw": "hunter2"}})  # fmt: skip
    assert "c2VjcmV0" not in masked and "hunter2" not in masked and "key: <redacted sha256:" in masked
    plain = "kind: ConfigMap\ndata:\n  a: b\n"
    assert diff.masked_object(plain, {"kind": "ConfigMap", "data": {"a": "b"}}) == plain


@pytest.mark.parametrize("cap", [MAX_COMMENT, 4_000, 1_500, 300])
def test_the_comment_never_exceeds_the_cap(cap):
    """A thousand services and more, a diff of megabytes (well past the largest cap): the comment degrades, keeps
    the marker, and stays under the cap."""
    names = [f"service-with-a-long-name-{i:04d}" for i in range(1200)]
    rows = [{"service": n, "kind": "service", "version": "dev", "reasons": ["target"], "plugins": ["db"],
             "added": 0, "changed": 1, "removed": 0} for n in names]  # fmt: skip
    changes = [diff.ObjectChange(("apps/v1", "Deployment", "", f"{n}-pr-9"), "changed", f"flows/pr-9/{n}.yaml", n,
                                 "-a\n+b\n" * 200) for n in names]  # fmt: skip
    report = diff.Report("pr-9", "base", "head", changes, rows, [], problems=[Problem("refused `x` | y")],
                         versions={n: "dev" for n in names})  # fmt: skip
    body = markdown.render_markdown(report, ["pr-9.example.com"], [], None, cap=cap)
    assert len(body) <= cap and body.startswith("<!-- devlane:flow=pr-9 -->\n")
    assert "`devlane-diff` artifact" in body and "<details>" not in body
    if cap >= 4_000:
        assert "| service | change |" in body and "more services in the artifact" in body
        assert "```mermaid" in body and body.count("```") % 2 == 0


# --- the picture on a mesh ------------------------------------------------------------------------------------

MEMBER = "baggage devlane-flow=pr-7"
ORDERS = "orders=ghcr.io/acme/bookshop-orders:pr-7"


def bookshop_report(harness, routing: str) -> diff.Report:
    """The report of the bookshop flow against itself (nothing changed): its tables and picture are still whole."""
    bookshop_builtins(harness)
    result = harness.render("pr-7", dict([ORDERS.split("=", 1)]), routing=routing)
    return diff.compare("pr-7", "base", "head", result, result)


def picture_body(report: diff.Report) -> list[str]:
    """The Mermaid lines between `flowchart LR` and the class definitions."""
    lines = markdown.mermaid(report, report.entries, report.edges).splitlines()
    return lines[2:next(i for i, line in enumerate(lines) if line.startswith("  classDef"))]


NOTE = {"gateway-api": "", "istio": ";<br/>the per-host VirtualServices are in flows/_mesh/ (shared by every flow)"}


@pytest.mark.parametrize("routing", ["gateway-api", "istio"])
def test_the_mesh_picture_labels_the_calls_the_header_routes(harness, routing):
    report = bookshop_report(harness, routing)
    assert picture_body(report) == [
        f'  routing>"routing {routing}:<br/>requests carrying {MEMBER} reach this flow\'s dev versions;<br/>the rest '
        f'reach the baseline{NOTE[routing]}"]',
        f'  entry(["pr-7.preview.bookshop.example.com<br/>adds {MEMBER}"])',
        '  n_orders["orders<br/>dev"]:::dev',
        '  n_orders_db["orders-db<br/>dev"]:::dev',
        '  n_web["web<br/>baseline"]:::baseline',  # the entry's backend, a baseline caller of a dev version
        '  n_p_stripe_test_mode{{"stripe-test-mode"}}:::plugin -.-> n_orders',
        '  n_p_seed_orders_db{{"seed-orders-db"}}:::plugin -.-> n_orders_db',
        "  n_orders --> n_orders_db",  # TCP: orders' dev copy names the dev database, no header involved
        f'  n_web -->|"{MEMBER}"| n_orders',
        "  entry --> n_web",
    ]  # fmt: skip
    body = markdown.render_markdown(report, report.entries, report.edges)
    line = (f"Routing `{routing}`: requests carrying `{MEMBER}` reach this flow's dev versions; the rest reach the "
            "baseline. Reached by header: `orders`.")
    assert line + (" The per-host VirtualServices are in `flows/_mesh/` (shared by every flow)." if routing == "istio"
                   else "\n") in body
    assert report.as_dict()["mesh"] == {**report.mesh, "byHeader": ["orders"]}


def test_routing_none_keeps_its_picture(harness):
    report = bookshop_report(harness, "none")
    body = picture_body(report)
    assert '  entry(["pr-7.preview.bookshop.example.com"])' in body and "  n_web --> n_orders" in body
    assert "  entry --> n_web" in body and not [line for line in body if "baggage" in line or "routing" in line]
    assert "Routing" not in markdown.render_markdown(report, report.entries, report.edges)
    assert "mesh" not in report.as_dict()


def test_an_entry_backend_out_of_the_picture_is_reached_through_a_dotted_edge():
    """Only catalog changed: its baseline caller orders is shown, the entry's backend web is not (no neighbour of a
    change), so the entry reaches orders through services the picture leaves out."""
    record = {"mode": "gateway-api", "header": "baggage", "key": mesh.DEFAULT_KEY, "member": mesh.member("pr-1"),
              "match": mesh.header_regex("pr-1")}
    rows = [{"service": "catalog", "kind": "service", "version": "dev", "reasons": ["target"], "plugins": [],
             "added": 0, "changed": 1, "removed": 0}]
    report = diff.Report("pr-1", "base", "head", [], rows, [], entries=["pr-1.example.com"],
                         versions={"web": "baseline", "orders": "baseline", "catalog": "dev"},
                         edges=[("orders", "catalog"), ("web", "orders")], mesh=record, by_header=["catalog"],
                         entry_backends=["web"])  # fmt: skip
    body = picture_body(report)
    assert '  n_orders -->|"baggage devlane-flow=pr-1"| n_catalog' in body
    assert "  entry -.-> n_orders" in body and "n_web" not in "".join(body)
