"""`devlane render --validate strict` in-process: an unknown field of a core kind fails naming the object and the
field path and nothing is written, custom resources are checked against CRDs from `--crds` or the repository
(or reported as unchecked), and an unknown `--kube-version` is a usage error.

The custom resource comes from a plugin served as a built-in (resolved by plain name, run in-process); the
operator's policy file ($DEVLANE_POLICY) lets it add that kind (`policy.plugins.widget.kinds`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from support import Harness

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
        widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": f"w-{flow_uuid}"},
                  "spec": {"size": size}}
        return {"pod_specs": pod_specs, "config_map": {}, "resources": [widget]}
""")


def widget_repo(harness: Harness, containers: list[dict] | None = None, size: str | None = None,
                crd_in_repo: bool = False) -> Path:  # fmt: skip
    """Service `api`; with `size`, it uses plugin `widget` (a built-in here), which adds a Widget of that size.
    Returns a directory holding the Widget CRD (also put in the repository with `crd_in_repo`)."""
    harness.app("api", "widget" if size else None, containers)
    if size:
        harness.plugin_definition({"name": "widget", "type": "external", "servicename": "widget",
                                   "args": {"size": size}}, name="widget-def")  # fmt: skip
        harness.builtin("widget", WIDGET_PLUGIN)
        policy = harness.tmp / "policy.yaml"  # the operator's: a Widget is not a default kind
        policy.write_text("apiVersion: devlane.dev/v1alpha1\nkind: Config\n"
                          "policy: {plugins: {widget: {kinds: [example.com/Widget]}}}\n")
        harness.monkeypatch.setenv("DEVLANE_POLICY", str(policy))
    crds = harness.tmp / "crds"
    crds.mkdir()
    (crds / "widget.yaml").write_text(WIDGET_CRD)
    if crd_in_repo:
        harness.write("crd.yaml", WIDGET_CRD)
    return crds


def test_an_unknown_field_fails_naming_object_and_path_and_nothing_is_written(harness):
    widget_repo(harness, containers=[{"name": "main", "image": "api:1", "bogus": 1}])
    out = harness.cli("render", *FLOW, "--out", harness.tmp / "out", "--validate", "strict")
    assert out.returncode == 1
    assert "flows/pr-1/deployment-api-pr-1.yaml, Deployment/api-pr-1" in out.stderr
    assert "spec.template.spec.containers[0]" in out.stderr and "bogus" in out.stderr
    assert not (harness.tmp / "out" / "flows" / "pr-1").exists()
    plain = harness.cli("render", *FLOW, "--stdout")  # without the gate the same render passes
    assert plain.returncode == 0, plain.stderr
    assert "bogus: 1" in plain.stdout


def test_custom_resources_are_checked_against_crds_from_the_flag_or_the_repo(harness):
    crds = widget_repo(harness, size="3")
    ok = harness.cli("render", *FLOW, "--stdout", "--validate", "strict", "--crds", crds)
    assert ok.returncode == 0, ok.stderr
    assert "kind: Widget" in ok.stdout and "size: 3" in ok.stdout
    assert "unchecked" not in ok.stderr
    unchecked = harness.cli("render", *FLOW, "--stdout", "--validate", "strict")
    assert unchecked.returncode == 0, unchecked.stderr
    assert "no CRD for Widget/w-widget-pr-1: not validated (unchecked)" in unchecked.stderr
    harness.write("crd.yaml", WIDGET_CRD)  # a CRD in the repository counts as well
    in_repo = harness.cli("render", *FLOW, "--stdout", "--validate", "strict")
    assert in_repo.returncode == 0, in_repo.stderr
    assert "unchecked" not in in_repo.stderr


def test_an_invalid_custom_resource_fails_with_its_field_path(harness):
    crds = widget_repo(harness, size="big", crd_in_repo=True)
    for extra in ([], ["--crds", crds]):
        out = harness.cli("render", *FLOW, "--stdout", "--validate", "strict", *extra)
        assert out.returncode == 1
        assert "Widget/w-widget-pr-1: spec.size: 'big' is not of type 'integer'" in out.stderr
        assert out.stdout == ""


def test_unknown_kube_version_is_a_usage_error(harness):
    widget_repo(harness)
    out = harness.cli("render", *FLOW, "--stdout", "--validate", "strict", "--kube-version", "9.99")
    assert out.returncode == 2 and "--kube-version 9.99" in out.stderr
    assert out.stdout == ""


def test_without_the_validate_extra_the_error_gives_the_exact_install_command(harness, monkeypatch):
    """A user who installed only `pip install -e .` (the README's first command) and asks for --validate strict
    gets the pip command for this very interpreter and the requirement devlane's metadata states."""
    import sys
    from importlib.metadata import requires

    monkeypatch.setitem(sys.modules, "kubernetes_validate", None)  # `import kubernetes_validate` now fails
    harness.app("api")
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout", "--validate", "strict")
    wanted = next(r.split(";")[0].strip() for r in requires("devlane") if 'extra == "validate"' in r)
    assert out.returncode == 2 and out.stdout == "", out.stderr
    assert f"{sys.executable} -m pip install '{wanted}'" in out.stderr and "Traceback" not in out.stderr
