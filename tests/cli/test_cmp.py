"""`devlane cmp generate | params` in-process, run in the Application's path with the environment Argo CD sets,
on the bookshop example without its plugins (no plugin process): parameters, every bad request failing with its
reason on stderr and nothing on stdout, the cluster's API versions gating the stream, and the parameter
announcement. The real bookshop, its plugins and a real cmp-server-like process are in tests/e2e/test_cmp.py."""

from __future__ import annotations

import json
import os

import pytest
from support import EXAMPLE, yamlc

SERVICE = "orders=ghcr.io/acme/bookshop-orders:pr-7"


@pytest.fixture
def shop(harness):
    """The bookshop example with its plugin definitions and `plugins` annotations removed."""
    harness.write(".devlane.yaml", (EXAMPLE / ".devlane.yaml").read_text())
    for path in sorted((EXAMPLE / "k8s").glob("*.yaml")):
        if path.name != "plugins.yaml":
            lines = path.read_text().splitlines(True)
            harness.write(f"k8s/{path.name}", "".join(ln for ln in lines if "kardinal.dev.service/plugins:" not in ln))
    return harness.root


def _generate(harness, app_dir, env: dict):
    """`devlane cmp generate` in `app_dir` with Argo CD's environment plus `env`."""
    argocd = {"PATH": os.environ["PATH"], "HOME": str(app_dir), "ARGOCD_APP_NAME": "bookshop-pr-7",
              "ARGOCD_APP_NAMESPACE": "shop", "ARGOCD_APP_PROJECT_NAME": "default", "ARGOCD_APP_REVISION": "a" * 40,
              "ARGOCD_APP_SOURCE_PATH": "examples/bookshop",
              "ARGOCD_APP_SOURCE_REPO_URL": "https://github.com/acme/bookshop.git"}  # fmt: skip
    return harness.cli("cmp", "generate", cwd=app_dir, env={**argocd, **env})


def _objects(stream: str) -> list[dict]:
    return [d for d in yamlc.safe_load_all(stream) if d]


def test_flattened_param_variables_are_the_fallback(harness, shop):
    out = _generate(harness, shop, {"PARAM_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE})
    assert out.returncode == 0, out.stderr
    assert "name: orders-pr-7" in out.stdout


def test_errors_exit_non_zero_with_nothing_on_stdout(harness, shop):
    out = _generate(harness, shop, {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": "nosuch=img:1"})
    assert out.returncode == 1 and out.stdout == ""
    assert "nosuch" in out.stderr and "Traceback" not in out.stderr
    missing = _generate(harness, shop, {"PARAM_SERVICES_0": SERVICE})
    assert missing.returncode == 1 and missing.stdout == "" and "FLOW_ID" in missing.stderr


def test_app_parameters_json_wins_over_the_flattened_variables(harness, shop):
    params = json.dumps([{"name": "services", "array": [SERVICE]}])
    env = {"ARGOCD_ENV_FLOW_ID": "pr-7", "ARGOCD_APP_PARAMETERS": params, "PARAM_SERVICES_0": "nosuch=img:1"}
    out = _generate(harness, shop, env)
    assert out.returncode == 0, out.stderr
    assert "name: orders-pr-7" in out.stdout


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"ARGOCD_ENV_FLOW_ID": "PR_7", "PARAM_SERVICES_0": SERVICE}, "invalid flow id"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7\n", "PARAM_SERVICES_0": SERVICE}, "invalid flow id"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7"}, "parameter services is empty"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": "orders"}, "expected NAME=IMAGE"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": "orders=ghcr.io/" + "a" * 300 + ":1"},
         "parameter services item for 'orders': the image 'ghcr.io/aaaa"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": "orders=ghcr.io/acme/orders:" + "t" * 129},
         "has a tag of 129 characters; the OCI distribution limit is 128"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7", "ARGOCD_APP_PARAMETERS": "{not json"}, "not JSON"),
        ({"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE, "ARGOCD_EXEC_TIMEOUT": "soon"}, "duration"),
        (
            {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE, "KUBE_API_VERSIONS": "v1,apps/v1"},
            "does not serve networking.k8s.io/v1 Ingress",
        ),
    ],
)
def test_bad_requests_fail_with_the_reason_on_stderr_only(harness, shop, env, needle):
    out = _generate(harness, shop, env)
    assert out.returncode != 0 and out.stdout == ""
    assert needle in out.stderr and "Traceback" not in out.stderr


def test_the_sandbox_is_logged_once_to_stderr(harness, shop):
    """Argo CD keeps the sidecar's stderr: which sandbox confined the render, its binary, each layer."""
    from renderer.host.confine import LAYERS, confinement

    out = _generate(harness, shop, {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE})
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if "plugin sandbox" in ln]
    assert len(lines) == 1 and "plugin sandbox" not in out.stdout
    got = confinement()
    assert f"plugin sandbox {got.method}" in lines[0] and all(name in lines[0] for name in LAYERS)
    assert (f"missing {', '.join(la.name for la in got.missing())}" if got.missing() else "missing none") in lines[0]


def test_a_repository_without_manifests_is_an_error_not_an_empty_stream(harness):
    harness.write(".devlane.yaml", (EXAMPLE / ".devlane.yaml").read_text())
    out = _generate(harness, harness.root, {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE})
    assert out.returncode != 0 and out.stdout == "" and "orders" in out.stderr


def test_cluster_api_versions_gate_the_stream(harness, shop):
    served = "v1,apps/v1,networking.k8s.io/v1"
    out = _generate(harness, shop, {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE,
                                    "KUBE_API_VERSIONS": served})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert ("networking.k8s.io/v1", "Ingress") in {(o["apiVersion"], o["kind"]) for o in _objects(out.stdout)}


def test_params_announces_the_repository_services(harness):
    """On the real bookshop: `cmp params` only reads the repository, no plugin runs."""
    out = harness.cli("cmp", "params", cwd=EXAMPLE)
    assert out.returncode == 0, out.stderr
    announced = {a["name"]: a for a in json.loads(out.stdout)}
    assert announced["flow-id"]["required"] is True
    assert announced["services"]["collectionType"] == "array"
    assert set(announced["repo-services"]["array"]) >= {"web", "catalog", "orders", "orders-db"}
    assert announced["repo-plugins"]["array"] == ["./plugins/stripe-test-mode", "postgres-seed"]


def test_istio_routing_is_refused_with_the_reason_and_the_alternative(harness, shop):
    (shop / ".devlane.yaml").write_text((shop / ".devlane.yaml").read_text().replace("routing: none", "routing: istio"))
    out = _generate(harness, shop, {"PARAM_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE})
    assert out.returncode == 1 and out.stdout == ""
    assert "routing istio cannot be rendered by the Config Management Plugin" in out.stderr
    assert "use routing: gateway-api" in out.stderr
    (shop / ".devlane.yaml").write_text((shop / ".devlane.yaml").read_text().replace("istio", "gateway-api"))
    ok = _generate(harness, shop, {"PARAM_FLOW_ID": "pr-7", "PARAM_SERVICES_0": SERVICE})
    assert ok.returncode == 0, ok.stderr
    assert "kind: HTTPRoute" in ok.stdout
