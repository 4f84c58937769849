"""postgres-seed: a fresh Postgres per flow, seeded by the official image's /docker-entrypoint-initdb.d.

Attach it to the Service of a Postgres that runs the official `postgres` image (or one built on it).
The flow's dev copy gets an emptyDir at the version-correct data directory, the seed in a ConfigMap
mounted at /docker-entrypoint-initdb.d, POSTGRES_DB / POSTGRES_USER from the args and POSTGRES_PASSWORD
from a Secret reference. Kardinal's postgres-seed-plugin definitions work by changing only `name`
(see README.md for the arg mapping). The shared mechanics are in `plugins/_dbseed.py`.
"""

from __future__ import annotations

import posixpath
import re

from plugins import _dbseed
from plugins._common import Image
from plugins._dbseed import Engine, Password

NEWEST_MAJOR = 18  # what `postgres`, `postgres:latest` or `postgres:alpine` run: 18 or later


def _major(image: Image) -> int | None:
    """The Postgres major version an image reference names (`17`, `17.2-alpine`, postgis `17-3.5`,
    timescaledb `2.17.2-pg17`); None when it does not say."""
    tag = image.tag or ""
    found = re.search(r"-pg(\d+)", tag) or re.match(r"\d+", tag)
    if found:
        return int(found.group(found.lastindex or 0))
    if image.name == "postgres" and (image.tag or not image.digest):  # latest, alpine, bookworm, no tag
        return NEWEST_MAJOR
    return None


def _data_dir(image: Image, env: dict[str, str]) -> str | None:
    """18+ keep PGDATA under /var/lib/postgresql (the image's VOLUME) and refuse a mount at
    /var/lib/postgresql/data; older images keep it in /var/lib/postgresql/data. A PGDATA elsewhere is
    mounted itself."""
    major = _major(image)
    if major is None:
        return None
    base = "/var/lib/postgresql" if major >= 18 else "/var/lib/postgresql/data"
    pgdata = posixpath.normpath(env.get("PGDATA", base))
    return base if pgdata == base or pgdata.startswith(base + "/") else pgdata


ENGINE = Engine(
    plugin="postgres-seed",
    product="Postgres",
    images=("postgres", "postgis", "timescaledb"),
    db_env="POSTGRES_DB",
    user_env="POSTGRES_USER",
    passwords=(Password("POSTGRES_PASSWORD", "db_password", unless={"POSTGRES_HOST_AUTH_METHOD": "trust"}),),
    file_env=frozenset({"POSTGRES_PASSWORD", "POSTGRES_USER", "POSTGRES_DB", "POSTGRES_INITDB_ARGS"}),
    init_suffixes=(".sh", ".sql", ".sql.gz", ".sql.xz", ".sql.zst"),
    data_dir=_data_dir,
)


# Kardinal's functions, bound by name: create_flow(service_specs, pod_specs, flow_uuid, extensions, <each arg of
# plugin.yaml's argsSchema>), validate_args(args), delete_flow(config_map, flow_uuid).
validate_args, create_flow, delete_flow = _dbseed.kardinal_functions(ENGINE)
