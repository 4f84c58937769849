"""Plugin identity (`plugin.yaml`, CNPG-I's Identity): read without running any plugin code.

A bare Kardinal plugin (only `main.py`) gets a synthesized manifest: runtime kardinal-python,
`sideEffects: None`, and the capabilities of the functions `main.py` defines (found with `ast`,
so discovery never imports the plugin).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core.conforms import conforms
from ..core.files import read_regular
from ..core.schemas import schema_problems
from ..core.yamlio import load_one
from ..errors import DevlaneError, Problem, Where
from ..protocol.krm import RuntimeType

MANIFEST = "plugin.yaml"
SideEffects = Literal["None", "External"]
FUNCTIONS = {
    "create_flow": "CreateFlow",
    "delete_flow": "DeleteFlow",
    "validate_args": "ValidateArgs",
    "default_args": "DefaultArgs",
    "validate_change": "ValidateChange",
    "lifecycle_hook": "LifecycleHook",
}
OPERATION_FUNCTION = {op: fn for fn, op in FUNCTIONS.items()}
# What a plugin without `spec.emits` (every bare Kardinal plugin) may add to a flow: namespaced workload and
# config kinds. Anything else (Secrets, RBAC, NetworkPolicies, routes, custom resources) must be declared.
DEFAULT_EMITS = ("ConfigMap", "Service", "Deployment", "StatefulSet", "Job", "CronJob", "Pod", "PersistentVolumeClaim")


@dataclass(frozen=True)
class Manifest:
    name: str
    runtime: RuntimeType
    path: Path  # the plugin directory
    version: str = ""
    description: str = ""
    command: tuple[str, ...] = ()
    address: str | None = None
    start_timeout: float = 10.0
    capabilities: tuple[str, ...] = ()
    args_schema: dict | None = None
    side_effects: SideEffects = "None"
    timeout_seconds: float | None = None
    lifecycle_kinds: tuple[str, ...] = ()
    limits: dict[str, int] | None = None  # spec.limits: memoryMiB, processes, fileSizeMiB, cpuSeconds
    emits: tuple[str, ...] | None = None  # `spec.emits`: kinds it may add (None: the output policy's default)
    isolates: tuple[str, ...] = ()  # `spec.isolates`: store kinds whose state it gives the lane (shared address)
    receives: tuple[str, ...] = ()  # `spec.receives`: kinds of repository objects it is handed as extensions
    synthesized: bool = False
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    def has(self, operation: str) -> bool:
        return operation in self.capabilities

    @property
    def emitted_kinds(self) -> tuple[str, ...]:
        """The kinds the plugin may add: `spec.emits`, or the default set when it declares none."""
        return DEFAULT_EMITS if self.emits is None else self.emits

    def as_dict(self) -> dict[str, Any]:
        runtime: dict[str, Any] = {"type": self.runtime}
        if self.command:
            runtime["command"] = list(self.command)
        if self.address:
            runtime["address"] = self.address
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "runtime": runtime,
            "capabilities": list(self.capabilities),
            "sideEffects": self.side_effects,
            "timeoutSeconds": self.timeout_seconds,
            "lifecycleKinds": list(self.lifecycle_kinds),
            "limits": self.limits,
            "emits": None if self.emits is None else list(self.emits),
            "isolates": list(self.isolates),
            "receives": list(self.receives),
            "argsSchema": self.args_schema,
            "synthesized": self.synthesized,
        }


def _defined_functions(main_py: Path) -> list[str]:
    try:
        tree = ast.parse(read_regular(main_py), filename=str(main_py))
    except (SyntaxError, ValueError, DevlaneError):
        return ["create_flow", "delete_flow"]  # the import error is reported when it is called
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _synthesize(path: Path, name: str) -> Manifest:
    main_py = path / "main.py"
    defined = _defined_functions(main_py) if main_py.is_file() else []
    caps = tuple(op for fn, op in FUNCTIONS.items() if fn in defined)
    return Manifest(name=name, runtime="kardinal-python", path=path, capabilities=caps, synthesized=True)


def load_manifest(path: Path, name: str) -> Manifest:
    """The manifest of the plugin in `path` (named `name` in plugin definitions)."""
    file = path / MANIFEST
    if not file.is_file():
        return _synthesize(path, name)
    where = Where(file=str(file), plugin=name)
    data = read_regular(file)
    raw = load_one(data, str(file))
    if not isinstance(raw, dict):
        raise DevlaneError(Problem("plugin.yaml must be a mapping (apiVersion, kind, metadata, spec)", where,
                                   "see schemas/plugin.schema.json", code="plugin-manifest"))
    problems = schema_problems(raw, "plugin.schema.json", str(file), data)
    if problems:
        raise DevlaneError([Problem(p.message, where, p.hint, code="plugin-manifest") for p in problems])
    spec = raw.get("spec") or {}
    if "Secret" in (spec.get("receives") or ()):  # the core kind (a group/Kind entry names another group's)
        raise DevlaneError(Problem("plugin.yaml spec.receives lists Secret: devlane never hands a plugin the "
                                   "repository's Secrets (a plugin reads a Secret by reference, in the cluster)",
                                   where, "remove Secret from spec.receives", code="plugin-manifest"))
    runtime = spec.get("runtime") or {"type": "kardinal-python"}
    kind = runtime["type"]
    caps = spec.get("capabilities")
    if caps is None:  # kardinal-python: what main.py defines; other runtimes: the one required operation
        caps = list(_synthesize(path, name).capabilities) if kind == "kardinal-python" else ["CreateFlow"]
    if kind == "kardinal-python" and not (path / "main.py").is_file():
        raise DevlaneError(Problem("plugin.yaml says runtime kardinal-python but the directory has no main.py",
                                   where, "add main.py or set spec.runtime to exec or grpc",
                                   code="plugin-manifest"))
    return Manifest(name=name, runtime=kind, path=path, version=str(spec.get("version", "")),
                    description=str(spec.get("description", "")), command=tuple(runtime.get("command") or ()),
                    address=runtime.get("address"), start_timeout=float(runtime.get("startTimeoutSeconds", 10.0)),
                    capabilities=tuple(caps), args_schema=spec.get("argsSchema"),
                    side_effects=spec.get("sideEffects", "None"), timeout_seconds=spec.get("timeoutSeconds"),
                    lifecycle_kinds=tuple((spec.get("lifecycle") or {}).get("kinds") or ()),
                    limits=spec.get("limits"),
                    emits=None if spec.get("emits") is None else tuple(spec["emits"]),
                    isolates=tuple(spec.get("isolates") or ()), receives=tuple(spec.get("receives") or ()),
                    raw=raw)


def args_problems(manifest: Manifest, args: dict, where: Where) -> list[Problem]:
    """Check plugin-definition args against `argsSchema`; each problem names the field path."""
    if not manifest.args_schema or conforms(args, manifest.args_schema):
        return []
    import jsonschema  # only for args that may be invalid: see `conforms`

    try:
        validator = jsonschema.Draft202012Validator(manifest.args_schema)
    except jsonschema.SchemaError as exc:
        return [Problem(f"argsSchema in plugin.yaml is not a valid JSON Schema: {exc.message}",
                        Where(file=str(manifest.path / MANIFEST), plugin=where.plugin), code="plugin-manifest")]
    out = []
    for err in sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path]):
        path = ".".join(str(p) for p in err.absolute_path)
        field_path = f"args.{path}" if path else "args"
        message = err.message
        if err.validator == "required":
            missing = message.split("'")[1] if "'" in message else message
            field_path, message = f"args.{missing}" if not path else f"args.{path}.{missing}", "is required"
        out.append(Problem(f"{field_path}: {message}", where,
                           f"fix the args in the plugin definition of {where.plugin} "
                           f"(schema: argsSchema in {manifest.path / MANIFEST})", code="plugin-args"))
    return out
