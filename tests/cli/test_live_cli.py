"""The live commands' command line, in-process and without a cluster: their usage errors (exit 2), a flow that was
not rendered and a kubeconfig that is not there (exit 1, before any cluster is asked), and `status --timeout`'s
durations. Against a real control plane: tests/cluster/test_live_commands.py."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.cli.live import parse_duration
from renderer.errors import UsageError

UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from(sorted(UNITS))), min_size=1, max_size=4))  # within a week
def test_a_duration_is_the_sum_of_its_parts(parts):
    text = "".join(f"{n}{unit}" for n, unit in parts)
    assert parse_duration(text) == pytest.approx(sum(n * UNITS[unit] for n, unit in parts))


@given(st.text(max_size=12))
def test_anything_else_is_a_usage_error_never_a_crash(text):
    try:
        seconds = parse_duration(text)
    except UsageError as exc:
        assert "--timeout" in exc.problems[0].message
    else:
        assert 0 <= seconds <= 7 * 24 * 3600


def test_plain_seconds_and_kubectl_durations():
    assert [parse_duration(t) for t in ("300", "90s", "5m", "1h30m", "1.5m", "500ms", " 2m ")] == \
        [300, 90, 300, 5400, 90, 0.5, 120]
    for bad in ("", "5 m", "m", "-5s", "1e3", "8d", "200h", "1m30", ".s", "5x"):
        with pytest.raises(UsageError):
            parse_duration(bad)


def rendered(tmp_path, flow: str = "pr-7"):
    """A rendered flow as devlane writes one (its kustomization and one object), without a render."""
    flow_dir = tmp_path / "out" / "flows" / flow
    flow_dir.mkdir(parents=True)
    (flow_dir / "kustomization.yaml").write_text("resources:\n- configmap-web-pr-7.yaml\n")
    (flow_dir / "configmap-web-pr-7.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-pr-7\n  labels:\n    devlane.dev/flow: pr-7\n")
    (flow_dir / "flow.metadata").write_text("{}")
    return tmp_path / "out"


@pytest.mark.parametrize(("argv", "says"), [
    (["verify", "--flow", "pr-7"], "verify checks a rendered flow against a live cluster: pass --server"),
    (["status", "--flow", "pr-7", "--timeout", "5m"], "--timeout is how long --wait waits: pass --wait too"),
    (["status", "--flow", "pr-7", "--wait", "--timeout", "soon"], "--timeout 'soon' is not a duration"),
    (["gc", "--keep", "pr-7", "--yes"], "--yes confirms the deletions of `gc --cluster`"),
    (["gc", "--cluster"], "gc --cluster needs the flows to keep"),
    (["gc", "--cluster", "--keep", "pr-7", "--expired"], "--expired reads the rendered flows' expiry"),
    (["gc", "--cluster", "--keep", "pr-7", "--yes", "--dry-run"], "--yes deletes and --dry-run does not"),
    (["status", "--flow", "Not_A_Flow"], "invalid flow id 'Not_A_Flow'"),
])
def test_usage_errors_exit_2_before_any_cluster_is_asked(harness, tmp_path, argv, says):
    out = rendered(tmp_path)
    done = harness.cli(argv[0], str(harness.root), *argv[1:], *(["--out", str(out)] if argv[0] != "gc" else []),
                       env={"KUBECONFIG": str(tmp_path / "none")})
    assert done.returncode == (1 if "invalid flow id" in says else 2), done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr


def test_a_flow_not_rendered_and_a_missing_kubeconfig_are_clear_errors(harness, tmp_path):
    harness.monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # not a pod: no in-cluster account
    out = rendered(tmp_path)
    done = harness.cli("status", str(harness.root), "--flow", "pr-8", "--out", str(out))
    assert done.returncode == 1
    assert f"devlane: error: no rendered flow pr-8 in {out / 'flows' / 'pr-8'}" in done.stderr
    for command, extra in (("status", []), ("verify", ["--server"])):
        done = harness.cli(command, str(harness.root), "--flow", "pr-7", "--out", str(out), *extra,
                           env={"KUBECONFIG": "", "HOME": str(tmp_path)})
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith(f"devlane: error: no kubeconfig: kubeconfig {tmp_path / '.kube' / 'config'} "
                                      "names no file that exists\n  hint: pass --kubeconfig FILE, set $KUBECONFIG")
    done = harness.cli("gc", str(harness.root), "--cluster", "--keep", "pr-7",
                       env={"KUBECONFIG": f"{tmp_path / 'a'}:{tmp_path / 'b'}"})
    assert done.returncode == 1
    assert f"no kubeconfig: $KUBECONFIG ({tmp_path / 'a'}:{tmp_path / 'b'}) names no file that exists" in done.stderr


def test_a_kubeconfig_without_the_context_asked_for_is_named(harness, tmp_path):
    out = rendered(tmp_path)
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "contexts": [
        {"name": "dev", "context": {"cluster": "dev", "user": "dev"}}]}))
    done = harness.cli("status", str(harness.root), "--flow", "pr-7", "--out", str(out), "--kubeconfig", str(config))
    assert done.returncode == 1
    assert f"devlane: error: kubeconfig {config} sets no current-context\n  hint: pass --context NAME (its contexts: " \
           "dev)" in done.stderr
    done = harness.cli("status", str(harness.root), "--flow", "pr-7", "--out", str(out), "--kubeconfig", str(config),
                       "--context", "prod")
    assert done.returncode == 2 and f"--context prod: kubeconfig {config} has no such context" in done.stderr
    config.write_text("contexts: [dev\n")
    done = harness.cli("status", str(harness.root), "--flow", "pr-7", "--out", str(out), "--kubeconfig", str(config))
    assert done.returncode == 1 and f"devlane: error: {config}:2: invalid YAML" in done.stderr
    assert "hint: fix the kubeconfig" in done.stderr
