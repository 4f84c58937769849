"""`devlane diff` (in-process CLI) on real two-commit git repositories: exactly the changed objects, a PR comment
with a sticky marker, tables, a Mermaid picture and per-service diffs, kept under GitHub's 65,536-character cap;
a flow missing at base, a head that does not render, `--fail-on`, and a plugin refusing a change
(`validate_change`). The masking and cap logic alone are in tests/unit/views/test_diff_report.py."""

from __future__ import annotations

import json

import pytest
from support import EXAMPLE, FIXTURES, app_yaml, plugin_definition

from renderer.views.markdown import MAX_COMMENT

FLOW = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def pr_repo(harness):
    """Base: the bookshop example. Head: web's image and one arg of its postgres-seed definition changed."""
    harness.copy(EXAMPLE)
    harness.commit("base")
    _edit(harness.root / "k8s" / "web.yaml", "bookshop-web:1.4.2", "bookshop-web:1.5.0")
    _edit(harness.root / "k8s" / "plugins.yaml", "'The Hobbit', 1,", "'The Hobbit', 3,")
    harness.commit("head")
    return harness


def _diff(harness, *extra: str):
    return harness.cli("diff", "--base", "HEAD~1", "--head", "HEAD", *FLOW, *extra)


def test_reports_exactly_the_changed_image_and_plugin_arg(pr_repo):
    out = _diff(pr_repo, "-o", "json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["counts"] == {"added": 0, "changed": 3, "removed": 0}
    changed = {(o["kind"], o["name"]): o for o in report["objects"]}
    assert set(changed) == {("Deployment", "web-pr-7"), ("StatefulSet", "orders-db-pr-7"),
                            ("ConfigMap", "seed-seed-orders-db-pr-7")}
    web = changed[("Deployment", "web-pr-7")]["diff"]
    assert [line for line in web.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-        image: ghcr.io/acme/bookshop-web:1.4.2",
        "+        image: ghcr.io/acme/bookshop-web:1.5.0",
    ]
    seed = changed[("ConfigMap", "seed-seed-orders-db-pr-7")]["diff"]
    assert "+      ('9780547928227', 'The Hobbit', 3, 'linus@example.com');" in seed
    db = changed[("StatefulSet", "orders-db-pr-7")]["diff"]  # a new seed rolls out a new, re-seeded pod
    assert [line[:9] for line in db.splitlines() if line.startswith(("-   ", "+   "))] == ["-        ", "+        "]
    assert "DEVLANE_SEED_DIGEST" in db
    assert {r["service"]: (r["changed"], r["plugins"]) for r in report["services"]}["orders-db"] == (
        1,
        ["seed-orders-db"],
    )
    assert report["images"] == [
        {
            "object": "Deployment/web-pr-7",
            "service": "web",
            "container": "web",
            "base": "ghcr.io/acme/bookshop-web:1.4.2",
            "head": "ghcr.io/acme/bookshop-web:1.5.0",
        }
    ]
    assert report["problems"] == [] and report["notes"] == [] and report["changed"] is True


def test_json_snapshot(pr_repo, snapshot):
    out = _diff(pr_repo, "-o", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == snapshot


def test_markdown_comment_snapshot(pr_repo, snapshot):
    out = _diff(pr_repo, "-o", "markdown")
    assert out.returncode == 0, out.stderr
    body = out.stdout
    assert body.startswith("<!-- devlane:flow=pr-7 -->\n")
    assert "| service | change | objects +/~/- | plugins |" in body
    assert "### Stateful and external dependencies" in body and "```mermaid" in body
    assert "entry --> n_web" in body and 'n_orders_db["orders-db<br/>dev"]:::dev' in body
    assert 'n_catalog["catalog<br/>baseline"]:::baseline' in body and "n_web --> n_catalog" in body
    assert "| Deployment/web-pr-7 | web | ghcr.io/acme/bookshop-web:1.4.2 | ghcr.io/acme/bookshop-web:1.5.0 |" in body
    assert "<details><summary>web: 1 object(s)</summary>" in body
    assert body == snapshot


def test_text_and_identical_refs(pr_repo):
    same = pr_repo.cli("diff", "--base", "HEAD", "--head", "HEAD", *FLOW)
    assert same.returncode == 0 and same.stdout.startswith("flow pr-7: 0 added, 0 changed, 0 removed")
    out = _diff(pr_repo)
    assert "changed  Deployment/web-pr-7  (flows/pr-7/deployment-web-pr-7.yaml)" in out.stdout


def test_a_flow_of_200_services_fits_one_comment(harness):
    names = [f"svc-{i:03d}" for i in range(200)]

    def write(tag: str) -> None:
        harness.write("app.yaml", "".join(
            app_yaml(n, containers=[{"name": "main", "image": f"{n}:{tag}",
                                     "env": [{"name": f"V{j}", "value": tag} for j in range(12)]}])
            for n in names))  # fmt: skip

    write("1")
    harness.commit("base")
    write("2")
    harness.commit("head")
    flags = [f"--service={n}=img/{n}:pr" for n in names]
    out = harness.cli("diff", "--base", "HEAD~1", "--head", "HEAD", "--flow", "pr-1", *flags, "-o", "markdown",
                      "--artifact-url", "https://ci.example.com/run/1")  # fmt: skip
    assert out.returncode == 0, out.stderr
    body = out.stdout
    assert len(body) <= MAX_COMMENT
    assert body.startswith("<!-- devlane:flow=pr-1 -->")
    assert all(f"| {n} | dev: target" in body for n in names)  # the summary table is whole
    assert "see https://ci.example.com/run/1" in body and "<details>" not in body
    assert "```mermaid" in body and 'n_svc_000["svc-000<br/>dev"]:::dev' in body
    assert 'more["… 140 more service(s), see the table"]' in body
    assert "### Images" not in body and body.rstrip().endswith("see https://ci.example.com/run/1.")


def test_a_flow_that_does_not_render_at_base_is_all_added(pr_repo):
    pr_repo.write(
        "k8s/reviews.yaml", app_yaml("reviews").replace("name: reviews}", "name: reviews, namespace: bookshop}")
        .replace("name: reviews\n", "name: reviews\n  namespace: bookshop\n")
    )
    pr_repo.commit("reviews")
    out = pr_repo.cli("diff", "--base", "HEAD~1", "--head", "HEAD", "--flow", "pr-7",
                      "--service", "reviews=reviews:2", "-o", "json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["counts"]["changed"] == report["counts"]["removed"] == 0 and report["counts"]["added"] >= 2
    assert {o["status"] for o in report["objects"]} == {"added"}
    assert {(o["kind"], o["name"]) for o in report["objects"]} >= {
        ("Deployment", "reviews-pr-7"),
        ("Service", "reviews-pr-7"),
    }
    assert len(report["notes"]) == 1 and "does not render at HEAD~1" in report["notes"][0]
    assert "reviews" in report["notes"][0]  # the reason: base has no such service


def test_a_flow_that_does_not_render_at_head_fails(pr_repo):
    out = pr_repo.cli("diff", "--base", "HEAD~1", "--flow", "pr-7", "--service", "nope=x:1")
    assert out.returncode == 1
    assert "devlane: error: the flow does not render at head HEAD" in out.stderr and "nope" in out.stderr
    assert "Traceback" not in out.stderr
    usage = pr_repo.cli("diff", *FLOW)
    assert usage.returncode == 2 and "--base" in usage.stderr


def test_an_unknown_base_is_an_error_naming_it_never_a_lane_all_added(pr_repo):
    for output in ("json", "text"):
        out = pr_repo.cli("diff", "--base", "nosuch", *FLOW, "-o", output)
        assert out.returncode == 1 and out.stdout == "", out.stdout
        assert "devlane: error: unknown git ref 'nosuch'" in out.stderr
    out = pr_repo.cli("diff", "--base", "nosuch", *FLOW, "-o", "markdown", "--fail-on", "never")
    assert out.returncode == 1  # whatever --fail-on: there is no comparison
    assert out.stdout.startswith("<!-- devlane:flow=pr-7 -->\n## devlane flow `pr-7`: ❌ could not render at HEAD")
    assert "unknown git ref 'nosuch'" in out.stdout and "unknown git ref 'nosuch'" in out.stderr


def test_a_head_that_fails_replaces_the_comment_with_the_failure(pr_repo):
    """The sticky comment says it failed and why (a secret in the message masked), and the job fails."""
    out = pr_repo.cli("diff", "--base", "HEAD~1", "--flow", "pr-7", "--service", "nope=x:1", "-o", "markdown",
                      "--artifact-url", "https://ci.example/run/1")  # fmt: skip
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert lines[0] == "<!-- devlane:flow=pr-7 -->" and "❌ could not render at HEAD" in lines[1]
    assert "The full log is in https://ci.example/run/1." in out.stdout
    assert "the flow does not render at head HEAD" in out.stdout and "nope" in out.stdout
    assert out.stdout.count("```") == 2 and "devlane: error: the flow does not render" in out.stderr


def test_the_comment_lists_each_target_with_the_image_it_runs(pr_repo):
    """--services auto: orders is built by CI (the template), orders-db's bumped postgres runs as committed."""
    _edit(pr_repo.root / "k8s" / "orders-db.yaml", "image: postgres:16", "image: postgres:17")
    pr_repo.write("src/orders/main.py", "print('orders')\n")
    head = pr_repo.commit("postgres 17, orders code")
    out = pr_repo.cli("diff", "--base", "HEAD~1", "--flow", "pr-7", "--services", "auto", "--image-template",
                      "ghcr.io/acme/bookshop-{service}:{short_sha}", "-o", "json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    rows = {t["service"]: (t["image"], t["origin"]) for t in report["targets"]}
    assert rows == {"orders": (f"ghcr.io/acme/bookshop-orders:{head[:7]}", "template"),
                    "orders-db": ("postgres:17", "committed")}
    assert report["base"].startswith("HEAD~1 (merge-base ") and report["lane"] is True
    md = pr_repo.cli("diff", "--base", "HEAD~1", "--flow", "pr-7", "--services", "auto", "--image-template",
                     "ghcr.io/acme/bookshop-{service}:{short_sha}", "-o", "markdown").stdout  # fmt: skip
    assert f"| orders | ghcr.io/acme/bookshop-orders:{head[:7]} | built by CI (--image-template) |" in md
    assert "| orders-db | postgres:17 | committed (not built by CI) |" in md


def test_a_pull_request_that_changes_no_service_is_no_lane(pr_repo):
    pr_repo.write("docs/guide.md", "# guide\n")
    pr_repo.commit("docs")
    auto = ["--flow", "pr-7", "--services", "auto", "--image-template", "ghcr.io/acme/bookshop-{service}:x"]
    out = pr_repo.cli("diff", "--base", "HEAD~1", *auto, "-o", "markdown", "--fail-on", "changes")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("<!-- devlane:flow=pr-7 -->\n## devlane flow `pr-7`: HEAD~1 → HEAD\n\n"
                                 "**No service changed: no lane.**")
    assert "(1 file changed: docs/guide.md)" in out.stdout
    report = json.loads(pr_repo.cli("diff", "--base", "HEAD~1", *auto, "-o", "json").stdout)
    assert report["lane"] is False and report["changed"] is False and report["objects"] == []


def test_fail_on(pr_repo):
    assert _diff(pr_repo, "--fail-on", "changes").returncode == 1
    assert _diff(pr_repo, "--fail-on", "never").returncode == 0
    same = pr_repo.cli("diff", "--base", "HEAD", *FLOW, "--fail-on", "changes")
    assert same.returncode == 0, same.stderr


def _guarded_app(db_name: str) -> str:
    """api and worker using the plugin instance `fixture`: ./plugins/guard, an external plugin with `db_name`."""
    entry = {"name": "./plugins/guard", "type": "external", "servicename": "fixture", "args": {"db_name": db_name}}
    return app_yaml("worker", "fixture") + app_yaml("api", "fixture") + plugin_definition([entry], "fixture-def")


def test_a_refused_plugin_change_is_reported_and_fails(harness):
    harness.write("app.yaml", _guarded_app("shop"))
    harness.copy(FIXTURES / "plugins" / "change_guard", "plugins/guard")
    harness.commit("base")
    harness.write("app.yaml", _guarded_app("orders"))
    harness.commit("head")
    args = ["diff", "--base", "HEAD~1", "--flow", "pr-1", "--service", "api=api:2"]
    report_file = harness.tmp / "report.json"
    out = harness.cli(*args, "-o", "json", "--json-out", str(report_file))
    assert out.returncode == 1, out.stderr
    refusal = "args.db_name: cannot rename the database of a live flow (shop -> orders)"
    assert refusal in out.stderr
    report = json.loads(out.stdout)
    assert json.loads(report_file.read_text()) == report
    assert [p["message"] for p in report["problems"]] == [refusal]
    assert report["counts"]["changed"] >= 1  # the new db_name reaches the pod env / state
    body = harness.cli(*args, "-o", "markdown").stdout
    assert "**Plugins refuse these changes:**" in body and refusal in body
    assert harness.cli(*args, "--fail-on", "never").returncode == 0
