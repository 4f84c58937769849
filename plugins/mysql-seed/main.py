"""mysql-seed: a fresh MySQL per flow, seeded by the official image's /docker-entrypoint-initdb.d.

Attach it to the Service of a MySQL that runs the official `mysql` image. The flow's dev copy gets an
emptyDir at /var/lib/mysql, the seed in a ConfigMap mounted at /docker-entrypoint-initdb.d,
MYSQL_DATABASE / MYSQL_USER from the args and the passwords from Secret references (without a root
password, MYSQL_RANDOM_ROOT_PASSWORD). Kardinal never published a MySQL plugin; the args follow its
postgres-seed-plugin's. The shared mechanics are in `plugins/_dbseed.py`.
"""

from __future__ import annotations

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


# Kardinal's functions, bound by name: create_flow(service_specs, pod_specs, flow_uuid, extensions, <each arg of
# plugin.yaml's argsSchema>), validate_args(args), delete_flow(config_map, flow_uuid).
validate_args, create_flow, delete_flow = _dbseed.kardinal_functions(ENGINE)
