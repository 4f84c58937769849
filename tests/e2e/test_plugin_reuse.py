"""A pure plugin's CreateFlow answer is reused (`renderer/host/reuse.py`), seen from the rendered objects: the test
plugin stamps every pod spec with its process id and a clock reading, so the stamp is the same in two renders only
when the second did not start the plugin. Whatever the plugin was given changes the stamp (its code, its request,
its environment); a secret arg, the operator's writable grant, `--no-cache` and a damaged entry run it again; the
sandbox policy of the render still refuses a reused answer."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import Harness

from renderer.core.cache import Cache
from renderer.host import reuse

STAMP = """\
import os
import time


def create_flow(service_specs, pod_specs, flow_uuid, note="n"):
    for spec in pod_specs:
        spec["containers"][0].setdefault("env", []).append(
            {"name": "STAMP", "value": f"{os.getpid()}-{time.time_ns()}-{note}"})
    return {"pod_specs": pod_specs, "config_map": {"note": note}}


def delete_flow(config_map, flow_uuid):
    return None
"""
MANIFEST = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": "stamp"},
            "spec": {"runtime": {"type": "kardinal-python"},
                     "argsSchema": {"type": "object", "properties": {"note": {"type": "string"},
                                                                     "token": {"type": "string"}}}}}


@pytest.fixture
def repo(harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Harness:
    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DEVLANE_SANDBOX_WRITABLE", raising=False)
    harness.app("api", "db")
    harness.app("web")
    harness.plugin("plugins/stamp", STAMP, MANIFEST)
    define(harness, {"note": "a"})
    return harness


def define(harness: Harness, args: dict) -> None:
    harness.write("defs.yaml", "")
    harness.plugin_definition({"name": "./plugins/stamp", "type": "stateful", "servicename": "db", "args": args},
                              file="defs.yaml")


def stamp(harness: Harness, *flags: str, env: dict[str, str] | None = None, flow: str = "pr-1") -> str:
    """The STAMP the rendered dev Deployment of api carries."""
    out = harness.cli("render", "--flow", flow, "--service", "api=api:2", "--stdout", *flags, env=env)
    assert out.returncode == 0, out.stderr
    stamps = [e["value"] for doc in yaml.safe_load_all(out.stdout) if doc and doc["kind"] == "Deployment"
              for c in doc["spec"]["template"]["spec"]["containers"] for e in c.get("env") or []
              if e["name"] == "STAMP"]
    assert len(stamps) == 1, stamps
    return stamps[0]


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.glob(f"v1/{reuse.cache_kind()}/*/*") if p.is_file())


def test_the_same_call_is_answered_from_the_cache(repo, tmp_path):
    first = stamp(repo)
    assert first.endswith("-a")
    assert stamp(repo) == first  # the plugin did not run again
    assert len(entries(tmp_path / "cache")) == 1
    live = stamp(repo, "--no-cache")
    assert live != first and live.endswith("-a")  # the plugin does run, and stamps anew each time


def test_a_render_of_other_inputs_runs_the_plugin(repo):
    first = stamp(repo)
    define(repo, {"note": "b"})  # its args
    assert stamp(repo).endswith("-b")
    define(repo, {"note": "a"})
    assert stamp(repo) == first  # back to the first inputs: the first answer
    text = repo.root.joinpath("app.yaml").read_text()
    env = '"image": "api:1", "env": [{"name": "X", "value": "1"}]'
    repo.write("app.yaml", text.replace('"image": "api:1"', env, 1))
    assert stamp(repo) != first  # the workload it is sent
    second = stamp(repo)
    (repo.root / "plugins/stamp/main.py").write_text(STAMP + "\n# another version\n")
    assert stamp(repo) != second  # its code
    third = stamp(repo)
    assert stamp(repo, env={"DEVLANE_PLUGIN_MODE": "x"}) != third  # the environment it is given


def test_another_flow_is_another_call(repo):
    first = stamp(repo)
    assert stamp(repo, flow="pr-2") != first
    assert stamp(repo) == first


def test_secret_args_are_never_stored(repo, tmp_path):
    define(repo, {"note": "a", "token": "sk_test_0123456789abcdef"})
    first = stamp(repo)
    assert stamp(repo) != first
    assert entries(tmp_path / "cache") == []  # (the repository's file holding it is, as a parse: it is in git)


def test_while_the_operator_lets_plugins_write_they_always_run(repo, tmp_path):
    grant = tmp_path / "grant"
    grant.mkdir()
    env = {"DEVLANE_SANDBOX_WRITABLE": str(grant)}
    assert stamp(repo, env=env) != stamp(repo, env=env)
    assert entries(tmp_path / "cache") == []


def test_a_damaged_entry_is_a_miss(repo, tmp_path):
    first = stamp(repo)
    (entry,) = entries(tmp_path / "cache")
    data = bytearray(entry.read_bytes())
    data[-3] ^= 0x01
    entry.write_bytes(bytes(data))
    again = stamp(repo)
    assert again != first


def test_a_forged_entry_is_checked_as_a_reply_is(repo, tmp_path):
    """An entry that is well formed for the cache but is no outcome (a pod spec without containers, a message row
    of another shape) is not used: the plugin runs."""
    first = stamp(repo)
    (entry,) = entries(tmp_path / "cache")
    cache = Cache(tmp_path / "cache")
    kind, key = reuse.cache_kind(), entry.name
    value = cache.get(kind, key)
    for forged in ({**value, "result": {**value["result"], "podSpecs": [{"containers": []}]}},
                   {**value, "messages": [["m", {}, None, "fatal", "c"]]},
                   {**value, "messages": [["m", {"nowhere": 1}, None, "info", "c"]]},
                   {"result": value["result"]}):
        assert cache.put(kind, key, forged)
        assert stamp(repo) != first
        assert cache.put(kind, key, value)
        assert stamp(repo) == first  # the entry as written is used


def test_the_sandbox_policy_still_refuses_a_reused_answer(repo, monkeypatch):
    """A reused answer gets no plugin process, yet the render's sandbox policy holds as for a live call."""
    stamp(repo)
    from renderer.host import runtimes

    def refuse(self, label, where):
        raise runtimes.fail(f"{label} was not run: refused here", where, "allow it", "sandbox-required")

    monkeypatch.setattr(runtimes.Runtime, "confined", refuse)
    out = repo.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout")
    assert out.returncode == 1
    assert "refused here" in out.stderr
