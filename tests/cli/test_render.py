"""`devlane render` and `devlane plan` in-process on the bookshop example: flow files and flags, determinism and
`--stdout` equal to the files, atomic output, flow id and usage errors, one clear message per error without a
traceback, non-objects, alias bombs, unknown targets and routing modes, and `plan`'s explanations.

Rendering the example would start its two repo-local kardinal-python plugins as subprocesses; here the same
plugin code is served as built-ins (resolved by plain name, run in-process), so no process is started.
`plan` runs no plugin and reads the unchanged example.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import EXAMPLE, FIXTURES, Harness, tree, yamlc
from support.repos import bookshop_builtins

FLOW = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]


@pytest.fixture
def bookshop(harness: Harness) -> Path:
    """The bookshop example, its plugins moved out of the repository and served as built-ins by plain name."""
    return bookshop_builtins(harness)


def test_flow_file_gives_the_same_objects_as_flags(harness, bookshop):
    a = harness.cli("render", *FLOW, "--env", "orders:LOG_LEVEL=debug", "--stdout")
    b = harness.cli("render", "--flow-file", bookshop / "flows" / "pr-7.yaml", "--stdout")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout
    assert "value: debug" in a.stdout
    assert "name: stripe-test" in a.stdout  # the plugins ran (in-process)


def test_rerender_is_byte_identical_and_stdout_equals_files(harness, bookshop):
    first = harness.cli("render", *FLOW, "--out", harness.tmp / "a")
    second = harness.cli("render", *FLOW, "--out", harness.tmp / "b")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    a, b = tree(harness.tmp / "a" / "flows" / "pr-7"), tree(harness.tmp / "b" / "flows" / "pr-7")
    assert a == b
    assert "configmap-devlane-state-seed-orders-db-pr-7.yaml" in a
    stream = harness.cli("render", *FLOW, "--stdout")
    assert stream.returncode == 0, stream.stderr
    from_files = "".join(f"---\n{a[f].decode()}" for f in yamlc.safe_load(a["kustomization.yaml"])["resources"])
    assert stream.stdout == from_files
    assert not (bookshop / "rendered").exists()  # --stdout writes nothing


def test_failed_render_leaves_previous_output_untouched(harness, bookshop):
    out = harness.tmp / "out"
    ok = harness.cli("render", *FLOW, "--out", out)
    assert ok.returncode == 0, ok.stderr
    before = tree(out)
    shutil.copytree(FIXTURES / "plugins" / "raises", harness.builtins() / "raises")  # raises in create_flow
    defs = bookshop / "k8s" / "plugins.yaml"
    defs.write_text(defs.read_text().replace("name: postgres-seed", "name: raises"))
    failed = harness.cli("render", *FLOW, "--out", out)
    assert failed.returncode == 1
    assert "seed-orders-db" in failed.stderr and "is not valid SQL" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert tree(out) == before
    assert sorted(p.name for p in (out / "flows").iterdir()) == ["pr-7"]  # no temp dirs left behind


@pytest.mark.parametrize("flow_id", ["../../etc", "PR-1", "a" * 41, "pr_1", "-pr", "shared", "", "pr-7\n"])
def test_bad_flow_ids_are_refused_before_reading(harness, flow_id):
    """A flow id given on the command line is a usage error (exit 2), found before the repository is read."""
    missing = harness.tmp / "does-not-exist"
    out = harness.cli("render", missing, f"--flow={flow_id}", "--service", "a=b", "--out", harness.tmp / "o")
    assert out.returncode == 2
    assert "flow id" in out.stderr and "does not exist" not in out.stderr
    assert "Traceback" not in out.stderr
    assert not (harness.tmp / "o").exists()


def test_errors_are_one_clear_message_without_traceback(harness, bookshop):
    harness.write("k8s/broken.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: [x\n")
    out = harness.cli("render", *FLOW)
    assert out.returncode == 1
    assert out.stderr.count("devlane: error:") == 1
    assert "k8s/broken.yaml:5" in out.stderr and "invalid YAML" in out.stderr
    assert "Traceback" not in out.stderr
    debug = harness.cli("render", *FLOW, "--debug")
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr


def test_usage_errors_exit_2(harness, bookshop):
    bad_service = harness.cli("render", *FLOW[:2], "--service", "orders")
    assert bad_service.returncode == 2 and "expected NAME=IMAGE" in bad_service.stderr
    no_flow = harness.cli("render", bookshop)
    assert no_flow.returncode == 2 and "a flow is required" in no_flow.stderr
    unknown = harness.cli("frobnicate")
    assert unknown.returncode == 2 and "invalid choice: 'frobnicate'" in unknown.stderr
    assert "Traceback" not in bad_service.stderr + no_flow.stderr + unknown.stderr
    assert not (bookshop / "rendered").exists()


def test_unknown_target_names_the_services(harness, bookshop):
    out = harness.cli("render", "--flow", "pr-1", "--service", "ordres=x:1")
    assert out.returncode == 1
    assert "flow target 'ordres' is not a Service" in out.stderr
    assert "catalog, orders, orders-db, web" in out.stderr


def test_non_objects_are_skipped_with_a_warning(harness, bookshop):
    harness.write("k8s/notes.yaml", "just: some\nvalues: [1, 2]\n---\n- a\n- list\n")
    out = harness.cli("render", *FLOW, "--stdout")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("k8s/notes.yaml") == 2 and "not a Kubernetes object" in out.stderr
    assert "name: orders-pr-7" in out.stdout


def test_alias_bomb_is_refused(harness, bookshop):
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, name in enumerate("bcdefghij"):
        prev = "abcdefghij"[i]
        bomb.append(f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]")
    harness.write("k8s/bomb.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n"
                                   + "\n".join("  " + line for line in bomb) + "\n")  # fmt: skip
    out = harness.cli("render", *FLOW)
    assert out.returncode == 1
    assert "k8s/bomb.yaml" in out.stderr and "alias" in out.stderr
    assert not (bookshop / "rendered").exists()


def test_plan_explains_each_service(harness):
    harness.copy(EXAMPLE)  # plan chooses each plugin's implementation but runs none
    text = harness.cli("plan", *FLOW)
    assert text.returncode == 0, text.stderr
    assert "routing: on path from entry Ingress/shop to a dev service" in text.stdout
    as_json = harness.cli("plan", *FLOW, "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    plan = json.loads(as_json.stdout)
    got = {s["name"]: (s["version"], s["reasons"][0]) for s in plan["services"]}
    assert got["orders"] == ("dev", "target")
    assert got["orders-db"] == ("dev", "stateful downstream of orders")
    assert got["catalog"] == ("baseline", "not affected by the flow")
    assert [p["instance"] for p in plan["plugins"]] == ["stripe-test-mode", "seed-orders-db"]


@pytest.mark.parametrize("routing", ["gateway-api", "istio"])
def test_the_bookshop_renders_on_a_mesh_through_its_configured_gateway(harness, bookshop, routing):
    out = harness.cli("render", *FLOW, "--routing", routing, "--stdout")
    assert out.returncode == 0, out.stderr
    kinds = {(d["kind"], d["metadata"]["name"]) for d in yamlc.safe_load_all(out.stdout) if d}
    assert ("HTTPRoute" if routing == "gateway-api" else "VirtualService", "shop-pr-7") in kinds
    assert ("Deployment", "web-pr-7") not in kinds  # on the entry path, reached through the mesh
    assert "devlane-flow=pr-7" in out.stdout


def test_flags_add_to_a_flow_file(harness, bookshop):
    flow_file = bookshop / "flows" / "pr-7.yaml"
    out = harness.cli("render", "--flow-file", flow_file, "--env", "orders:EXTRA=1", "--stdout")
    assert out.returncode == 0, out.stderr
    orders = next(d for d in yamlc.safe_load_all(out.stdout) if d and d["metadata"]["name"] == "orders-pr-7")
    app = next(c for c in orders["spec"]["template"]["spec"]["containers"] if c["name"] == "app")
    env = {e["name"]: e.get("value") for e in app["env"]}
    assert app["image"] == "ghcr.io/acme/bookshop-orders:pr-7"  # from the file
    assert (env["LOG_LEVEL"], env["EXTRA"]) == ("debug", "1")  # file env kept, flag env added
    clash = harness.cli("render", "--flow-file", flow_file, "--flow", "pr-8", "--stdout")
    assert clash.returncode == 1 and "differs from the flow file's id pr-7" in clash.stderr


def test_preview_html_into_a_missing_directory_is_one_clear_error(harness, tmp_path):
    harness.app("api")
    page = tmp_path / "no" / "such" / "dir" / "flow.html"
    out = harness.cli("preview", "--flow", "pr-1", "--service", "api=api:2", "--html", str(page))
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("devlane: error:")]
    assert out.returncode == 1 and len(errors) == 1, out.stderr
    assert f"the directory {page.parent} does not exist" in errors[0] and "internal error" not in out.stderr
    assert not page.parent.exists()
    out = harness.cli("preview", "--flow", "pr-1", "--service", "api=api:2", "--html", str(tmp_path))
    assert out.returncode == 1 and "cannot write the page" in out.stderr and "internal error" not in out.stderr
