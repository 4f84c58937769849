"""aws-rds: an Amazon RDS database per flow, as ACK custom resources (no AWS call during render).

Define it (`type: external`) with the `servicename` of the Service that stands for the database (an external
ExternalName Service) and list it in the plugins of the Services that use it.
In every flow, the dependents' dev copies get their own database: a `DBInstance` restored from a snapshot
(or a fresh one), or for Aurora a `DBCluster` cloned copy-on-write from `source_cluster` (or restored, or fresh) with
its `DBInstance`. The ACK rds-controller creates it when Argo CD or Flux applies the flow, and deletes it when the
flow is pruned (deletion policy and final-snapshot switch written on the resource, not left to controller flags).

Why this shape: the endpoint is known only after creation, so an ACK `FieldExport` copies it into an emitted, empty
ConfigMap that the dev pod reads through a configMapKeyRef (the pod waits until it is there). The password is only
ever a Secret reference (ACK's `masterUserPassword` is a secretKeyRef): an existing Secret, or one an
External Secrets `Password` generator fills in the cluster. Kardinal's aws-rds-plugin (one hard-coded Aurora cluster
shared by every flow, created with boto3 during the call, a literal password written into the pod env) maps onto
this: its definitions work with only `name` changed; see README.md. Shared ACK mechanics are in `plugins/_ack.py`.
"""

from __future__ import annotations

import re
from typing import Any

from plugins import _ack
from plugins._common import Json, Refused, flag, key_needs_secret, result, secret_ref, wire

GROUP = "rds.services.k8s.aws"
API = f"{GROUP}/v1alpha1"
ENGINES = {"postgres": 5432, "mysql": 3306, "mariadb": 3306, "aurora-postgresql": 5432, "aurora-mysql": 3306}
DEFAULT_USER = {"postgres": "postgres", "mysql": "admin", "mariadb": "admin"}  # the RDS console's defaults
DEFAULT_CLASS = "db.t4g.micro"
SERVERLESS = "db.serverless"
SERVERLESS_SCALING = {"minCapacity": 0.5, "maxCapacity": 4}  # Aurora Serverless v2 ACUs
DEFAULT_STORAGE = "20"  # GiB, the gp2/gp3 minimum
PASSWORD_KEY = "password"  # the key an External Secrets Password generator fills (and the default key)
MAX_IDENTIFIER = 63  # RDS DB instance and cluster identifiers: 1-63, letter first, no "--", no trailing "-"
SNAPSHOT = re.compile(r"(arn:aws[-a-z]*:rds:[a-z0-9-]+:[0-9]{12}:(cluster-)?snapshot:)?[a-zA-Z][a-zA-Z0-9-:]{0,254}\Z")
CLUSTER = re.compile(r"(arn:aws[-a-z]*:rds:[a-z0-9-]+:[0-9]{12}:cluster:)?[a-zA-Z][a-zA-Z0-9-]{0,62}\Z")
SECURITY_GROUP = re.compile(r"sg-[0-9a-f]{8,17}\Z")
ENV_ARGS = ("host_env", "port_env", "user_env", "password_env")

# The args, in signature order; plugin.yaml's argsSchema lists the same (Kardinal's four first).
KARDINAL_ARGS = ("db_user", "db_master_password", "db_subnet_group_name", "security_group_id")
ARGS = (*KARDINAL_ARGS, "region", "engine", "engine_version", "instance_class", "allocated_storage", "snapshot",
        "source_cluster", "db_name", "security_group_ids", "master_password_secret", "master_password_secret_key",
        "generate_password", *ENV_ARGS, "deletion_policy", "skip_final_snapshot")


def _engine(args: dict[str, Any]) -> str:
    return str(args.get("engine") or ("aurora-postgresql" if args.get("source_cluster") else "postgres"))


def _aurora(engine: str) -> bool:
    return engine.startswith("aurora-")


def _security_groups(args: dict[str, Any]) -> list[str]:
    listed = [s.strip() for s in str(args.get("security_group_ids") or "").split(",") if s.strip()]
    one = str(args.get("security_group_id") or "")
    return ([one] if one and one not in listed else []) + listed


def validate_args(args: dict[str, Any]) -> list[Json]:
    """Checks beyond argsSchema (which devlane applies first): args that exclude or need each other."""
    args = {k: v for k, v in args.items() if v not in (None, "")}
    out = _ack.check_common(args, ENV_ARGS)

    def bad(name: str, message: str) -> None:
        out.append({"field": name, "message": message})

    engine = _engine(args)
    if engine not in ENGINES:
        bad("engine", f"{engine!r} is not one of {', '.join(ENGINES)}")
    if args.get("snapshot") and args.get("source_cluster"):
        bad("snapshot", "set snapshot (restore a snapshot) or source_cluster (clone an Aurora cluster), not both")
    for name, pattern, what in (("snapshot", SNAPSHOT, "a DB (cluster) snapshot identifier or ARN"),
                                ("source_cluster", CLUSTER, "a DB cluster identifier or ARN")):
        if args.get(name) and not pattern.match(str(args[name])):
            bad(name, f"{args[name]!r} is not {what}")
    if args.get("source_cluster") and not _aurora(engine):
        bad("source_cluster", "an Aurora clone needs an Aurora engine (aurora-postgresql or aurora-mysql), not "
                              f"{engine}")
    for sg in _security_groups(args):
        if not SECURITY_GROUP.match(sg):
            bad("security_group_ids" if sg != args.get("security_group_id") else "security_group_id",
                f"{sg!r} is not a security group id (sg-0123456789abcdef0)")
    if args.get("db_master_password") and args.get("master_password_secret"):
        bad("db_master_password", "set master_password_secret (a Secret reference) or db_master_password (Kardinal's "
                                  "literal password, never written), not both")
    out += key_needs_secret(args, "master_password_secret_key", "master_password_secret")
    if args.get("master_password_secret") and flag(args.get("generate_password"), False):
        bad("generate_password", "the password comes from master_password_secret; drop generate_password")
    restore = bool(args.get("snapshot") or args.get("source_cluster"))
    if restore and args.get("allocated_storage"):
        bad("allocated_storage", "a restored database keeps its source's storage; drop allocated_storage")
    if _aurora(engine) and args.get("allocated_storage"):
        bad("allocated_storage", "Aurora storage grows by itself; drop allocated_storage")
    if restore and args.get("db_user"):
        bad("db_user", "a restored database keeps its source's master user; drop db_user (the dependents keep their "
                       "own user env)")
    if not restore and not args.get("db_user") and engine not in DEFAULT_USER:
        bad("db_user", f"a fresh {engine} database needs a master user name")
    return out


# --------------------------------------------------------------------------------------------------
# Objects


def _rds_metadata(name: str, args: dict[str, Any], identifier: str, member: bool = False) -> Json:
    """ACK metadata; a cluster member instance takes no final-snapshot switch (its cluster's delete does). Without
    the skip, RDS needs the final snapshot's name: `<identifier>-final`."""
    skip = flag(args.get("skip_final_snapshot"), True)
    extra = {} if member else {
        f"{GROUP}/skip-final-snapshot": "true" if skip else "false",
        **({} if skip else {f"{GROUP}/final-db-snapshot-identifier": _ack.aws_name(
            identifier, 255, letter_first=True, suffix="-final")}),
        f"{GROUP}/delete-automated-backups": "true"}
    return _ack.ack_metadata(name, str(args.get("region") or ""), str(args.get("deletion_policy") or "delete"), extra)


def _network(args: dict[str, Any]) -> Json:
    out: Json = {}
    if args.get("db_subnet_group_name"):
        out["dbSubnetGroupName"] = args["db_subnet_group_name"]
    if _security_groups(args):
        out["vpcSecurityGroupIDs"] = _security_groups(args)
    return out


def _password_objects(name: str) -> list[Json]:
    """An External Secrets Password generator and the ExternalSecret that runs it once (refreshInterval 0s) into
    Secret `name`: the password exists only in the cluster, never in git. Alphanumeric, 32 characters: within RDS's
    8-41 and free of the characters RDS refuses (/ " @) and of any a connection URL would need escaped."""
    generator = {"apiVersion": "generators.external-secrets.io/v1alpha1", "kind": "Password",
                 "metadata": {"name": name},
                 "spec": {"length": 32, "digits": 8, "symbols": 0, "noUpper": False, "allowRepeat": True}}
    external = {"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": {"name": name},
                "spec": {"refreshInterval": "0s", "target": {"name": name, "creationPolicy": "Owner"},
                         "dataFrom": [{"sourceRef": {"generatorRef": {
                             "apiVersion": "generators.external-secrets.io/v1alpha1", "kind": "Password",
                             "name": name}}}]}}
    return [generator, external]


def _password(args: dict[str, Any], flow_uuid: str, restore: bool) -> tuple[tuple[str, str] | None, list[Json],
                                                                             list[Json]]:
    """(Secret name and key of the master password or None to keep the source's, objects to add, results)."""
    if args.get("master_password_secret"):
        return (args["master_password_secret"], args.get("master_password_secret_key") or PASSWORD_KEY), [], []
    literal = bool(args.get("db_master_password"))
    if not (literal or flag(args.get("generate_password"), not restore)):
        return None, [], []
    name = _ack.object_name("password", flow_uuid)
    results = [result(
        f"args.db_master_password is never written into the manifests: the flow's database gets a generated password "
        f"(ExternalSecret {name}), which the dependents read from Secret {name}", "warning",
        "to choose the password, put it in a Secret in the flow's namespace and replace db_master_password with "
        "master_password_secret")] if literal else []
    return (name, PASSWORD_KEY), _password_objects(name), results


def _db_name(args: dict[str, Any], pod_specs: list[Json]) -> str | None:
    """The database to create (fresh only): the arg, else the dependents' DB_NAME (as Kardinal's plugin read it)."""
    name = args.get("db_name") or _ack.env_value(pod_specs, "DB_NAME")
    if name and not re.match(r"[A-Za-z][A-Za-z0-9_]{0,62}\Z", name):
        raise Refused(f"the dependents' DB_NAME {name!r} is not a database name RDS accepts (a letter, then letters, "
                      "digits or underscores)", "set db_name")
    return name


def _instance(args: dict[str, Any], flow_uuid: str, engine: str, identifier: str, cluster: str | None) -> Json:
    spec: Json = {"dbInstanceIdentifier": identifier,
                  "dbInstanceClass": args.get("instance_class") or (SERVERLESS if cluster else DEFAULT_CLASS),
                  "engine": engine}
    if cluster:
        spec["dbClusterIdentifier"] = cluster
    elif args.get("engine_version"):
        spec["engineVersion"] = args["engine_version"]
    spec["publiclyAccessible"] = False
    if cluster:
        spec["tags"] = _ack.tag_list(flow_uuid)
    return {"apiVersion": API, "kind": "DBInstance", "metadata": _rds_metadata(flow_uuid, args, identifier,
                                                                            member=bool(cluster)),
            "spec": spec}


def _standalone(args: dict[str, Any], flow_uuid: str, engine: str, identifier: str, password: tuple | None,
                db_name: str | None) -> Json:
    obj = _instance(args, flow_uuid, engine, identifier, None)
    spec = obj["spec"]
    if args.get("snapshot"):
        spec["dbSnapshotIdentifier"] = args["snapshot"]
    else:
        spec["allocatedStorage"] = int(args.get("allocated_storage") or DEFAULT_STORAGE)
        spec["masterUsername"] = args.get("db_user") or DEFAULT_USER[engine]
        if db_name:
            spec["dbName"] = db_name
    if password:
        spec["masterUserPassword"] = {"name": password[0], "key": password[1]}
    spec.update(_network(args))
    spec.update({"multiAZ": False, "backupRetentionPeriod": 0, "deletionProtection": False,
                 "tags": _ack.tag_list(flow_uuid)})
    return obj


def _cluster(args: dict[str, Any], flow_uuid: str, engine: str, identifier: str, password: tuple | None,
             db_name: str | None) -> Json:
    spec: Json = {"dbClusterIdentifier": identifier, "engine": engine}
    if args.get("engine_version"):
        spec["engineVersion"] = args["engine_version"]
    if args.get("source_cluster"):
        spec.update({"sourceDBClusterIdentifier": args["source_cluster"], "restoreType": "copy-on-write",
                     "useLatestRestorableTime": True})
    elif args.get("snapshot"):
        spec["snapshotIdentifier"] = args["snapshot"]
    else:
        spec["masterUsername"] = args["db_user"]
        if db_name:
            spec["databaseName"] = db_name
    if password:
        spec["masterUserPassword"] = {"name": password[0], "key": password[1]}
    spec.update(_network(args))
    spec.update({"backupRetentionPeriod": 1, "deletionProtection": False})  # Aurora keeps at least one day
    if (args.get("instance_class") or SERVERLESS) == SERVERLESS:
        spec["serverlessV2ScalingConfiguration"] = dict(SERVERLESS_SCALING)
    spec["tags"] = _ack.tag_list(flow_uuid)
    return {"apiVersion": API, "kind": "DBCluster", "metadata": _rds_metadata(flow_uuid, args, identifier),
            "spec": spec}


# --------------------------------------------------------------------------------------------------
# Kardinal's functions


def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str, db_user: str = "",
                db_master_password: str = "", db_subnet_group_name: str = "", security_group_id: str = "",
                region: str = "", engine: str = "", engine_version: str = "", instance_class: str = "",
                allocated_storage: str = "", snapshot: str = "", source_cluster: str = "", db_name: str = "",
                security_group_ids: str = "", master_password_secret: str = "", master_password_secret_key: str = "",
                generate_password: str = "", host_env: str = "", port_env: str = "", user_env: str = "",
                password_env: str = "", deletion_policy: str = "", skip_final_snapshot: str = "") -> Json:
    """The dependents' pod specs wired to the flow's database (same count and order), the ACK objects, the state."""
    args = {k: v for k, v in locals().items() if k in ARGS and v}
    engine = _engine(args)
    restore = bool(snapshot or source_cluster)
    try:
        password, objects, results = _password(args, flow_uuid, restore)
        name = None if restore else _db_name(args, pod_specs)
        identifier = _ack.aws_name(flow_uuid, MAX_IDENTIFIER, letter_first=True)
        member = None
        conn = _ack.object_name("conn", flow_uuid)
        if _aurora(engine):
            member = _ack.aws_name(flow_uuid, MAX_IDENTIFIER, letter_first=True, suffix="-1")
            cluster = _cluster(args, flow_uuid, engine, identifier, password, name)
            resources = [cluster, _instance(args, flow_uuid, engine, member, identifier)]
            export = _ack.field_export(_ack.object_name("host", flow_uuid), GROUP, "DBCluster", flow_uuid,
                                       ".status.endpoint", conn, "host")
        else:
            resources = [_standalone(args, flow_uuid, engine, identifier, password, name)]
            export = _ack.field_export(_ack.object_name("host", flow_uuid), GROUP, "DBInstance", flow_uuid,
                                       ".status.endpoint.address", conn, "host")
        env: dict[str, Json] = {host_env or "DB_HOSTNAME": _ack.configmap_ref(conn, "host")}
        if port_env:
            env[port_env] = _ack.value(str(ENGINES[engine]))
        if not restore:
            env[user_env or "DB_USER"] = _ack.value(db_user or DEFAULT_USER.get(engine, ""))
        if password:
            env[password_env or "DB_PASSWORD"] = secret_ref(*password)
        specs = wire(pod_specs, env)
    except Refused as refused:
        return refused.answer(pod_specs)
    state = {"engine": engine, "mode": "clone" if source_cluster else "snapshot" if snapshot else "fresh",
             **({"dbClusterIdentifier": identifier, "dbInstanceIdentifier": member} if member
                else {"dbInstanceIdentifier": identifier}),
             "hostConfigMap": conn, "passwordSecret": password[0] if password else None}
    return {"pod_specs": specs, "config_map": state,
            "resources": [*resources, _ack.empty_configmap(conn), export, *objects], "results": results}


def delete_flow(config_map: Json, flow_uuid: str) -> None:
    """Nothing to undo here: pruning the flow's objects makes the ACK controller delete the database (deletion
    policy `delete`, final snapshot skipped unless skip_final_snapshot is false)."""
    return None
