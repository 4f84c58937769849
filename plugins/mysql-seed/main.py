"""mysql-seed: a fresh MySQL per flow, seeded by the official image's /docker-entrypoint-initdb.d.

Attach it to the Service of a MySQL that runs the official `mysql` image. The flow's dev copy gets an
emptyDir at /var/lib/mysql, the seed in a ConfigMap mounted at /docker-entrypoint-initdb.d,
MYSQL_DATABASE / MYSQL_USER from the args and the passwords from Secret references (without a root
password, MYSQL_RANDOM_ROOT_PASSWORD). Kardinal never published a MySQL plugin; the args follow its
postgres-seed-plugin's. The shared mechanics are in `plugins/_dbseed.py`.
"""

from __future__ import annotations

from typing import Any

from plugins import _dbseed
from plugins._dbseed import Engine, Password

DATA_DIR = "/var/lib/mysql"  # the image's VOLUME, in every version

ENGINE = Engine(
    plugin="mysql-seed",
    product="MySQL",
    images=("mysql",),
    db_env="MYSQL_DATABASE",
    user_env="MYSQL_USER",
    passwords=(
        Password("MYSQL_PASSWORD", "db_password", only_with="MYSQL_USER",
                 needed_for="does not create MYSQL_USER"),
        Password("MYSQL_ROOT_PASSWORD", "root_password", default_key="root-password",
                 unless={"MYSQL_ALLOW_EMPTY_PASSWORD": None, "MYSQL_RANDOM_ROOT_PASSWORD": None},
                 fallback=("MYSQL_RANDOM_ROOT_PASSWORD", "yes")),
    ),
    file_env=frozenset({"MYSQL_ROOT_PASSWORD", "MYSQL_ROOT_HOST", "MYSQL_DATABASE", "MYSQL_USER", "MYSQL_PASSWORD"}),
    init_suffixes=(".sh", ".sql", ".sql.bz2", ".sql.gz", ".sql.xz", ".sql.zst"),
    data_dir=lambda image, env: DATA_DIR,
    reserved_users=frozenset({"root"}),
)


def validate_args(args: dict[str, Any]) -> list[dict[str, str]]:
    """Checks beyond argsSchema (which devlane applies first); an empty list means valid."""
    return _dbseed.validate_args(ENGINE, args)


def create_flow(
    service_specs: list[dict[str, Any]],
    pod_specs: list[dict[str, Any]],
    flow_uuid: str,
    extensions: list[dict[str, Any]] | None = None,
    seed_script: str = "",
    db_name: str = "",
    db_user: str = "",
    db_password: str = "",
    db_password_secret: str = "",
    db_password_secret_key: str = "",
    root_password: str = "",
    root_password_secret: str = "",
    root_password_secret_key: str = "",
    data_dir: str = "",
) -> dict[str, Any]:
    """The seeded pod specs (same count and order), the seed ConfigMap, and the state."""
    args = {"seed_script": seed_script, "db_name": db_name, "db_user": db_user, "db_password": db_password,
            "db_password_secret": db_password_secret, "db_password_secret_key": db_password_secret_key,
            "root_password": root_password, "root_password_secret": root_password_secret,
            "root_password_secret_key": root_password_secret_key, "data_dir": data_dir}
    return _dbseed.create_flow(ENGINE, pod_specs, flow_uuid, extensions, args)


def delete_flow(config_map: dict[str, Any], flow_uuid: str) -> None:
    """Nothing to undo: the seeded data lives in the pod's emptyDir and the ConfigMap is pruned with the flow."""
    return None
