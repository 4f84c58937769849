"""`devlane plugins test`: check a plugin against its golden cases.

Golden cases live in `<plugin>/testdata/<case>/`:

- `input.yaml`: the dependents of one plugin instance, as Kubernetes objects (multi-document).
  Each workload (an object with `spec.template.spec.containers`: Deployment, StatefulSet, ...)
  is paired with the Service of the same name (a bare Service is made up when there is none);
  `devlane.dev/container` on that Service picks the target container, as in a repository.
  Any other object is passed as an extension (`extensions` in a plugin definition); a ConfigMap a
  workload reads (env, envFrom, a volume) is also handed as a render hands it (`config_maps` of a
  Kardinal module).
- `args.yaml` (optional): the plugin-definition args, a mapping.
- `expected.yaml`: the output, in the renderer's canonical YAML: the workloads after the plugin,
  the ConfigMaps it changed, the plugin-state ConfigMap, then the objects the plugin added. `--update` rewrites it.
- `error.txt` (instead of `expected.yaml`): a substring the call's error must contain.

The plugin runs through the real plugin host and runtime with the render's own argument checks
(argsSchema, default_args, validate_args), as instance `<plugin name>` in flow `test`, so a case
that passes here behaves the same in `devlane render`. A plugin marked `sideEffects: External`
runs for real here too: this is its author's machine, not a render.
"""

from __future__ import annotations

import copy
import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core.yamlio import dump, load_one, parse_documents
from ..errors import DevlaneError, Where, fail
from ..host.choose import Choice
from ..host.confine import SandboxPolicy
from ..host.invoke import Invocation, Outcome
from ..host.manifest import MANIFEST, load_manifest
from ..host.plugin_host import PluginHost
from ..host.resolve import PluginSource, is_plugin_dir
from ..render.model.address_reads import config_reads, data_of
from ..render.model.plugin_definitions import plain_args
from ..render.output.emit import label_resource, state_configmap
from ..render.plugins.calls import target_back, target_first

FLOW_ID = "test"
CONTAINER_ANNOTATION = "devlane.dev/container"
EXPECTED_HEADER = ("# Expected output of `devlane plugins test`: the workloads after the plugin, the plugin-state\n"
                   "# ConfigMap, then any objects the plugin added. Regenerate with `devlane plugins test --update`.\n")
Status = Literal["ok", "FAIL", "updated"]


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
                       Where(file=str(path), document=i), code="plugin-test")
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
                       code="plugin-test")
        case.args = plain_args(raw)
    if (path / "error.txt").is_file():
        case.error = (path / "error.txt").read_text().strip()
    elif (path / "expected.yaml").is_file():
        case.expected = _objects(path / "expected.yaml") if (path / "expected.yaml").read_bytes().strip() else []
    return case


def invocation_for(case: Case, plugin: str) -> tuple[Invocation, list[int]]:
    """The CreateFlow a render would send for these dependents; also where each target container was."""
    services = {o["metadata"]["name"]: o for o in case.objects if o["kind"] == "Service"}
    workloads = [o for o in case.objects if o["kind"] != "Service" and _is_workload(o)]
    read = {r.name for w in workloads for r in config_reads(w["spec"]["template"]["spec"]) if r.kind == "ConfigMap"}
    configs = {o["metadata"]["name"]: o for o in case.objects
               if o["kind"] == "ConfigMap" and o["metadata"]["name"] in read}
    extensions = [o for o in case.objects if o["kind"] != "Service" and not _is_workload(o)]
    where = Where(file=str(case.path / "input.yaml"))
    if not workloads:
        raise fail("input.yaml has no workload (an object with spec.template.spec.containers)", where,
                   code="plugin-test")
    names = [w["metadata"]["name"] for w in workloads]
    stray = sorted(set(services) - set(names))
    if stray:
        raise fail(f"Service {', '.join(stray)} has no workload of the same name", where,
                   "each workload is paired with the Service of its name", code="plugin-test")
    moved, paired, indexes = [], [], []
    for w in workloads:
        name = w["metadata"]["name"]
        svc = copy.deepcopy(services.get(name) or {"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": name, **({"namespace": w["metadata"]["namespace"]} if w["metadata"].get("namespace") else {})}})
        container = ((svc["metadata"].get("annotations") or {}).get(CONTAINER_ANNOTATION))
        obj = copy.deepcopy(w)
        obj["spec"]["template"]["spec"], index = target_first(obj["spec"]["template"]["spec"], container)
        indexes.append(index)
        moved.append(obj)
        paired.append(svc)
    inv = Invocation(operation="CreateFlow", instance=plugin, flow_id=FLOW_ID, plugin=plugin, args=dict(case.args),
                     dependents=names, workloads=moved, services=paired,
                     extensions=copy.deepcopy(extensions),
                     configs=[(w["metadata"]["name"], _handed(configs[r.name])) for w in workloads
                              for r in config_reads(w["spec"]["template"]["spec"])
                              if r.kind == "ConfigMap" and r.name in configs])
    return inv, indexes


def _handed(obj: dict) -> dict:
    """A ConfigMap of the case as a render hands it: its name, namespace and text data."""
    meta = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace")}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data_of(obj)}


def output_objects(inv: Invocation, outcome: Outcome, indexes: list[int], plugin: str) -> list[dict]:
    """Workloads with the plugin's pod specs, the state ConfigMap and new objects, as render emits them."""
    if len(outcome.pod_specs) != len(inv.workloads):
        raise fail(f"the result has {len(outcome.pod_specs)} pod specs for {len(inv.workloads)} dependents",
                   Where(plugin=plugin), code="plugin-pod-spec-count")
    out = []
    for w, spec, idx in zip(inv.workloads, outcome.pod_specs, indexes, strict=True):
        obj = copy.deepcopy(w)
        obj["spec"]["template"]["spec"] = target_back(spec, idx)
        out.append(obj)
    ns = inv.workloads[0]["metadata"].get("namespace")
    edited: dict[str, dict] = {}
    for change in outcome.configs:  # as the flow's copy would hold them (one per name in a case)
        edited[change["name"]] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": change["name"]},
                                  "data": change["data"]}
    out += [edited[n] for n in sorted(edited)]
    out.append(state_configmap(inv.instance, FLOW_ID, outcome.config_map, ns, plugin, list(inv.dependents)))
    out += [label_resource(r, FLOW_ID, ns) for r in outcome.resources]
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


def plugin_name(path: Path) -> str:
    """`metadata.name` from plugin.yaml, else the directory name."""
    file = path / MANIFEST
    if file.is_file():
        raw = load_one(file.read_bytes(), str(file))
        name = ((raw or {}).get("metadata") or {}).get("name") if isinstance(raw, dict) else None
        if isinstance(name, str) and name:
            return name
    return path.name


@dataclass(frozen=True)
class CaseResult:
    name: str
    status: Status
    detail: str = ""


@dataclass(frozen=True)
class GoldenRun:
    plugin: str
    runtime: str
    cases: list[CaseResult]

    def count(self, status: Status) -> int:
        return sum(1 for c in self.cases if c.status == status)


def run_cases(directory: Path, update: bool = False, only: list[str] | None = None,
              allow_weak: bool = False) -> GoldenRun:
    """Run every golden case of the plugin in `directory` (`--update` rewrites mismatching expectations); the
    directory is unpinned code, so it runs with every sandbox layer unless `allow_weak` (--allow-weak-sandbox)."""
    directory = directory.resolve()
    if not directory.is_dir() or not is_plugin_dir(directory):
        raise fail(f"{directory} is not a plugin directory (no main.py or plugin.yaml)", None,
                   "pass the plugin's directory, e.g. devlane plugins test ./plugins/my-plugin",
                   code="plugin-test")
    testdata = directory / "testdata"
    cases = sorted(p for p in testdata.iterdir() if p.is_dir()) if testdata.is_dir() else []
    if only:
        missing = sorted(set(only) - {c.name for c in cases})
        if missing:
            raise fail(f"no case {', '.join(missing)} under {testdata}", None,
                       f"cases: {', '.join(c.name for c in cases) or 'none'}", code="plugin-test")
        cases = [c for c in cases if c.name in only]
    if not cases:
        raise fail(f"no golden cases under {testdata}", None,
                   "add testdata/<case>/input.yaml (+ args.yaml, expected.yaml or error.txt); "
                   "`devlane plugins new` shows the layout", code="plugin-test")
    name = plugin_name(directory)
    manifest = load_manifest(directory, name)
    choice = Choice(name, PluginSource(name, directory, "flag"), manifest, {}, False, "devlane plugins test")
    with PluginHost(directory, {}, {}, None, jobs=1, sandbox=SandboxPolicy(allow_weak=allow_weak)) as host:
        results = [CaseResult(path.name, *_run_one(path, name, choice, host, update)) for path in cases]
    return GoldenRun(name, manifest.runtime, results)


def _run_one(path: Path, name: str, choice: Choice, host: PluginHost, update: bool) -> tuple[Status, str]:
    try:
        case = load_case(path)
        inv, indexes = invocation_for(case, name)
    except DevlaneError as exc:
        return "FAIL", _error_text(exc)
    try:
        outcome = host.create(inv, choice).outcome
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
