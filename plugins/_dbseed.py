"""What the database-seed built-ins (postgres-seed, mysql-seed) share: a fresh, seeded database per flow.

The official postgres and mysql images run the files of `/docker-entrypoint-initdb.d` once, when the
data directory is empty. So the dev copy of the database gets:

- an `emptyDir` at its data directory (every new pod starts empty, so every new pod is seeded);
- the seed scripts in one ConfigMap per plugin instance and flow, mounted read-only there;
- its env set by name (replaced in place, never appended twice; a `<NAME>_FILE` twin is dropped);
- passwords only as Secret references (`valueFrom.secretKeyRef`): nothing here writes a password.

What differs per image (env names, data directory, init file types, password rules) is an `Engine`,
declared by each plugin's `main.py`. What every built-in shares (results, refusals, env edits,
mounts, image references) is in `plugins/_common.py`, which this module builds on; a built-in copied
out of devlane must take both along.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from plugins import _common
from plugins._common import Image, Json, Refused, drop_env, key_needs_secret, mount, plain_env, result, secret_ref

INIT_DIR = "/docker-entrypoint-initdb.d"
SEED_VOLUME = "devlane-seed"
DATA_VOLUME = "devlane-seed-data"
DIGEST_ENV = "DEVLANE_SEED_DIGEST"  # changes with the seed, so a new seed rolls out a new (empty) pod
DEFAULT_SECRET_KEY = "password"
MAX_SEED_BYTES = 1024 * 1024  # the API server refuses a ConfigMap over 1 MiB


@dataclass(frozen=True)
class Password:
    """One password the image reads from env `env`: from a Secret (`<arg>_secret`, `<arg>_secret_key`),
    or, for Kardinal definitions, the literal `<arg>`, which is never written (see `_password`)."""

    env: str
    arg: str
    default_key: str = DEFAULT_SECRET_KEY
    unless: Mapping[str, str | None] = field(default_factory=dict)  # env that makes it unneeded (None: any value)
    only_with: str | None = None  # needed only when this env is set (MYSQL_PASSWORD goes with MYSQL_USER)
    fallback: tuple[str, str] | None = None  # env set when nothing configures the password
    needed_for: str = "will not initialize a database"  # what the image does without it

    @property
    def secret_arg(self) -> str:
        return f"{self.arg}_secret"

    @property
    def key_arg(self) -> str:
        return f"{self.arg}_secret_key"


@dataclass(frozen=True)
class Engine:
    """What one database image needs; every field is a fact about the official image's entrypoint."""

    plugin: str  # the built-in's name, which starts every message
    product: str  # Postgres, MySQL
    images: tuple[str, ...]  # image names (last repository segment) that use the official entrypoint
    db_env: str
    user_env: str
    passwords: tuple[Password, ...]
    file_env: frozenset[str]  # env the image also reads from `<NAME>_FILE` (the two are exclusive)
    init_suffixes: tuple[str, ...]  # init files the entrypoint runs; it ignores any other
    data_dir: Callable[[Image, dict[str, str]], str | None]  # (image, plain env) -> data dir; None: unknown
    reserved_users: frozenset[str] = frozenset()  # db_user values the image refuses
    inline_file: str = "seed.sql"  # seed_script's file name in the init directory (run in file-name order)
    # data files the entrypoint ignores but a script made for them loads (a mongorestore archive): suffix -> the
    # script's text for the file's path
    loaders: Mapping[str, Callable[[str], str]] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# Args


def validate_args(engine: Engine, args: Mapping[str, Any]) -> list[Json]:
    """What argsSchema cannot say: pairs of args that exclude or need each other, values the image refuses."""
    out: list[Json] = []

    def bad(name: str, message: str) -> None:
        out.append({"field": name, "message": message})

    if "seed_script" in args and not str(args["seed_script"]).strip():
        bad("seed_script", "is empty; give the SQL to run, or leave seed_script out and list a ConfigMap in "
                           "extensions")
    for p in engine.passwords:
        if args.get(p.arg) and args.get(p.secret_arg):
            bad(p.arg, f"set {p.secret_arg} (a Secret reference) or {p.arg} (Kardinal's literal password), not both")
        out += key_needs_secret(args, p.key_arg, p.secret_arg)
    user = str(args.get("db_user", ""))
    if user in engine.reserved_users:
        bad("db_user", f"{user!r} cannot be set through {engine.user_env}; the image manages that account itself")
    data_dir = str(args.get("data_dir", ""))
    if data_dir and (not data_dir.startswith("/") or posixpath.normpath(data_dir) != data_dir.rstrip("/")
                     or data_dir.rstrip("/") in ("", INIT_DIR)):
        bad("data_dir", "must be a normalized absolute path other than / and the init directory")
    return out


# --------------------------------------------------------------------------------------------------
# Pod-spec edits


def _env_index(container: Json, name: str) -> int | None:
    return next((i for i, e in enumerate(container.get("env") or []) if e.get("name") == name), None)


def _set_env(engine: Engine, container: Json, name: str, entry: Json) -> None:
    """`_common.set_env`, and drop the exclusive `<name>_FILE` twin the image would refuse beside it."""
    _common.set_env(container, name, entry)
    if name in engine.file_env:
        drop_env(container, f"{name}_FILE")


def _password(engine: Engine, container: Json, p: Password, args: Mapping[str, str]) -> list[Json]:
    """Configure one password; the results to report.

    A Secret reference replaces whatever the baseline had. Kardinal's literal is never written: the dev
    copy keeps the password its baseline already sets, which must then be that literal (or a reference
    or file devlane cannot compare). Nothing configured: the image's own alternative, or an error.
    """
    if args.get(p.secret_arg):
        _set_env(engine, container, p.env, secret_ref(args[p.secret_arg], args.get(p.key_arg) or p.default_key))
        return []
    at = _env_index(container, p.env)
    current = None if at is None else container["env"][at]
    has_file = _env_index(container, f"{p.env}_FILE") is not None
    literal = args.get(p.arg)
    if literal:
        if current is not None and "valueFrom" not in current and str(current.get("value", "")) == literal:
            return []
        if (current is not None and "valueFrom" in current) or has_file:
            return [result(f"args.{p.arg} is not written into the manifests; the dev copy keeps the {p.env} its "
                            "baseline reads from a Secret or file, which must hold the same password", "warning",
                            f"to choose the Secret explicitly, set {p.secret_arg} instead of {p.arg}")]
        state = "sets no" if current is None else "sets a different"
        raise Refused(f"{engine.plugin} never writes a literal password into the rendered manifests, and the dev "
                       f"copy {state} {p.env} to keep instead of args.{p.arg}",
                       f"put the password in a Secret in the flow's namespace and replace {p.arg} with "
                       f"{p.secret_arg} (and {p.key_arg} when the key is not {p.default_key!r})")
    if current is not None or has_file:
        return []
    if p.only_with and all(_env_index(container, n) is None for n in (p.only_with, f"{p.only_with}_FILE")):
        return []
    plain = plain_env(container)
    if any(plain.get(name) if value is None else plain.get(name) == value for name, value in p.unless.items()):
        return []
    if p.fallback:
        _set_env(engine, container, p.fallback[0], {"value": p.fallback[1]})
        return [result(f"{p.env} is not set, so the dev database gets {p.fallback[0]}={p.fallback[1]}", "info",
                        f"set {p.secret_arg} to choose the password")]
    raise Refused(f"the dev copy sets no {p.env}, and without it the {engine.product} image {p.needed_for}",
                   f"set {p.secret_arg} to the Secret that holds the password (and {p.key_arg} when the key is not "
                   f"{p.default_key!r})")


def _data_dir(engine: Engine, container: Json, args: Mapping[str, str], index: int) -> str:
    if args.get("data_dir"):
        return args["data_dir"].rstrip("/")
    ref = str(container.get("image", ""))
    image = Image.parse(ref)
    what = f"pod spec #{index + 1}: container {container.get('name')!r} runs image {ref!r}"
    if image.name not in engine.images:
        raise Refused(f"{what}, not the official {engine.images[0]} image (nor one built on it: "
                       f"{', '.join(engine.images[1:]) or 'none known'})",
                       f"attach {engine.plugin} to the Service of the {engine.product} database (devlane seeds its "
                       "target container, devlane.dev/container), or set data_dir if this image uses the official "
                       "entrypoint")
    path = engine.data_dir(image, plain_env(container))
    if path is None:
        raise Refused(f"{what}; its {engine.product} version, and so its data directory, cannot be told from "
                       "the image reference", "tag the image with its major version (e.g. postgres:17), or set "
                       "data_dir")
    return path


def seed_pod_spec(engine: Engine, pod_spec: Json, index: int, args: Mapping[str, str], configmap: str,
                  digest: str) -> tuple[Json, list[Json]]:
    """The dev database's pod spec, seeded: containers[0] is the database (devlane's target container)."""
    spec = copy.deepcopy(pod_spec)
    db = spec["containers"][0]
    results: list[Json] = []
    data = _data_dir(engine, db, args, index)
    mount(spec, db, data, {"name": DATA_VOLUME, "emptyDir": {}}, read_only=False)
    replaced = mount(spec, db, INIT_DIR, {"name": SEED_VOLUME, "configMap": {"name": configmap}}, read_only=True)
    if replaced:
        results.append(result(f"pod spec #{index + 1}: the seed replaces what the dev copy mounted at {INIT_DIR} "
                               f"(volume {', '.join(replaced)})", "warning",
                               "to run those scripts too, list their ConfigMap in the plugin definition's "
                               "extensions"))
    for arg, name in (("db_name", engine.db_env), ("db_user", engine.user_env)):
        if args.get(arg):
            _set_env(engine, db, name, {"value": args[arg]})
    for p in engine.passwords:
        results += _password(engine, db, p, args)
    _set_env(engine, db, DIGEST_ENV, {"value": digest})
    return spec, results


# --------------------------------------------------------------------------------------------------
# The seed


def _decoded_size(b64: str) -> int:
    try:
        return len(base64.b64decode(b64, validate=True))
    except (binascii.Error, ValueError):
        raise Refused("an extension ConfigMap's binaryData is not base64") from None


def seed_files(engine: Engine, seed_script: str, extensions: list[Json]) -> tuple[Json, Json]:
    """The init files (`data`, `binaryData`) from the extension ConfigMaps and `seed_script`."""
    data: Json = {}
    binary: Json = {}
    suffixes = ", ".join((*engine.init_suffixes, *engine.loaders))
    for ext in extensions:
        ref = f"{ext.get('kind')}/{(ext.get('metadata') or {}).get('name')}"
        if ext.get("kind") != "ConfigMap":
            raise Refused(f"extension {ref} is not a ConfigMap; {engine.plugin} reads seed files from the data "
                           "and binaryData of ConfigMaps", "list only ConfigMaps in the plugin definition's "
                           "extensions (a Secret's values are never copied into the flow)")
        for section, out in (("data", data), ("binaryData", binary)):
            for key, value in sorted((ext.get(section) or {}).items()):
                if not key.endswith((*engine.init_suffixes, *engine.loaders)):
                    raise Refused(f"extension {ref} has {section} key {key!r}, which the {engine.product} image "
                                   f"would ignore in {INIT_DIR}", f"name each seed file with one of: {suffixes}")
                if key in data or key in binary:
                    raise Refused(f"seed file {key!r} comes from two extensions", "rename one of them")
                out[key] = value
    if seed_script:
        if engine.inline_file in data or engine.inline_file in binary:
            raise Refused(f"seed_script and an extension both give {engine.inline_file}",
                           "rename the extension's key (files run in name order)")
        data[engine.inline_file] = seed_script if seed_script.endswith("\n") else seed_script + "\n"
    for key in sorted({*data, *binary}):
        suffix = next((s for s in engine.loaders if key.endswith(s)), None)
        if suffix is not None:
            script = f"{key}.load.sh"
            if script in data or script in binary:
                raise Refused(f"seed file {script!r} comes from an extension and from {key}", "rename one of them")
            data[script] = engine.loaders[suffix](f"{INIT_DIR}/{key}")
    if not data and not binary:
        raise Refused("nothing to seed: seed_script is not set and no extension ConfigMap holds a seed file",
                       "set seed_script, or list a ConfigMap of seed files in the plugin definition's extensions")
    size = sum(len(v.encode()) for v in data.values()) + sum(_decoded_size(v) for v in binary.values())
    if size > MAX_SEED_BYTES:
        raise Refused(f"the seed is {size} bytes; a ConfigMap holds at most {MAX_SEED_BYTES}",
                       "compress it (.sql.gz in binaryData), or seed a smaller data set and load the rest from a "
                       ".sh script")
    return data, binary


def _digest(data: Json, binary: Json) -> str:
    h = hashlib.sha256()
    for key, value in sorted({**data, **binary}.items()):
        h.update(key.encode() + b"\0" + str(value).encode() + b"\0")
    return h.hexdigest()[:16]


def seed_configmap(name: str, data: Json, binary: Json) -> Json:
    obj: Json = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    if data:
        obj["data"] = dict(sorted(data.items()))
    if binary:
        obj["binaryData"] = dict(sorted(binary.items()))
    return obj


def arg_names(engine: Engine) -> tuple[str, ...]:
    """Every arg of the engine's plugin, in signature order (its plugin.yaml argsSchema lists the same)."""
    passwords = tuple(n for p in engine.passwords for n in (p.arg, p.secret_arg, p.key_arg))
    return ("seed_script", "db_name", "db_user", *passwords, "data_dir")


def create_flow(engine: Engine, pod_specs: list[Json], flow_uuid: str, extensions: list[Json] | None,
                args: Mapping[str, str]) -> Json:
    """Kardinal's create_flow result: the seeded pod specs (same count and order), the seed ConfigMap and
    the state (`config_map`: the ConfigMap's name and the files it holds; nothing to undo on delete)."""
    args = {k: v for k, v in args.items() if v}
    name = f"seed-{flow_uuid}"
    try:
        data, binary = seed_files(engine, args.get("seed_script", ""), list(extensions or []))
        digest = _digest(data, binary)
        specs, results = [], []
        for i, pod_spec in enumerate(pod_specs):
            spec, more = seed_pod_spec(engine, pod_spec, i, args, name, digest)
            specs.append(spec)
            results += more
    except Refused as refused:
        return refused.answer(pod_specs)
    return {"pod_specs": specs, "config_map": {"seedConfigMap": name, "files": sorted({*data, *binary})},
            "resources": [seed_configmap(name, data, binary)], "results": results}


def kardinal_functions(engine: Engine) -> tuple[Callable[..., Any], ...]:
    """The plugin's `validate_args`, `create_flow` and `delete_flow`, create_flow advertising every arg of the
    engine (`_common.kardinal_functions`)."""

    def validate(args: dict[str, Any]) -> list[Json]:
        """Checks beyond argsSchema (which devlane applies first); an empty list means valid."""
        return validate_args(engine, args)

    def create(service_specs: list[Json], pod_specs: list[Json], flow_uuid: str, extensions: list[Json] | None = None,
               **args: str) -> Json:
        """The seeded pod specs (same count and order), the seed ConfigMap, and the state."""
        return create_flow(engine, pod_specs, flow_uuid, extensions, args)

    def delete(config_map: Json, flow_uuid: str) -> None:
        """Nothing to undo: the data lives in the pod's emptyDir, and the ConfigMap is pruned with the flow."""
        return None

    return _common.kardinal_functions(arg_names(engine), validate, create, delete)
