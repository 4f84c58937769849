"""`devlane render` of the bookshop example as a user runs it, with its repo-local kardinal-python plugins as
real subprocesses: the rendered flow (snapshot), checked by strict schemas and `kubectl kustomize`; and
`--ref`, which reads manifests and in-repo plugins from git blobs without a checkout."""

from __future__ import annotations

import json

from support import EXAMPLE, kubectl_kustomize, tree, validate_strict, yamlc

FLOW = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]


def test_example_renders_expected_flow(harness, snapshot):
    example = harness.copy(EXAMPLE)
    out = harness.cli("render", *FLOW)
    assert out.returncode == 0, out.stderr
    flow_dir = example / "rendered" / "flows" / "pr-7"
    assert "rendered flow pr-7: 10 objects" in out.stderr
    files = tree(flow_dir)
    kustomization = yamlc.safe_load(files["kustomization.yaml"])
    listed = kustomization["resources"]
    assert listed == sorted(f for f in files if f.endswith(".yaml") and f != "kustomization.yaml")
    meta = json.loads(files["flow.metadata"])
    dev = sorted(s["name"] for s in meta["services"] if s["kind"] == "service" and s["version"] == "dev")
    assert dev == ["orders", "orders-db", "web"]
    assert "catalog" not in {s["name"] for s in meta["services"]}  # baseline: `devlane plan` explains it
    assert meta["entries"] == [{"kind": "Ingress", "name": "shop-pr-7", "hosts": ["pr-7.preview.bookshop.example.com"]}]
    assert {f: t.decode() for f, t in files.items()} == snapshot
    for name in listed:
        validate_strict(yamlc.safe_load(files[name]))
    built = kubectl_kustomize(flow_dir)
    assert len(built) == len(listed)
    assert all(o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "devlane" for o in built)


def test_ref_reads_git_blobs_without_checkout(harness):
    example = harness.copy(EXAMPLE)
    base_sha = harness.commit("base")
    web = example / "k8s" / "web.yaml"
    web.write_text(web.read_text().replace("ghcr.io/acme/bookshop-web:1.4.2", "ghcr.io/acme/bookshop-web:2.0.0"))
    harness.git("commit", "-qam", "web 2.0")
    web.write_text(web.read_text().replace("bookshop-web:2.0.0", "bookshop-web:uncommitted"))  # dirty tree
    at_base = harness.cli("render", *FLOW, "--ref", base_sha, "--stdout")
    at_head = harness.cli("render", *FLOW, "--ref", "main", "--stdout")
    worktree = harness.cli("render", *FLOW, "--stdout")
    assert at_base.returncode == at_head.returncode == worktree.returncode == 0, at_base.stderr + at_head.stderr
    assert "bookshop-web:1.4.2" in at_base.stdout
    assert "bookshop-web:2.0.0" in at_head.stdout
    assert "bookshop-web:uncommitted" in worktree.stdout
    files = harness.cli("render", *FLOW, "--ref", base_sha, "--out", harness.tmp / "o")
    assert files.returncode == 0, files.stderr
    meta = json.loads((harness.tmp / "o" / "flows" / "pr-7" / "flow.metadata").read_text())
    assert meta["source"] == {"revision": base_sha, "ref": base_sha}
    bad = harness.cli("render", *FLOW, "--ref", "no-such-branch")
    assert bad.returncode == 1 and "unknown git ref 'no-such-branch'" in bad.stderr


def test_ref_takes_in_repo_plugins_from_that_ref(harness):
    """A plugin kept in the repo is part of the revision: --ref must not run the work tree's copy."""
    example = harness.copy(EXAMPLE)
    harness.commit("base")
    plugin = example / "plugins" / "stripe-test-mode" / "main.py"
    plugin.write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n"
                      "    raise RuntimeError('work tree copy')\n")  # fmt: skip
    at_ref = harness.cli("render", *FLOW, "--ref", "main", "--stdout")
    assert at_ref.returncode == 0, at_ref.stderr
    assert "name: stripe-test" in at_ref.stdout
    worktree = harness.cli("render", *FLOW, "--stdout")
    assert worktree.returncode == 1 and "work tree copy" in worktree.stderr and "stripe-test-mode" in worktree.stderr
