"""What the built-ins that wire dev pods to an outside service share (neon-branch, stripe).

Such a plugin adds objects for the flow (a Job, an ExternalSecret, a fake's Deployment) and points its
dependents' target container (`containers[0]`, which devlane moves to the front) at them through env:
set by name (replaced in place, never appended twice) and, for anything secret, only as a Secret
reference (`valueFrom.secretKeyRef`). Names of added objects carry the flow (they end with the
`flow_uuid` devlane passes, `<servicename>-<flowId>`) and stay DNS labels of at most 63 characters,
shortened with a stable hash when needed. Nothing here reads the clock, draws random numbers or calls a
network. Built-ins run inside devlane's process as modules of the `plugins` package, which is what lets
them share this file; a built-in copied out of devlane must take it along.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from typing import Any

Json = dict[str, Any]

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
SECRET_KEY = re.compile(r"(?=.{1,253}\Z)[-._a-zA-Z0-9]+\Z")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
IMAGE_DIGEST = re.compile(r"[^@\s]+@sha256:[0-9a-f]{64}\Z")
MAX_NAME = 63  # a DNS label: Services, and the names this module makes for every kind
MANAGED = {"app.kubernetes.io/managed-by": "devlane"}


def result(message: str, severity: str = "error", hint: str | None = None) -> Json:
    """A Kardinal `results` entry; the hint is shown under the message."""
    out: Json = {"severity": severity, "message": message}
    if hint:
        out["tags"] = {"devlane.dev/hint": hint}
    return out


class Refused(Exception):
    """An input the plugin cannot serve; create_flow answers with this error result."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.result = result(message, "error", hint)


def flow_name(prefix: str, flow_uuid: str, limit: int = MAX_NAME) -> str:
    """`<prefix>-<flow_uuid>`, or, when longer than `limit`, `<prefix>-<hash8>-<tail of flow_uuid>`: still
    ending with the flow id (at most 40 characters), the same for the same inputs, different per instance."""
    name = f"{prefix}-{flow_uuid}"
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    head = f"{prefix}-{digest}-"
    return head + flow_uuid[len(flow_uuid) - (limit - len(head)):].lstrip("-.")


def secret_ref(name: str, key: str) -> Json:
    return {"valueFrom": {"secretKeyRef": {"name": name, "key": key}}}


def env_value(container: Json, name: str) -> Json | None:
    """The container's first env entry named `name`, if any."""
    return next((e for e in container.get("env") or [] if e.get("name") == name), None)


def set_env(container: Json, name: str, entry: Json) -> None:
    """Set `name` in place (its first entry), dropping its duplicates; appended when missing."""
    entry = {"name": name, **entry}
    env = list(container.get("env") or [])
    at = next((i for i, e in enumerate(env) if e.get("name") == name), None)
    if at is None:
        env.append(entry)
    else:
        env = [*env[:at], entry, *[e for e in env[at + 1:] if e.get("name") != name]]
    container["env"] = env


def wire(pod_specs: list[Json], env: Mapping[str, Json]) -> list[Json]:
    """Each pod spec (same count and order) with `env` set by name on its target container."""
    out = []
    for i, pod_spec in enumerate(pod_specs):
        spec = copy.deepcopy(pod_spec)
        containers = spec.get("containers") or []
        if not containers:
            raise Refused(f"pod spec #{i + 1} has no containers")
        for name, entry in env.items():
            set_env(containers[0], name, entry)
        out.append(spec)
    return out


def restricted_container() -> Json:
    """A container securityContext that passes the Pod Security Standards *restricted* profile."""
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]}}


def restricted_pod(user: int = 65532) -> Json:
    """A pod securityContext for an image that need not run as root (a fixed non-root uid)."""
    return {"runAsNonRoot": True, "runAsUser": user, "runAsGroup": user, "seccompProfile": {"type": "RuntimeDefault"}}
