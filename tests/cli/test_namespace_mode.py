"""Isolation `namespace` everywhere a user looks: `plan` (text and JSON), the flow's README and
`flow.metadata`, `preview` (tree and HTML), `diff` (JSON and the PR comment), and `delete`. The suffix
mode's output is unchanged (the snapshots of the examples prove it)."""

from __future__ import annotations

import json

from support import yaml_doc, yamlc

K = "kardinal.dev.service/"


def app(harness) -> None:
    """web -> api, api reads Secret api-db (never copied: the lane still needs it); catalog is aliased."""
    def deployment(name: str, env: list | None = None) -> dict:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"},
                "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "main", "image": f"{name}:1", **({"env": env} if env else {})}]}}}}

    def service(name: str, **ann) -> dict:
        meta = {"name": name, "namespace": "shop", **({"annotations": {K + k: v for k, v in ann.items()}} if ann
                                                        else {})}
        return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
                "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80}]}}

    secret_env = [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "api-db", "key": "password"}}}]
    docs = [service("web", dependencies="api:http,catalog:http"),
            deployment("web", [{"name": "API_URL", "value": "http://api:80"}]), service("api"),
            deployment("api", secret_env), service("catalog"), deployment("catalog")]
    harness.write("app.yaml", "".join(yaml_doc(d) for d in docs))
    harness.config({"isolation": "namespace", "domain": "preview.example.com"})


FLOW = ["--flow", "pr-1", "--service", "api=api:2"]
NEED = "dev workload api in shop-pr-1 reads Secret api-db, which the flow namespace does not have"


def test_plan_shows_the_namespaces_the_aliases_and_what_the_lane_needs(harness):
    app(harness)
    out = harness.cli("plan", *FLOW)
    assert out.returncode == 0, out.stderr
    assert "isolation namespace: shop -> shop-pr-1" in out.stdout
    # catalog is two hops from the lane (web, baseline, calls it): its alias is counted, listed with --all
    assert "shop-pr-1/catalog -> catalog.shop.svc.cluster.local" not in out.stdout
    assert "shop-pr-1/web -> web.shop.svc.cluster.local" in out.stdout
    assert "... and 1 more, of services the lane does not touch (--all lists them)" in out.stdout
    assert "shop-pr-1/catalog -> catalog.shop.svc.cluster.local" in harness.cli("plan", *FLOW, "--all").stdout
    assert "shop-pr-1/web -> web.shop.svc.cluster.local" in out.stdout
    assert "the lane still needs:" in out.stdout and NEED in out.stdout
    data = json.loads(harness.cli("plan", *FLOW, "-o", "json").stdout)
    assert data["isolation"]["namespaces"] == {"shop": "shop-pr-1"}
    assert data["isolation"]["needs"] == [NEED]
    suffix = json.loads(harness.cli("plan", *FLOW, "-o", "json", "--isolation", "suffix").stdout)
    assert "isolation" not in suffix


def test_the_flow_readme_and_metadata_say_it(harness):
    app(harness)
    out = harness.cli("render", *FLOW)
    assert out.returncode == 0, out.stderr
    flow = harness.root / "rendered" / "flows" / "pr-1"
    meta = json.loads((flow / "flow.metadata").read_text())
    assert meta["isolation"] == {
        "mode": "namespace", "namespaces": {"shop": "shop-pr-1"},
        "aliases": ["shop-pr-1/catalog -> catalog.shop.svc.cluster.local",
                    "shop-pr-1/web -> web.shop.svc.cluster.local"],
        "needs": [NEED]}
    readme = (flow / "README.md").read_text()
    assert "## Isolation: namespace" in readme and "| shop | shop-pr-1 |" in readme and NEED in readme
    listed = yamlc.safe_load((flow / "kustomization.yaml").read_text())["resources"]
    assert "namespace-shop-pr-1.yaml" in listed
    gone = harness.cli("delete", "--flow", "pr-1")
    assert gone.returncode == 0, gone.stderr
    assert not flow.exists()  # Argo CD or Flux prune the Namespace, and with it everything in it


def test_preview_shows_it_in_the_tree_and_the_page(harness, tmp_path):
    app(harness)
    out = harness.cli("preview", *FLOW)
    assert out.returncode == 0, out.stderr
    assert "(routing none, isolation namespace)" in out.stdout and "namespaces shop -> shop-pr-1" in out.stdout
    assert "alias shop-pr-1/web -> web.shop.svc.cluster.local" in out.stdout and "needs" in out.stdout
    assert "alias shop-pr-1/catalog" not in out.stdout  # two hops away: counted
    assert "... and 1 more aliases, of services the lane does not touch" in out.stdout
    assert "alias shop-pr-1/catalog -> catalog.shop.svc.cluster.local" in harness.cli("preview", *FLOW, "--all").stdout
    page = tmp_path / "preview.html"
    assert harness.cli("preview", *FLOW, "--html", str(page)).returncode == 0
    text = page.read_text()
    assert "<h2>Isolation: namespace</h2>" in text and "<td>shop-pr-1</td>" in text
    assert "reads Secret api-db" in text


def test_diff_and_the_pr_comment_say_it(harness):
    app(harness)
    harness.commit("base")
    harness.write("app.yaml", harness.root.joinpath("app.yaml").read_text().replace("catalog:1", "catalog:2"))
    harness.commit("head")
    out = harness.cli("diff", *FLOW, "--base", "HEAD~1", "--head", "HEAD", "-o", "json", "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["isolation"]["namespaces"] == {"shop": "shop-pr-1"}
    md = harness.cli("diff", *FLOW, "--base", "HEAD~1", "--head", "HEAD", "-o", "markdown", "--fail-on", "never")
    assert "Isolation **namespace**: `shop` → `shop-pr-1`; 2 alias(es) to the baseline." in md.stdout
    assert "**The lane still needs:**" in md.stdout and NEED in md.stdout


def test_lint_suggests_namespace_isolation_for_an_address_compiled_into_the_image(harness):
    """web reads the address of api but none of catalog: suffix isolation could never wire web -> catalog."""
    app(harness)
    harness.config({"domain": "preview.example.com"})
    out = harness.cli("lint")
    said = out.stdout + out.stderr
    assert "edge shop/web -> shop/catalog: shop/web reads no address of catalog" in said
    assert "use isolation: namespace (the short name catalog then resolves to the dev copy by DNS)" in said
    assert "web -> shop/api" not in said  # API_URL holds its address: suffix isolation rewrites it
    harness.config({"isolation": "namespace"})
    assert "unwirable" not in (harness.cli("lint").stdout + harness.cli("lint").stderr)
