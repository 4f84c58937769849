"""What the managed-database built-ins (cloud-sql, azure-sql) share: a per-flow copy of a cloud database,
declared as a controller-backed custom resource, and the dependents' dev pods pointed at it.

These are external plugins: attached to a Service that stands for the cloud database, they edit the dev pod
specs of the services that use it (`kardinal.dev.service/plugins`) and add the custom resources a controller
in the cluster (Config Connector, Azure Service Operator) turns into the copy. Render makes no API call, so:

- the copy's cloud name is derived offline, deterministically: a readable prefix from the flow plus a stable
  hash of everything that scopes it (`stable_name`); no clock, no randomness;
- what the app needs (host, connection name, database, user) is computed from those names and set as plain
  env, replaced by name in the target container (`set_env`), never appended twice;
- passwords only by reference (`valueFrom.secretKeyRef`); nothing here reads or writes a password value.

Built-ins run inside devlane's process as modules of the `plugins` package, which is what lets them share
this file; a built-in copied out of devlane must take it along.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Json = dict[str, Any]

DIGEST_LENGTH = 8
SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+\Z")
ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*\Z")
ENV_ARGS = ("host_env", "port_env", "name_env", "user_env", "password_env")  # each names one app variable


class Refused(Exception):
    """An input the plugin cannot turn into a flow copy; create_flow answers with this error result."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.result = result(message, "error", hint)


def result(message: str, severity: str = "error", hint: str | None = None) -> Json:
    """A Kardinal `results` entry; the hint is shown under the message."""
    out: Json = {"severity": severity, "message": message}
    if hint:
        out["tags"] = {"devlane.dev/hint": hint}
    return out


# --------------------------------------------------------------------------------------------------
# Names


def digest(*parts: str) -> str:
    """A short stable hash of `parts` (joined unambiguously)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:DIGEST_LENGTH]


def stable_name(readable: str, scope: Iterable[str], limit: int) -> str:
    """`<readable prefix>-<hash8>`: lowercase letters, digits and single hyphens, starting with a letter, at most
    `limit` characters. The hash covers `scope` (what makes the name unique in the cloud: project or server,
    source, flow) in full, so truncating the readable part never makes two flows collide."""
    prefix = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", readable.lower())).strip("-")
    if not prefix[:1].isalpha():
        prefix = f"dl-{prefix}".rstrip("-")
    prefix = prefix[: limit - DIGEST_LENGTH - 1].rstrip("-")
    return f"{prefix}-{digest(*scope)}"


# --------------------------------------------------------------------------------------------------
# Pod-spec edits


def secret_ref(name: str, key: str) -> Json:
    return {"valueFrom": {"secretKeyRef": {"name": name, "key": key}}}


def set_env(container: Json, name: str, entry: Json) -> None:
    """Set env `name` to `entry` ({value} or {valueFrom}) in place of its first entry (dropping duplicates), or
    append it: the kubelet lets the last duplicate win, so an appended twin would be a trap."""
    entry = {"name": name, **entry}
    env = container.get("env") or []
    at = next((i for i, e in enumerate(env) if e.get("name") == name), None)
    if at is None:
        container["env"] = [*env, entry]
    else:
        container["env"] = [*env[:at], entry, *(e for e in env[at + 1:] if e.get("name") != name)]


def wire_env(container: Json, args: Mapping[str, str], values: Mapping[str, str], password: Json) -> None:
    """The app's connection env: each `<x>_env` arg names a variable (empty: leave it alone); host, port, name
    and user get the computed plain `values`, the password its Secret reference."""
    for arg in ENV_ARGS:
        name = args.get(arg)
        if name:
            set_env(container, name, password if arg == "password_env" else {"value": values[arg]})


def replace_env_values(spec: Json, old: str, new: str) -> list[str]:
    """Replace env values equal to `old` (the source's address) by `new` in every container; the names changed."""
    changed = []
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            for e in c.get("env") or []:
                if "value" in e and e["value"] == old:
                    e["value"] = new
                    changed.append(f"{c.get('name')}.{e.get('name')}")
    return changed


def target_container(spec: Json, index: int) -> Json:
    containers = spec.get("containers") or []
    if not containers:
        raise Refused(f"pod spec #{index + 1} has no containers")
    return containers[0]


# --------------------------------------------------------------------------------------------------
# Args


def defaults(args: Mapping[str, Any], default: Mapping[str, str]) -> dict[str, str]:
    """The args with their defaults; an empty string keeps meaning "not set" (as Kardinal passes strings),
    except for the `*_env` args, where it means "leave that variable alone"."""
    out = dict(default)
    out.update({k: str(v) for k, v in args.items() if v not in (None, "") or k in ENV_ARGS})
    return out


def check_common(args: Mapping[str, Any], default: Mapping[str, str]) -> list[Json]:
    """Checks beyond argsSchema shared by both plugins: env names distinct, a Secret key only with a Secret."""
    out: list[Json] = []
    merged = defaults(args, default)
    seen: dict[str, str] = {}
    for arg in ENV_ARGS:
        name = merged.get(arg)
        if name and name in seen:
            out.append({"field": arg, "message": f"names the same variable as {seen[name]} ({name}); each value the "
                                                 "app reads needs its own variable"})
        elif name:
            seen[name] = arg
    if args.get("password_secret_key") and not args.get("password_secret"):
        out.append({"field": "password_secret_key", "message": "names a key of no Secret; set password_secret too"})
    return out


def kardinal_functions(arg_names: tuple[str, ...], create: Callable[[list[Json], str, dict[str, str]], Json],
                       validate: Callable[[Mapping[str, Any]], list[Json]],
                       undo: str) -> tuple[Callable[..., Any], ...]:
    """The plugin's `validate_args`, `create_flow` and `delete_flow`. Kardinal binds args by name from a
    function's signature (never through **kwargs), so create_flow advertises every arg (`__signature__`)."""

    def validate_args(args: dict[str, Any]) -> list[Json]:
        return validate(args)

    def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str, **args: str) -> Json:
        try:
            return create(copy.deepcopy(pod_specs), flow_uuid, {k: v for k, v in args.items() if v is not None})
        except Refused as refused:
            return {"pod_specs": pod_specs, "config_map": {}, "results": [refused.result]}

    def delete_flow(config_map: Json, flow_uuid: str) -> None:
        return None

    validate_args.__doc__ = "Checks beyond argsSchema (which devlane applies first); an empty list means valid."
    create_flow.__doc__ = "The dependents' pod specs wired to the flow's copy (same count and order), its objects."
    delete_flow.__doc__ = undo
    own = [p for p in inspect.signature(create_flow).parameters.values() if p.kind is not p.VAR_KEYWORD]
    extra = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default="", annotation=str)
             for n in arg_names]
    create_flow.__signature__ = inspect.Signature([*own, *extra])  # type: ignore[attr-defined]
    return validate_args, create_flow, delete_flow
