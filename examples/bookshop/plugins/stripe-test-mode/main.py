"""stripe-test-mode: a Kardinal-contract external plugin for services that call Stripe.

In a flow, the dev version of a service must not charge real cards. This plugin points the
``STRIPE_API_KEY`` variable of ``containers[0]`` (the container devlane targets; devlane moves
it to index 0 before the call) at a Secret holding a Stripe *test-mode* key:
``valueFrom.secretKeyRef = {name: secret_name, key: secret_key}``. The entry is replaced in
place (a plain ``value`` is dropped) or appended when missing. It never calls the network.
"""

from __future__ import annotations

import copy
import re
from typing import Any

ENV_NAME = "STRIPE_API_KEY"

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def _use_test_key(pod_spec: dict[str, Any], secret_name: str, secret_key: str) -> dict[str, Any]:
    spec = copy.deepcopy(pod_spec)
    containers = spec.get("containers") or []
    if not containers:
        raise ValueError("stripe-test-mode: the pod spec has no containers")
    env = containers[0].setdefault("env", [])
    entry = {"name": ENV_NAME, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": secret_key}}}
    for i, item in enumerate(env):
        if item.get("name") == ENV_NAME:
            env[i] = entry
            break
    else:
        env.append(entry)
    return spec


def validate_args(args: dict[str, Any]) -> list[dict[str, str]]:
    """Optional devlane hook: report bad args before any call (empty list: valid)."""
    errors = []
    name = str(args.get("secret_name", "stripe-test"))
    key = str(args.get("secret_key", "api-key"))
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        errors.append({"field": "secret_name", "message": f"{name!r} is not a valid Secret name"})
    if len(key) > 253 or not _SECRET_KEY.match(key):
        errors.append({"field": "secret_key", "message": f"{key!r} is not a valid Secret key"})
    return errors


def create_flow(
    service_specs: list[dict[str, Any]],
    pod_specs: list[dict[str, Any]],
    flow_uuid: str,
    secret_name: str = "stripe-test",
    secret_key: str = "api-key",
) -> dict[str, Any]:
    """Return the pod specs (same count and order) using the test-mode key."""
    return {
        "pod_specs": [_use_test_key(p, secret_name, secret_key) for p in pod_specs],
        "config_map": {"secret": secret_name},
    }


def delete_flow(config_map: dict[str, Any], flow_uuid: str) -> None:
    """Nothing to clean up: the test-mode Secret is managed outside the flow."""
    return None
