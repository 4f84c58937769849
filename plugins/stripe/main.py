"""stripe: a flow's dev pods talk to Stripe in test mode, or to an in-cluster stripe-mock; never in live mode.

Why: a pull request's dev version must not be able to charge a real card, and an API key must never be
written into git. Two modes, both plain objects that Argo CD or Flux apply (no API call during render):

- `test-key` (default): an External Secrets Operator `ExternalSecret` (external-secrets.io/v1) copies a
  test-mode key from the user's secret store into Secret `stripe-<flow_uuid>`; its template refuses, in the
  cluster, any value that does not start with sk_test_ or rk_test_. The dependents' target container reads
  it by secretKeyRef (`env_var`, default STRIPE_SECRET_KEY). `secret_name` instead references a Secret that
  already exists (what the bookshop example's stripe-test-mode plugin did).
- `mock`: a Deployment and a Service running stripe/stripe-mock (stateless, canned responses); the
  dependents get `STRIPE_API_BASE=http://stripe-mock-<flow_uuid>:12111` and stripe-mock's documented dummy
  key `sk_test_123`, which is public knowledge, not a secret.

`validate_args` refuses any arg that looks like a live key (sk_live_, rk_live_, pk_live_) and any literal
test key (sk_test_, rk_test_): keys come from the store, never from the plugin definition. It never echoes
the value it refuses.
"""

from __future__ import annotations

import re
from typing import Any

from plugins._common import (
    DNS_SUBDOMAIN,
    SECRET_KEY,
    Json,
    Refused,
    env_name_findings,
    flow_name,
    key_needs_secret,
    restricted_container,
    restricted_pod,
    secret_ref,
    wire,
)

MODES = ("test-key", "mock")
SECRET_DATA_KEY = "STRIPE_SECRET_KEY"  # the key of the flow's Secret that the ExternalSecret writes
FETCHED = "stripe_key"  # the fetched value's name inside the ExternalSecret's template
DEFAULT_ENV, DEFAULT_BASE_ENV = "STRIPE_SECRET_KEY", "STRIPE_API_BASE"
DEFAULT_STORE_KIND, DEFAULT_REFRESH = "SecretStore", "1h"
# stripe/stripe-mock's release v0.197.0 (commit 4374003d): goreleaser publishes stripe/stripe-mock:<tag>.
MOCK_IMAGE = "stripe/stripe-mock:v0.197.0"
MOCK_PORT = 12111  # the image's ENTRYPOINT: -http-port 12111 -https-port 12112
MOCK_KEY = "sk_test_123"  # the key stripe-mock's README uses; it accepts any sk_test_ key
RUN_AS = 65534  # stripe-mock needs no root: its ports are above 1024 and it writes no file
LIVE_KEY = re.compile(r"(sk|rk|pk)_live_", re.IGNORECASE)
TEST_KEY = re.compile(r"\s*(sk|rk)_test_", re.IGNORECASE)
DURATION = re.compile(r"([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+\Z")
STORE_ARGS = ("secret_store", "secret_store_kind", "remote_key", "remote_property", "refresh_interval")
SECRET_ARGS = ("secret_name", "secret_key")
MOCK_ARGS = ("image", "api_base_env")
# ESO's template engine v2 has sprig's hasPrefix and fail: a live key in the store fails the sync in the cluster.
GUARD = (f'{{{{ if or (hasPrefix "sk_test_" .{FETCHED}) (hasPrefix "rk_test_" .{FETCHED}) }}}}{{{{ .{FETCHED} }}}}'
         '{{ else }}{{ fail "devlane stripe: the store holds no Stripe test-mode key (sk_test_ or rk_test_)" }}'
         "{{ end }}")


# --------------------------------------------------------------------------------------------------
# Args


def _key_findings(args: dict[str, Any]) -> list[Json]:
    """Every arg whose value looks like a Stripe key; the value itself is never repeated."""
    out = []
    for name, value in sorted(args.items()):
        text = str(value)
        if LIVE_KEY.search(text):
            out.append({"field": name, "message": "looks like a live Stripe key (sk_live_, rk_live_ or pk_live_): "
                        "a dev flow never gets a live key, so it can never charge a real card; remove it from the "
                        "plugin definition and revoke it if it was committed (Stripe dashboard, API keys)"})
        elif TEST_KEY.match(text):
            out.append({"field": name, "message": "is a literal Stripe test key: devlane never writes API keys into "
                        "the manifests; put it in your secret store and name it with secret_store and remote_key "
                        "(or use mode: mock)"})
    return out


def validate_args(args: dict[str, Any]) -> list[Json]:
    """Checks beyond argsSchema (which devlane applies first); an empty list means valid."""
    out = _key_findings(args)
    flagged = {f["field"] for f in out}

    def bad(name: str, message: str) -> None:
        if name not in flagged:
            out.append({"field": name, "message": message})

    given = {k for k, v in args.items() if v not in (None, "")}
    mode = args.get("mode") or "test-key"
    for name in sorted(given & {"secret_store", "secret_name"}):
        if not DNS_SUBDOMAIN.match(str(args[name])):
            bad(name, "is not a Kubernetes object name (lowercase letters, digits, '-' and '.')")
    if "secret_key" in given and not SECRET_KEY.match(str(args["secret_key"])):
        bad("secret_key", "is not a Secret key (letters, digits, '-', '_' and '.')")
    for finding in env_name_findings(args, ("env_var", "api_base_env")):
        bad(finding["field"], finding["message"])
    if "refresh_interval" in given and not DURATION.match(str(args["refresh_interval"])):
        bad("refresh_interval", "is not a duration (e.g. 1h, 15m, 1h30m)")
    if mode == "mock":
        for name in sorted(given & {*STORE_ARGS, *SECRET_ARGS}):
            bad(name, "applies to mode test-key only; mode mock needs no key (stripe-mock takes any sk_test_ key)")
        return out
    for name in sorted(given & set(MOCK_ARGS)):
        bad(name, "applies to mode mock only")
    if "secret_name" in given:
        for name in sorted(given & set(STORE_ARGS)):
            bad(name, "set secret_name (a Secret that exists) or secret_store and remote_key (an ExternalSecret), "
                      "not both")
    else:
        for finding in key_needs_secret(args, "secret_key", "secret_name"):
            bad(finding["field"], finding["message"])
        for name in ("secret_store", "remote_key"):
            if name not in given:
                bad(name, "is required in mode test-key: the store (secret_store, secret_store_kind) and the key "
                          "in it (remote_key, remote_property) that hold a Stripe test-mode key; or set "
                          "secret_name, or mode: mock")
    return out


# --------------------------------------------------------------------------------------------------
# Objects


def _external_secret(name: str, store: str, kind: str, key: str, prop: str, refresh: str) -> Json:
    remote = {"key": key, **({"property": prop} if prop else {})}
    return {"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": {"name": name},
            "spec": {"refreshInterval": refresh, "secretStoreRef": {"kind": kind, "name": store},
                     "target": {"name": name, "creationPolicy": "Owner", "deletionPolicy": "Delete",
                                "template": {"engineVersion": "v2", "data": {SECRET_DATA_KEY: GUARD}}},
                     "data": [{"secretKey": FETCHED, "remoteRef": remote}]}}


def _mock(name: str, image: str) -> list[Json]:
    labels = {"app.kubernetes.io/name": "stripe-mock", "devlane.dev/stripe-mock": name}
    container = {"name": "stripe-mock", "image": image,
                 "ports": [{"name": "http", "containerPort": MOCK_PORT}],
                 "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 5},
                 "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}},
                 "securityContext": restricted_container()}
    pod = {"automountServiceAccountToken": False, "securityContext": restricted_pod(RUN_AS),
           "containers": [container]}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": pod}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
         "spec": {"selector": labels, "ports": [{"name": "http", "port": MOCK_PORT, "targetPort": "http"}]}},
    ]


def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str, mode: str = "",
                secret_store: str = "", secret_store_kind: str = "", remote_key: str = "", remote_property: str = "",
                refresh_interval: str = "", secret_name: str = "", secret_key: str = "", env_var: str = "",
                image: str = "", api_base_env: str = "") -> Json:
    """The dependents wired to a test-mode key (from an ExternalSecret or a Secret) or to a stripe-mock."""
    env_name = env_var or DEFAULT_ENV
    resources: list[Json] = []
    try:
        if (mode or "test-key") == "mock":
            name = flow_name("stripe-mock", flow_uuid)
            resources = _mock(name, image or MOCK_IMAGE)
            base = f"http://{name}:{MOCK_PORT}"
            env = {env_name: {"value": MOCK_KEY}, (api_base_env or DEFAULT_BASE_ENV): {"value": base}}
            state: Json = {"mode": "mock", "service": name, "apiBase": base}
        elif secret_name:
            env = {env_name: secret_ref(secret_name, secret_key or SECRET_DATA_KEY)}
            state = {"mode": "test-key", "secret": secret_name}
        else:
            name = flow_name("stripe", flow_uuid)
            resources = [_external_secret(name, secret_store, secret_store_kind or DEFAULT_STORE_KIND, remote_key,
                                          remote_property, refresh_interval or DEFAULT_REFRESH)]
            env = {env_name: secret_ref(name, SECRET_DATA_KEY)}
            state = {"mode": "test-key", "externalSecret": name, "secret": name}
        specs = wire(pod_specs, env)
    except Refused as refused:
        return refused.answer(pod_specs)
    return {"pod_specs": specs, "config_map": state, "resources": resources}


def delete_flow(config_map: Json, flow_uuid: str) -> None:
    """Nothing to undo: the ExternalSecret (and the Secret it owns) or the stripe-mock are pruned with the flow."""
    return None
