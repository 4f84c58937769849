"""rabbitmq-vhost: a lane's own virtual host on the shared RabbitMQ broker, with the repository's queues, exchanges and
bindings for that broker copied into it, as messaging-topology-operator objects. No broker call during render.

Define it (`type: external`) with a `servicename` that stands for the vhost, and list it in the plugins of the
services that publish or consume on the broker. devlane hands it every `Queue`, `Exchange` and `Binding` of the
repository (plugin.yaml `receives`), and those referencing the broker are copied into the lane's vhost. In a flow, the
dependents with a dev version get the lane's vhost in their AMQP URLs (`amqp://u:p@rabbitmq:5672/%2F` ->
`.../<lane vhost>`, in env values, `command`, `args` and the ConfigMaps they read, of which devlane gives the lane
its own copy) and in the env named by `vhost_env`; the host, port and credentials stay: a `Permission` grants the
user the apps connect as the lane's vhost. The lane's topology starts empty, so the lane never takes the baseline's
messages nor feeds its consumers. A dependent with no AMQP URL and no `vhost_env` is said, loudly: it would still
use the baseline's vhost.
"""

from __future__ import annotations

import copy
import re
from typing import Any
from urllib.parse import quote, unquote

from plugins._common import (
    ConfigMaps,
    Json,
    Refused,
    clean_name,
    flow_name,
    result,
    rewrite_configs,
    rewrite_values,
    set_env,
)

API = "rabbitmq.com/v1beta1"
TOPOLOGY = ("Queue", "Exchange", "Binding")
AMQP_URL = re.compile(r"(amqps?://)([^/@\s,;\"']*@)?([^/\s,;\"'?]+)(/[^\s,;\"'?]*)?")
ARGS = ("cluster", "cluster_namespace", "user", "vhost_env", "default_queue_type")


def validate_args(args: dict[str, Any]) -> list[Json]:
    """Checks beyond argsSchema (which devlane applies first)."""
    out: list[Json] = []
    if not args.get("cluster"):
        out.append({"field": "cluster", "message": "is required: the RabbitmqCluster the apps connect to"})
    return out


def lane_vhost(flow_uuid: str) -> str:
    return f"lane-{flow_uuid}"


def _rewire(text: str, vhost: str, users: set[str]) -> str:
    """Every AMQP URL in `text` with the lane's vhost as its path (query and credentials kept)."""

    def swap(m: re.Match[str]) -> str:
        if m.group(2):
            users.add(unquote(m.group(2)[:-1].split(":", 1)[0]))
        return f"{m.group(1)}{m.group(2) or ''}{m.group(3)}/{quote(vhost, safe='')}"

    return AMQP_URL.sub(swap, text)


def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str,
                extensions: list[Json] | None = None, config_maps: ConfigMaps | None = None,
                cluster: str = "", cluster_namespace: str = "", user: str = "",
                vhost_env: str = "", default_queue_type: str = "") -> Json:
    """The dependents' pod specs wired to the lane's vhost (same count and order), the Vhost, the Permission, the
    lane's copy of the broker's topology, and the state."""
    vhost = lane_vhost(flow_uuid)
    reference: Json = {"name": cluster, **({"namespace": cluster_namespace} if cluster_namespace else {})}
    users: set[str] = set()
    results: list[Json] = []
    try:
        if not cluster:
            raise Refused("rabbitmq-vhost needs args.cluster", path="args.cluster")
        specs = rewrite_values(pod_specs, lambda text: _rewire(text, vhost, users))
        configs = rewrite_configs(config_maps, lambda text: _rewire(text, vhost, users))
        for i, (spec, pod_spec) in enumerate(zip(specs, pod_specs, strict=True)):
            if vhost_env and spec.get("containers"):
                set_env(spec["containers"][0], vhost_env, {"value": vhost})
            if spec == pod_spec and (i >= len(configs) or configs[i] == config_maps[i]):
                results.append(result(f"pod spec #{i + 1}: no AMQP URL in its env values, command, args or "
                                      "ConfigMaps, and no vhost_env: it would still use the baseline's vhost",
                                      "warning", "pass the broker's URL through env or a ConfigMap "
                                      "(amqp://host/vhost), or name the env var that holds the vhost in "
                                      "args.vhost_env"))
        grantee = user or (sorted(users)[0] if len(users) == 1 else "")
        if not grantee:
            raise Refused("rabbitmq-vhost cannot tell which user the apps connect as" + (
                f" (their URLs name {', '.join(sorted(users))})" if users else " (no URL names one)"),
                "set args.user to the RabbitMQ user name the dependents connect as", "args.user")
    except Refused as refused:
        return refused.answer(pod_specs)
    vhost_spec: Json = {"name": vhost, "rabbitmqClusterReference": reference}
    if default_queue_type:
        vhost_spec["defaultQueueType"] = default_queue_type
    resources = [
        {"apiVersion": API, "kind": "Vhost", "metadata": {"name": flow_name("vhost", flow_uuid)}, "spec": vhost_spec},
        {"apiVersion": API, "kind": "Permission", "metadata": {"name": flow_name("permission", flow_uuid)},
         "spec": {"vhost": vhost, "user": grantee, "permissions": {"configure": ".*", "write": ".*", "read": ".*"},
                  "rabbitmqClusterReference": reference}},
    ]
    copied, names = [], set()
    for ext in extensions or []:
        if ext.get("apiVersion") != API or ext.get("kind") not in TOPOLOGY:
            continue
        ref = (ext.get("spec") or {}).get("rabbitmqClusterReference") or {}
        where = ref.get("namespace") or (ext.get("metadata") or {}).get("namespace")
        if ref.get("name") != cluster or (cluster_namespace and where and where != cluster_namespace):
            continue  # another broker's, or a same-named one in another namespace
        base = clean_name(ext["metadata"]["name"])[:40]
        if (ext["kind"], base) in names:  # same name in two namespaces: the lane's copies live in one
            base = clean_name(f"{(ext.get('metadata') or {}).get('namespace') or ''}-{base}")[:40]
        names.add((ext["kind"], base))
        obj = {"apiVersion": API, "kind": ext["kind"], "metadata": {"name": flow_name("lane-" + base, flow_uuid)},
               "spec": {**copy.deepcopy(ext.get("spec") or {}), "vhost": vhost}}
        resources.append(obj)
        copied.append(f"{ext['kind']}/{ext['metadata']['name']}")
    state = {"vhost": vhost, "user": grantee, "topology": copied}
    return {"pod_specs": specs, "config_maps": configs, "config_map": state, "resources": resources,
            "results": results}


def delete_flow(config_map: Json, flow_uuid: str) -> None:
    """Nothing to undo here: pruning the Vhost makes the topology operator delete it, with its queues and messages
    (deletionPolicy delete, the default)."""
    return None
