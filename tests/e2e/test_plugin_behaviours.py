"""The plugin platform's orchestration through `devlane render` and `devlane plan` (in-process CLI), with the
real subprocess plugins of tests/fixtures/platform: behaviour (enforce|bypass), concurrency and ordering
with --jobs, time limits and the whole-render --timeout budget, args checks (argsSchema, default_args,
validate_args), extensions, implementations (fallbacks), lifecycle hooks, the exec runtime's mutation
policy, and the repository-level pipeline steps of `.devlane.yaml` (pre-render, per-flow, post-render).
What stops a render before any plugin runs (argsSchema, unknown extensions, no available implementation, a
Kardinal pre-render step) and the plan's list of pipeline steps are in tests/cli/test_plugin_checks.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support import kubectl_kustomize
from support.platform import Platform, pdef

FLOW = "pr-1"
API = ["--service", "api=api:2"]
BOTH = ["--service", "api=api:2", "--service", "worker=worker:2"]


@pytest.fixture
def platform(harness) -> Platform:
    return Platform(harness)


def step(name: str, plugin: str, stage: str, **extra) -> dict:
    return {"name": name, "plugin": plugin, "stage": stage, **extra}


def env_of(obj: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in obj["spec"]["template"]["spec"]["containers"][0].get("env") or []}


def labels(obj: dict) -> dict:
    return obj["metadata"].get("labels") or {}


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


# --------------------------------------------------------------------------------------------------
# 1. behavior: enforce | bypass


def test_bypass_turns_a_failure_into_a_warning_and_drops_the_changes(platform):
    platform.repo(pdef("good", args={"tag": "good", "env_name": "GOOD", "env_value": "1"}),
                  pdef("flaky", args={"tag": "flaky", "fail": "1", "env_name": "FLAKY", "env_value": "1"},
                       behavior="bypass"),
                  api="good, flaky")  # fmt: skip
    out = platform.render(*API)
    assert out.returncode == 0, out.stderr
    warning = next(line for line in out.stderr.splitlines() if "bypass" in line)
    assert warning.startswith("devlane: warning:") and "plugin flaky" in warning
    assert "flaky failed on purpose" in out.stderr
    objs = platform.objects()
    dev = objs[f"Deployment/api-{FLOW}"]
    assert env_of(dev) == {"GOOD": "1"}  # the bypassed plugin's change is absent, the other one's is kept
    assert dev["spec"]["template"]["spec"]["containers"][0]["image"] == "api:2"
    assert state(objs, "good") is not None and state(objs, "flaky") is None
    meta = platform.metadata()
    assert [(b["instance"], b["name"]) for b in meta["bypassed"]] == [("flaky", "./worker")]
    assert "flaky failed on purpose" in meta["bypassed"][0]["error"]
    assert [p["instance"] for p in meta["plugins"]] == ["good"]
    kubectl_kustomize(platform.flow_dir)


def test_enforce_is_the_default_and_fails_the_render_writing_nothing(platform):
    platform.repo(pdef("flaky", args={"tag": "flaky", "fail": "1"}), api="flaky")
    out = platform.render(*API)
    assert out.returncode == 1
    assert "plugin flaky" in out.stderr and "flaky failed on purpose" in out.stderr
    assert "warning" not in out.stderr
    assert not platform.out.exists()


# --------------------------------------------------------------------------------------------------
# 2. concurrency and ordering


def _concurrency_repo(platform: Platform) -> None:
    platform.repo(pdef("slow-a", args={"tag": "a", "sleep": "0.8", "env_name": "A_ENV", "env_value": "a"}),
                  pdef("then-c", args={"tag": "c", "env_name": "C_ENV", "env_value": "c"}),
                  pdef("slow-b", args={"tag": "b", "sleep": "0.8", "env_name": "B_ENV", "env_value": "b"}),
                  api="slow-a, then-c", worker="slow-b")  # fmt: skip


def test_independent_instances_run_concurrently_and_output_does_not_depend_on_jobs(platform, tmp_path):
    _concurrency_repo(platform)
    streams = {}
    for jobs in ("1", "2", "8"):
        log = tmp_path / f"log-{jobs}"
        out = platform.devlane("render", *BOTH, "--jobs", jobs, "--stdout", log=log)
        assert out.returncode == 0, out.stderr
        streams[jobs] = out.stdout
        spans = intervals(log)
        assert sorted(spans) == ["a", "b", "c"]
        assert overlap(spans["a"], spans["b"]) == (jobs != "1"), (jobs, spans)
        assert spans["c"][0] >= spans["a"][1], spans  # shares api with slow-a: runs after it, always
    assert streams["1"] == streams["2"] == streams["8"]
    assert "C_ENV" in streams["1"] and "B_ENV" in streams["1"]


def test_instances_sharing_a_dependent_run_in_plan_order(platform):
    _concurrency_repo(platform)
    out = platform.render(*BOTH, "--jobs", "8")
    assert out.returncode == 0, out.stderr
    objs = platform.objects()
    assert state(objs, "slow-a")["seen_env"] == [[]]
    assert state(objs, "then-c")["seen_env"] == [["A_ENV"]]  # the second saw the first's change
    assert state(objs, "slow-b")["seen_env"] == [[]]
    assert list(env_of(objs[f"Deployment/api-{FLOW}"])) == ["A_ENV", "C_ENV"]
    assert env_of(objs[f"Deployment/worker-{FLOW}"]) == {"B_ENV": "b"}
    assert [p["instance"] for p in platform.metadata()["plugins"]] == ["slow-a", "then-c", "slow-b"]
    kubectl_kustomize(platform.flow_dir)


# --------------------------------------------------------------------------------------------------
# 3. time limits


def test_plugin_yaml_timeout_seconds_limits_each_call(platform):
    platform.repo(pdef("lim", "./limited", args={"sleep": "5"}), api="lim")
    start = time.monotonic()
    out = platform.render(*API)
    assert out.returncode == 1
    assert time.monotonic() - start < 20  # the plugin's own 1 s, not the 60 s default
    assert "plugin lim" in out.stderr and "timed out after 1 s" in out.stderr
    assert not platform.out.exists()


def test_plugin_timeout_flag_overrides_plugin_yaml(platform):
    platform.repo(pdef("lim", "./limited", args={"sleep": "1.5"}), api="lim")
    out = platform.render(*API, "--plugin-timeout", "3")
    assert out.returncode == 0, out.stderr
    assert env_of(platform.objects()[f"Deployment/api-{FLOW}"]) == {"SLEPT": "1.5"}


def test_config_timeout_applies_to_plugins_without_their_own(platform):
    platform.repo(pdef("slow", args={"sleep": "5"}), api="slow", config={"plugins": {"timeoutSeconds": 1}})
    out = platform.render(*API)
    assert out.returncode == 1
    assert "plugin slow" in out.stderr and "timed out after 1 s" in out.stderr


def test_render_budget_covers_all_calls(platform, tmp_path):
    platform.repo(pdef("first", args={"tag": "first", "sleep": "0.5"}),
                  pdef("second", args={"tag": "second", "sleep": "2"}), api="first, second")  # fmt: skip
    log = tmp_path / "log"
    out = platform.render(*API, "--timeout", "1.5", log=log)
    assert out.returncode == 1
    assert "plugin second" in out.stderr and "timed out" in out.stderr
    assert "the rest of the --timeout budget of 1.5 s" in out.stderr and "hint: raise --timeout" in out.stderr
    assert [line[:2] for line in log_lines(log)][:3] == [["first", "start"], ["first", "end"], ["second", "start"]]
    assert not platform.out.exists()


# --------------------------------------------------------------------------------------------------
# 4. args: argsSchema, default_args, validate_args


def test_default_args_fill_what_the_call_sees(platform, tmp_path):
    platform.repo(pdef("db", "./argcheck", args={"db": "orders"}), api="db")
    log = tmp_path / "log"
    out = platform.render(*API, log=log)
    assert out.returncode == 0, out.stderr
    assert log.read_text().splitlines() == ["default_args", "validate_args", "create_flow db=orders mode=safe"]
    objs = platform.objects()
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {"DB_MODE": "orders/safe"}
    assert state(objs, "db") == {"db": "orders", "mode": "safe"}


def test_validate_args_errors_name_the_field(platform, tmp_path):
    platform.repo(pdef("db", "./argcheck", args={"db": "reserved"}), api="db")
    log = tmp_path / "log"
    out = platform.render(*API, log=log)
    assert out.returncode == 1
    assert "plugin db" in out.stderr and "args.db: the name reserved is taken" in out.stderr
    assert "create_flow" not in log.read_text()
    assert not platform.out.exists()


# --------------------------------------------------------------------------------------------------
# 5. extensions


def test_extensions_hand_repository_objects_to_the_plugin(platform):
    platform.repo(pdef("seed", "./ext", extensions=[{"kind": "ConfigMap", "name": "seed-data"}]), api="seed")
    out = platform.render(*API)
    assert out.returncode == 0, out.stderr
    objs = platform.objects()
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {"SEED": "hello-from-the-repo"}
    assert state(objs, "seed") == {"extensions": ["ConfigMap/seed-data"]}
    kubectl_kustomize(platform.flow_dir)


# --------------------------------------------------------------------------------------------------
# 6. implementations (fallbacks)

FALLBACK = {"name": "./worker", "args": {"tag": "fallback", "env_name": "IMPL", "env_value": "fallback"}}


@pytest.mark.parametrize(("primary", "why"), [
    ("github.com/acme/missing-plugin", "not pinned in devlane.lock"),
    ("./plugins/not-here", "not found"),
])  # fmt: skip
def test_unavailable_primary_falls_back(platform, primary, why):
    platform.repo(pdef("db", primary, implementations=[FALLBACK]), api="db")
    plan = platform.devlane("plan", *API)
    assert plan.returncode == 0, plan.stderr
    assert "uses ./worker (kardinal-python): fallback #1" in plan.stdout
    skipped = next(line.strip() for line in plan.stdout.splitlines() if "skipped" in line)
    assert skipped.startswith(f"skipped {primary}: not available: ") and why in skipped
    out = platform.render(*API)
    assert out.returncode == 0, out.stderr
    assert env_of(platform.objects()[f"Deployment/api-{FLOW}"]) == {"IMPL": "fallback"}
    choice = platform.metadata()["plugins"][0]["choice"]
    assert choice["name"] == "./worker" and choice["reason"] == "fallback #1"
    assert [s["name"] for s in choice["skipped"]] == [primary] and why in choice["skipped"][0]["reason"]


def test_external_primary_without_a_provision_record_falls_back_during_render(platform):
    platform.repo(pdef("db", "./external", implementations=[FALLBACK]), api="db")
    plan = platform.devlane("plan", *API)
    assert plan.returncode == 0, plan.stderr
    assert "uses ./worker" in plan.stdout and "skipped ./external: External" in plan.stdout
    out = platform.render(*API)
    assert out.returncode == 0, out.stderr
    objs = platform.objects()
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {"IMPL": "fallback"}  # the External one never ran
    assert state(objs, "db")["tag"] == "fallback"
    choice = platform.metadata()["plugins"][0]["choice"]
    assert (choice["name"], choice["external"]) == ("./worker", False)
    assert choice["skipped"][0]["name"] == "./external" and "provision" in choice["skipped"][0]["reason"]


# --------------------------------------------------------------------------------------------------
# 7. lifecycle hooks


def test_lifecycle_hook_patches_the_listed_kinds_only(platform):
    platform.repo(pdef("hook", "./hooked"), api="hook")
    out = platform.render(*API)
    assert out.returncode == 0, out.stderr
    objs = platform.objects()
    key = "hooked.example.com/flow"
    ingresses = [o for o in objs.values() if o["kind"] == "Ingress"]
    assert len(ingresses) == 1 and ingresses[0]["metadata"]["annotations"][key] == f"Ingress:{FLOW}"
    others = [ref for ref, o in objs.items() if o["kind"] != "Ingress"]
    assert f"Deployment/api-{FLOW}" in others and f"ConfigMap/devlane-state-hook-{FLOW}" in others
    assert not [ref for ref in others if key in (objs[ref]["metadata"].get("annotations") or {})]
    kubectl_kustomize(platform.flow_dir)


# --------------------------------------------------------------------------------------------------
# 8. exec plugins: the mutation policy through render


@pytest.mark.parametrize(("op", "expected"), [
    ("rename", f"changed Deployment/api-{FLOW} at metadata.name"),
    ("service", "changed Service/api (service) at spec.ports[0].port"),
])  # fmt: skip
def test_exec_plugin_may_not_edit_what_it_does_not_own(platform, op, expected):
    platform.repo(pdef("fn", "./krm", args={"op": op}), api="fn")
    out = platform.render(*API)
    assert out.returncode == 1
    assert "plugin fn" in out.stderr and expected in out.stderr
    assert not platform.out.exists()


def test_exec_plugin_may_add_objects(platform):
    platform.repo(pdef("fn", "./krm", args={"op": "job"}), api="fn")
    out = platform.render(*API)
    assert out.returncode == 0, out.stderr
    objs = platform.objects()
    job = objs[f"Job/seed-{FLOW}"]
    assert job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "devlane"
    assert "config.k8s.io/id" not in json.dumps(objs)
    assert platform.metadata()["plugins"][0]["runtime"] == "exec"
    built = kubectl_kustomize(platform.flow_dir)
    assert f"seed-{FLOW}" in [o["metadata"]["name"] for o in built if o["kind"] == "Job"]


# --------------------------------------------------------------------------------------------------
# 9. repository-level pipeline steps (`.devlane.yaml` `pipeline`)


def test_per_flow_step_runs_over_every_dev_workload(platform):
    lane = step("lane-env", "./worker", "per-flow", args={"tag": "lane", "env_name": "LANE", "env_value": FLOW})
    platform.repo(config={"pipeline": [lane]})
    out = platform.render(*BOTH)
    assert out.returncode == 0, out.stderr
    objs = platform.objects()
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {"LANE": FLOW}
    assert env_of(objs[f"Deployment/worker-{FLOW}"]) == {"LANE": FLOW}
    cm = objs[f"ConfigMap/devlane-state-lane-env-{FLOW}"]
    assert cm["metadata"]["annotations"]["devlane.dev/dependents"] == "api,worker"
    assert state(objs, "lane-env")["tag"] == "lane"
    assert [(p["instance"], p["dependents"]) for p in platform.metadata()["plugins"]] == [
        ("lane-env", ["api", "worker"])]  # fmt: skip
    kubectl_kustomize(platform.flow_dir)


def test_post_render_steps_run_in_listed_order_over_every_rendered_object(platform, tmp_path):
    steps = [step("mark", "./krm", "post-render", args={"op": "label", "key": "devlane.test/marked", "value": "yes"}),
             step("copy", "./krm", "post-render",
                  args={"op": "label", "key": "devlane.test/copied", "copy_from": "devlane.test/marked"})]  # fmt: skip
    platform.repo(pdef("good", args={"env_name": "GOOD", "env_value": "1"}), api="good", config={"pipeline": steps})
    log = tmp_path / "log"
    out = platform.render(*API, log=log)
    assert out.returncode == 0, out.stderr
    objs = platform.objects()
    assert {"Deployment", "Service", "Ingress", "ConfigMap"} <= {o["kind"] for o in objs.values()}
    for ref, obj in objs.items():
        assert labels(obj).get("devlane.test/marked") == "yes", ref
        assert labels(obj).get("devlane.test/copied") == "yes", ref  # the second step saw the first's label
        assert "config.k8s.io/id" not in json.dumps(obj)
    calls = [line for line in log_lines(log) if line[0] == "post-render"]
    assert [line[:2] for line in calls] == [["post-render", "label"], ["post-render", "label"]]
    sent = calls[0][2].split(",")
    assert sorted(sent) == sorted(objs)  # the items were exactly the flow's rendered objects
    built = kubectl_kustomize(platform.flow_dir)
    assert all(labels(o).get("devlane.test/copied") == "yes" for o in built)


def test_pre_render_step_edits_the_repository_before_planning(platform, tmp_path):
    pin = step("pin", "./krm", "pre-render", args={"op": "image", "name": "api", "image": "api:patched"})
    platform.repo(config={"pipeline": [pin]})
    log = tmp_path / "log"
    out = platform.render("--env", "api:MODE=dev", log=log)  # no new image: the pre-render one shows
    assert out.returncode == 0, out.stderr
    dev = platform.objects()[f"Deployment/api-{FLOW}"]
    assert dev["spec"]["template"]["spec"]["containers"][0]["image"] == "api:patched"
    assert env_of(dev) == {"MODE": "dev"}
    ((stage, op, items),) = log_lines(log)
    assert (stage, op) == ("pre-render", "image")
    assert {"Deployment/api", "Deployment/worker", "Ingress/shop", "ConfigMap/seed-data"} <= set(items.split(","))
    kubectl_kustomize(platform.flow_dir)


def test_kardinal_python_post_render_step_contributes_through_its_lifecycle_hook(platform):
    platform.repo(config={"pipeline": [step("hook", "./hooked", "post-render")]})
    out = platform.render(*API)
    assert out.returncode == 0, out.stderr
    objs = platform.objects()
    key = "hooked.example.com/flow"
    annotated = sorted(ref for ref, o in objs.items() if key in (o["metadata"].get("annotations") or {}))
    assert annotated == [f"Ingress/shop-{FLOW}"]
    assert objs[f"Ingress/shop-{FLOW}"]["metadata"]["annotations"][key] == f"Ingress:{FLOW}"


def test_bypassed_pipeline_steps_warn_and_drop_their_changes(platform):
    flaky = {"tag": "flaky", "fail": "1", "env_name": "FLAKY", "env_value": "1"}
    steps = [
        step("flaky", "./worker", "per-flow", behavior="bypass", args=flaky),
        step("broken", "./krm", "post-render", args={"op": "fail"}, behavior="bypass"),
        step("mark", "./krm", "post-render", args={"op": "label", "key": "devlane.test/marked", "value": "yes"}),
    ]
    platform.repo(config={"pipeline": steps})
    out = platform.render(*API)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.startswith("devlane: warning:")]
    assert any("flaky" in w and "bypass" in w for w in warnings), out.stderr
    assert any("pipeline step broken (post-render) failed and was bypassed" in w for w in warnings), out.stderr
    assert "krm failed on purpose" in out.stderr
    objs = platform.objects()
    assert not [ref for ref, o in objs.items() if "devlane.test/broken" in labels(o)]  # its reply was dropped
    assert all(labels(o).get("devlane.test/marked") == "yes" for o in objs.values())  # the next step still ran
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {} and state(objs, "flaky") is None
    assert [b["instance"] for b in platform.metadata()["bypassed"]] == ["flaky"]
    kubectl_kustomize(platform.flow_dir)


def test_failing_pipeline_step_fails_the_render_by_default(platform):
    platform.repo(config={"pipeline": [step("broken", "./krm", "post-render", args={"op": "fail"})]})
    out = platform.render(*API)
    assert out.returncode == 1
    assert "broken" in out.stderr and "krm failed on purpose" in out.stderr
    assert not platform.out.exists()


def test_post_render_step_timing_out_at_the_render_budget_says_so(platform):
    platform.repo(config={"pipeline": [step("slow", "./krm", "post-render", args={"sleep": "5"})]})
    out = platform.render(*API, "--timeout", "1")
    assert out.returncode == 1
    assert "slow" in out.stderr and "timed out" in out.stderr
    assert "the rest of the --timeout budget of 1 s" in out.stderr and "hint: raise --timeout" in out.stderr


def test_render_budget_includes_pre_render_steps(platform):
    pre = step("slow-pre", "./krm", "pre-render", args={"sleep": "1"})
    platform.repo(pdef("first", args={"sleep": "1"}), api="first", config={"pipeline": [pre]})
    out = platform.render(*API, "--timeout", "1.5")
    assert out.returncode == 1
    assert "--timeout budget of 1.5 s" in out.stderr
