"""mongodb-seed: a fresh MongoDB per flow, seeded by the official image's /docker-entrypoint-initdb.d.

Attach it (type `stateful`) to the Service of a MongoDB that runs the official `mongo` image (or
`mongodb/mongodb-community-server`, built on the same entrypoint). The flow's dev copy gets an emptyDir at /data/db,
the seed in a ConfigMap mounted at /docker-entrypoint-initdb.d (an inline `seed_script` in mongosh JavaScript, `.js`
and `.sh` files from extension ConfigMaps, or a `mongorestore` archive, `.archive` or `.archive.gz`, in an extension's
binaryData, loaded by a script made for it), MONGO_INITDB_DATABASE / MONGO_INITDB_ROOT_USERNAME from the args and
the root password from a Secret reference only. The lane's `mongodb://` URLs name the dev copy: devlane rewrites
them as it does every reference to a service with a dev version. The shared mechanics are in `plugins/_dbseed.py`.
"""

from __future__ import annotations

from plugins import _dbseed
from plugins._dbseed import Engine, Password

DATA_DIR = "/data/db"  # the image's VOLUME


def _restore(path: str) -> str:
    """An init script that loads a mongorestore archive, as the root user when the image creates one."""
    gzip = " --gzip" if path.endswith(".gz") else ""
    return ("#!/bin/bash\n"
            "# Made by devlane's mongodb-seed: loads the archive beside it into the fresh database.\n"
            "set -euo pipefail\n"
            "auth=()\n"
            'if [ -n "${MONGO_INITDB_ROOT_USERNAME:-}" ]; then\n'
            '  auth=(--username "$MONGO_INITDB_ROOT_USERNAME" --password "$MONGO_INITDB_ROOT_PASSWORD" '
            "--authenticationDatabase admin)\n"
            "fi\n"
            f'mongorestore "${{auth[@]}}" --host 127.0.0.1 --archive={path}{gzip}\n')


ENGINE = Engine(
    plugin="mongodb-seed",
    product="MongoDB",
    images=("mongo", "mongodb-community-server"),
    db_env="MONGO_INITDB_DATABASE",
    user_env="MONGO_INITDB_ROOT_USERNAME",
    passwords=(
        Password("MONGO_INITDB_ROOT_PASSWORD", "db_password", only_with="MONGO_INITDB_ROOT_USERNAME",
                 needed_for="does not create MONGO_INITDB_ROOT_USERNAME"),
    ),
    file_env=frozenset({"MONGO_INITDB_ROOT_USERNAME", "MONGO_INITDB_ROOT_PASSWORD"}),
    init_suffixes=(".sh", ".js"),
    data_dir=lambda image, env: DATA_DIR,
    inline_file="seed.js",
    loaders={".archive": _restore, ".archive.gz": _restore},
)


# Kardinal's functions, bound by name: create_flow(service_specs, pod_specs, flow_uuid, extensions, <each arg of
# plugin.yaml's argsSchema>), validate_args(args), delete_flow(config_map, flow_uuid).
validate_args, create_flow, delete_flow = _dbseed.kardinal_functions(ENGINE)
