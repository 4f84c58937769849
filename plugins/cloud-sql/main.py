"""cloud-sql: a per-flow clone of a Cloud SQL instance (Config Connector), and the flow's app wired to it.

Why: a pull request's dev copy of an app must not write to the shared Cloud SQL instance, and render must not
call Google's API (Argo CD re-renders on every refresh). So the plugin declares the clone as Config Connector
objects that Argo CD or Flux apply, and points the dependents' dev pods at it through the Cloud SQL Auth Proxy:

- `SQLInstance` with `spec.cloneSource` (the source instance, same project, `sqlInstanceRef.external`), its
  instance ID a stable hash-suffixed name (instance IDs are per project and immutable), deletion protection
  off and `cnrm.cloud.google.com/deletion-policy` explicit, the project as `cnrm.cloud.google.com/project-id`;
- `SQLDatabase` and `SQLUser` that acquire the database and user the clone copied, the user's password set
  from a Secret reference (`spec.password.valueFrom.secretKeyRef`), so the app's Secret opens the clone;
- in each dependent's dev pod: the Auth Proxy as a native sidecar (an initContainer with `restartPolicy:
  Always`, first, so the app starts after it is ready) or a plain container, with the connection name
  `<project>:<region>:<instance>` computed offline; the baseline's own proxy (to the source) is replaced;
  the app's host env becomes 127.0.0.1, port, database and user plain env, the password a secretKeyRef.

Shared mechanics (names, env, Secret checks) are in `plugins/_cloud.py` and `plugins/_common.py`. See README.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plugins import _cloud
from plugins._common import Image, Json, Refused, result, secret_ref, target_container

PLUGIN = "cloud-sql"
API = "sql.cnrm.cloud.google.com/v1beta1"
# Cloud SQL Auth Proxy v2, release v2.25.3 (GoogleCloudPlatform/cloud-sql-proxy tag v2.25.3, commit 31c3b33e;
# the tag its README and k8s-sidecar example pin). No digest is published in the repository: pinned by version.
PROXY_IMAGE = "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.25.3"
PROXY_NAME = "cloud-sql-proxy"
PROXY_IMAGES = ("cloud-sql-proxy", "gce-proxy", "cloudsql-proxy")  # v2, v1, and the common mirror name
HEALTH_PORT = 9801  # --http-port, as in the proxy's k8s-health-check example
PORTS = {"POSTGRES": "5432", "MYSQL": "3306"}
INSTANCE_LIMIT = 63  # Cloud SQL instance IDs: lowercase letters, digits, hyphens, a letter first; kept DNS-label short
DELETION = {"delete": "none", "abandon": "abandon"}  # arg -> cnrm.cloud.google.com/deletion-policy
IP_FLAGS = {"public": [], "private": ["--private-ip"], "psc": ["--psc"]}

ARGS = ("project", "region", "source_instance", "database_version", "tier", "edition", "db_name", "db_user",
        "password_secret", "password_secret_key", "ip_type", "sidecar", "proxy_image", "port", "deletion_policy",
        "name_scope", "host_env", "port_env", "name_env", "user_env", "password_env")
DEFAULTS = {"password_secret_key": "password", "ip_type": "public", "sidecar": "native", "proxy_image": PROXY_IMAGE,
            "deletion_policy": "delete", "name_scope": "", "host_env": "DB_HOST", "port_env": "DB_PORT",
            "name_env": "DB_NAME", "user_env": "DB_USER", "password_env": "DB_PASS"}
REQUIRED = ("project", "region", "source_instance", "database_version", "tier", "db_name", "db_user",
            "password_secret")


def _engine(version: str) -> str:
    return version.split("_", 1)[0]


def validate(args: Mapping[str, Any]) -> list[Json]:
    """What argsSchema cannot say: a pinned proxy image, a usable port, distinct env names."""
    out = _cloud.check_common(args, DEFAULTS)
    image = str(args.get("proxy_image") or "")
    if image and "@sha256:" not in image:
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        if not tag or tag == "latest":
            out.append({"field": "proxy_image", "message": f"{image!r} is not pinned; name a version tag (such as "
                                                           f"{PROXY_IMAGE.rsplit(':', 1)[1]}) or a digest"})
    port = str(args.get("port") or "")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        out.append({"field": "port", "message": f"{port} is not a TCP port (1-65535)"})
    elif port and int(port) == HEALTH_PORT:
        out.append({"field": "port", "message": f"{port} is the proxy's health-check port; choose another"})
    return out


def _is_proxy(container: Json) -> bool:
    return container.get("name") == PROXY_NAME or Image.parse(str(container.get("image") or "")).name in PROXY_IMAGES


def _proxy(args: Mapping[str, str], connection: str, port: str) -> Json:
    """The Auth Proxy container: listens on 127.0.0.1:<port> (its default address), health checks on
    HEALTH_PORT for the kubelet's probes, exits 0 on SIGTERM so a finished pod is not a failure."""
    container: Json = {
        "name": PROXY_NAME,
        "image": args["proxy_image"],
        "args": [f"--port={port}", *IP_FLAGS[args["ip_type"]], "--health-check", "--http-address=0.0.0.0",
                 f"--http-port={HEALTH_PORT}", "--exit-zero-on-sigterm", "--structured-logs", connection],
        "startupProbe": {"httpGet": {"path": "/startup", "port": HEALTH_PORT}, "periodSeconds": 1,
                         "failureThreshold": 60},
        "livenessProbe": {"httpGet": {"path": "/liveness", "port": HEALTH_PORT}, "periodSeconds": 60,
                          "timeoutSeconds": 30, "failureThreshold": 5},
        "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    if args["sidecar"] == "native":
        container["restartPolicy"] = "Always"
    return container


def _wire(spec: Json, index: int, args: Mapping[str, str], connection: str, source: str, port: str) -> list[Json]:
    """One dependent's dev pod: the proxy to the clone in place of any proxy it had, its env pointed at it."""
    app = target_container(spec, index)
    replaced = [c.get("name") for key in ("initContainers", "containers") for c in spec.get(key) or []
                if c is not app and _is_proxy(c)]
    for key in ("initContainers", "containers"):
        kept = [c for c in spec.get(key) or [] if c is app or not _is_proxy(c)]
        if kept or key in spec:
            spec[key] = kept
    if not spec.get("initContainers"):
        spec.pop("initContainers", None)
    proxy = _proxy(args, connection, port)
    if args["sidecar"] == "native":
        spec["initContainers"] = [proxy, *(spec.get("initContainers") or [])]  # first: later ones may need the DB
    else:
        spec["containers"].append(proxy)
    _cloud.wire_env(app, args, {"host_env": "127.0.0.1", "port_env": port, "name_env": args["db_name"],
                                "user_env": args["db_user"]},
                    secret_ref(args["password_secret"], args["password_secret_key"]))
    rewired = _cloud.replace_env_values(spec, source, connection)
    out = []
    if replaced:
        out.append(result(f"pod spec #{index + 1}: replaced its Cloud SQL Auth Proxy container(s) "
                                 f"{', '.join(map(str, replaced))} by one connected to the flow's clone", "info"))
    if rewired:
        out.append(result(f"pod spec #{index + 1}: env {', '.join(rewired)} named the source instance "
                                 f"{source}; now the clone {connection}", "info"))
    return out


def _objects(args: Mapping[str, str], flow_uuid: str, instance: str) -> list[Json]:
    project = {"cnrm.cloud.google.com/project-id": args["project"]}
    settings: Json = {"tier": args["tier"], "availabilityType": "ZONAL", "deletionProtectionEnabled": False}
    if args.get("edition"):
        settings["edition"] = args["edition"]
    sql_instance = {
        "apiVersion": API, "kind": "SQLInstance",
        "metadata": {"name": flow_uuid, "annotations": {
            **project, "cnrm.cloud.google.com/deletion-policy": DELETION[args["deletion_policy"]]}},
        "spec": {"resourceID": instance, "databaseVersion": args["database_version"], "region": args["region"],
                 "cloneSource": {"sqlInstanceRef": {"external": args["source_instance"]}}, "settings": settings},
    }
    # The database and the user came with the clone: these acquire them (resourceID), so the user's password
    # follows the Secret; deleting the instance deletes both, so their own deletion is abandoned.
    inner = {**project, "cnrm.cloud.google.com/deletion-policy": "abandon"}
    database = {
        "apiVersion": API, "kind": "SQLDatabase",
        "metadata": {"name": f"db-{flow_uuid}", "annotations": dict(inner)},
        "spec": {"resourceID": args["db_name"], "instanceRef": {"name": flow_uuid}, "deletionPolicy": "ABANDON"},
    }
    user = {
        "apiVersion": API, "kind": "SQLUser",
        "metadata": {"name": f"user-{flow_uuid}", "annotations": dict(inner)},
        "spec": {"resourceID": args["db_user"], "instanceRef": {"name": flow_uuid},
                 "password": {"valueFrom": {"secretKeyRef": {"name": args["password_secret"],
                                                              "key": args["password_secret_key"]}}}},
    }
    return [sql_instance, database, user]


def create(pod_specs: list[Json], flow_uuid: str, given: dict[str, str]) -> Json:
    args = _cloud.defaults(given, DEFAULTS)
    missing = [a for a in REQUIRED if not args.get(a)]
    if missing:
        raise Refused(f"{PLUGIN} needs args {', '.join(missing)}", "see plugins/cloud-sql/README.md, Args")
    instance = _cloud.stable_name(flow_uuid, (args["project"], args["source_instance"], args["name_scope"],
                                              flow_uuid), INSTANCE_LIMIT)
    connection = f"{args['project']}:{args['region']}:{instance}"
    source = f"{args['project']}:{args['region']}:{args['source_instance']}"
    port = args.get("port") or PORTS[_engine(args["database_version"])]
    results = []
    for i, spec in enumerate(pod_specs):
        results += _wire(spec, i, args, connection, source, port)
    state = {"instance": instance, "connectionName": connection, "sqlInstance": flow_uuid,
             "deletionPolicy": args["deletion_policy"]}
    return {"pod_specs": pod_specs, "config_map": state, "resources": _objects(args, flow_uuid, instance),
            "results": results}


# Kardinal's functions, bound by name: create_flow(service_specs, pod_specs, flow_uuid, <each arg of plugin.yaml's
# argsSchema>), validate_args(args), delete_flow(config_map, flow_uuid).
validate_args, create_flow, delete_flow = _cloud.kardinal_functions(
    ARGS, create, validate,
    "Nothing to undo: pruning the flow's SQLInstance makes Config Connector delete the clone (deletion_policy "
    "delete), which takes its database and user along.")
