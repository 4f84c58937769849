"""What every built-in shares, whatever its family: Kardinal results and refusals, Secret references, env set by
name, the name patterns of Kubernetes, stable hashed names, boolean args, the target container, pod-spec mounts,
image references, and the binding of Kardinal's functions.

Why it exists: built-ins run inside devlane's process as modules of the `plugins` package (first-party code, not
sandboxed), which is what lets them share code at all; this module is the one place for the pieces that are the
same logic in every family. The family modules keep what is theirs (`_ack`: ACK annotations and FieldExports;
`_cloud`: the managed-database copies; `_dbseed`: the seed Engine) and build on this one. A built-in's digest in
`flow.metadata` covers the shared modules it imports, directly or through another shared module; a built-in
copied out of devlane must take them along.

Standard library only. Nothing here reads the clock, draws random numbers or calls a network.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
SECRET_KEY = re.compile(r"(?=.{1,253}\Z)[-._a-zA-Z0-9]+\Z")  # a Secret's or a ConfigMap's data key
ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*\Z")  # what the API server accepts as an env var name
IMAGE_DIGEST = re.compile(r"[^@\s]+@sha256:[0-9a-f]{64}\Z")  # an image reference pinned by digest
MAX_NAME = 63  # a DNS label: Services, Jobs (their name is a label value), and every name `flow_name` makes
TRUE = ("true", "True", "TRUE")  # YAML booleans reach plugins as strings
HINT_TAG = "devlane.dev/hint"


# --------------------------------------------------------------------------------------------------
# Results (Kardinal's `results`: errors stop the call, and their hint is shown under the message)


def result(message: str, severity: str = "error", hint: str | None = None, path: str | None = None) -> Json:
    """A Kardinal `results` entry; `path` names the input it is about, the hint is shown under the message."""
    out: Json = {"severity": severity, "message": message}
    if path:
        out["field"] = {"path": path}
    if hint:
        out["tags"] = {HINT_TAG: hint}
    return out


class Refused(Exception):
    """An input the plugin cannot serve; create_flow answers with this error result (`answer`)."""

    def __init__(self, message: str, hint: str | None = None, path: str | None = None):
        super().__init__(message)
        self.result = result(message, "error", hint, path)

    def answer(self, pod_specs: list[Json]) -> Json:
        """create_flow's answer: the pod specs as given, no state, this error."""
        return {"pod_specs": pod_specs, "config_map": {}, "results": [self.result]}


# --------------------------------------------------------------------------------------------------
# Args


def flag(value: Any, default: bool) -> bool:
    """A boolean arg ("true"/"false", in any case YAML gives); `default` when unset or empty."""
    text = str(value or "")
    return default if not text else text in TRUE


def env_name_findings(args: Mapping[str, Any], names: tuple[str, ...] | set[str]) -> list[Json]:
    """A finding for each of the args `names` that is set and is not an env var name. The value is never
    repeated (a plugin may be refusing it because it looks like a key)."""
    return [{"field": name, "message": "is not an environment variable name (letters, digits, '_', '-' and '.'; "
                                       "not starting with a digit)"}
            for name in sorted(names) if args.get(name) not in (None, "") and not ENV_NAME.match(str(args[name]))]


def key_needs_secret(args: Mapping[str, Any], key_arg: str, secret_arg: str) -> list[Json]:
    """The finding for a Secret key arg set without the Secret it is a key of."""
    if args.get(key_arg) and not args.get(secret_arg):
        return [{"field": key_arg, "message": f"names a key of no Secret; set {secret_arg} too"}]
    return []


# --------------------------------------------------------------------------------------------------
# Names


def stable_hash(*parts: str, length: int = 8) -> str:
    """A short hex digest of `parts` (NUL-separated, so ("ab", "c") and ("a", "bc") differ)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:length]


def clean_name(text: str, allowed: str = "a-z0-9-", lower: bool = True) -> str:
    """`text` in an alphabet (a regex class body): other characters become `-`, runs of `-` collapse, and `-`,
    `_` and `.` are stripped from both ends."""
    name = text.lower() if lower else text
    return re.sub(r"-{2,}", "-", re.sub(f"[^{allowed}]", "-", name)).strip("-_.")


def flow_name(prefix: str, flow_uuid: str, limit: int = MAX_NAME) -> str:
    """The Kubernetes name of an object added for the flow: `<prefix>-<flow_uuid>`, or, when longer than `limit`,
    `<prefix>-<hash8>-<tail of flow_uuid>`: still ending with the flow id (at most 40 characters, as the output
    policy requires), the same for the same inputs, different per instance."""
    name = f"{prefix}-{flow_uuid}"
    if len(name) <= limit:
        return name
    head = f"{prefix}-{stable_hash(name)}-"
    return head + flow_uuid[len(flow_uuid) - (limit - len(head)):].lstrip("-.")


# --------------------------------------------------------------------------------------------------
# Env


def secret_ref(name: str, key: str) -> Json:
    return {"valueFrom": {"secretKeyRef": {"name": name, "key": key}}}


def plain_env(container: Json) -> dict[str, str]:
    """The container's env as the kubelet resolves it (a later entry of a name hides an earlier one), keeping the
    names whose entry is a literal value."""
    out: dict[str, str] = {}
    for e in container.get("env") or []:
        if "value" in e and "valueFrom" not in e:
            out[e["name"]] = str(e["value"])
        else:
            out.pop(e.get("name"), None)
    return out


def set_env(container: Json, name: str, entry: Json) -> None:
    """Set env `name` to `entry` ({value} or {valueFrom}) in place of its first entry, dropping its duplicates (the
    kubelet lets the last one win, so a twin left behind would be a trap), or append it."""
    entry = {"name": name, **entry}
    env = container.get("env") or []
    at = next((i for i, e in enumerate(env) if e.get("name") == name), None)
    if at is None:
        container["env"] = [*env, entry]
    else:
        container["env"] = [*env[:at], entry, *(e for e in env[at + 1:] if e.get("name") != name)]


def drop_env(container: Json, name: str) -> None:
    if container.get("env"):
        container["env"] = [e for e in container["env"] if e.get("name") != name]


# --------------------------------------------------------------------------------------------------
# Pod specs


def target_container(spec: Json, index: int) -> Json:
    """The dependent's target container: containers[0] (devlane moves the container it targets there first)."""
    containers = spec.get("containers") or []
    if not containers:
        raise Refused(f"pod spec #{index + 1} has no containers")
    return containers[0]


def wire(pod_specs: list[Json], env: Mapping[str, Json]) -> list[Json]:
    """Copies of the pod specs (same count and order) with `env` set by name on each target container."""
    out = []
    for i, pod_spec in enumerate(pod_specs):
        spec = copy.deepcopy(pod_spec)
        container = target_container(spec, i)
        for name, entry in env.items():
            set_env(container, name, entry)
        out.append(spec)
    return out


def name_list(text: str | None) -> list[str]:
    """A comma- or space-separated arg of names, in order, each once."""
    return list(dict.fromkeys(n for n in re.split(r"[,\s]+", str(text or "")) if n))


def rewrite_values(pod_specs: list[Json], rewrite: Callable[[str], str]) -> list[Json]:
    """Copies of the pod specs (same count and order) with `rewrite` applied to every env value and every `command`
    and `args` item of every container, init containers too: where an app names its topics, vhosts and subjects."""
    out = []
    for pod_spec in pod_specs:
        spec = copy.deepcopy(pod_spec)
        for group in ("initContainers", "containers"):
            for c in spec.get(group) or []:
                for e in c.get("env") or []:
                    if isinstance(e.get("value"), str):
                        e["value"] = rewrite(e["value"])
                for field in ("command", "args"):
                    if isinstance(c.get(field), list):
                        c[field] = [rewrite(a) if isinstance(a, str) else a for a in c[field]]
        out.append(spec)
    return out


ConfigMaps = list[dict[str, dict[str, str]]]  # create_flow's `config_maps`: per pod spec, ConfigMap name -> data


def rewrite_configs(config_maps: ConfigMaps | None, rewrite: Callable[[str], str]) -> ConfigMaps:
    """Copies of `config_maps` (same shape) with `rewrite` applied to every data value: the app's config files."""
    return [{name: {key: rewrite(value) for key, value in data.items()} for name, data in per.items()}
            for per in config_maps or []]


def rename_names(pod_specs: list[Json], renames: Mapping[str, str], config_maps: ConfigMaps | None = None,
                 ) -> tuple[list[Json], ConfigMaps, set[str]]:
    """`rewrite_values` and `rewrite_configs` with each name of `renames` (a topic, a subject, a group) replaced
    wherever it is a whole token: `orders` in `--topic=orders` or `a,orders`, never inside `orders-dlq` or
    `v2.orders`. In a config file, a token that is a key (`orders:`, `orders=`), a host or a path (after `/` or
    `@`, before `:port`) is left alone: there the name is more likely a service's than a topic's. Also returns the
    names found."""
    if not renames:
        return copy.deepcopy(pod_specs), copy.deepcopy(config_maps or []), set()
    alternatives = "|".join(re.escape(n) for n in sorted(renames, key=len, reverse=True))
    value = re.compile(rf"(?<![\w.-])(?:{alternatives})(?![\w.-])")
    in_file = re.compile(rf"(?<![\w.\-/@])(?:{alternatives})(?![\w.-])(?![\"']?[ \t]*[:=])")
    seen: set[str] = set()

    def swap(m: re.Match[str]) -> str:
        seen.add(m.group(0))
        return renames[m.group(0)]

    specs = rewrite_values(pod_specs, lambda text: value.sub(swap, text))
    return specs, rewrite_configs(config_maps, lambda text: in_file.sub(swap, text)), seen


def unnamed(renames: Mapping[str, str], seen: set[str], what: Mapping[str, str],
            arg_of: Mapping[str, str]) -> list[Json]:
    """A warning for each name of `renames` no dependent holds in env, command, args or a ConfigMap it reads: the
    app has it compiled in (or reads it from a Secret), so that dependent still uses the baseline's. `what`/`arg_of`:
    per name, what it is (topic, subject, ...) and the arg that lists it."""
    return [result(f"{what[n]} {n} is in no env value, command, args or ConfigMap of the dependents: a dependent "
                   f"that has it compiled in, or reads it from a Secret, still uses the baseline's {n}", "warning",
                   f"pass the name through env or a ConfigMap (the lane's is {renames[n]}), or drop it from "
                   f"args.{arg_of[n]}")
            for n in renames if n not in seen]


def restricted_container() -> Json:
    """A container securityContext that passes the Pod Security Standards *restricted* profile."""
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]}}


def restricted_pod(user: int = 65532) -> Json:
    """A pod securityContext for an image that need not run as root (a fixed non-root uid)."""
    return {"runAsNonRoot": True, "runAsUser": user, "runAsGroup": user, "seccompProfile": {"type": "RuntimeDefault"}}


def overlaps(a: str, b: str) -> bool:
    """Whether two mount paths are the same, or one is inside the other."""
    a, b = posixpath.normpath(a), posixpath.normpath(b)
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def mounted_volumes(spec: Json) -> set[str]:
    """The names of the volumes some container of the pod spec mounts."""
    groups = ("containers", "initContainers", "ephemeralContainers")
    return {m.get("name") for g in groups for c in spec.get(g) or [] for m in c.get("volumeMounts") or []}


def mount(spec: Json, container: Json, path: str, volume: Json, read_only: bool) -> list[str]:
    """Mount `volume` at `path` in place of the container's mounts at, inside or above it; the volumes that
    no longer serve any mount are dropped too (a pod that lists a claim still binds it). Returns the
    replaced mounts' volume names."""
    mounts = container.get("volumeMounts") or []
    replaced = [m.get("name") for m in mounts if overlaps(str(m.get("mountPath", "")), path)]
    container["volumeMounts"] = [m for m in mounts if not overlaps(str(m.get("mountPath", "")), path)]
    used = mounted_volumes(spec)
    volumes = [v for v in spec.get("volumes") or [] if v.get("name") != volume["name"]
               and (v.get("name") not in replaced or v.get("name") in used)]
    spec["volumes"] = [*volumes, volume]
    container["volumeMounts"].append({"name": volume["name"], "mountPath": path, **({"readOnly": True}
                                                                                   if read_only else {})})
    return [name for name in replaced if name != volume["name"]]


@dataclass(frozen=True)
class Image:
    """A container image reference, split: `name` is the last path segment of the repository, lowercased."""

    name: str
    tag: str | None
    digest: str | None

    @classmethod
    def parse(cls, ref: str) -> Image:
        rest, _, digest = ref.partition("@")
        name, _, tag = rest.rsplit("/", 1)[-1].partition(":")
        return cls(name.lower(), tag or None, digest or None)


# --------------------------------------------------------------------------------------------------
# Kardinal's functions


def kardinal_functions(arg_names: tuple[str, ...], validate_args: Callable[..., Any], create_flow: Callable[..., Any],
                       delete_flow: Callable[..., Any]) -> tuple[Callable[..., Any], ...]:
    """The plugin's `validate_args`, `create_flow` and `delete_flow`, named so. Kardinal binds args by name from a
    function's signature (never through **kwargs), so create_flow advertises each of `arg_names` (`__signature__`,
    after its own parameters but its **kwargs, each a str defaulting to "")."""
    own = [p for p in inspect.signature(create_flow).parameters.values() if p.kind is not p.VAR_KEYWORD]
    extra = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default="", annotation=str)
             for n in arg_names]
    create_flow.__signature__ = inspect.Signature([*own, *extra])  # type: ignore[attr-defined]
    functions = (validate_args, create_flow, delete_flow)
    for fn, name in zip(functions, ("validate_args", "create_flow", "delete_flow"), strict=True):
        fn.__name__ = fn.__qualname__ = name
    return functions
