"""One load per ref: the front doors read what the render already loaded (RenderResult) and never load
the repository a second time. Proven by counting the calls of the loader, `renderer.render.inputs.load.read`."""

from __future__ import annotations

import json

import pytest
from support import app_yaml, yaml_doc

FLOW = ["--flow", "pr-1", "--service", "api=api:2"]


@pytest.fixture
def repo(harness):
    harness.write("app.yaml", app_yaml("api") + app_yaml("db"))
    harness.write("entry.yaml", yaml_doc({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "shop", "annotations": {"kardinal.dev.service/ingress": "true"}},
        "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [{
            "path": "/", "pathType": "Prefix", "backend": {"service": {"name": "api", "port": {"number": 80}}}}]}}]}}))
    return harness


@pytest.mark.parametrize("extra", [[], ["--html", "page.html"]])
def test_preview_loads_once(repo, loads, extra, tmp_path):
    args = [a if a != "page.html" else str(tmp_path / a) for a in extra]
    out = repo.cli("preview", *FLOW, *args)
    assert out.returncode == 0, out.stderr
    assert loads == [("WorktreeSource", None)]
    assert "api" in (out.stdout if not extra else (tmp_path / "page.html").read_text())


def test_render_with_the_validation_gate_loads_once(repo, loads):
    out = repo.cli("render", *FLOW, "--validate", "strict", "--stdout")
    assert out.returncode == 0, out.stderr
    assert "validated" in out.stderr
    assert loads == [("WorktreeSource", None)]


def test_plan_and_lint_load_once_each(repo, loads):
    assert repo.cli("plan", *FLOW, "-o", "json").returncode == 0
    assert loads == [("WorktreeSource", None)]
    assert repo.cli("lint").returncode == 0
    assert len(loads) == 2


def test_cmp_generate_and_params_load_once_each(repo, loads):
    env = {"ARGOCD_ENV_FLOW_ID": "pr-1", "ARGOCD_APP_NAME": "shop",
           "ARGOCD_APP_PARAMETERS": json.dumps([{"name": "services", "array": ["api=api:2"]}])}  # fmt: skip
    out = repo.cli("cmp", "generate", cwd=repo.root, env=env)
    assert out.returncode == 0, out.stderr
    assert "name: api-pr-1" in out.stdout
    assert loads == [("WorktreeSource", None)]
    assert repo.cli("cmp", "params", cwd=repo.root).returncode == 0
    assert len(loads) == 2
