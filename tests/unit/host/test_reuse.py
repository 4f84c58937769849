"""`renderer/host/reuse.py` in process: which calls have a key, that everything a plugin is given is in it and
nothing else is (the call's time limit), and that a stored outcome comes back as it was and a forged one does not
come back at all. tests/e2e/test_plugin_reuse.py sees the same through renders with a real plugin process."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest
from support.kardinal import conformance_invocation

from renderer.core.cache import Cache
from renderer.errors import Problem, Where
from renderer.host import reuse
from renderer.host.confine import Confinement, Layer, Limits
from renderer.host.invoke import Outcome
from renderer.host.manifest import load_manifest
from renderer.host.resolve import PluginSource
from renderer.host.runtimes import ProcessRuntime

MAIN = "def create_flow(service_specs, pod_specs, flow_uuid, **args):\n    return {'pod_specs': pod_specs}\n"
MANIFEST = """\
apiVersion: devlane.dev/v1alpha1
kind: Plugin
metadata: {name: keyed}
spec:
  runtime: {type: %s}
  argsSchema:
    type: object
    properties: {database: {type: string}, seedling: {type: string, x-devlane-secret: true}}
"""


@dataclasses.dataclass
class Fixed:
    """The parts of a key a test moves: the plugin directory, the sandbox probed and the runtime's limits."""

    plugin: Path
    layers: tuple[str, ...] = ("network-namespace", "filesystem")

    def confinement(self) -> Confinement:
        names = ("network-namespace", "filesystem", "pid-namespace")
        return Confinement("bwrap", "bwrap", tuple(Layer(n, n in self.layers, "") for n in names))


@pytest.fixture
def fixed(tmp_path, monkeypatch) -> Fixed:
    plugin = tmp_path / "keyed"
    plugin.mkdir()
    (plugin / "main.py").write_text(MAIN)
    (plugin / "plugin.yaml").write_text(MANIFEST % "kardinal-python")
    state = Fixed(plugin)
    monkeypatch.setattr(reuse, "confinement", lambda: state.confinement())
    monkeypatch.setattr(reuse, "granted_paths", lambda: [])
    monkeypatch.delenv("DEVLANE_EXTRA", raising=False)
    return state


def choice_of(plugin: Path, name: str = "./keyed"):
    source = PluginSource(name, plugin, "repo")
    manifest = load_manifest(plugin, name)
    choice = type("Choice", (), {"name": name, "source": source, "manifest": manifest})()
    return choice, ProcessRuntime(source, manifest)


def key(fixed: Fixed, **changes) -> str | None:
    choice, rt = choice_of(fixed.plugin)
    return reuse.outcome_key(rt, choice, conformance_invocation("CreateFlow", "./keyed", **changes))


def test_the_same_call_has_the_same_key(fixed):
    one = key(fixed)
    assert one is not None and len(one) == 64
    assert key(fixed) == one


def test_everything_the_plugin_is_given_is_in_the_key(fixed, monkeypatch):
    base = key(fixed)
    inv = conformance_invocation("CreateFlow", "./keyed")
    seen = {base}
    for changed in (
        key(fixed, args={"database": "billing"}),
        key(fixed, flow_id="pr-2"),
        key(fixed, extensions=[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]),
        key(fixed, configs=[("api", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                     "data": {"K": "v"}})]),
        key(fixed, dependents=["api", "web"]),
        key(fixed, workloads=[inv.workloads[1], inv.workloads[0]]),
        key(fixed, services=[inv.services[0], inv.services[0]]),
        key(fixed, instance="db2"),
    ):
        assert changed is not None and changed not in seen
        seen.add(changed)
    (fixed.plugin / "helper.py").write_text("X = 1\n")  # its code
    assert key(fixed) not in seen
    seen.add(key(fixed))
    fixed.layers = ("network-namespace",)  # a weaker sandbox
    assert key(fixed) not in seen
    seen.add(key(fixed))
    monkeypatch.setenv("DEVLANE_EXTRA", "1")  # what it finds in its environment
    assert key(fixed) not in seen
    seen.add(key(fixed))
    monkeypatch.setenv("PATH", "/nowhere")
    assert key(fixed) not in seen
    seen.add(key(fixed))
    choice, rt = choice_of(fixed.plugin)
    rt.limits = Limits(memory_mib=64)
    assert reuse.outcome_key(rt, choice, inv) not in seen


def test_the_rest_of_the_environment_is_not_in_the_key(fixed, monkeypatch):
    """The plugin sees `DEVLANE_*` and PATH of devlane's environment, nothing else: nothing else keeps a hit off."""
    one = key(fixed)
    monkeypatch.setenv("HOME", "/elsewhere")
    monkeypatch.setenv("SOME_TOKEN", "x")
    monkeypatch.setenv("XDEVLANE_NOT", "x")
    assert key(fixed) == one


def test_the_time_limit_is_not_in_the_key(fixed, monkeypatch):
    """The request document sent carries the call's time limit; the same call with more time left is the same call."""
    one = key(fixed)
    real = reuse.request_document
    monkeypatch.setattr(reuse, "request_document", lambda inv, timeout: real(inv, 99.0))
    assert key(fixed) == one


@pytest.mark.parametrize("why", ["exec", "network", "operation", "secret", "granted", "unprepared"])
def test_calls_not_to_reuse_have_no_key(fixed, monkeypatch, why):
    choice, rt = choice_of(fixed.plugin)
    inv = conformance_invocation("CreateFlow", "./keyed")
    assert reuse.outcome_key(rt, choice, inv) is not None
    if why == "exec":
        (fixed.plugin / "plugin.yaml").write_text(MANIFEST % "exec, command: [./main.py]")
        choice, rt = choice_of(fixed.plugin)
        assert rt.kind == "exec"
    elif why == "network":
        rt.network = True
    elif why == "operation":
        inv = dataclasses.replace(inv, operation="DeleteFlow")
    elif why == "secret":
        inv = dataclasses.replace(inv, args={"database": "orders", "seedling": "hunter2-hunter2"})  # marked secret
    elif why == "granted":
        monkeypatch.setattr(reuse, "granted_paths", lambda: ["/tmp"])
    else:
        monkeypatch.setenv("DEVLANE_CACHE", str(fixed.plugin.parent / "cache"))
        (fixed.plugin / "requirements.txt").write_text("example==1.0\n")
    assert reuse.outcome_key(rt, choice, inv) is None


def test_an_outcome_comes_back_as_it_was_stored(tmp_path):
    outcomes = reuse.Outcomes(Cache(tmp_path / "cache"))
    outcome = Outcome([{"containers": [{"name": "main", "image": "api:2"}]}], {"branch": "b-1"},
                      [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seed"}}],
                      [Problem("seeded", Where(plugin="db"), "none", "info", "plugin-info")],
                      [{"dependent": "api", "name": "cfg", "data": {"K": "v"}}])
    assert outcomes.get("ab" * 32) is None
    outcomes.put("ab" * 32, outcome)
    assert outcomes.get("ab" * 32) == outcome
    assert outcomes.get("cd" * 32) is None


@pytest.mark.parametrize("forged", [
    {"result": {"podSpecs": [{"containers": []}], "configMap": None}, "messages": []},
    {"result": {"podSpecs": [], "configMap": None, "resources": [{"kind": "X"}]}, "messages": []},
    {"result": {"podSpecs": [], "configMap": None, "configs": [{"dependent": "api"}]}, "messages": []},
    {"result": {"configMap": None}, "messages": []},
    {"result": {"podSpecs": [], "configMap": None}},
    {"result": {"podSpecs": [], "configMap": None}, "messages": [["m", {}, None, "fatal", "c"]]},
    {"result": {"podSpecs": [], "configMap": None}, "messages": [["m", {}, None, "info"]]},
    {"result": {"podSpecs": [], "configMap": None}, "messages": [[1, {}, None, "info", "c"]]},
    {"result": {"podSpecs": [], "configMap": None}, "messages": [["m", [], None, "info", "c"]]},
    {"result": {"podSpecs": [], "configMap": None}, "messages": [["m", {}, 3, "info", "c"]]},
    {"result": {"podSpecs": [], "configMap": None}, "messages": [["m", {}, None, "info", 7]]},
    {"result": {"podSpecs": [], "configMap": None}, "messages": [["m", {"nowhere": 1}, None, "info", "c"]]},
    {"result": {"podSpecs": [], "configMap": None}, "messages": 5},
    ["not", "an", "object"],
])
def test_a_forged_entry_is_no_outcome(tmp_path, forged):
    cache = Cache(tmp_path / "cache")
    assert cache.put(reuse.cache_kind(), "ab" * 32, forged)
    assert reuse.Outcomes(cache).get("ab" * 32) is None


def test_a_well_formed_entry_is_one(tmp_path):
    """The control of the forged ones: the same shape, well formed, is an outcome."""
    cache = Cache(tmp_path / "cache")
    rows = [["m", {"plugin": "db"}, "h", "warning", "c"], ["n", {}, None, "error", "d"], ["o", {}, None, "info", "e"]]
    assert cache.put(reuse.cache_kind(), "ab" * 32, {"result": {"podSpecs": [], "configMap": None}, "messages": rows})
    got = reuse.Outcomes(cache).get("ab" * 32)
    messages = [Problem("m", Where(plugin="db"), "h", "warning", "c"), Problem("n", Where(), None, "error", "d"),
                Problem("o", Where(), None, "info", "e")]
    assert got == Outcome([], None, [], messages, [])


def test_the_kind_is_named_by_the_code_python_and_installed_distributions(monkeypatch, tmp_path):
    assert reuse.cache_kind().startswith("plugin-outcome-")
    site, here = tmp_path / "site-packages", tmp_path / "here"
    site.mkdir()
    here.mkdir()
    (tmp_path / "lib.zip").write_bytes(b"PK")
    monkeypatch.chdir(here)  # "" on the path: the working directory
    monkeypatch.setattr(sys, "path", ["", *sys.path, str(site), str(tmp_path / "gone"), str(tmp_path / "lib.zip")])
    reuse.cache_kind.cache_clear()
    kinds = [reuse.cache_kind()]
    try:
        for change in (lambda: (site / "somelib").mkdir(),  # a package without metadata: not a distribution
                       lambda: (site / "somelib-1.0.dist-info").mkdir(),
                       lambda: (site / "somelib-1.0.dist-info").rename(site / "somelib-1.1.dist-info"),
                       lambda: (site / "old-2.0.egg-info").mkdir(),
                       lambda: (here / "local-0.1.dist-info").mkdir(),  # an earlier entry of the path
                       lambda: monkeypatch.setattr(reuse, "VERSION", "0.0.0-other")):
            change()
            reuse.cache_kind.cache_clear()
            kinds.append(reuse.cache_kind())
    finally:
        reuse.cache_kind.cache_clear()
    assert kinds[1] == kinds[0]  # the package without metadata
    assert len(set(kinds[1:])) == 6  # each other change named another kind


def test_a_prepared_virtualenv_rebuilt_is_another_interpreter(fixed, tmp_path, monkeypatch):
    """A plugin with requirements runs on the virtualenv `plugins prepare` built: a rebuild (a new ready marker)
    is a new key; no marker, no key."""
    from renderer.host.supply import plugin_cache
    from renderer.host.supply.venvs import READY, requirements_hash

    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    plugin = fixed.plugin
    (plugin / "requirements.txt").write_text("example-package==1.0\n")
    venv = plugin_cache.venv_path(requirements_hash(plugin))
    choice = type("C", (), {"source": type("S", (), {"path": plugin})()})()
    assert reuse._interpreter(choice) is None  # not prepared
    venv.mkdir(parents=True)
    (venv / READY).write_text('{"python": "3.11"}')
    one = reuse._interpreter(choice)
    (venv / "next").write_text('{"python": "3.11"}')  # a rebuild: the same marker, written anew and renamed
    os.replace(venv / "next", venv / READY)
    two = reuse._interpreter(choice)
    assert two not in (None, one)
    (venv / READY).unlink()
    assert reuse._interpreter(choice) is None
    (plugin / "requirements.txt").write_text("# nothing to install\n")
    assert reuse._interpreter(choice) == "devlane"
