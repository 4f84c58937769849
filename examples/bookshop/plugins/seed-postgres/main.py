"""seed-postgres: a Kardinal-contract plugin that seeds a flow's dev copy of a Postgres.

It edits the pod spec of the dev Postgres (the official ``postgres`` image) so that, on its
first start with an empty data directory, the image's entrypoint runs ``seed_sql`` from
``/docker-entrypoint-initdb.d``:

* ``containers[0]`` (the container devlane targets; devlane moves it to index 0 before the
  call) gets ``POSTGRES_DB`` / ``POSTGRES_USER`` set from the ``database`` / ``user`` args and
  the ``seed`` volume mounted read-only at ``/docker-entrypoint-initdb.d``;
* an ``emptyDir`` volume ``seed`` is added;
* an init container ``write-seed`` (``busybox:1.36``) writes ``seed_sql`` to
  ``/seed/001-seed.sql``.

No network, no side effects: ``delete_flow`` has nothing to undo.
"""

from __future__ import annotations

import copy
import re
from typing import Any

SEED_VOLUME = "seed"
INIT_DIR = "/docker-entrypoint-initdb.d"
SEED_FILE = "001-seed.sql"
INIT_CONTAINER = "write-seed"
INIT_IMAGE = "busybox:1.36"

_PG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$-]{0,62}$")


def _set_env(container: dict[str, Any], name: str, value: str) -> None:
    """Set env ``name`` to a plain value, replacing an existing entry in place."""
    env = container.setdefault("env", [])
    entry = {"name": name, "value": value}
    for i, item in enumerate(env):
        if item.get("name") == name:
            env[i] = entry
            return
    env.append(entry)


def _put_named(items: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    """Replace the item with the same name, or append."""
    for i, item in enumerate(items):
        if item.get("name") == entry["name"]:
            items[i] = entry
            return
    items.append(entry)


def _seed_pod_spec(pod_spec: dict[str, Any], seed_sql: str, database: str, user: str) -> dict[str, Any]:
    spec = copy.deepcopy(pod_spec)
    containers = spec.get("containers") or []
    if not containers:
        raise ValueError("seed-postgres: the pod spec has no containers")
    db = containers[0]

    _set_env(db, "POSTGRES_DB", database)
    _set_env(db, "POSTGRES_USER", user)

    mounts = [m for m in db.get("volumeMounts", []) if m.get("name") != SEED_VOLUME and m.get("mountPath") != INIT_DIR]
    mounts.append({"name": SEED_VOLUME, "mountPath": INIT_DIR, "readOnly": True})
    db["volumeMounts"] = mounts

    _put_named(spec.setdefault("volumes", []), {"name": SEED_VOLUME, "emptyDir": {}})

    # Kubernetes expands $(VAR) in env values and reduces "$$" to "$": escape every "$" so
    # the script reaches the file byte for byte (dollar-quoted SQL bodies included).
    _put_named(
        spec.setdefault("initContainers", []),
        {
            "name": INIT_CONTAINER,
            "image": INIT_IMAGE,
            "command": ["sh", "-c", f"printf '%s\\n' \"$SEED_SQL\" > /seed/{SEED_FILE}"],
            "env": [{"name": "SEED_SQL", "value": seed_sql.replace("$", "$$")}],
            "volumeMounts": [{"name": SEED_VOLUME, "mountPath": "/seed"}],
        },
    )
    return spec


def validate_args(args: dict[str, Any]) -> list[dict[str, str]]:
    """Optional devlane hook: report bad args before any call (empty list: valid)."""
    errors = []
    if not str(args.get("seed_sql", "")).strip():
        errors.append({"field": "seed_sql", "message": "must be a non-empty SQL script"})
    for field in ("database", "user"):
        if field in args and not _PG_NAME.match(str(args[field])):
            errors.append({"field": field, "message": f"{args[field]!r} is not a valid Postgres name"})
    return errors


def create_flow(
    service_specs: list[dict[str, Any]],
    pod_specs: list[dict[str, Any]],
    flow_uuid: str,
    seed_sql: str,
    database: str = "postgres",
    user: str = "postgres",
) -> dict[str, Any]:
    """Return the seeded pod specs (same count and order) and the flow's state."""
    if not seed_sql.strip():
        raise ValueError("seed-postgres: seed_sql is empty")
    return {
        "pod_specs": [_seed_pod_spec(p, seed_sql, database, user) for p in pod_specs],
        "config_map": {"seeded_database": database},
    }


def delete_flow(config_map: dict[str, Any], flow_uuid: str) -> None:
    """Nothing to clean up: the seeded data lives in the flow's own volume."""
    return None
