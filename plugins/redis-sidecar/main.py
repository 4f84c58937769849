"""redis-sidecar: shared reads, isolated writes (or a fresh Redis) for a flow's dev copy of a Redis.

Attach it (type stateful) to the Redis Service. Kardinal's redis-sidecar-plugin only swapped
`containers[0].image` for `kurtosistech/redis-proxy-overlay:latest` and left the rest to the manifest,
so the proxy started without `PORT` or `REDIS_ADDR`, under the Redis image's own `command`/`args`
and `redis-cli` probes, from an unpinned tag. Here, in `mode: overlay` (the default), the Redis
container of the dev copy becomes the proxy, done right:

- `REDIS_ADDR` is the *baseline* Redis Service (`<svc>.<ns>.svc.cluster.local:<port>`), set after
  devlane's reference rewriting, so it stays on the baseline (what a plugin returns is final);
- `PORT` is the Service's targetPort (a named one resolved through the container's ports), so the
  dev Service reaches the proxy, and the dev app, rewritten to the dev Service, reaches it too;
- the image is pinned by digest; inherited `command`/`args`, lifecycle hooks, exec probes (they run
  `redis-cli`, which the proxy image lacks) and the Redis mounts (the proxy is stateless) are removed;
- a baseline that needs AUTH or TLS is refused: the proxy connects with no password and no TLS.

`mode: fresh` keeps a real Redis image on an `emptyDir` instead: isolated reads too, every Redis
command, the baseline's own AUTH settings (by reference, as inherited). Render is pure: every effect
is a pod-spec edit Argo CD or Flux applies; nothing is written for teardown (see README.md).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from plugins._common import (
    IMAGE_DIGEST,
    Image,
    Json,
    Refused,
    mount,
    mounted_volumes,
    overlaps,
    plain_env,
    result,
    set_env,
    target_container,
)

PLUGIN = "redis-sidecar"
MODES = ("overlay", "fresh")
PROXY = "kurtosistech/redis-proxy-overlay"
# Kardinal's proxy image, by the tag its plugin used: no digest of it could be verified here (it is published as a
# moving `latest` tag only), so devlane warns that it is not pinned and `--strict` refuses it (README, "The image").
DEFAULT_IMAGE = f"{PROXY}:latest"
UPSTREAM = re.compile(r"(?=.{1,259}\Z)[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?:([1-9][0-9]{0,4})\Z")
REDIS_IMAGES = ("redis", "valkey", "redis-stack", "redis-stack-server", "keydb")
CONTAINER_ANNOTATION = "devlane.dev/container"
DATA_VOLUME = "devlane-redis-data"
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
PROBE_TIMING = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold",
                "terminationGracePeriodSeconds")
AUTH_ENV = ("REDIS_PASSWORD", "REDIS_PASSWORD_FILE", "VALKEY_PASSWORD", "VALKEY_PASSWORD_FILE")
AUTH_FLAGS = ("--requirepass", "--aclfile", "--masterauth")
TLS_FLAGS = ("--tls-port", "--tls-cert-file", "--tls-replication", "--tls-cluster")
TLS_ENV = ("REDIS_TLS_ENABLED", "VALKEY_TLS_ENABLED")
REPLICA_FLAGS = ("--replicaof", "--slaveof")
REPLICA_ENV = {"REDIS_REPLICATION_MODE": ("slave", "replica"), "VALKEY_REPLICATION_MODE": ("slave", "replica")}
ARGS = ("mode", "image", "upstream")


# --------------------------------------------------------------------------------------------------
# Args


def _image_problem(image: str) -> str | None:
    if "@" in image and not IMAGE_DIGEST.match(image):
        return "a digest must be sha256:<64 hex digits> (<repository>@sha256:<digest>)"
    return None


def validate_args(args: dict[str, Any]) -> list[Json]:
    """Checks beyond argsSchema (which devlane applies first); an empty list means valid."""
    out: list[Json] = []
    mode = args.get("mode") or "overlay"
    image = str(args.get("image") or "")
    if image and (problem := _image_problem(image)):
        out.append({"field": "image", "message": problem})
    upstream = str(args.get("upstream") or "")
    if upstream and mode != "overlay":
        out.append({"field": "upstream", "message": f"applies to mode overlay only (mode is {mode})"})
    elif upstream and not UPSTREAM.match(upstream):
        out.append({"field": "upstream",
                    "message": f"must be host:port (a DNS name or IP and a port), got {upstream!r}"})
    return out


# --------------------------------------------------------------------------------------------------
# Reading the dev copy


def _is_redis(container: Json) -> bool:
    return Image.parse(str(container.get("image", ""))).name in REDIS_IMAGES


def _redis_container(pod_spec: Json, service: Json, index: int, results: list[Json]) -> int:
    """The Redis container: devlane's target (moved first) when the Service names it with devlane.dev/container,
    else the first that runs a Redis image, else containers[0] (what Kardinal edited), with a warning."""
    target_container(pod_spec, index)  # refuses a pod spec without containers
    containers = pod_spec["containers"]
    annotations = (service.get("metadata") or {}).get("annotations") or {}
    if annotations.get(CONTAINER_ANNOTATION):
        return 0
    found = next((i for i, c in enumerate(containers) if _is_redis(c)), None)
    if found is not None:
        return found
    results.append(result(f"pod spec #{index + 1}: no container runs a Redis image ({', '.join(REDIS_IMAGES)}); "
                           f"using containers[0] ({containers[0].get('name')!r}), as Kardinal did", "warning",
                           f"set {CONTAINER_ANNOTATION} on the Service to the Redis container"))
    return 0


def _words(container: Json) -> list[str]:
    """command + args, and the REDIS_ARGS / VALKEY_EXTRA_FLAGS env some images append, split on spaces."""
    env = plain_env(container)
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    extra = " ".join(env.get(k, "") for k in ("REDIS_ARGS", "REDIS_EXTRA_FLAGS", "VALKEY_EXTRA_FLAGS"))
    return [p for w in [*words, extra] for p in w.split()]


def _flag(words: list[str], flags: tuple[str, ...]) -> str | None:
    return next((f for w in words for f in flags if w == f or w.startswith(f + "=")), None)


def _env_names(container: Json) -> set[str]:
    return {str(e.get("name")) for e in container.get("env") or []}


def _service_port(service: Json, index: int) -> Json:
    ports = (service.get("spec") or {}).get("ports") or []
    if not ports:
        raise Refused(f"the Service of pod spec #{index + 1} has no ports", "give the Redis Service its port (6379)")
    named = [p for p in ports if "redis" in str(p.get("name", "")) or p.get("port") == 6379]
    return (named or ports)[0]


def _target_port(port: Json, containers: list[Json], index: int) -> int:
    """The Service port's targetPort as a number: a name resolves through the containers' ports."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int) or str(target).isdigit():
        return int(target)
    for c in containers:
        for p in c.get("ports") or []:
            if p.get("name") == target:
                return int(p["containerPort"])
    raise Refused(f"pod spec #{index + 1}: the Service's targetPort {target!r} names no container port",
                   "name the Redis container's port as the Service's targetPort does, or use a number")


def _upstream(service: Json, port: Json, args: Mapping[str, str]) -> str:
    """The baseline Redis Service's address: the FQDN when its namespace is known, else the short name."""
    if args.get("upstream"):
        return args["upstream"]
    meta = service.get("metadata") or {}
    namespace = meta.get("namespace")
    host = f"{meta['name']}.{namespace}.svc.cluster.local" if namespace else meta["name"]
    return f"{host}:{port['port']}"


# --------------------------------------------------------------------------------------------------
# Pod-spec edits


def _probe(probe: Json, port: int) -> Json | None:
    """A probe for the proxy: tcpSocket probes stay, exec probes (redis-cli) become a TCP check of the port with the
    same timing, HTTP and gRPC probes (which Redis never answered) go."""
    if "tcpSocket" in probe:
        return probe
    if "exec" in probe:
        return {"tcpSocket": {"port": port}, **{k: probe[k] for k in PROBE_TIMING if k in probe}}
    return None


def _drop_unused_volumes(spec: Json) -> None:
    used = mounted_volumes(spec)
    volumes = [v for v in spec.get("volumes") or [] if v.get("name") in used]
    if volumes:
        spec["volumes"] = volumes
    else:
        spec.pop("volumes", None)


def _auth_or_tls(container: Json, index: int, what: str) -> None:
    words, env = _words(container), _env_names(container)
    auth = _flag(words, AUTH_FLAGS) or next((n for n in AUTH_ENV if n in env), None)
    tls = _flag(words, TLS_FLAGS) or next((n for n in TLS_ENV if plain_env(container).get(n) == "yes"), None)
    if auth:
        raise Refused(f"pod spec #{index + 1}: container {container.get('name')!r} {what} requires AUTH ({auth}); "
                       "the overlay proxy connects to the baseline with no password and accepts no AUTH",
                       "set mode: fresh (an isolated Redis that keeps the baseline's password settings, by reference)")
    if tls:
        raise Refused(f"pod spec #{index + 1}: container {container.get('name')!r} {what} uses TLS ({tls}); the "
                       "overlay proxy speaks plain RESP only", "set mode: fresh")


Edit = tuple[Json, Json]


def overlay(pod_spec: Json, service: Json, index: int, args: Mapping[str, str], results: list[Json]) -> Edit:
    """The dev copy's Redis container replaced by the write-overlay proxy; the state to record."""
    spec = copy.deepcopy(pod_spec)
    at = _redis_container(spec, service, index, results)
    redis = spec["containers"][at]
    _auth_or_tls(redis, index, "of the baseline")
    port = _service_port(service, index)
    listen = _target_port(port, spec["containers"], index)
    upstream = _upstream(service, port, args)
    redis["image"] = args.get("image") or DEFAULT_IMAGE
    for key in ("command", "args", "lifecycle", "volumeMounts", "workingDir"):
        redis.pop(key, None)
    for key in PROBES:
        if key in redis:
            probe = _probe(redis.pop(key), listen)
            if probe is not None:
                redis[key] = probe
    set_env(redis, "PORT", {"value": str(listen)})
    set_env(redis, "REDIS_ADDR", {"value": upstream})
    _drop_unused_volumes(spec)
    return spec, {"container": redis.get("name"), "port": listen, "upstream": upstream}


def _data_dir(container: Json) -> str:
    """Where the image keeps its data: `--dir` when given, Bitnami's /bitnami/<name>/data, else /data."""
    words = _words(container)
    for i, w in enumerate(words):
        if w == "--dir" and i + 1 < len(words):
            return words[i + 1]
        if w.startswith("--dir="):
            return w.split("=", 1)[1]
    ref = str(container.get("image", ""))
    if "bitnami/" in ref:
        return f"/bitnami/{Image.parse(ref).name}/data"
    return "/data"


def fresh(pod_spec: Json, service: Json, index: int, args: Mapping[str, str], results: list[Json]) -> Edit:
    """The dev copy as a real, empty Redis: its data directory (and any claim it mounted) on an emptyDir."""
    spec = copy.deepcopy(pod_spec)
    at = _redis_container(spec, service, index, results)
    redis = spec["containers"][at]
    if args.get("image"):
        redis["image"] = args["image"]
    elif not _is_redis(redis):
        raise Refused(f"pod spec #{index + 1}: container {redis.get('name')!r} runs image {redis.get('image')!r}, not "
                       f"a Redis image ({', '.join(REDIS_IMAGES)})", "set image to a Redis image pinned by digest")
    replica = _flag(_words(redis), REPLICA_FLAGS) or next(
        (n for n, v in REPLICA_ENV.items() if plain_env(redis).get(n) in v), None)
    if replica:
        raise Refused(f"pod spec #{index + 1}: container {redis.get('name')!r} is a replica ({replica}): a fresh copy "
                       "would copy the baseline's data", "attach redis-sidecar to the primary's Service")
    claims = {v.get("name") for v in spec.get("volumes") or [] if "emptyDir" not in v and "configMap" not in v
              and "secret" not in v and "projected" not in v and "downwardAPI" not in v}
    declared = {v.get("name") for v in spec.get("volumes") or []}
    data = _data_dir(redis)
    kept = []
    for m in redis.get("volumeMounts") or []:  # a claim (or a volumeClaimTemplate) mounted anywhere else: gone
        if m.get("name") in claims or m.get("name") not in declared:
            if not overlaps(str(m.get("mountPath", "")), data):
                results.append(result(f"pod spec #{index + 1}: the fresh copy drops the mount of {m.get('name')} at "
                                       f"{m.get('mountPath')}", "warning"))
            continue
        kept.append(m)
    redis["volumeMounts"] = kept
    mount(spec, redis, data, {"name": DATA_VOLUME, "emptyDir": {}}, read_only=False)
    _drop_unused_volumes(spec)
    return spec, {"container": redis.get("name"), "dataDir": data}


def create_flow(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str, services: list[Json] | None = None,
                mode: str = "", image: str = "", upstream: str = "") -> Json:
    """The dev copies of the Redis (same count and order), and the state (nothing to undo on delete)."""
    args = {k: v for k, v in {"mode": mode, "image": image, "upstream": upstream}.items() if v}
    mode = mode or "overlay"
    services = services or [{"metadata": {"name": ""}, "spec": s} for s in service_specs]
    edit = overlay if mode == "overlay" else fresh
    results: list[Json] = []
    try:
        specs, states = [], []
        for i, (pod_spec, service) in enumerate(zip(pod_specs, services, strict=True)):
            spec, state = edit(pod_spec, service, i, args, results)
            specs.append(spec)
            states.append(state)
    except Refused as refused:
        return refused.answer(pod_specs)
    state: Json = {"mode": mode, "dependents": states}
    if mode == "overlay":
        state["image"] = image or DEFAULT_IMAGE
    return {"pod_specs": specs, "config_map": state, "results": results}


def delete_flow(config_map: Json, flow_uuid: str) -> None:
    """Nothing to undo: the overlay's writes live in the proxy's memory, a fresh Redis's in its emptyDir, and both
    go with the dev copy when the flow is pruned."""
    return None
