"""`devlane plugins new | test`: scaffold a plugin, and check it against golden cases.

Golden cases live in `<plugin>/testdata/<case>/`:

- `input.yaml`: the dependents of one plugin instance, as Kubernetes objects (multi-document).
  Each workload (an object with `spec.template.spec.containers`: Deployment, StatefulSet, ...)
  is paired with the Service of the same name (a bare Service is made up when there is none);
  `devlane.dev/container` on that Service picks the target container, as in a repository.
  Any other object is passed as an extension (`extensions` in a plugin definition).
- `args.yaml` (optional): the plugin-definition args, a mapping.
- `expected.yaml`: the output, in the renderer's canonical YAML: the workloads after the plugin,
  the plugin-state ConfigMap, then the objects the plugin added. `--update` rewrites it.
- `error.txt` (instead of `expected.yaml`): a substring the call's error must contain.

The plugin runs through the real runtime (`make_runtime`) with the render's own argument checks
(argsSchema, default_args, validate_args), as instance `<plugin name>` in flow `test`, so a case
that passes here behaves the same in `devlane render`. A plugin marked `sideEffects: External`
runs for real here too: this is its author's machine, not a render.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .emit import _label_resource, state_configmap
from .errors import DevlaneError, Problem, Where, fail
from .invocation import Invocation, Outcome
from .manifest import MANIFEST, RUNTIMES, load_manifest
from .model import _plain_args
from .run_plugins import Budget, Choice, Runner, Settings, _back, _to_front
from .sources import PluginSource, is_plugin_dir
from .yamlio import dump, load_one, parse_documents

FLOW_ID = "test"
CONTAINER_ANNOTATION = "devlane.dev/container"
EXPECTED_HEADER = ("# Expected output of `devlane plugins test`: the workloads after the plugin, the plugin-state\n"
                   "# ConfigMap, then any objects the plugin added. Regenerate with `devlane plugins test --update`.\n")
NAME_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


# --------------------------------------------------------------------------------------------------
# Golden cases


@dataclass
class Case:
    name: str
    path: Path
    objects: list[dict]
    args: dict[str, str] = field(default_factory=dict)
    expected: list[dict] | None = None
    error: str | None = None


def _is_workload(obj: dict) -> bool:
    containers = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")
    return isinstance(containers, list) and bool(containers)


def _objects(path: Path) -> list[dict]:
    docs = [d for d in parse_documents(path.read_bytes(), str(path)) if d is not None]
    for i, d in enumerate(docs):
        if not isinstance(d, dict) or not d.get("kind") or not (d.get("metadata") or {}).get("name"):
            raise fail("every document must be a Kubernetes object with kind and metadata.name",
                       Where(file=str(path), document=i), code="plugin-test")  # fmt: skip
    return docs


def load_case(path: Path) -> Case:
    """Read one `testdata/<case>/` directory; problems name the file."""
    input_file = path / "input.yaml"
    if not input_file.is_file():
        raise fail(f"no input.yaml in {path}", Where(file=str(path)),
                   "add input.yaml: the workloads and Services the plugin receives", code="plugin-test")
    case = Case(path.name, path, _objects(input_file))
    args_file = path / "args.yaml"
    if args_file.is_file():
        raw = load_one(args_file.read_bytes(), str(args_file)) if args_file.read_bytes().strip() else {}
        if not isinstance(raw, dict) or any(isinstance(v, dict | list) for v in raw.values()):
            raise fail("args.yaml must be a mapping of names to plain values", Where(file=str(args_file)),
                       code="plugin-test")  # fmt: skip
        case.args = _plain_args(raw)
    if (path / "error.txt").is_file():
        case.error = (path / "error.txt").read_text().strip()
    elif (path / "expected.yaml").is_file():
        case.expected = _objects(path / "expected.yaml") if (path / "expected.yaml").read_bytes().strip() else []
    return case


def invocation_for(case: Case, plugin: str) -> tuple[Invocation, list[int]]:
    """The CreateFlow a render would send for these dependents; also where each target container was."""
    services = {o["metadata"]["name"]: o for o in case.objects if o["kind"] == "Service"}
    workloads = [o for o in case.objects if o["kind"] != "Service" and _is_workload(o)]
    extensions = [o for o in case.objects if o["kind"] != "Service" and not _is_workload(o)]
    where = Where(file=str(case.path / "input.yaml"))
    if not workloads:
        raise fail("input.yaml has no workload (an object with spec.template.spec.containers)", where,
                   code="plugin-test")  # fmt: skip
    names = [w["metadata"]["name"] for w in workloads]
    stray = sorted(set(services) - set(names))
    if stray:
        raise fail(f"Service {', '.join(stray)} has no workload of the same name", where,
                   "each workload is paired with the Service of its name", code="plugin-test")  # fmt: skip
    moved, paired, indexes = [], [], []
    for w in workloads:
        name = w["metadata"]["name"]
        svc = copy.deepcopy(services.get(name) or {"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": name, **({"namespace": w["metadata"]["namespace"]} if w["metadata"].get("namespace") else {})}})
        container = ((svc["metadata"].get("annotations") or {}).get(CONTAINER_ANNOTATION))
        obj = copy.deepcopy(w)
        indexes.append(_to_front(obj["spec"]["template"]["spec"], container)[1])
        moved.append(obj)
        paired.append(svc)
    inv = Invocation(operation="CreateFlow", instance=plugin, flow_id=FLOW_ID, plugin=plugin, args=dict(case.args),
                     dependents=names, workloads=moved, services=paired,
                     extensions=copy.deepcopy(extensions))  # fmt: skip
    return inv, indexes


def output_objects(inv: Invocation, outcome: Outcome, indexes: list[int], plugin: str) -> list[dict]:
    """Workloads with the plugin's pod specs, the state ConfigMap and new objects, as render emits them."""
    if len(outcome.pod_specs) != len(inv.workloads):
        raise fail(f"the result has {len(outcome.pod_specs)} pod specs for {len(inv.workloads)} dependents",
                   Where(plugin=plugin), code="plugin-pod-spec-count")  # fmt: skip
    out = []
    for w, spec, idx in zip(inv.workloads, outcome.pod_specs, indexes, strict=True):
        obj = copy.deepcopy(w)
        obj["spec"]["template"]["spec"] = _back(copy.deepcopy(spec), idx)
        out.append(obj)
    ns = inv.workloads[0]["metadata"].get("namespace")
    out.append(state_configmap(inv.instance, FLOW_ID, outcome.config_map, ns, plugin, list(inv.dependents)))
    out += [_label_resource(copy.deepcopy(r), FLOW_ID, ns) for r in outcome.resources]
    return json.loads(json.dumps(out))  # plain data, as it would be read back from the file


def dump_objects(objects: list[dict]) -> str:
    return "".join(f"---\n{dump(o)}" for o in objects)


def _sorted_below_top(value: Any, depth: int = 0) -> Any:
    """Nested keys sorted (the top keeps the canonical order), so a diff shows only real changes."""
    if isinstance(value, dict):
        items = value.items() if depth == 0 else sorted(value.items(), key=lambda kv: str(kv[0]))
        return {k: _sorted_below_top(v, depth + 1) for k, v in items}
    if isinstance(value, list):
        return [_sorted_below_top(v, depth + 1) for v in value]
    return value


def diff_text(expected: list[dict], actual: list[dict], case: str) -> str:
    a = dump_objects([_sorted_below_top(o) for o in expected]).splitlines(keepends=True)
    b = dump_objects([_sorted_below_top(o) for o in actual]).splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"{case}/expected.yaml", f"{case}/actual"))


def _error_text(exc: DevlaneError) -> str:
    return "\n".join(p.format() for p in exc.problems)


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.rstrip("\n").splitlines())


def plugin_name(path: Path) -> str:
    """`metadata.name` from plugin.yaml, else the directory name."""
    file = path / MANIFEST
    if file.is_file():
        raw = load_one(file.read_bytes(), str(file))
        name = ((raw or {}).get("metadata") or {}).get("name") if isinstance(raw, dict) else None
        if isinstance(name, str) and name:
            return name
    return path.name


def run_cases(directory: Path, update: bool = False, debug: bool = False, only: list[str] | None = None) -> int:
    """Run every golden case; print one line per case and a summary; 1 when any case fails."""
    directory = directory.resolve()
    if not directory.is_dir() or not is_plugin_dir(directory):
        raise fail(f"{directory} is not a plugin directory (no main.py or plugin.yaml)", None,
                   "pass the plugin's directory, e.g. devlane plugins test ./plugins/my-plugin",
                   code="plugin-test")  # fmt: skip
    testdata = directory / "testdata"
    cases = sorted(p for p in testdata.iterdir() if p.is_dir()) if testdata.is_dir() else []
    if only:
        missing = sorted(set(only) - {c.name for c in cases})
        if missing:
            raise fail(f"no case {', '.join(missing)} under {testdata}", None,
                       f"cases: {', '.join(c.name for c in cases) or 'none'}", code="plugin-test")  # fmt: skip
        cases = [c for c in cases if c.name in only]
    if not cases:
        raise fail(f"no golden cases under {testdata}", None,
                   "add testdata/<case>/input.yaml (+ args.yaml, expected.yaml or error.txt); "
                   "`devlane plugins new` shows the layout", code="plugin-test")  # fmt: skip
    name = plugin_name(directory)
    manifest = load_manifest(directory, name)
    choice = Choice(name, PluginSource(name, directory, "flag"), manifest, {}, False, "devlane plugins test")
    runner = Runner(Settings(budget=Budget(), jobs=1, debug=debug))
    passed = failed = updated = 0
    try:
        for path in cases:
            status, detail = _run_one(path, name, choice, runner, update)
            print(f"{status} {path.name}")
            if detail:
                print(_indent(detail), end="")
            passed += status == "ok"
            failed += status == "FAIL"
            updated += status == "updated"
    finally:
        runner.close()
    parts = [f"{passed} passed", f"{failed} failed"] + ([f"{updated} updated"] if updated else [])
    print(f"{', '.join(parts)} ({name}, runtime {manifest.runtime})")
    return 1 if failed else 0


def _run_one(path: Path, name: str, choice: Choice, runner: Runner, update: bool) -> tuple[str, str]:
    try:
        case = load_case(path)
        inv, indexes = invocation_for(case, name)
    except DevlaneError as exc:
        return "FAIL", _error_text(exc)
    try:
        outcome, _, _ = runner.create(inv, choice)
        actual = output_objects(inv, outcome, indexes, name)
    except DevlaneError as exc:
        if case.error is not None and case.error in _error_text(exc):
            return "ok", ""
        want = f"expected an error containing {case.error!r}, got:\n" if case.error is not None else ""
        return "FAIL", want + _error_text(exc)
    if case.error is not None:
        return "FAIL", f"expected an error containing {case.error!r}, but the call succeeded (remove error.txt " \
                       "and run with --update to record the output)"
    if case.expected == actual:
        return "ok", ""
    if update:
        (path / "expected.yaml").write_text(EXPECTED_HEADER + dump_objects(actual))
        return "updated", ""
    if case.expected is None:
        return "FAIL", "no expected.yaml (run with --update to record the current output)"
    return "FAIL", diff_text(case.expected, actual, path.name)


# --------------------------------------------------------------------------------------------------
# Scaffolding

ARG = "mode"
ARG_DEFAULT = "dev"
CAPABILITIES = ["CreateFlow", "DeleteFlow", "ValidateArgs"]
VERSION = "0.1.0"
INVALID_MESSAGE = "must not contain whitespace"

INPUT_YAML = """\
# The dependents one instance of the plugin receives. Each workload is paired with the Service of
# the same name; other objects would be passed as extensions.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels:
    app: app
spec:
  replicas: 1
  selector:
    matchLabels:
      app: app
  template:
    metadata:
      labels:
        app: app
    spec:
      containers:
        - name: app
          image: example.com/app:1.0
          env:
            - name: LOG_LEVEL
              value: info
---
apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  selector:
    app: app
  ports:
    - name: http
      port: 80
      targetPort: 8080
"""

KARDINAL_MAIN = '''\
"""__NAME__: a devlane plugin written to the Kardinal Python contract (generated by `devlane plugins new`).

In a flow, the dev version of every service that uses this plugin gets the environment variable
__ENV__ set to the `mode` arg on its target container (devlane moves that container to
containers[0] before the call). Replace the logic, keep the function signatures; arguments are
bound by name. Test with: devlane plugins test <this directory>
"""

from __future__ import annotations

import copy

ENV_NAME = "__ENV__"


def _with_env(pod_spec: dict, value: str) -> dict:
    spec = copy.deepcopy(pod_spec)
    env = spec["containers"][0].setdefault("env", [])
    entry = {"name": ENV_NAME, "value": value}
    for i, item in enumerate(env):
        if item.get("name") == ENV_NAME:
            env[i] = entry
            break
    else:
        env.append(entry)
    return spec


def validate_args(args: dict) -> list[dict]:
    """Checks beyond argsSchema in plugin.yaml (devlane applies that first); an empty list means valid."""
    if any(c.isspace() for c in str(args.get("mode", "__DEFAULT__"))):
        return [{"field": "mode", "message": "__INVALID__"}]
    return []


def create_flow(service_specs: list[dict], pod_specs: list[dict], flow_uuid: str, mode: str = "__DEFAULT__") -> dict:
    """The pod specs (same count and order), and the state delete_flow gets back (none needed here)."""
    return {"pod_specs": [_with_env(p, mode) for p in pod_specs], "config_map": {}}


def delete_flow(config_map: dict, flow_uuid: str) -> None:
    """Nothing outside the rendered manifests was created, so there is nothing to clean up."""
    return None
'''

DOCUMENT_LOGIC = '''\
ENV_NAME = "__ENV__"
DEFAULT_MODE = "__DEFAULT__"
ROLE = "devlane.dev/role"  # on every item: workload | service | extension | object


def _set_env(pod_spec: dict, value: str) -> None:
    env = pod_spec["containers"][0].setdefault("env", [])
    entry = {"name": ENV_NAME, "value": value}
    for i, item in enumerate(env):
        if item.get("name") == ENV_NAME:
            env[i] = entry
            break
    else:
        env.append(entry)


def _validate(args: dict) -> list:
    """Checks beyond argsSchema in plugin.yaml (devlane applies that first), as KRM results."""
    if any(c.isspace() for c in str(args.get("mode", DEFAULT_MODE))):
        return [{"severity": "error", "message": "__INVALID__", "field": {"path": "args.mode"}}]
    return []


def handle(operation: str, resource_list: dict) -> dict:
    """One call: change the ResourceList and return it.

    Only spec.template.spec of the workloads may change. Keep every item's annotations
    (config.k8s.io/id maps returned items back to what was sent); add new objects without an id.
    To keep state for DeleteFlow, append one ConfigMap annotated devlane.dev/plugin-state with
    data["config_map.json"] (JSON); DeleteFlow receives it as functionConfig.spec.state.
    """
    args = ((resource_list.get("functionConfig") or {}).get("spec") or {}).get("args") or {}
    if operation == "ValidateArgs":
        resource_list["results"] = _validate(args)
    elif operation == "CreateFlow":
        for item in resource_list.get("items") or []:
            annotations = (item.get("metadata") or {}).get("annotations") or {}
            if annotations.get(ROLE) == "workload":
                _set_env(item["spec"]["template"]["spec"], str(args.get("mode", DEFAULT_MODE)))
    # DeleteFlow: nothing outside the rendered manifests was created, so there is nothing to undo.
    return resource_list
'''

EXEC_MAIN = '''\
#!/usr/bin/env python3
"""__NAME__: a devlane exec plugin (KRM function contract), generated by `devlane plugins new`.

devlane writes one ResourceList (JSON) on stdin and reads it back from stdout; logs go to stderr.
functionConfig.spec carries the operation (CreateFlow, DeleteFlow, ValidateArgs), the args and the
flow; items carry each dependent's workload and Service. Standard library only.
Test with: devlane plugins test <this directory>
"""

import json
import sys

__LOGIC__

def main() -> int:
    resource_list = json.load(sys.stdin)
    operation = ((resource_list.get("functionConfig") or {}).get("spec") or {}).get("operation", "CreateFlow")
    json.dump(handle(operation, resource_list), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

GRPC_MAIN = '''\
#!/usr/bin/env python3
"""__NAME__: a devlane gRPC plugin server, generated by `devlane plugins new`.

devlane starts this server, which listens on $DEVLANE_PLUGIN_ADDRESS; every call carries the same
ResourceList an exec plugin gets on stdin. It needs devlane's Python SDK and grpcio in the python
that runs it. Test with: devlane plugins test <this directory>
"""

import sys

try:
    from renderer.sdk.grpc_server import serve
except ImportError as exc:
    sys.exit(f"__NAME__: this server needs devlane's Python SDK and grpcio ({exc}); pip install devlane")

__LOGIC__

if __name__ == "__main__":
    serve(handle, name="__NAME__", version="__VERSION__", capabilities=__CAPS__,
          description="Sets __ENV__ from the mode arg on the dev version's target container.")
'''

README = """\
# __NAME__

A devlane plugin (runtime `__RUNTIME__`), generated by `devlane plugins new`. In a flow, the dev
version of every service that uses it gets the environment variable `__ENV__` set to the `mode`
arg (default `__DEFAULT__`) on its target container. Replace that logic with your own.

## Files

- `plugin.yaml`: identity, runtime, capabilities, `argsSchema` (checked before any call),
  `sideEffects` (`None`: it only edits the rendered manifests) and `timeoutSeconds`.
- `__IMPL__`: the implementation.
- `testdata/<case>/`: golden cases for `devlane plugins test`:
  `input.yaml` (the dependents' workloads, each paired with the Service of the same name),
  `args.yaml` (the args), and `expected.yaml` (workloads after the plugin, the plugin-state
  ConfigMap, added objects) or `error.txt` (a substring of the expected error).

## Use it

```yaml
# on a pseudo-Service in your repository
kardinal.dev.service/plugin-definition: |
  - name: ./path/to/__NAME__
    type: stateful            # Kardinal's plugin type: stateful or external
    servicename: __NAME__
    args:
      mode: preview
# and on each Service that should use it
kardinal.dev.service/plugins: "__NAME__"
```

Or map the name explicitly: `devlane render --plugin-source __NAME__=PATH ...`.
When the plugin lives inside the repository devlane renders, keep its YAML out of the manifests:
add its directory to `exclude:` in `.devlane.yaml` (e.g. `- "plugins/**"`).

## Test it

```sh
devlane plugins test .            # one line per case, a diff on mismatch
devlane plugins test . --update   # record the current output as expected.yaml
devlane plugins describe __NAME__ REPO
```
"""


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
    case = Case("basic", Path("basic"), [d for d in parse_documents(INPUT_YAML.encode(), "input.yaml") if d])
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
        raise DevlaneError(Problem(f"plugin name {name!r} is not a DNS-style name", hint="use lowercase letters, "
                                   "digits, '-' and '.', at most 63 characters, e.g. feature-flags",
                                   code="usage"), exit_code=2)  # fmt: skip
    dest = parent / name
    if dest.exists() or dest.is_symlink():
        raise fail(f"{dest} already exists; devlane plugins new never overwrites", None,
                   "pick another name or --dir, or remove the directory", code="plugin-new")  # fmt: skip
    env = env_name(name)
    impl = {"kardinal-python": "main.py", "exec": "fn.py", "grpc": "server.py"}[runtime]
    values = {"NAME": name, "ENV": env, "DEFAULT": ARG_DEFAULT, "INVALID": INVALID_MESSAGE, "RUNTIME": runtime,
              "IMPL": impl, "VERSION": VERSION, "CAPS": json.dumps(CAPABILITIES)}  # fmt: skip
    logic = _fill(DOCUMENT_LOGIC, values)
    code = {"kardinal-python": _fill(KARDINAL_MAIN, values),
            "exec": _fill(EXEC_MAIN.replace("__LOGIC__", logic), values),
            "grpc": _fill(GRPC_MAIN.replace("__LOGIC__", logic), values)}[runtime]  # fmt: skip
    files = {
        MANIFEST: f"# {name}: the plugin's identity (devlane schemas/plugin.schema.json).\n"
                  + dump(_manifest(name, runtime, env)),
        impl: code,
        "README.md": _fill(README, values),
        "testdata/basic/input.yaml": INPUT_YAML,
        "testdata/basic/args.yaml": f"{ARG}: preview\n",
        "testdata/basic/expected.yaml": _expected_basic(name, env, "preview"),
        "testdata/invalid-args/input.yaml": INPUT_YAML,
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


# --------------------------------------------------------------------------------------------------
# CLI


def cmd_new(args: argparse.Namespace) -> int:
    dest = scaffold(args.name, args.runtime, Path(args.dir))
    print(f"created {args.runtime} plugin {args.name} in {dest}")
    for f in sorted(p for p in dest.rglob("*") if p.is_file()):
        print(f"  {f.relative_to(dest).as_posix()}")
    print(f"next: devlane plugins test {dest}")
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    return run_cases(Path(args.dir), update=args.update, debug=args.debug, only=args.case or None)


def add_parsers(sub: argparse._SubParsersAction, common: Callable[..., None]) -> None:
    """Register `plugins new` and `plugins test` (they work on a plugin directory, not a repository)."""
    n = sub.add_parser("new", help="scaffold a working plugin: plugin.yaml, args schema, implementation, tests")
    n.add_argument("name", metavar="NAME", help="plugin name (DNS-style: lowercase, digits, '-', '.')")
    n.add_argument("--runtime", choices=list(RUNTIMES), default="kardinal-python",
                   help="kardinal-python (main.py), exec (an executable), grpc (a plugin server)")  # fmt: skip
    n.add_argument("--dir", default=".", metavar="DIR", help="create DIR/NAME (default: ./NAME)")
    n.add_argument("--debug", action="store_true", help="show tracebacks")
    n.set_defaults(handler=cmd_new)
    t = sub.add_parser("test", help="run a plugin's golden cases (testdata/<case>/) and diff the output")
    t.add_argument("dir", metavar="DIR", help="the plugin directory")
    t.add_argument("--update", action="store_true", help="rewrite expected.yaml with the current output")
    t.add_argument("--case", action="append", default=[], metavar="CASE", help="run only this case (repeatable)")
    t.add_argument("--debug", action="store_true", help="show tracebacks and plugin stderr")
    t.set_defaults(handler=cmd_test)
