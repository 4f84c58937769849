"""The SDK's Kardinal handler (`renderer.sdk.krm.kardinal(module)`, what exec and gRPC plugins use) against
the built-in runtime (`renderer.host.runtimes.InProcessRuntime`, the same adapter loading main.py), over
the Kardinal fixtures (legacy signatures included), all in-process; and `renderer.sdk.krm.run`, the exec
entry point, with in-memory streams. The cross-runtime comparison with real processes is
tests/contract/test_conformance.py."""

from __future__ import annotations

import copy
import importlib.util
import io
import json
from pathlib import Path

import pytest
from support import FIXTURES
from support import kardinal as calls

from renderer.errors import DevlaneError
from renderer.host.invoke import Invocation
from renderer.host.manifest import Manifest
from renderer.host.resolve import PluginSource
from renderer.host.runtimes import Answer, InProcessRuntime, Runtime
from renderer.sdk.krm import kardinal, run

PLUGIN = "conformance"


class SdkRuntime(Runtime):
    """The ResourceList round trip without a process: `kardinal(module)` answers the document, as `run` does."""

    kind = "exec"

    def __init__(self, module, path: Path):
        manifest = Manifest(name=PLUGIN, runtime="exec", path=path, capabilities=(
            "CreateFlow", "DeleteFlow", "ValidateArgs", "DefaultArgs", "ValidateChange", "LifecycleHook"))
        super().__init__(PluginSource(PLUGIN, path, "flag"), manifest)
        self.handler = kardinal(module)

    def exchange(self, inv: Invocation, data: bytes, timeout: float) -> Answer:
        return Answer(json.dumps(self.handler(json.loads(data))).encode())


def invocation(operation: str, **changes) -> Invocation:
    return calls.conformance_invocation(operation, PLUGIN, **changes)


def brief(problems: list) -> list[tuple]:
    return [(p.message, p.severity, p.where) for p in problems]


def load_fixture(name: str):
    path = FIXTURES / "plugins" / name
    spec = importlib.util.spec_from_file_location(f"sdk_fixture_{name}", path / "main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


@pytest.mark.parametrize("name, args", [
    ("binding", {"text": "hi", "extra": "ignored"}),
    ("legacy_pod_spec", {}),
    ("legacy_deployment_spec", {}),
    ("resources", {}),
    ("results", {"severities": "info,warning"}),
    ("roundtrip", {"config": json.dumps({"z": {"b": 1, "a": [1, 2.5, None]}, "ü": "grüße"})}),
])  # fmt: skip
def test_sdk_binds_and_replies_like_the_builtin_runtime(name, args):
    module, path = load_fixture(name)
    source = PluginSource(PLUGIN, path, "builtin")
    builtin = InProcessRuntime(source, Manifest(name=PLUGIN, runtime="kardinal-python", path=path))
    assert builtin.kind == "builtin"
    sdk = SdkRuntime(module, path)
    inv = invocation("CreateFlow", args=args)
    want, got = builtin.create_flow(copy.deepcopy(inv), 30), sdk.create_flow(copy.deepcopy(inv), 30)
    assert (got.pod_specs, got.config_map, got.resources) == (want.pod_specs, want.config_map, want.resources)
    # the SDK reports through KRM results: its own warnings (deprecated signature, no delete_flow)
    # have the same text; only the code and hint may differ
    assert brief(got.messages) == brief(want.messages)
    delete = invocation("DeleteFlow", args=args, dependents=[], workloads=[], services=[], state=want.config_map)
    assert brief(sdk.delete_flow(delete, 30)) == brief(builtin.delete_flow(delete, 30))


@pytest.mark.parametrize("name, args, text", [
    ("binding", {}, "requires argument 'text'"),
    ("raises", {}, "create_flow raised"),
    ("wrong_count", {}, "returned 1 pod spec for 2 dependents (api, worker)"),
    ("malformed", {"what": "no_config_map"}, "config_map"),
    ("malformed", {"what": "set"}, "not JSON-serializable"),
])  # fmt: skip
def test_sdk_reports_plugin_failures_as_error_results(name, args, text):
    module, path = load_fixture(name)
    with pytest.raises(DevlaneError) as exc:
        SdkRuntime(module, path).create_flow(invocation("CreateFlow", args=args), 30)
    assert text in exc.value.problems[0].message


def test_run_reads_yaml_keeps_stdout_clean_and_fails_with_a_result():
    def handler(resource_list: dict) -> dict:
        print("stray output")
        resource_list["results"] = [{"severity": "info", "message": "seen " + resource_list["items"][0]["kind"]}]
        return resource_list

    out = io.BytesIO()
    doc = b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {apiVersion: v1, kind: Pod}\n"
    assert run(handler, stdin=io.BytesIO(doc), stdout=out, exit=False) == 0
    reply = json.loads(out.getvalue())
    assert reply["results"] == [{"severity": "info", "message": "seen Pod"}]

    def broken(operation: str, resource_list: dict) -> dict:
        raise RuntimeError(f"cannot {operation}")

    out = io.BytesIO()
    request = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [],
               "functionConfig": {"spec": {"operation": "CreateFlow"}}}  # fmt: skip
    assert run(broken, stdin=io.BytesIO(json.dumps(request).encode()), stdout=out, exit=False) == 1
    results = json.loads(out.getvalue())["results"]
    assert results == [{"severity": "error", "message": "RuntimeError: cannot CreateFlow"}]
    out = io.BytesIO()
    assert run(handler, stdin=io.BytesIO(b"{}"), stdout=out, exit=False) == 1
    assert "not a ResourceList" in json.loads(out.getvalue())["results"][0]["message"]
