"""Calling one Kardinal plugin directly through a runtime, as the plugin stage would: a CreateFlow or
DeleteFlow `Invocation` over full workload and Service objects.

`origin="builtin"` runs the Kardinal adapter in-process (unit tests); `origin="repo"` runs it as a
plugin process, `python -m renderer.sdk.kardinal` (end-to-end tests). Both read the reply with the
same `ReplyReader`, so the texts checked are the ones a user sees.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from renderer.errors import DevlaneError, Problem
from renderer.host.invoke import Invocation, Outcome
from renderer.host.manifest import load_manifest
from renderer.host.resolve import Origin, PluginSource
from renderer.host.runtimes import Runtime, make_runtime

from .paths import FIXTURES, ROOT

PLUGINS = FIXTURES / "plugins"
TIMEOUT = 30.0
KINDS = {"builtin": "builtin", "repo": "kardinal-python"}


def pod(name: str, image: str = "example/app:1", env: list | None = None) -> dict:
    return {"terminationGracePeriodSeconds": 5,
            "containers": [{"name": name, "image": image, "ports": [{"containerPort": 8080}], "env": env or []}]}


def service(app: str, port: int = 8080, port_name: str = "http") -> dict:
    spec = {"type": "ClusterIP", "selector": {"app": app},
            "ports": [{"name": port_name, "port": port, "targetPort": port, "protocol": "TCP"}]}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": app}, "spec": spec}


def workload(app: str, pod_spec: dict) -> dict:
    labels = {"app": app, "version": "v1"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": app},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": copy.deepcopy(pod_spec)}}}


def runtime_for(plugin_dir: Path, name: str, origin: Origin) -> Runtime:
    runtime = make_runtime(PluginSource(name, plugin_dir, origin), load_manifest(plugin_dir, name))
    assert runtime.kind == KINDS[origin]
    return runtime


@dataclass(frozen=True)
class Call:
    runtime: Runtime
    inv: Invocation

    @property
    def instance(self) -> str:
        return self.inv.instance


def make_call(plugin: str, origin: Origin, args: dict | None = None, dependents: tuple[str, ...] = ("cartservice",),
              pods: list[dict] | None = None, base: Path = PLUGINS, instance: str | None = None,
              ports: list[int] | None = None) -> Call:
    """The old `PluginCall`: plugin `base/plugin` named `./plugins/<plugin>`, flow `pr-12`."""
    deps = list(dependents)
    pod_specs = pods if pods is not None else [pod(d) for d in deps]
    ports = ports or [8080] * len(deps)
    name = f"./plugins/{plugin}"
    inv = Invocation("CreateFlow", instance or f"{plugin}-plugin", "pr-12", name, args=args or {}, dependents=deps,
                     workloads=[workload(d, p) for d, p in zip(deps, pod_specs, strict=True)],
                     services=[service(d, p) for d, p in zip(deps, ports, strict=True)])
    return Call(runtime_for(base / plugin, name, origin), inv)


def create_flow(call: Call, timeout: float = TIMEOUT) -> Outcome:
    return call.runtime.create_flow(call.inv, timeout)


def create_error(call: Call, timeout: float = TIMEOUT) -> DevlaneError:
    """The call's error; every problem names the plugin instance."""
    with pytest.raises(DevlaneError) as info:
        create_flow(call, timeout)
    for problem in info.value.problems:
        assert problem.where.plugin == call.instance, problem
    return info.value


def delete_flow(plugin_dir: Path, name: str, instance: str, flow_id: str, config_map, origin: Origin,
                timeout: float = TIMEOUT, args: dict | None = None) -> list[Problem]:
    inv = Invocation("DeleteFlow", instance, flow_id, name, args=dict(args or {}), state=config_map)
    return runtime_for(plugin_dir, name, origin).delete_flow(inv, timeout)


def env_value(container: dict, name: str):
    values = [e.get("value") for e in container.get("env", []) if e.get("name") == name]
    assert len(values) == 1, (name, container.get("env"))
    return values[0]


def flow_workload(name: str, env: list | None = None) -> dict:
    """The dev copy of workload `name` in flow pr-1."""
    container = {"name": "main", "image": f"{name}:2", **({"env": env} if env else {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"{name}-pr-1"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}}}


def flow_service(name: str, port: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{name}-pr-1"},
            "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": port}]}}


def conformance_invocation(operation: str, plugin: str, **changes) -> Invocation:
    """A call of instance `db` of the conformance plugin, for dependents api and worker of flow pr-1."""
    inv = Invocation(operation, "db", "pr-1", plugin, args={"database": "orders"}, dependents=["api", "worker"],
                     workloads=[flow_workload("api", [{"name": "KEEP", "value": "1"}]), flow_workload("worker")],
                     services=[flow_service("api", 80), flow_service("worker", 8080)])
    return dataclasses.replace(inv, **changes)


def assert_seed_error(err: DevlaneError) -> str:
    """What every runtime says when fixtures/plugins/raises fails: the exception, the plugin's own frames
    (never devlane's adapter), and a hint."""
    text = str(err)
    assert "plugin postgres-seed-plugin" in text
    assert "create_flow raised ValueError: seed 'demo' is not valid SQL" in text
    assert "main.py:" in text and "in _load_seed" in text and "in create_flow" in text
    assert "renderer/sdk" not in text and "kardinal.py" not in text
    assert err.problems[0].hint
    return text


def import_builtin(name: str) -> ModuleType:
    """The main.py of devlane's built-in plugin `name` (plugins/NAME), imported as a module, for calling its
    Kardinal functions directly."""
    main_py = ROOT / "plugins" / name / "main.py"
    spec = importlib.util.spec_from_file_location(f"builtin_{name.replace('-', '_')}", main_py)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
