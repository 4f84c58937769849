"""`devlane render --validate strict`: core kinds against Kubernetes' schemas, custom resources against the
CRDs in the repository or in --crds, and custom resources without a CRD reported as unchecked."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import CRDS, EXAMPLE, app_yaml, run_cli, standin_flags

FLOW = ["--flow", "pr-1", "--service", "api=api:2"]
WIDGET_CRD = textwrap.dedent("""
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.example.com}
    spec:
      group: example.com
      names: {kind: Widget, plural: widgets}
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  required: [size]
                  properties: {size: {type: integer}}
""")
WIDGET_PLUGIN = textwrap.dedent("""
    def create_flow(service_specs, pod_specs, flow_uuid, size):
        size = int(size) if size.isdigit() else size
        widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": size}}
        return {"pod_specs": pod_specs, "config_map": {}, "resources": [widget]}
""")


def _repo(tmp_path, containers=None, size: str | None = None, crd_in_repo: bool = False):
    repo = tmp_path / "repo"
    repo.mkdir()
    text = app_yaml("api", "widget" if size else None, containers)
    if size:
        text += textwrap.dedent(f"""
            apiVersion: v1
            kind: Service
            metadata:
              name: widget-def
              annotations:
                kardinal.dev.service/plugin-definition: |
                  - name: ./plugins/widget
                    type: external
                    servicename: widget
                    args: {json.dumps({"size": size})}
        """)
        (repo / "plugins" / "widget").mkdir(parents=True)
        (repo / "plugins" / "widget" / "main.py").write_text(WIDGET_PLUGIN)
    (repo / "app.yaml").write_text(text)
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "widget.yaml").write_text(WIDGET_CRD)
    if crd_in_repo:
        (repo / "crd.yaml").write_text(WIDGET_CRD)
    return repo, crds


def test_bookshop_validates_strictly(tmp_path):
    out = run_cli("render", str(EXAMPLE), "--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7",
                  "--out", str(tmp_path), "--validate", "strict", "--kube-version", "1.31")
    assert out.returncode == 0, out.stderr
    assert "validated 9 objects against Kubernetes 1.31 (strict)" in out.stderr


def test_an_unknown_field_fails_naming_object_and_path_and_nothing_is_written(tmp_path):
    repo, _ = _repo(tmp_path, containers=[{"name": "main", "image": "api:1", "bogus": 1}])
    out = run_cli("render", str(repo), *FLOW, "--out", str(tmp_path / "out"), "--validate", "strict")
    assert out.returncode == 1
    assert "flows/pr-1/deployment-api-pr-1.yaml, Deployment/api-pr-1" in out.stderr
    assert "spec.template.spec.containers[0]" in out.stderr and "bogus" in out.stderr
    assert not (tmp_path / "out" / "flows" / "pr-1").exists()
    plain = run_cli("render", str(repo), *FLOW, "--stdout")  # without the gate the same render passes
    assert plain.returncode == 0, plain.stderr


def test_custom_resources_are_checked_against_crds_from_the_flag_or_the_repo(tmp_path):
    repo, crds = _repo(tmp_path, size="3")
    ok = run_cli("render", str(repo), *FLOW, "--stdout", "--validate", "strict", "--crds", str(crds))
    assert ok.returncode == 0, ok.stderr
    assert "unchecked" not in ok.stderr
    unchecked = run_cli("render", str(repo), *FLOW, "--stdout", "--validate", "strict")
    assert unchecked.returncode == 0
    assert "no CRD for Widget/w: not validated (unchecked)" in unchecked.stderr


def test_an_invalid_custom_resource_fails_with_its_field_path(tmp_path):
    repo, crds = _repo(tmp_path, size="big", crd_in_repo=True)
    for extra in ([], ["--crds", str(crds)]):
        out = run_cli("render", str(repo), *FLOW, "--stdout", "--validate", "strict", *extra)
        assert out.returncode == 1
        assert "Widget/w: spec.size: 'big' is not of type 'integer'" in out.stderr
        assert out.stdout == ""


def test_unknown_kube_version_is_a_usage_error(tmp_path):
    repo, _ = _repo(tmp_path)
    out = run_cli("render", str(repo), *FLOW, "--stdout", "--validate", "strict", "--kube-version", "9.99")
    assert out.returncode == 2 and "--kube-version 9.99" in out.stderr


def test_gateway_api_httproute_against_the_upstream_crds(demo_repo):
    if not CRDS.exists():
        pytest.skip("upstream CRDs not available (../shared/crds)")
    repo = demo_repo("new-obd__release__obd-kardinal.yaml")
    flags = ["--flow", "pr-3", "--service", "frontend=x/frontend:3", "--stdout", "--validate", "strict",
             *standin_flags()]
    checked = run_cli("render", str(repo), *flags, "--crds", str(CRDS / "gateway-api"))
    assert checked.returncode == 0, checked.stderr
    assert "kind: HTTPRoute" in checked.stdout and "unchecked" not in checked.stderr
    unchecked = run_cli("render", str(repo), *flags)
    assert unchecked.returncode == 0 and "HTTPRoute/" in unchecked.stderr and "(unchecked)" in unchecked.stderr
