"""azure-sql: a per-flow copy of an Azure SQL database (Azure Service Operator v2), and the flow's app wired to it.

Why: a pull request's dev copy of an app must not write to the shared Azure SQL database, and render must not
call Azure (Argo CD re-renders on every refresh). So the plugin declares the copy as one ASO `ServersDatabase`
(`sql.azure.com/v1api20211101`) that Argo CD or Flux applies:

- `createMode: Copy` from `sourceDatabaseReference.armId`, on an existing logical server (`owner.armId`, or
  `owner.name` of an ASO Server): a server is not billed, its databases are, so a copy is the cheap unit;
- its Azure name a stable hash-suffixed name (unique per server across repositories and flows), its sku
  explicit when given (else the copy keeps the source's), `serviceoperator.azure.com/reconcile-policy`
  explicit (manage: pruning the object deletes the database in Azure);
- in each dependent's dev pod: host `<server>.database.windows.net`, port 1433, the copy's database name and
  the user as plain env computed offline, the password by secretKeyRef (the copy keeps the source's users).

Shared mechanics (names, env, Secret checks) are in `plugins/_cloud.py` and `plugins/_common.py`. See README.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from plugins import _cloud
from plugins._common import Json, Refused, secret_ref, target_container

PLUGIN = "azure-sql"
API = "sql.azure.com/v1api20211101"
PORT = "1433"
NAME_LIMIT = 128  # Azure SQL database names: at most 128 characters (ours: lowercase letters, digits, hyphens)
SERVER_ID = re.compile(r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Sql/servers/([a-z0-9-]+)\Z",
                       re.IGNORECASE)
DATABASE_ID = re.compile(SERVER_ID.pattern[:-2] + r"/databases/([^/]+)\Z", re.IGNORECASE)

ARGS = ("server_id", "server_ref", "location", "source_database", "source_database_id", "sku", "sku_tier",
        "sku_capacity", "db_user", "password_secret", "password_secret_key", "reconcile_policy", "dns_suffix",
        "name_scope", "host_env", "port_env", "name_env", "user_env", "password_env")
DEFAULTS = {"password_secret_key": "password", "reconcile_policy": "manage", "dns_suffix": "database.windows.net",
            "name_scope": "", "host_env": "DB_HOST", "port_env": "DB_PORT", "name_env": "DB_NAME",
            "user_env": "DB_USER", "password_env": "DB_PASSWORD"}
REQUIRED = ("location", "db_user", "password_secret")


def validate(args: Mapping[str, Any]) -> list[Json]:
    """What argsSchema cannot say: one owner, one source, a source the owner can name, distinct env names."""
    out = _cloud.check_common(args, DEFAULTS)

    def bad(field: str, message: str) -> None:
        out.append({"field": field, "message": message})

    server_id, server_ref = args.get("server_id"), args.get("server_ref")
    if bool(server_id) == bool(server_ref):
        bad("server_id", "set exactly one of server_id (the ARM id of an existing logical server) and server_ref "
                         "(the name of an ASO Server in the flow's namespace)")
    if server_id and not SERVER_ID.match(str(server_id)):
        bad("server_id", f"{server_id!r} is not a SQL server's ARM id (/subscriptions/<id>/resourceGroups/<group>/"
                         "providers/Microsoft.Sql/servers/<server>)")
    source, source_id = args.get("source_database"), args.get("source_database_id")
    if bool(source) == bool(source_id):
        bad("source_database", "set exactly one of source_database (a database on the same server) and "
                               "source_database_id (its ARM id)")
    elif source and server_ref and not server_id:
        bad("source_database", "names a database on the server of server_id; with server_ref, set "
                               "source_database_id (the source's ARM id) instead")
    if source_id and not DATABASE_ID.match(str(source_id)):
        bad("source_database_id", f"{source_id!r} is not a SQL database's ARM id (/subscriptions/<id>/resourceGroups/"
                                  "<group>/providers/Microsoft.Sql/servers/<server>/databases/<database>)")
    if (args.get("sku_tier") or args.get("sku_capacity")) and not args.get("sku"):
        bad("sku" if not args.get("sku_tier") else "sku_tier", "sku_tier and sku_capacity refine a sku; set sku too")
    return out


def _database(args: Mapping[str, str], flow_uuid: str, name: str) -> Json:
    owner = {"armId": args["server_id"]} if args.get("server_id") else {"name": args["server_ref"]}
    source_id = args.get("source_database_id") or f"{args['server_id']}/databases/{args['source_database']}"
    spec: Json = {"azureName": name, "location": args["location"], "owner": owner, "createMode": "Copy",
                  "sourceDatabaseReference": {"armId": source_id}}
    if args.get("sku"):
        spec["sku"] = {"name": args["sku"], **({"tier": args["sku_tier"]} if args.get("sku_tier") else {}),
                       **({"capacity": int(args["sku_capacity"])} if args.get("sku_capacity") else {})}
    return {"apiVersion": API, "kind": "ServersDatabase",
            "metadata": {"name": flow_uuid,
                         "annotations": {"serviceoperator.azure.com/reconcile-policy": args["reconcile_policy"]}},
            "spec": spec}


def create(pod_specs: list[Json], flow_uuid: str, given: dict[str, str]) -> Json:
    args = _cloud.defaults(given, DEFAULTS)
    missing = [a for a in REQUIRED if not args.get(a)]
    if missing:
        raise Refused(f"{PLUGIN} needs args {', '.join(missing)}", "see plugins/azure-sql/README.md, Args")
    server_match = SERVER_ID.match(args.get("server_id", ""))
    server = server_match.group(1).lower() if server_match else args["server_ref"]
    owner = args.get("server_id") or args["server_ref"]
    source_id = args.get("source_database_id") or f"{args['server_id']}/databases/{args['source_database']}"
    name = _cloud.stable_name(flow_uuid, (owner.lower(), source_id.lower(), args["name_scope"], flow_uuid),
                              NAME_LIMIT)
    host = f"{server}.{args['dns_suffix']}"
    for i, spec in enumerate(pod_specs):
        _cloud.wire_env(target_container(spec, i), args,
                        {"host_env": host, "port_env": PORT, "name_env": name, "user_env": args["db_user"]},
                        secret_ref(args["password_secret"], args["password_secret_key"]))
    state = {"database": name, "host": host, "serversDatabase": flow_uuid, "reconcilePolicy": args["reconcile_policy"]}
    return {"pod_specs": pod_specs, "config_map": state, "resources": [_database(args, flow_uuid, name)]}


# Kardinal's functions, bound by name: create_flow(service_specs, pod_specs, flow_uuid, <each arg of plugin.yaml's
# argsSchema>), validate_args(args), delete_flow(config_map, flow_uuid).
validate_args, create_flow, delete_flow = _cloud.kardinal_functions(
    ARGS, create, validate,
    "Nothing to undo: pruning the flow's ServersDatabase makes ASO delete the copy in Azure (reconcile_policy "
    "manage).")
