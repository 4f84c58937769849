"""`devlane plugins new`: scaffold a working plugin (manifest, args schema, implementation, golden cases).

The files come from the templates in `templates/` (package data), with `__NAME__`-style fields
filled in; the basic case's `expected.yaml` is computed the way `devlane plugins test` computes it.
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.yamlio import dump, parse_documents
from ..errors import Problem, UsageError, fail
from ..host.invoke import Outcome
from ..host.manifest import MANIFEST
from .golden import EXPECTED_HEADER, Case, dump_objects, invocation_for, output_objects

NAME_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
ARG = "mode"
ARG_DEFAULT = "dev"
CAPABILITIES = ["CreateFlow", "DeleteFlow", "ValidateArgs"]
VERSION = "0.1.0"
INVALID_MESSAGE = "must not contain whitespace"
IMPLEMENTATION = {"kardinal-python": "main.py", "exec": "fn.py", "grpc": "server.py"}


def template(name: str) -> str:
    """The text of `templates/<name>.tmpl`."""
    return resources.files(__package__).joinpath("templates", f"{name}.tmpl").read_text(encoding="utf-8")


def env_name(name: str) -> str:
    base = re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_")
    return f"{'P_' if base[:1].isdigit() else ''}{base}_MODE"


def _fill(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace(f"__{key}__", value)
    return template


def _manifest(name: str, runtime: str, env: str) -> dict:
    rt: dict[str, Any] = {"type": runtime}
    if runtime == "exec":
        rt["command"] = ["./fn.py"]
    elif runtime == "grpc":
        rt["command"] = ["python3", "./server.py"]
    return {
        "apiVersion": "devlane.dev/v1alpha1",
        "kind": "Plugin",
        "metadata": {"name": name},
        "spec": {
            "version": VERSION,
            "description": f"Sets {env} from the mode arg on the dev version's target container.",
            "runtime": rt,
            "capabilities": list(CAPABILITIES),
            "sideEffects": "None",
            "timeoutSeconds": 30,
            "argsSchema": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    ARG: {"type": "string", "description": f"Value of {env} in the dev version.",
                          "default": ARG_DEFAULT, "minLength": 1, "maxLength": 63},
                },
            },
        },
    }


def _expected_basic(name: str, env: str, value: str) -> str:
    """What the scaffolded logic gives for the basic case, computed the way `plugins test` does."""
    documents = parse_documents(template("input.yaml").encode(), "input.yaml")
    case = Case("basic", Path("basic"), [d for d in documents if d])
    inv, indexes = invocation_for(case, name)
    specs = []
    for w in inv.workloads:
        spec = copy.deepcopy(w["spec"]["template"]["spec"])
        spec["containers"][0].setdefault("env", []).append({"name": env, "value": value})
        specs.append(spec)
    return EXPECTED_HEADER + dump_objects(output_objects(inv, Outcome(specs, {}), indexes, name))


def scaffold(name: str, runtime: str, parent: Path) -> Path:
    """Write a working plugin into parent/name; refuses to touch an existing path."""
    if len(name) > 63 or not NAME_PATTERN.match(name):
        raise UsageError(Problem(f"plugin name {name!r} is not a DNS-style name", hint="use lowercase letters, "
                                 "digits, '-' and '.', at most 63 characters, e.g. feature-flags", code="usage"))
    dest = parent / name
    if dest.exists() or dest.is_symlink():
        raise fail(f"{dest} already exists; devlane plugins new never overwrites", None,
                   "pick another name or --dir, or remove the directory", code="plugin-new")
    env = env_name(name)
    impl = IMPLEMENTATION[runtime]
    values = {"NAME": name, "ENV": env, "DEFAULT": ARG_DEFAULT, "INVALID": INVALID_MESSAGE, "RUNTIME": runtime,
              "IMPL": impl, "VERSION": VERSION, "CAPS": json.dumps(CAPABILITIES)}
    logic = _fill(template("document_logic.py"), values)
    code = {"kardinal-python": _fill(template("kardinal_main.py"), values),
            "exec": _fill(template("exec_main.py").replace("__LOGIC__", logic), values),
            "grpc": _fill(template("grpc_main.py").replace("__LOGIC__", logic), values)}[runtime]
    files = {
        MANIFEST: f"# {name}: the plugin's identity (devlane schemas/plugin.schema.json).\n"
                  + dump(_manifest(name, runtime, env)),
        impl: code,
        "README.md": _fill(template("README.md"), values),
        "testdata/basic/input.yaml": template("input.yaml"),
        "testdata/basic/args.yaml": f"{ARG}: preview\n",
        "testdata/basic/expected.yaml": _expected_basic(name, env, "preview"),
        "testdata/invalid-args/input.yaml": template("input.yaml"),
        "testdata/invalid-args/args.yaml": f"{ARG}: has space\n",
        "testdata/invalid-args/error.txt": f"args.{ARG}: {INVALID_MESSAGE}\n",
    }
    dest.mkdir(parents=True)
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if runtime != "kardinal-python":
        mode = (dest / impl).stat().st_mode
        os.chmod(dest / impl, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return dest
