"""Kustomize and Helm inputs built by the real tools (`renderer/render/inputs/kustomize_helm.py`): devlane models
exactly the objects `kubectl kustomize` builds (names with prefixes and suffixes, namespaces, generated ConfigMap
names), a flow renders from them and its dev pods read the generated names that exist in the build; detection at the
root, `inputs:` in .devlane.yaml, remote bases refused, missing tools named, nested apps and their `.devlane.yaml`
left out of plain scans, and `--ref` building the tree at the ref.

Every real-world kustomize directory and chart is in test_realworld_inputs.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support import SHOP_CHART, Harness, git, kubectl_kustomize, yamlc

from renderer.core.source import open_source
from renderer.render.inputs import load

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (kustomize) not installed")]


BASE = {
    "kustomization.yaml": """
resources: [app.yaml]
configMapGenerator:
  - name: redis-config
    literals: [REDIS_URL=redis://redis:6379]
""",
    "app.yaml": """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: api:1
          envFrom: [{configMapRef: {name: redis-config}}]
---
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  selector: {app: api}
  ports: [{name: http, port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: redis}
spec:
  selector: {matchLabels: {app: redis}}
  template:
    metadata: {labels: {app: redis}}
    spec: {containers: [{name: redis, image: "redis:7"}]}
---
apiVersion: v1
kind: Service
metadata:
  name: redis
  annotations: {kardinal.dev.service/stateful: "true"}
spec:
  selector: {app: redis}
  ports: [{name: tcp, port: 6379}]
""",
}
OVERLAY = """
resources: [../../base]
namePrefix: shop-
namespace: shop
patches:
  - target: {kind: Deployment, name: api}
    patch: |
      - op: add
        path: /spec/replicas
        value: 3
"""


def plan_rows(text: str) -> dict[str, str]:
    """`devlane plan`'s table (service -> version): the indented rows under its header, up to the next section."""
    rows = {}
    for line in text.splitlines()[2:]:
        if not line.startswith("  ") or line.startswith("   "):
            break
        rows[line.split()[0]] = line.split()[1]
    return rows


def kustomize_repo(harness: Harness) -> Path:
    for name, text in BASE.items():
        harness.write(f"base/{name}", text)
    harness.write("overlays/dev/kustomization.yaml", OVERLAY)
    git(harness.root, "init", "-q")  # an overlay's base lies outside the directory rendered, inside its repository
    return harness.root


def objects_of(stream: str) -> set[tuple[str, str | None, str]]:
    docs = [d for d in yamlc.safe_load_all(stream) if d]
    return {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs}


def modelled(root: Path, ref: str | None = None) -> set[tuple[str, str | None, str]]:
    loaded = load.read(open_source(root, ref))
    return {(d.kind, d.namespace, d.name) for d in loaded.documents}


def built(directory: Path) -> set[tuple[str, str | None, str]]:
    out = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, check=True)
    return objects_of(out.stdout)


# --------------------------------------------------------------------------------------------------
# Our own inputs: base, overlay, prefix, namespace, generator, patch


def test_the_model_is_what_kubectl_kustomize_builds(harness):
    root = kustomize_repo(harness)
    overlay = root / "overlays" / "dev"
    assert modelled(overlay) == built(overlay)
    names = {n for _, _, n in modelled(overlay)}
    assert "shop-api" in names and any(n.startswith("shop-redis-config-") for n in names)


def test_a_flow_on_an_overlay_reads_the_generated_names(harness, tmp_path):
    overlay = kustomize_repo(harness) / "overlays" / "dev"
    out = harness.cli("render", str(overlay), "--flow", "pr-1", "--service", "shop-api=api:2",
                      "--out", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    flow = tmp_path / "out" / "flows" / "pr-1"
    objs = [d for f in sorted(flow.glob("*.yaml")) if f.name != "kustomization.yaml"
            for d in yamlc.safe_load_all(f.read_text()) if d]
    dev = next(d for d in objs if d["kind"] == "Deployment" and d["metadata"]["name"] == "shop-api-pr-1")
    assert dev["metadata"]["namespace"] == "shop" and dev["spec"]["replicas"] == 1
    generated = {n for k, _, n in built(overlay) if k == "ConfigMap"}
    [ref] = [e["configMapRef"]["name"] for e in dev["spec"]["template"]["spec"]["containers"][0]["envFrom"]]
    assert ref in generated or ref.removesuffix("-pr-1") in generated  # the built name, or the flow's copy of it
    copies = {d["metadata"]["name"] for d in objs if d["kind"] == "ConfigMap"}
    assert ref in generated | copies
    kubectl_kustomize(flow)


def test_config_inputs_and_detection(harness):
    root = kustomize_repo(harness)
    harness.config({"inputs": [{"kustomize": "overlays/dev"}]})
    assert modelled(root) == built(root / "overlays" / "dev")
    (root / ".devlane.yaml").unlink()
    loaded = load.read(open_source(root, None))  # plain scan of the root: the kustomize dirs are skipped, said once
    assert loaded.documents == []
    [warning] = [p for p in loaded.problems if p.code == "skipped-inputs"]
    assert "base/" in warning.message and "overlays/dev/" in warning.message and "inputs:" in warning.hint


def test_a_nested_apps_config_is_never_a_manifest(harness):
    harness.app("api")
    harness.write("apps/shop/.devlane.yaml", "apiVersion: devlane.dev/v1alpha1\nkind: Config\n")
    harness.write("apps/shop/app.yaml", BASE["app.yaml"])
    loaded = load.read(open_source(harness.root, None))
    assert {d.file for d in loaded.documents} == {"app.yaml"}
    nested = load.read(open_source(harness.root / "apps" / "shop", None))
    assert {d.name for d in nested.documents} == {"api", "redis"}


def test_remote_bases_are_refused(harness):
    harness.write("kustomization.yaml", "resources:\n  - github.com/org/repo//base?ref=v1\n")
    out = harness.cli("lint")
    said = out.stdout + out.stderr
    assert out.returncode == 1
    assert "remote base 'github.com/org/repo//base?ref=v1'" in said and "offline" in said


def test_a_missing_tool_is_one_clear_error(harness, monkeypatch):
    harness.write("Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")
    monkeypatch.setenv("DEVLANE_HELM", "devlane-no-such-helm")
    out = harness.cli("render", "--flow", "pr-1", "--service", "x=x:1", "--stdout")
    assert out.returncode == 1 and "DEVLANE_HELM names 'devlane-no-such-helm', which is not installed" in out.stderr
    monkeypatch.delenv("DEVLANE_HELM")
    monkeypatch.setenv("PATH", "/nonexistent")
    out = harness.cli("render", "--flow", "pr-1", "--service", "x=x:1", "--stdout")
    assert out.returncode == 1 and ". (helm template): no helm to build this input with" in out.stderr
    assert "install Helm 3" in out.stderr and "Traceback" not in out.stderr


def test_a_build_error_names_the_input_and_the_tools_message(harness):
    harness.write("kustomization.yaml", "resources: [missing.yaml]\n")
    out = harness.cli("lint")
    said = out.stdout + out.stderr
    assert out.returncode == 1 and ". (kustomize build): kubectl kustomize failed" in said
    assert "missing.yaml" in said and "Traceback" not in said


def test_an_overlay_outside_git_reads_its_base_beside_it_only_where_the_operator_allows(harness, monkeypatch):
    """Without a git repository around it, the overlay directory is the repository: a base beside it is outside,
    refused naming the kustomization, the field and the path, until the operator allows that directory (the
    flag or the environment; a monorepo's shared bases)."""
    root = kustomize_repo(harness)
    shutil.rmtree(root / ".git")
    overlay = root / "overlays" / "dev"
    flow = ("render", str(overlay), "--flow", "pr-1", "--service", "shop-api=api:2", "--stdout")
    out = harness.cli(*flow)
    assert out.returncode == 1 and out.stdout == "", out.stderr
    assert "kustomization.yaml: resources entry '../../base' resolves to" in out.stderr
    assert "outside the repository" in out.stderr and "--allow-path" in out.stderr
    out = harness.cli(*flow, "--allow-path", str(root / "base"))
    assert out.returncode == 0, out.stderr
    assert "name: shop-api-pr-1" in out.stdout
    monkeypatch.setenv("DEVLANE_ALLOW_PATHS", str(root))
    assert modelled(overlay) == built(overlay)


def test_ref_builds_the_tree_at_the_ref(harness):
    root = kustomize_repo(harness)
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    (root / "overlays" / "dev" / "kustomization.yaml").write_text(OVERLAY.replace("shop-", "store-"))
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "rename")
    overlay = root / "overlays" / "dev"
    assert {n for _, _, n in modelled(overlay, "HEAD~1")} >= {"shop-api", "shop-redis"}
    assert {n for _, _, n in modelled(overlay, "HEAD")} >= {"store-api", "store-redis"}


# --------------------------------------------------------------------------------------------------
# Helm charts (tests/setup_helm.sh installs a pinned helm when the machine has none)

needs_helm = pytest.mark.skipif(shutil.which("helm") is None, reason="helm not installed (run tests/setup_helm.sh)")



def helm_objects(chart: Path, *args: str) -> set[tuple[str, str | None, str]]:
    out = subprocess.run(["helm", "template", *args, str(chart), "--include-crds"], capture_output=True, text=True,
                         check=True)  # fmt: skip
    return objects_of(out.stdout)


@needs_helm
def test_a_chart_is_modelled_as_helm_template_renders_it(harness):
    for name, text in SHOP_CHART.items():
        harness.write(f"charts/shop/{name}", text)
    harness.write("env/prod.yaml", "replicas: 3\n")
    harness.config({"inputs": [{"helm": "charts/shop", "values": ["env/prod.yaml"], "releaseName": "prod",
                                "namespace": "shop", "set": {"image": "api:9"}}]})
    loaded = load.read(open_source(harness.root, None))
    names = {(d.kind, d.name) for d in loaded.documents}
    assert names == {(k, n) for k, _, n in helm_objects(harness.root / "charts" / "shop", "prod")}
    assert names == {("Deployment", "prod-api"), ("Service", "prod-api")}
    dep = next(d for d in loaded.documents if d.kind == "Deployment")
    assert dep.obj["spec"]["replicas"] == 3 and dep.obj["spec"]["template"]["spec"]["containers"][0]["image"] == "api:9"
    assert dep.file == "charts/shop/templates/api.yaml"  # errors name the template
    out = harness.cli("render", "--flow", "pr-1", "--service", "prod-api=api:2", "--stdout")
    assert out.returncode == 0, out.stderr
    assert "name: prod-api-pr-1" in out.stdout and "{{" not in out.stdout


@needs_helm
def test_a_chart_whose_dependencies_are_not_vendored_says_helm_dependency_build(harness):
    for name, text in SHOP_CHART.items():
        harness.write(name, text)
    harness.append("Chart.yaml", "dependencies:\n  - {name: redis, version: 1.0.0, repository: https://example.com}\n")
    out = harness.cli("render", "--flow", "pr-1", "--service", "release-api=api:2", "--stdout")
    assert out.returncode == 1
    assert "helm dependency build ." in out.stderr and "never downloads" in out.stderr


# --------------------------------------------------------------------------------------------------
# The Argo CD CMP on an overlay directory


def test_cmp_generate_on_an_overlay_renders_like_render(harness):
    """argocd-cmp-server hands over the repository without .git and runs in the Application's path."""
    import json
    import os
    import sys

    from support import ROOT

    root = kustomize_repo(harness)
    shutil.rmtree(root / ".git")
    overlay = root / "overlays" / "dev"
    env = {"PATH": os.environ["PATH"], "HOME": str(overlay), "PYTHONPATH": str(ROOT),
           "ARGOCD_APP_NAME": "shop-pr-1", "ARGOCD_APP_NAMESPACE": "shop", "ARGOCD_APP_SOURCE_PATH": "overlays/dev",
           "ARGOCD_APP_REVISION": "a" * 40, "ARGOCD_ENV_FLOW_ID": "pr-1",
           "ARGOCD_APP_PARAMETERS": json.dumps([{"name": "services", "array": ["shop-api=api:2"]}])}  # fmt: skip
    out = subprocess.run([sys.executable, "-m", "renderer.cli", "cmp", "generate"], cwd=overlay, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    rendered = harness.cli("render", str(overlay), "--flow", "pr-1", "--service", "shop-api=api:2", "--stdout",
                           "--allow-path", str(root))  # the CMP knows the repository; a bare render is told
    assert rendered.returncode == 0, rendered.stderr
    assert out.stdout == rendered.stdout
    assert "shop-api-pr-1" in out.stdout and "shop-redis-config-" in out.stdout


# --------------------------------------------------------------------------------------------------
# --services auto on built inputs: a PR that changes only an overlay patch or only a values file


def _commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", message)


def _auto_targets(harness: Harness, directory: Path) -> str:
    out = harness.cli("plan", str(directory), "--flow", "pr-1", "--services", "auto", "--base", "HEAD~1",
                      "--image-template", "r/{service}:{short_sha}", "--all")  # every baseline row too
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_services_auto_sees_a_change_to_an_overlay_patch_only(harness):
    root = kustomize_repo(harness)
    _commit(root, "base")
    kfile = root / "overlays" / "dev" / "kustomization.yaml"
    kfile.write_text(kfile.read_text().replace("value: 3", "value: 5"))
    _commit(root, "scale api")
    plan = _auto_targets(harness, root / "overlays" / "dev")
    rows = plan_rows(plan)
    assert rows["shop-api"] == "dev" and rows["shop-redis"] == "baseline", plan


def values_only_pr(harness: Harness, before: str, after: str) -> None:
    """A git repo of the chart with env/prod.yaml as its values; HEAD changes only the values file."""
    for name, text in SHOP_CHART.items():
        harness.write(f"charts/shop/{name}", text)
    harness.write("env/prod.yaml", before)
    harness.config({"inputs": [{"helm": "charts/shop", "values": ["env/prod.yaml"], "releaseName": "prod"}]})
    git(harness.root, "init", "-q")
    _commit(harness.root, "chart")
    (harness.root / "env" / "prod.yaml").write_text(after)
    _commit(harness.root, "values")


@needs_helm
def test_services_auto_sees_a_change_to_a_values_file_only(harness):
    values_only_pr(harness, "replicas: 3\n", "replicas: 4\n")
    plan = _auto_targets(harness, harness.root)
    rows = plan_rows(plan)
    assert rows == {"prod-api": "dev"}, plan


@needs_helm
def test_diff_and_ref_of_a_pr_that_changes_only_a_values_file(harness):
    values_only_pr(harness, "logLevel: info\n", "logLevel: debug\n")
    flow = ["--flow", "pr-1", "--service", "prod-api=api:2"]
    out = harness.cli("diff", *flow, "--base", "HEAD~1", "--head", "HEAD", "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    assert "0 added, 1 changed, 0 removed" in out.stdout and "changed  Deployment/prod-api-pr-1" in out.stdout
    assert "-          value: info\n+          value: debug" in out.stdout, out.stdout
    for ref, level in (("HEAD~1", "info"), ("HEAD", "debug")):
        rendered = harness.cli("render", *flow, "--ref", ref, "--stdout")
        assert rendered.returncode == 0, rendered.stderr
        [dev] = [d for d in yamlc.safe_load_all(rendered.stdout) if d and d["kind"] == "Deployment"]
        assert dev["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "LOG_LEVEL", "value": level}]


# --------------------------------------------------------------------------------------------------
# Kardinal's annotations kept in .devlane.yaml, by the built (prefixed) names


def test_annotations_in_config_follow_the_built_names(harness):
    root = kustomize_repo(harness)
    overlay = root / "overlays" / "dev"
    (overlay / ".devlane.yaml").write_text(yaml.safe_dump({
        "services": {"shop-api": {"dependencies": ["shop-redis:6379"]}, "shop-redis": {"stateful": True}}}))
    plan = harness.cli("plan", str(overlay), "--flow", "pr-1", "--service", "shop-api=api:2")
    assert plan.returncode == 0, plan.stderr
    rows = plan_rows(plan.stdout)
    assert rows == {"shop-api": "dev", "shop-redis": "dev"}, plan.stdout  # the stateful dependency gets a copy
    out = harness.cli("render", str(overlay), "--flow", "pr-1", "--service", "shop-api=api:2", "--stdout")
    assert out.returncode == 0, out.stderr
    dev = [d for d in yamlc.safe_load_all(out.stdout) if d and d["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in dev} == {"shop-api-pr-1", "shop-redis-pr-1"}


def test_a_config_annotation_that_contradicts_the_manifest_is_a_lint_warning(harness):
    root = kustomize_repo(harness)
    overlay = root / "overlays" / "dev"
    (overlay / ".devlane.yaml").write_text(yaml.safe_dump({"services": {"shop-redis": {"stateful": False},
                                                                        "shop-nope": {"stateful": True}}}))
    out = harness.cli("lint", str(overlay))
    said = out.stdout + out.stderr
    assert "services.shop-redis.stateful ('false') overrides kardinal.dev.service/stateful: 'true'" in said
    assert "services.shop-nope names no Service" in said and out.returncode == 1


def test_plugin_definitions_in_config(harness):
    root = kustomize_repo(harness)
    overlay = root / "overlays" / "dev"
    (overlay / ".devlane.yaml").write_text(yaml.safe_dump({
        "services": {"shop-redis": {"plugins": ["redis-seed"]}},
        "plugins": {"definitions": [{"name": "dummy", "type": "stateful", "servicename": "redis-seed"}]}}))
    out = harness.cli("render", str(overlay), "--flow", "pr-1", "--service", "shop-redis=redis:8", "--stdout")
    assert out.returncode == 0, out.stderr
    states = [d for d in yamlc.safe_load_all(out.stdout) if d and d["kind"] == "ConfigMap"
              and "redis-seed" in d["metadata"]["name"]]
    assert states, out.stdout[-2000:]  # the dummy plugin ran for the instance the config defined
    (overlay / ".devlane.yaml").write_text(yaml.safe_dump({"services": {"shop-redis": {"plugins": ["redis-seed"]}}}))
    missing = harness.cli("render", str(overlay), "--flow", "pr-1", "--service", "shop-redis=redis:8", "--stdout")
    assert missing.returncode == 1 and "plugin 'redis-seed' is not defined" in missing.stderr


def test_diff_of_a_pr_that_changes_only_a_base_generator(harness):
    """The generated ConfigMap's hash changes, so the dev pod reads a new name: diff shows exactly that."""
    root = kustomize_repo(harness)
    _commit(root, "base")
    kfile = root / "base" / "kustomization.yaml"
    kfile.write_text(kfile.read_text().replace("redis:6379", "redis:6380"))
    _commit(root, "new redis url")
    out = harness.cli("diff", str(root / "overlays" / "dev"), "--flow", "pr-1", "--service", "shop-api=api:2",
                      "--base", "HEAD~1", "--head", "HEAD", "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    assert "0 added, 1 changed, 0 removed" in out.stdout and "changed  Deployment/shop-api-pr-1" in out.stdout
    before, after = (built_name(root, ref) for ref in ("HEAD~1", "HEAD"))
    assert before != after
    assert f"-            name: {before}" in out.stdout and f"+            name: {after}" in out.stdout


def built_name(root: Path, ref: str) -> str:
    return next(n for k, _, n in modelled(root / "overlays" / "dev", ref) if k == "ConfigMap")


def test_delete_at_a_ref_of_an_overlay(harness, tmp_path):
    root = kustomize_repo(harness)
    _commit(root, "base")
    overlay = root / "overlays" / "dev"
    made = harness.cli("render", str(overlay), "--flow", "pr-1", "--service", "shop-api=api:2")
    assert made.returncode == 0, made.stderr
    _commit(root, "flow pr-1")  # as CI commits rendered/flows/pr-1 for Flux
    gone = harness.cli("delete", str(overlay), "--flow", "pr-1", "--ref", "HEAD")
    assert gone.returncode == 0, gone.stderr
    assert not (overlay / "rendered" / "flows" / "pr-1").exists()
