"""Render behaviour as a user sees it: the CLI, output files, git refs, determinism, atomicity, errors."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLE, FIXTURES, kubectl_kustomize, run_cli, validate_strict

from renderer import api
from renderer.flow import build_flow

FLOW = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]


def tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def example(tmp_path) -> Path:
    repo = tmp_path / "bookshop"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("rendered", "__pycache__"))
    return repo


def test_example_renders_expected_flow(example, snapshot):
    out = run_cli("render", str(example), *FLOW)
    assert out.returncode == 0, out.stderr
    flow_dir = example / "rendered" / "flows" / "pr-7"
    assert "rendered flow pr-7: 9 objects" in out.stderr
    files = tree(flow_dir)
    kustomization = yaml.safe_load(files["kustomization.yaml"])
    listed = kustomization["resources"]
    assert listed == sorted(f for f in files if f.endswith(".yaml") and f != "kustomization.yaml")
    meta = json.loads(files["flow.metadata"])
    dev = sorted(s["name"] for s in meta["services"] if s["kind"] == "service" and s["version"] == "dev")
    assert dev == ["orders", "orders-db", "web"]
    assert [s["version"] for s in meta["services"] if s["name"] == "catalog"] == ["baseline"]
    assert meta["entries"] == [{"kind": "Ingress", "name": "shop-pr-7", "hosts": ["pr-7.preview.bookshop.example.com"]}]
    assert {f: t.decode() for f, t in files.items()} == snapshot
    for name in listed:
        validate_strict(yaml.safe_load(files[name]))
    built = kubectl_kustomize(flow_dir)
    assert len(built) == len(listed)
    assert all(o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "devlane" for o in built)


def test_flow_file_gives_the_same_objects_as_flags(example, tmp_path):
    a = run_cli("render", str(example), *FLOW, "--env", "orders:LOG_LEVEL=debug", "--stdout")
    b = run_cli("render", str(example), "--flow-file", str(example / "flows" / "pr-7.yaml"), "--stdout")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout
    assert "value: debug" in a.stdout


def test_rerender_is_byte_identical_and_stdout_equals_files(example, tmp_path):
    first = run_cli("render", str(example), *FLOW, "--out", str(tmp_path / "a"))
    second = run_cli("render", str(example), *FLOW, "--out", str(tmp_path / "b"))
    assert first.returncode == 0 and second.returncode == 0
    a, b = tree(tmp_path / "a" / "flows" / "pr-7"), tree(tmp_path / "b" / "flows" / "pr-7")
    assert a == b
    stream = run_cli("render", str(example), *FLOW, "--stdout")
    assert stream.returncode == 0
    from_files = "".join(f"---\n{a[f].decode()}" for f in yaml.safe_load(a["kustomization.yaml"])["resources"])
    assert stream.stdout == from_files
    assert not (example / "rendered").exists()  # --stdout writes nothing


def test_ref_reads_git_blobs_without_checkout(example):
    git = ["git", "-C", str(example), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git[:3], "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    base_sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    web = example / "k8s" / "web.yaml"
    web.write_text(web.read_text().replace("ghcr.io/acme/bookshop-web:1.4.2", "ghcr.io/acme/bookshop-web:2.0.0"))
    subprocess.run([*git, "commit", "-qam", "web 2.0"], check=True)
    web.write_text(web.read_text().replace("bookshop-web:2.0.0", "bookshop-web:uncommitted"))  # dirty tree
    at_base = run_cli("render", str(example), *FLOW, "--ref", base_sha, "--stdout")
    at_head = run_cli("render", str(example), *FLOW, "--ref", "main", "--stdout")
    worktree = run_cli("render", str(example), *FLOW, "--stdout")
    assert at_base.returncode == at_head.returncode == worktree.returncode == 0, at_base.stderr
    assert "bookshop-web:1.4.2" in at_base.stdout
    assert "bookshop-web:2.0.0" in at_head.stdout
    assert "bookshop-web:uncommitted" in worktree.stdout
    files = run_cli("render", str(example), *FLOW, "--ref", base_sha, "--out", str(example.parent / "o"))
    assert files.returncode == 0
    meta = json.loads((example.parent / "o" / "flows" / "pr-7" / "flow.metadata").read_text())
    assert meta["source"] == {"revision": base_sha, "ref": base_sha}
    bad = run_cli("render", str(example), *FLOW, "--ref", "no-such-branch")
    assert bad.returncode == 1 and "unknown git ref 'no-such-branch'" in bad.stderr


def test_failed_render_leaves_previous_output_untouched(example, tmp_path):
    out = tmp_path / "out"
    ok = run_cli("render", str(example), *FLOW, "--out", str(out))
    assert ok.returncode == 0
    before = tree(out)
    raising = FIXTURES / "plugins" / "raises"
    failed = run_cli("render", str(example), *FLOW, "--out", str(out),
                     f"--plugin-source=./plugins/seed-postgres={raising}")  # fmt: skip
    assert failed.returncode == 1
    assert "seed-orders-db" in failed.stderr and "Traceback" not in failed.stderr
    assert tree(out) == before
    assert sorted(p.name for p in (out / "flows").iterdir()) == ["pr-7"]  # no temp dirs left behind


@pytest.mark.parametrize("flow_id", ["../../etc", "PR-1", "a" * 41, "pr_1", "-pr", "shared", ""])
def test_bad_flow_ids_are_refused_before_reading(flow_id, tmp_path):
    missing = tmp_path / "does-not-exist"
    out = run_cli("render", str(missing), f"--flow={flow_id}", "--service", "a=b", "--out", str(tmp_path / "o"))
    assert out.returncode == 1
    assert "flow id" in out.stderr and "does not exist" not in out.stderr
    assert not (tmp_path / "o").exists()


def test_errors_are_one_clear_message_without_traceback(example):
    (example / "k8s" / "broken.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: [x\n")
    out = run_cli("render", str(example), *FLOW)
    assert out.returncode == 1
    assert "k8s/broken.yaml:5" in out.stderr and "invalid YAML" in out.stderr
    assert "Traceback" not in out.stderr
    debug = run_cli("render", str(example), *FLOW, "--debug")
    assert "Traceback" in debug.stderr


def test_usage_errors_exit_2(example):
    assert run_cli("render", str(example), "--flow", "pr-1", "--service", "orders").returncode == 2
    assert run_cli("render", str(example)).returncode == 2
    assert run_cli("frobnicate").returncode == 2


def test_unknown_target_names_the_services(example):
    out = run_cli("render", str(example), "--flow", "pr-1", "--service", "ordres=x:1")
    assert out.returncode == 1
    assert "flow target 'ordres' is not a Service" in out.stderr
    assert "catalog, orders, orders-db, web" in out.stderr


def test_non_objects_are_skipped_with_a_warning(example):
    (example / "k8s" / "notes.yaml").write_text("just: some\nvalues: [1, 2]\n---\n- a\n- list\n")
    out = run_cli("render", str(example), *FLOW, "--stdout")
    assert out.returncode == 0
    assert out.stderr.count("k8s/notes.yaml") == 2 and "not a Kubernetes object" in out.stderr


def test_alias_bomb_is_refused(example):
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, name in enumerate("bcdefghij"):
        prev = "abcdefghij"[i]
        bomb.append(f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]")
    (example / "k8s" / "bomb.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n"
                                                + "\n".join("  " + line for line in bomb) + "\n")  # fmt: skip
    out = run_cli("render", str(example), *FLOW)
    assert out.returncode == 1
    assert "k8s/bomb.yaml" in out.stderr and "alias" in out.stderr


def test_dollar_braces_opt_out_of_flux_substitution(example):
    orders = example / "k8s" / "orders.yaml"
    orders.write_text(orders.read_text().replace("value: info", "value: ${LOG_LEVEL:-info}"))
    flow = build_flow("pr-7", {"orders": "x/orders:7"}, [])
    result = api.render(api.Options(repo=example), flow)
    dep = next(o for o in result.main.objects if o["metadata"]["name"] == "orders-pr-7")
    assert dep["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/substitute"] == "disabled"
    web = next(o for o in result.main.objects if o["metadata"]["name"] == "web-pr-7")
    assert "kustomize.toolkit.fluxcd.io/substitute" not in (web["metadata"].get("annotations") or {})


def test_plan_explains_each_service(example):
    text = run_cli("plan", str(example), *FLOW)
    assert text.returncode == 0
    assert "routing: on path from entry Ingress/shop to a dev service" in text.stdout
    as_json = json.loads(run_cli("plan", str(example), *FLOW, "-o", "json").stdout)
    got = {s["name"]: (s["version"], s["reasons"][0]) for s in as_json["services"]}
    assert got["orders"] == ("dev", "target")
    assert got["orders-db"] == ("dev", "stateful downstream of orders")
    assert got["catalog"] == ("baseline", "not affected by the flow")
    assert [p["instance"] for p in as_json["plugins"]] == ["stripe-test-mode", "seed-orders-db"]


def test_unimplemented_routing_modes_are_refused(example):
    out = run_cli("render", str(example), *FLOW, "--routing", "istio")
    assert out.returncode == 1 and "not implemented" in out.stderr


def test_ref_takes_in_repo_plugins_from_that_ref(example):
    """A plugin kept in the repo is part of the revision: --ref must not run the work tree's copy."""
    git = ["git", "-C", str(example), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git[:3], "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    plugin = example / "plugins" / "stripe-test-mode" / "main.py"
    plugin.write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n"
                      "    raise RuntimeError('work tree copy')\n")  # fmt: skip
    at_ref = run_cli("render", str(example), *FLOW, "--ref", "main", "--stdout")
    assert at_ref.returncode == 0, at_ref.stderr
    assert "name: stripe-test" in at_ref.stdout
    worktree = run_cli("render", str(example), *FLOW, "--stdout")
    assert worktree.returncode == 1 and "work tree copy" in worktree.stderr and "stripe-test-mode" in worktree.stderr


def test_flags_add_to_a_flow_file(example):
    flow_file = str(example / "flows" / "pr-7.yaml")
    out = run_cli("render", str(example), "--flow-file", flow_file, "--env", "orders:EXTRA=1", "--stdout")
    assert out.returncode == 0, out.stderr
    orders = next(d for d in yaml.safe_load_all(out.stdout) if d and d["metadata"]["name"] == "orders-pr-7")
    app = next(c for c in orders["spec"]["template"]["spec"]["containers"] if c["name"] == "app")
    env = {e["name"]: e.get("value") for e in app["env"]}
    assert app["image"] == "ghcr.io/acme/bookshop-orders:pr-7"  # from the file
    assert (env["LOG_LEVEL"], env["EXTRA"]) == ("debug", "1")  # file env kept, flag env added
    clash = run_cli("render", str(example), "--flow-file", flow_file, "--flow", "pr-8", "--stdout")
    assert clash.returncode == 1 and "differs from the flow file's id pr-7" in clash.stderr
