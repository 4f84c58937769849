"""Repository-level plugin steps (`.devlane.yaml` `pipeline`: pre-render, per-flow, post-render) end to
end, with real subprocess plugins from tests/fixtures/platform and the real CLI."""

from __future__ import annotations

import json

from conftest import kubectl_kustomize
from test_plugin_behaviours import (
    API,
    BOTH,
    FLOW,
    env_of,
    flow_dir,
    log_lines,
    make_repo,
    metadata,
    objects,
    pdef,
    render,
    state,
)


def step(name: str, plugin: str, stage: str, **extra) -> dict:
    return {"name": name, "plugin": plugin, "stage": stage, **extra}


def labels(obj: dict) -> dict:
    return obj["metadata"].get("labels") or {}


def test_per_flow_step_runs_over_every_dev_workload(tmp_path):
    lane = step("lane-env", "./worker", "per-flow", args={"tag": "lane", "env_name": "LANE", "env_value": FLOW})
    make_repo(tmp_path, config={"pipeline": [lane]})
    out = render(tmp_path, *BOTH)
    assert out.returncode == 0, out.stderr
    objs = objects(tmp_path)
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {"LANE": FLOW}
    assert env_of(objs[f"Deployment/worker-{FLOW}"]) == {"LANE": FLOW}
    cm = objs[f"ConfigMap/devlane-state-lane-env-{FLOW}"]
    assert cm["metadata"]["annotations"]["devlane.dev/dependents"] == "api,worker"
    assert state(objs, "lane-env")["tag"] == "lane"
    assert [(p["instance"], p["dependents"]) for p in metadata(tmp_path)["plugins"]] == [
        ("lane-env", ["api", "worker"])]
    kubectl_kustomize(flow_dir(tmp_path))


def test_post_render_steps_run_in_listed_order_over_every_rendered_object(tmp_path):
    steps = [step("mark", "./krm", "post-render", args={"op": "label", "key": "devlane.test/marked", "value": "yes"}),
             step("copy", "./krm", "post-render",
                  args={"op": "label", "key": "devlane.test/copied", "copy_from": "devlane.test/marked"})]  # fmt: skip
    make_repo(tmp_path, [pdef("good", args={"env_name": "GOOD", "env_value": "1"})], api="good",
              config={"pipeline": steps})  # fmt: skip
    log = tmp_path / "log"
    out = render(tmp_path, *API, log=log)
    assert out.returncode == 0, out.stderr
    objs = objects(tmp_path)
    assert {"Deployment", "Service", "Ingress", "ConfigMap"} <= {o["kind"] for o in objs.values()}
    for ref, obj in objs.items():
        assert labels(obj).get("devlane.test/marked") == "yes", ref
        assert labels(obj).get("devlane.test/copied") == "yes", ref  # the second step saw the first's label
        assert "config.k8s.io/id" not in json.dumps(obj)
    calls = [line for line in log_lines(log) if line[0] == "post-render"]
    assert [line[:2] for line in calls] == [["post-render", "label"], ["post-render", "label"]]
    sent = calls[0][2].split(",")
    assert sorted(sent) == sorted(objs)  # the items were exactly the flow's rendered objects
    built = kubectl_kustomize(flow_dir(tmp_path))
    assert all(labels(o).get("devlane.test/copied") == "yes" for o in built)


def test_pre_render_step_edits_the_repository_before_planning(tmp_path):
    pin = step("pin", "./krm", "pre-render", args={"op": "image", "name": "api", "image": "api:patched"})
    make_repo(tmp_path, config={"pipeline": [pin]})
    log = tmp_path / "log"
    out = render(tmp_path, "--env", "api:MODE=dev", log=log)  # no new image: the pre-render one shows
    assert out.returncode == 0, out.stderr
    dev = objects(tmp_path)[f"Deployment/api-{FLOW}"]
    assert dev["spec"]["template"]["spec"]["containers"][0]["image"] == "api:patched"
    assert env_of(dev) == {"MODE": "dev"}
    ((stage, op, items),) = log_lines(log)
    assert (stage, op) == ("pre-render", "image")
    assert {"Deployment/api", "Deployment/worker", "Ingress/shop", "ConfigMap/seed-data"} <= set(items.split(","))
    kubectl_kustomize(flow_dir(tmp_path))


def test_kardinal_python_plugin_cannot_be_a_pre_render_step(tmp_path):
    make_repo(tmp_path, config={"pipeline": [step("early", "./worker", "pre-render")]})
    out = render(tmp_path, *API)
    assert out.returncode == 1
    assert "early" in out.stderr and "pre-render steps transform whole object lists" in out.stderr
    assert "use an exec or grpc plugin" in out.stderr and "lifecycle_hook" in out.stderr
    assert not (tmp_path / "out").exists()


def test_kardinal_python_post_render_step_contributes_through_its_lifecycle_hook(tmp_path):
    make_repo(tmp_path, config={"pipeline": [step("hook", "./hooked", "post-render")]})
    out = render(tmp_path, *API)
    assert out.returncode == 0, out.stderr
    objs = objects(tmp_path)
    key = "hooked.example.com/flow"
    annotated = sorted(ref for ref, o in objs.items() if key in (o["metadata"].get("annotations") or {}))
    assert annotated == [f"Ingress/shop-{FLOW}"]
    assert objs[f"Ingress/shop-{FLOW}"]["metadata"]["annotations"][key] == f"Ingress:{FLOW}"


def test_bypassed_pipeline_steps_warn_and_drop_their_changes(tmp_path):
    steps = [step("flaky", "./worker", "per-flow", behavior="bypass",
                  args={"tag": "flaky", "fail": "1", "env_name": "FLAKY", "env_value": "1"}),
             step("broken", "./krm", "post-render", args={"op": "fail"}, behavior="bypass"),
             step("mark", "./krm", "post-render", args={"op": "label", "key": "devlane.test/marked", "value": "yes"})]
    make_repo(tmp_path, config={"pipeline": steps})  # fmt: skip
    out = render(tmp_path, *API)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.startswith("devlane: warning:")]
    assert any("flaky" in w and "bypass" in w for w in warnings), out.stderr
    assert any("pipeline step broken (post-render) failed and was bypassed" in w for w in warnings), out.stderr
    assert "krm failed on purpose" in out.stderr
    objs = objects(tmp_path)
    assert not [ref for ref, o in objs.items() if "devlane.test/broken" in labels(o)]  # its reply was dropped
    assert all(labels(o).get("devlane.test/marked") == "yes" for o in objs.values())  # the next step still ran
    assert env_of(objs[f"Deployment/api-{FLOW}"]) == {} and state(objs, "flaky") is None
    assert [b["instance"] for b in metadata(tmp_path)["bypassed"]] == ["flaky"]
    kubectl_kustomize(flow_dir(tmp_path))


def test_failing_pipeline_step_fails_the_render_by_default(tmp_path):
    make_repo(tmp_path, config={"pipeline": [step("broken", "./krm", "post-render", args={"op": "fail"})]})
    out = render(tmp_path, *API)
    assert out.returncode == 1
    assert "broken" in out.stderr and "krm failed on purpose" in out.stderr
    assert not (tmp_path / "out").exists()


def test_post_render_step_timing_out_at_the_render_budget_says_so(tmp_path):
    make_repo(tmp_path, config={"pipeline": [step("slow", "./krm", "post-render", args={"sleep": "5"})]})
    out = render(tmp_path, *API, "--timeout", "1")
    assert out.returncode == 1
    assert "slow" in out.stderr and "timed out" in out.stderr
    assert "the rest of the --timeout budget of 1 s" in out.stderr and "hint: raise --timeout" in out.stderr


def test_render_budget_includes_pre_render_steps(tmp_path):
    pre = step("slow-pre", "./krm", "pre-render", args={"sleep": "1"})
    make_repo(tmp_path, [pdef("first", args={"sleep": "1"})], api="first", config={"pipeline": [pre]})
    out = render(tmp_path, *API, "--timeout", "1.5")
    assert out.returncode == 1
    assert "--timeout budget of 1.5 s" in out.stderr
