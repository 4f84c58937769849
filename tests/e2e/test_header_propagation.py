"""Header propagation is checked (issue 44, point 7): on a header-routed lane (gateway-api, istio) each service
that passes the lane's requests on toward a dev version must forward `baggage`; devlane looks for evidence
(OpenTelemetry auto-instrumentation, OTEL_PROPAGATORS with baggage, kardinal.dev.service/propagates) and names
each hop without it: a warning (an error under --strict) in render and plan, in the PR comment and the preview.
Kardinal's users lost requests to production where a service did not forward it (kardinal#154)."""

from __future__ import annotations

import json

import pytest
import yaml

pytestmark = pytest.mark.e2e

FLOW = ["--flow", "pr-1", "--service", "api=example.com/api:2", "--routing", "gateway-api"]
SAID = ("Service/web passes the lane's requests on to api (from HTTPRoute/shop), but nothing shows it forwards "
        "the baggage header")


def app(harness, web_pod: dict | None = None, web_service: dict | None = None, extra: list[dict] | None = None):
    pod = {"metadata": {"labels": {"app": "web"}, **(web_pod or {}).get("metadata", {})},
           "spec": {"containers": [{"name": "web", "image": "example.com/web:1",
                                    "env": [{"name": "API_URL", "value": "http://api:80"},
                                            *(web_pod or {}).get("env", [])]}]}}
    docs = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
         "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "annotations": {
            "kardinal.dev.service/dependencies": "api:http", **(web_service or {})}},
         "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
         "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": {"metadata": {"labels": {"app": "api"}},
                  "spec": {"containers": [{"name": "api", "image": "example.com/api:1"}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
         "spec": {"selector": {"app": "api"}, "ports": [{"name": "http", "port": 80}]}},
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
         "metadata": {"name": "shop", "annotations": {"kardinal.dev.service/route": "true"}},
         "spec": {"parentRefs": [{"name": "gateway"}], "hostnames": ["shop.example.com"],
                  "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}},
        *(extra or []),
    ]
    harness.write("app.yaml", "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs))


INJECT = {"metadata": {"annotations": {"instrumentation.opentelemetry.io/inject-java": "true"}}}


@pytest.mark.parametrize(("web_pod", "web_service", "extra", "warned"), [
    (None, None, None, True),
    (INJECT, None, None, False),
    ({"metadata": {"annotations": {"instrumentation.opentelemetry.io/inject-java": "false"}}}, None, None, True),
    (INJECT, None, [{"apiVersion": "opentelemetry.io/v1alpha1", "kind": "Instrumentation",
                     "metadata": {"name": "java"}, "spec": {"propagators": ["tracecontext", "b3"]}}], True),
    ({"env": [{"name": "OTEL_PROPAGATORS", "value": "tracecontext,baggage"}]}, None, None, False),
    ({"env": [{"name": "OTEL_PROPAGATORS", "value": "tracecontext"}]}, None, None, True),
    (None, {"kardinal.dev.service/propagates": "true"}, None, False),
    (None, {"kardinal.dev.service/propagates": "false"}, None, True),
])  # fmt: skip
def test_each_hop_without_evidence_is_named_in_render_and_plan(harness, web_pod, web_service, extra, warned):
    app(harness, web_pod, web_service, extra)
    done = harness.cli("render", *FLOW, "--out", harness.tmp / "out")
    assert done.returncode == 0, done.stderr
    assert (SAID in done.stderr) == warned, done.stderr
    plan = harness.cli("plan", *FLOW)
    assert plan.returncode == 0 and (SAID in plan.stdout + plan.stderr) == warned
    strict = harness.cli("render", *FLOW, "--out", harness.tmp / "strict", "--strict")
    assert (strict.returncode == 1 and f"devlane: error: Service/web: header routing: {SAID}" in strict.stderr) \
        == warned, strict.stderr


def test_the_pr_comment_and_the_preview_name_the_hop(harness):
    app(harness)
    harness.commit("base")
    markdown = harness.cli("diff", "--base", "HEAD", "--head", "HEAD", *FLOW, "-o", "markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert "**Header propagation: no sign these services forward the header**" in markdown.stdout
    assert f"- {SAID}" in markdown.stdout
    text = harness.cli("preview", *FLOW)
    flat = " ".join(text.stdout.replace("│", " ").split())  # the terminal tree wraps long lines
    assert text.returncode == 0 and "no sign it forwards the header:" in flat
    assert "Service/web passes the lane's" in flat
    page = harness.tmp / "preview.html"
    html = harness.cli("preview", *FLOW, "--html", page)
    assert html.returncode == 0, html.stderr
    assert 'class="unpropagated"' in page.read_text() and "Service/web passes the lane&#x27;s requests" in \
        page.read_text()


def test_the_config_can_vouch_for_a_chart_it_does_not_own(harness):
    app(harness)
    harness.config({"services": {"web": {"propagates": True}}})
    done = harness.cli("render", *FLOW, "--out", harness.tmp / "out", "--strict")
    assert done.returncode == 0 and SAID not in done.stderr, done.stderr
    meta = json.loads((harness.tmp / "out" / "flows" / "pr-1" / "flow.metadata").read_text())
    assert meta["mesh"]["unpropagated"] == []


def test_routing_none_has_no_header_to_forward(harness):
    app(harness)
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=example.com/api:2", "--out", harness.tmp / "o")
    assert done.returncode == 0 and "header routing" not in done.stderr
