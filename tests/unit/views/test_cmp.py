"""The Argo CD CMP view's own logic, in-process: Go durations, the parameters (ARGOCD_APP_PARAMETERS JSON or the
flattened PARAM_* variables), the exec-timeout margin, KUBE_API_VERSIONS and the API gate, and the refusal of an
empty result (an empty stream with `prune: true` would delete the whole Application)."""

from __future__ import annotations

import pytest

from renderer import api
from renderer.errors import DevlaneError
from renderer.views import cmp
from renderer.views.cmp import go_duration, parameters, request, served_api_versions, unserved


def test_exec_timeout_budget_is_parsed_as_a_go_duration():
    assert go_duration("90s") == 90 and go_duration("2m") == 120 and go_duration("1m30s") == 90
    assert go_duration("500ms") == 0.5
    assert parameters({"PARAM_FLOW_ID": "pr-1", "PARAM_SERVICES_1": "b=2", "PARAM_SERVICES_0": "a=1"}) == {
        "flow-id": "pr-1",
        "services": ["a=1", "b=2"],
    }


@pytest.mark.parametrize("text", ["soon", "90", "1m30", "90s ago", ""])
def test_a_malformed_duration_is_an_error(text):
    with pytest.raises(DevlaneError, match="is not a duration"):
        go_duration(text)


def test_exec_timeout_leaves_a_margin():
    env = {"ARGOCD_ENV_FLOW_ID": "pr-1", "PARAM_SERVICES_0": "a=b:1"}
    assert request(env).timeout == 85
    assert request({**env, "ARGOCD_EXEC_TIMEOUT": "2m"}).timeout == 115
    assert request({**env, "ARGOCD_EXEC_TIMEOUT": "3s"}).timeout == pytest.approx(2.7)


def test_app_parameters_json_takes_strings_arrays_and_maps():
    assert parameters({"ARGOCD_APP_PARAMETERS": '[{"name": "m", "map": {"a": "1"}}, {"name": "s", "string": "x"}]'}) \
        == {"m": {"a": "1"}, "s": "x"}  # fmt: skip
    # the JSON wins over the flattened variables
    both = {"ARGOCD_APP_PARAMETERS": '[{"name": "services", "array": ["a=1"]}]', "PARAM_SERVICES_0": "nosuch=img:1"}
    assert parameters(both) == {"services": ["a=1"]}


def test_kube_api_versions_and_the_gate():
    assert served_api_versions({}) is None and served_api_versions({"KUBE_API_VERSIONS": " "}) is None
    assert served_api_versions({"KUBE_API_VERSIONS": "v1, apps/v1,,apps/v1/Deployment"}) == {
        "v1",
        "apps/v1",
        "apps/v1/Deployment",
    }
    crd = {"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
           "spec": {"group": "x.dev", "versions": [{"name": "v1"}]}}  # fmt: skip
    objects = [crd, {"apiVersion": "x.dev/v1", "kind": "Thing"}, {"apiVersion": "y.dev/v1", "kind": "Other"}]
    assert unserved(objects, {"apiextensions.k8s.io/v1"}) == ["y.dev/v1 Other"]
    assert unserved([{"apiVersion": "apps/v1", "kind": "Deployment"}], {"apps/v1/Deployment"}) == []


def test_an_empty_result_is_an_error(harness, monkeypatch):
    """A render that yields no objects must never reach Argo CD as an empty stream (prune would delete all)."""
    harness.app("orders")
    real = api.render_in

    def empty(session, flow):
        result = real(session, flow)
        for f in result.flows:
            f.files.clear()
        return result

    env = {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": "orders=ghcr.io/acme/orders:pr-7"}
    stream, _ = cmp.generate(harness.root, env)
    assert "name: orders-pr-7" in stream  # the real render is not empty
    monkeypatch.setattr(api, "render_in", empty)
    with pytest.raises(DevlaneError, match="refusing an empty result"):
        cmp.generate(harness.root, env)
