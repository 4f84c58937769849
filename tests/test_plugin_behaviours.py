"""The plugin platform's orchestration end to end: real subprocess plugins (tests/fixtures/platform),
the real CLI. Behaviour (enforce|bypass), concurrency and ordering, time limits, args checks,
extensions, implementations (fallbacks), the exec runtime's mutation policy and lifecycle hooks.
Repository-level pipeline steps are in test_plugin_pipeline.py.
"""

from __future__ import annotations

import json
import shutil
import stat
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, app_yaml, kubectl_kustomize, run_cli

PLATFORM = FIXTURES / "platform"
FLOW = "pr-1"
PLUGIN_NAMES = ("worker", "limited", "argcheck", "ext", "external", "krm", "hooked")

BASE = app_yaml("api", "%(api)s") + app_yaml("worker", "%(worker)s") + textwrap.dedent("""
    apiVersion: networking.k8s.io/v1
    kind: Ingress
    metadata:
      name: shop
      annotations: {kardinal.dev.service/ingress: "true"}
    spec:
      rules:
        - host: shop.example.com
          http:
            paths:
              - path: /
                pathType: Prefix
                backend: {service: {name: api, port: {number: 80}}}
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: seed-data}
    data: {seed: hello-from-the-repo}
""")


# --------------------------------------------------------------------------------------------------
# Helpers (shared with test_plugin_pipeline.py)


def plugin_flags(tmp_path: Path) -> list[str]:
    """Copy the fixture plugins out of the source tree (exec scripts need their executable bit)."""
    dest = tmp_path / "plugins"
    if not dest.exists():
        shutil.copytree(PLATFORM, dest, ignore=shutil.ignore_patterns("__pycache__"))
        fn = dest / "krm" / "fn.py"
        fn.chmod(fn.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return [f"--plugin-source=./{n}={dest / n}" for n in PLUGIN_NAMES]


def pdef(servicename: str, plugin: str = "./worker", **extra) -> dict:
    return {"name": plugin, "type": "stateful", "servicename": servicename, **extra}


def make_repo(tmp_path: Path, defs: list[dict] = (), api: str = "", worker: str = "",
              config: dict | None = None) -> Path:  # fmt: skip
    repo = tmp_path / "repo"
    repo.mkdir()
    text = BASE % {"api": api, "worker": worker}
    if defs:
        definition = {"apiVersion": "v1", "kind": "Service",
                      "metadata": {"name": "plugin-defs",
                                   "annotations": {"kardinal.dev.service/plugin-definition": yaml.safe_dump(
                                       list(defs), sort_keys=False)}}}  # fmt: skip
        text += "---\n" + yaml.safe_dump(definition, sort_keys=False)
    (repo / "app.yaml").write_text(text)
    if config is not None:
        (repo / ".devlane.yaml").write_text(yaml.safe_dump({"apiVersion": "devlane.dev/v1alpha1", "kind": "Config",
                                                            **config}, sort_keys=False))  # fmt: skip
    return repo


def devlane(tmp_path: Path, command: str, *flags: str, log: Path | None = None):
    env = {"DEVLANE_TEST_LOG": str(log)} if log is not None else {}
    return run_cli(command, str(tmp_path / "repo"), "--flow", FLOW, *flags, *plugin_flags(tmp_path), env=env)


def render(tmp_path: Path, *flags: str, log: Path | None = None, out: str = "out"):
    return devlane(tmp_path, "render", *flags, "--out", str(tmp_path / out), log=log)


def flow_dir(tmp_path: Path, out: str = "out") -> Path:
    return tmp_path / out / "flows" / FLOW


def objects(tmp_path: Path, out: str = "out") -> dict[str, dict]:
    """The rendered flow's objects by `Kind/name`, checking kustomization.yaml lists exactly the files."""
    d = flow_dir(tmp_path, out)
    listed = yaml.safe_load((d / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in d.glob("*.yaml") if p.name != "kustomization.yaml")
    objs = [yaml.safe_load((d / f).read_text()) for f in listed]
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in objs}


def metadata(tmp_path: Path, out: str = "out") -> dict:
    return json.loads((flow_dir(tmp_path, out) / "flow.metadata").read_text())


def env_of(obj: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in obj["spec"]["template"]["spec"]["containers"][0].get("env") or []}


def state(objs: dict[str, dict], instance: str) -> dict | None:
    cm = objs.get(f"ConfigMap/devlane-state-{instance}-{FLOW}")
    return None if cm is None else json.loads(cm["data"]["config_map.json"])


def log_lines(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def intervals(log: Path) -> dict[str, tuple[float, float]]:
    marks: dict[str, dict[str, float]] = {}
    for tag, what, when in log_lines(log):
        marks.setdefault(tag, {})[what] = float(when)
    return {tag: (m["start"], m["end"]) for tag, m in marks.items()}


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


API = ["--service", "api=api:2"]
BOTH = ["--service", "api=api:2", "--service", "worker=worker:2"]


# --------------------------------------------------------------------------------------------------
# 1. behavior: enforce | bypass


def test_bypass_turns_a_failure_into_a_warning_and_drops_the_changes(tmp_path):
    defs = [pdef("good", args={"tag": "good", "env_name": "GOOD", "env_value": "1"}),
            pdef("flaky", args={"tag": "flaky", "fail": "1", "env_name": "FLAKY", "env_value": "1"},
                 behavior="bypass")]  # fmt: skip
    make_repo(tmp_path, defs, api="good, flaky")
    out = render(tmp_path, *API)
    assert out.returncode == 0, out.stderr
    warning = next(line for line in out.stderr.splitlines() if "bypass" in line)
    assert warning.startswith("devlane: warning:") and "plugin flaky" in warning
    assert "flaky failed on purpose" in out.stderr
    objs = objects(tmp_path)
    dev = objs[f"Deployment/api-{FLOW}"]
    assert env_of(dev) == {"GOOD": "1"}  # the bypassed plugin's change is absent, the other one's is kept
    assert dev["spec"]["template"]["spec"]["containers"][0]["image"] == "api:2"
    assert state(objs, "good") is not None and state(objs, "flaky") is None
    meta = metadata(tmp_path)
    assert [(b["instance"], b["name"]) for b in meta["bypassed"]] == [("flaky", "./worker")]
    assert "flaky failed on purpose" in meta["bypassed"][0]["error"]
    assert [p["instance"] for p in meta["plugins"]] == ["good"]
    kubectl_kustomize(flow_dir(tmp_path))


def test_enforce_is_the_default_and_fails_the_render_writing_nothing(tmp_path):
    make_repo(tmp_path, [pdef("flaky", args={"tag": "flaky", "fail": "1"})], api="flaky")
    out = render(tmp_path, *API)
    assert out.returncode == 1
    assert "plugin flaky" in out.stderr and "flaky failed on purpose" in out.stderr
    assert "warning" not in out.stderr
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------------
# 2. concurrency and ordering


def _concurrency_repo(tmp_path: Path) -> None:
    defs = [pdef("slow-a", args={"tag": "a", "sleep": "0.8", "env_name": "A_ENV", "env_value": "a"}),
            pdef("then-c", args={"tag": "c", "env_name": "C_ENV", "env_value": "c"}),
            pdef("slow-b", args={"tag": "b", "sleep": "0.8", "env_name": "B_ENV", "env_value": "b"})]  # fmt: skip
    make_repo(tmp_path, defs, api="slow-a, then-c", worker="slow-b")


def test_independent_instances_run_concurrently_and_output_does_not_depend_on_jobs(tmp_path):
    _concurrency_repo(tmp_path)
    streams = {}
    for jobs in ("1", "2", "8"):
        log = tmp_path / f"log-{jobs}"
        out = devlane(tmp_path, "render", *BOTH, "--jobs", jobs, "--stdout", log=log)
        assert out.returncode == 0, out.stderr
        streams[jobs] = out.stdout
        spans = intervals(log)
        assert sorted(spans) == ["a", "b", "c"]
        assert overlap(spans["a"], spans["b"]) == (jobs != "1"), (jobs, spans)
        assert spans["c"][0] >= spans["a"][1], spans  # shares api with slow-a: runs after it, always
    assert streams["1"] == streams["2"] == streams["8"]
    assert "C_ENV" in streams["1"] and "B_ENV" in streams["1"]


def test_instances_sharing_a_dependent_run_in_plan_order(tmp_path):
    _concurrency_repo(tmp_path)
    out = render(tmp_path, *BOTH, "--jobs", "8")
    assert out.returncode == 0, out.stderr
    objs = objects(tmp_path)
    assert state(objs, "slow-a")["seen_env"] == [[]]
    assert state(objs, "then-c")["seen_env"] == [["A_ENV"]]  # the second saw the first's change
    assert state(objs, "slow-b")["seen_env"] == [[]]
    assert list(env_of(objs[f"Deployment/api-{FLOW}"])) == ["A_ENV", "C_ENV"]
    assert env_of(objs[f"Deployment/worker-{FLOW}"]) == {"B_ENV": "b"}
    assert [p["instance"] for p in metadata(tmp_path)["plugins"]] == ["slow-a", "then-c", "slow-b"]
    kubectl_kustomize(flow_dir(tmp_path))


# --------------------------------------------------------------------------------------------------
# 3. time limits


def test_plugin_yaml_timeout_seconds_limits_each_call(tmp_path):
    make_repo(tmp_path, [pdef("lim", "./limited", args={"sleep": "5"})], api="lim")
    start = time.monotonic()
    out = render(tmp_path, *API)
    assert out.returncode == 1
    assert time.monotonic() - start < 20  # the plugin's own 1 s, not the 60 s default
    assert "plugin lim" in out.stderr and "timed out after 1 s" in out.stderr
    assert not (tmp_path / "out").exists()


def test_plugin_timeout_flag_overrides_plugin_yaml(tmp_path):
    make_repo(tmp_path, [pdef("lim", "./limited", args={"sleep": "1.5"})], api="lim")
    out = render(tmp_path, *API, "--plugin-timeout", "3")
    assert out.returncode == 0, out.stderr
    assert env_of(objects(tmp_path)[f"Deployment/api-{FLOW}"]) == {"SLEPT": "1.5"}


def test_config_timeout_applies_to_plugins_without_their_own(tmp_path):
    make_repo(tmp_path, [pdef("slow", args={"sleep": "5"})], api="slow", config={"plugins": {"timeoutSeconds": 1}})
    out = render(tmp_path, *API)
    assert out.returncode == 1
    assert "plugin slow" in out.stderr and "timed out after 1 s" in out.stderr


def test_render_budget_covers_all_calls(tmp_path):
    defs = [pdef("first", args={"tag": "first", "sleep": "0.5"}), pdef("second", args={"tag": "second", "sleep": "2"})]
    make_repo(tmp_path, defs, api="first, second")
    log = tmp_path / "log"
    out = render(tmp_path, *API, "--timeout", "1.5", log=log)
    assert out.returncode == 1
    assert "plugin second" in out.stderr and "timed out" in out.stderr
    assert "the rest of the --timeout budget of 1.5 s" in out.stderr and "hint: raise --timeout" in out.stderr
    assert [line[:2] for line in log_lines(log)][:3] == [["first", "start"], ["first", "end"], ["second", "start"]]
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------------
# 4. args: argsSchema, default_args, validate_args


@pytest.mark.parametrize(("args", "expected"), [
    ({}, "args.db: is required"),
    ({"db": "Not OK"}, "args.db: 'Not OK' does not match"),
    ({"db": "orders", "mode": "turbo"}, "args.mode: 'turbo' is not one of"),
])  # fmt: skip
def test_args_schema_is_checked_before_any_call(tmp_path, args, expected):
    make_repo(tmp_path, [pdef("db", "./argcheck", args=args)], api="db")
    log = tmp_path / "log"
    out = render(tmp_path, *API, log=log)
    assert out.returncode == 1
    assert expected in out.stderr and "plugin db" in out.stderr
    assert not log.exists()  # not even default_args ran
    assert not (tmp_path / "out").exists()


def test_default_args_fill_what_the_call_sees(tmp_path):
    make_repo(tmp_path, [pdef("db", "./argcheck", args={"db": "orders"})], api="db")
    log = tmp_path / "log"
    out = render(tmp_path, *API, log=log)
    assert out.returncode == 0, out.stderr
    assert log.read_text().splitlines() == ["default_args", "validate_args", "create_flow db=orders mode=safe"]
    objs = objects(tmp_path)
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {"DB_MODE": "orders/safe"}
    assert state(objs, "db") == {"db": "orders", "mode": "safe"}


def test_validate_args_errors_name_the_field(tmp_path):
    make_repo(tmp_path, [pdef("db", "./argcheck", args={"db": "reserved"})], api="db")
    log = tmp_path / "log"
    out = render(tmp_path, *API, log=log)
    assert out.returncode == 1
    assert "plugin db" in out.stderr and "args.db: the name reserved is taken" in out.stderr
    assert "create_flow" not in log.read_text()
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------------
# 5. extensions


def test_extensions_hand_repository_objects_to_the_plugin(tmp_path):
    make_repo(tmp_path, [pdef("seed", "./ext", extensions=[{"kind": "ConfigMap", "name": "seed-data"}])], api="seed")
    out = render(tmp_path, *API)
    assert out.returncode == 0, out.stderr
    objs = objects(tmp_path)
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {"SEED": "hello-from-the-repo"}
    assert state(objs, "seed") == {"extensions": ["ConfigMap/seed-data"]}
    kubectl_kustomize(flow_dir(tmp_path))


def test_unknown_extension_fails_naming_it(tmp_path):
    make_repo(tmp_path, [pdef("seed", "./ext", extensions=[{"kind": "ConfigMap", "name": "no-such-data"}])],
              api="seed")  # fmt: skip
    out = render(tmp_path, *API)
    assert out.returncode == 1
    assert "ConfigMap/no-such-data" in out.stderr and "plugin seed" in out.stderr
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------------
# 6. implementations (fallbacks)

FALLBACK = {"name": "./worker", "args": {"tag": "fallback", "env_name": "IMPL", "env_value": "fallback"}}


@pytest.mark.parametrize(("primary", "why"), [
    ("github.com/acme/missing-plugin", "not pinned in devlane.lock"),
    ("./plugins/not-here", "not found"),
])  # fmt: skip
def test_unavailable_primary_falls_back(tmp_path, primary, why):
    make_repo(tmp_path, [pdef("db", primary, implementations=[FALLBACK])], api="db")
    plan = devlane(tmp_path, "plan", *API)
    assert plan.returncode == 0, plan.stderr
    assert "uses ./worker (kardinal-python): fallback #1" in plan.stdout
    skipped = next(line.strip() for line in plan.stdout.splitlines() if "skipped" in line)
    assert skipped.startswith(f"skipped {primary}: not available: ") and why in skipped
    out = render(tmp_path, *API)
    assert out.returncode == 0, out.stderr
    assert env_of(objects(tmp_path)[f"Deployment/api-{FLOW}"]) == {"IMPL": "fallback"}
    choice = metadata(tmp_path)["plugins"][0]["choice"]
    assert choice["name"] == "./worker" and choice["reason"] == "fallback #1"
    assert [s["name"] for s in choice["skipped"]] == [primary] and why in choice["skipped"][0]["reason"]


def test_no_available_implementation_lists_every_reason(tmp_path):
    defs = [pdef("db", "./plugins/not-here", implementations=["github.com/acme/missing-plugin"])]
    make_repo(tmp_path, defs, api="db")
    out = render(tmp_path, *API)
    assert out.returncode == 1
    assert "no implementation of db is available" in out.stderr
    assert "./plugins/not-here: not available:" in out.stderr
    assert "github.com/acme/missing-plugin: not available:" in out.stderr and "devlane.lock" in out.stderr
    assert not (tmp_path / "out").exists()


def test_external_primary_without_a_provision_record_falls_back_during_render(tmp_path):
    make_repo(tmp_path, [pdef("db", "./external", implementations=[FALLBACK])], api="db")
    plan = devlane(tmp_path, "plan", *API)
    assert plan.returncode == 0, plan.stderr
    assert "uses ./worker" in plan.stdout and "skipped ./external: External" in plan.stdout
    out = render(tmp_path, *API)
    assert out.returncode == 0, out.stderr
    objs = objects(tmp_path)
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {"IMPL": "fallback"}  # the External one never ran
    assert state(objs, "db")["tag"] == "fallback"
    choice = metadata(tmp_path)["plugins"][0]["choice"]
    assert (choice["name"], choice["external"]) == ("./worker", False)
    assert choice["skipped"][0]["name"] == "./external" and "provision" in choice["skipped"][0]["reason"]


# --------------------------------------------------------------------------------------------------
# 8. lifecycle hooks


def test_lifecycle_hook_patches_the_listed_kinds_only(tmp_path):
    make_repo(tmp_path, [pdef("hook", "./hooked")], api="hook")
    out = render(tmp_path, *API)
    assert out.returncode == 0, out.stderr
    objs = objects(tmp_path)
    key = "hooked.example.com/flow"
    ingresses = [o for o in objs.values() if o["kind"] == "Ingress"]
    assert len(ingresses) == 1 and ingresses[0]["metadata"]["annotations"][key] == f"Ingress:{FLOW}"
    others = [ref for ref, o in objs.items() if o["kind"] != "Ingress"]
    assert f"Deployment/api-{FLOW}" in others and f"ConfigMap/devlane-state-hook-{FLOW}" in others
    assert not [ref for ref in others if key in (objs[ref]["metadata"].get("annotations") or {})]
    kubectl_kustomize(flow_dir(tmp_path))


# --------------------------------------------------------------------------------------------------
# 9. exec plugins: the mutation policy through render


@pytest.mark.parametrize(("op", "expected"), [
    ("rename", f"changed Deployment/api-{FLOW} at metadata.name"),
    ("service", "changed Service/api (service) at spec.ports[0].port"),
])  # fmt: skip
def test_exec_plugin_may_not_edit_what_it_does_not_own(tmp_path, op, expected):
    make_repo(tmp_path, [pdef("fn", "./krm", args={"op": op})], api="fn")
    out = render(tmp_path, *API)
    assert out.returncode == 1
    assert "plugin fn" in out.stderr and expected in out.stderr
    assert not (tmp_path / "out").exists()


def test_exec_plugin_may_add_objects(tmp_path):
    make_repo(tmp_path, [pdef("fn", "./krm", args={"op": "job"})], api="fn")
    out = render(tmp_path, *API)
    assert out.returncode == 0, out.stderr
    objs = objects(tmp_path)
    job = objs[f"Job/seed-{FLOW}"]
    assert job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "devlane"
    assert "config.k8s.io/id" not in json.dumps(objs)
    assert metadata(tmp_path)["plugins"][0]["runtime"] == "exec"
    built = kubectl_kustomize(flow_dir(tmp_path))
    assert f"seed-{FLOW}" in [o["metadata"]["name"] for o in built if o["kind"] == "Job"]

