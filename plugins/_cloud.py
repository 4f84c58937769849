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

What every built-in shares (results, refusals, `set_env`, names) is in `plugins/_common.py`, which this module
builds on; a built-in copied out of devlane must take both along.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from plugins import _common
from plugins._common import Json, Refused, clean_name, key_needs_secret, set_env, stable_hash

DIGEST_LENGTH = 8
ENV_ARGS = ("host_env", "port_env", "name_env", "user_env", "password_env")  # each names one app variable


# --------------------------------------------------------------------------------------------------
# Names


def stable_name(readable: str, scope: Iterable[str], limit: int) -> str:
    """`<readable prefix>-<hash8>`: lowercase letters, digits and single hyphens, starting with a letter, at most
    `limit` characters. The hash covers `scope` (what makes the name unique in the cloud: project or server,
    source, flow) in full, so truncating the readable part never makes two flows collide."""
    prefix = clean_name(readable, "a-z0-9")
    if not prefix[:1].isalpha():
        prefix = f"dl-{prefix}".rstrip("-")
    prefix = prefix[: limit - DIGEST_LENGTH - 1].rstrip("-")
    return f"{prefix}-{stable_hash(*scope, length=DIGEST_LENGTH)}"


# --------------------------------------------------------------------------------------------------
# Pod-spec edits


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
    return out + key_needs_secret(args, "password_secret_key", "password_secret")


def kardinal_functions(arg_names: tuple[str, ...], create: Callable[[list[Json], str, dict[str, str]], Json],
                       validate: Callable[[Mapping[str, Any]], list[Json]],
                       undo: str) -> tuple[Callable[..., Any], ...]:
    """The plugin's `validate_args`, `create_flow` and `delete_flow`, create_flow advertising every arg
    (`_common.kardinal_functions`) and answering a `Refused` with its error."""

    def validate_args(args: dict[str, Any]) -> list[Json]:
        """Checks beyond argsSchema (which devlane applies first); an empty list means valid."""
        return validate(args)

    def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str, **args: str) -> Json:
        """The dependents' pod specs wired to the flow's copy (same count and order), its objects."""
        try:
            return create(copy.deepcopy(pod_specs), flow_uuid, {k: v for k, v in args.items() if v is not None})
        except Refused as refused:
            return refused.answer(pod_specs)

    def delete_flow(config_map: Json, flow_uuid: str) -> None:
        return None

    delete_flow.__doc__ = undo
    return _common.kardinal_functions(arg_names, validate_args, create_flow, delete_flow)
