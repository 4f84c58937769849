"""tests/cluster/build.sh, run for real with a stand-in `go` first on PATH (a real build takes many minutes): it
says so and exits 0 without Go, fails on a failed build, never leaves a half set where the tests look for one (a
killed build leaves only a `.partial` directory, which the next build removes), and reuses a complete set."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest
from support import ROOT, controlplane
from support.processes import wait_for

SCRIPT = ROOT / "tests" / "cluster" / "build.sh"
K = controlplane.versions()["KUBERNETES_VERSION"]
STAGES = ("node/fast/node-initialize", "node/heartbeat-with-lease/node-heartbeat-with-lease", "pod/fast/pod-ready",
          "pod/fast/pod-complete", "pod/fast/pod-delete")

# `go build [flags] -o OUT PKG...` writes a stand-in binary per package (named after the package, or OUT itself);
# FAKE_GO_FAIL makes it fail, FAKE_GO_HANG makes it hang in the Kubernetes module (after etcd's, before kwok's).
# `go list -m` names a stand-in of kwok's module directory, with its stages.
FAKE_GO = textwrap.dedent("""\
    #!/usr/bin/env bash
    case $1 in
        env) echo go1.26.8-standin; exit 0 ;;
        list) echo "$FAKE_KWOK_DIR"; exit 0 ;;  # go list -m -f {{.Dir}} sigs.k8s.io/kwok
        build) ;;
        *) echo "unexpected: go $*" >&2; exit 3 ;;
    esac
    if [ -n "${FAKE_GO_FAIL:-}" ]; then echo "standin.go:1: compile error" >&2; exit 1; fi
    if [ -n "${FAKE_GO_HANG:-}" ] && [ "$(basename "$PWD")" = kubernetes ]; then touch "$FAKE_GO_HANG"; sleep 600; fi
    shift
    while [ "$1" != -o ]; do shift; done
    out=$2; shift 2
    mkdir -p "$(dirname "$out")"
    for pkg in "$@"; do
        name=$(basename "$pkg"); target=$out
        case $out in */) target=$out$name ;; esac
        case $name in kube-*) says="Kubernetes v$FAKE_K" ;; *) says="$name standin" ;; esac
        printf '#!/bin/sh\\necho "%s"\\n' "$says" >"$target"
        chmod 755 "$target"
    done
    """)


@pytest.fixture
def run(tmp_path):
    """Runs build.sh with its cache in tmp_path and the stand-in `go` first on PATH (or no `go` with go=False)."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "go").write_text(FAKE_GO)
    (fake / "go").chmod(0o755)
    for stage in STAGES:
        path = tmp_path / "kwok" / "kustomize" / "stage" / f"{stage}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"kind: Stage\nmetadata:\n  name: {path.stem}\n")
    no_go = [d for d in os.environ["PATH"].split(os.pathsep) if d and not os.access(os.path.join(d, "go"), os.X_OK)]

    def env(go: bool = True, **extra: str) -> dict[str, str]:
        path = [str(fake), *no_go] if go else no_go
        return {**os.environ, "PATH": os.pathsep.join(path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
                "FAKE_K": K, "FAKE_KWOK_DIR": str(tmp_path / "kwok"), **extra}

    def run(*args: str, go: bool = True, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env(go, **extra),
                              timeout=60)

    run.env = env
    return run


def cache_dirs(tmp_path: Path) -> list[str]:
    root = tmp_path / "cache" / "devlane-test-tools"
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != "go") if root.is_dir() else []


def test_without_go_it_says_the_tier_will_be_skipped_and_exits_0(run, tmp_path):
    done = run(go=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "==> Go not found: the cluster tier will be skipped (its tests say so); to run it, install Go >= 1.26 and run "
        "`bash tests/cluster/build.sh`"]
    assert cache_dirs(tmp_path) == []


def test_a_failed_build_exits_1_and_leaves_no_set(run, tmp_path):
    done = run(FAKE_GO_FAIL="1")
    assert done.returncode == 1
    assert "compile error" in done.stderr and "go build of tests/cluster/modules/etcd failed" in done.stderr
    assert cache_dirs(tmp_path) == []


def test_a_killed_build_leaves_no_half_set_the_next_build_completes_and_a_third_reuses_it(run, tmp_path):
    bin_dir = Path(run("--bin-dir").stdout.strip())
    assert bin_dir.parent.parent == tmp_path / "cache" / "devlane-test-tools"
    hang = tmp_path / "hanging"
    build = subprocess.Popen(["bash", str(SCRIPT)], env=run.env(FAKE_GO_HANG=str(hang)), start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(hang.exists, 30)  # etcd is built, the Kubernetes module is building
    finally:
        os.killpg(build.pid, signal.SIGKILL)
        build.wait()
    (partial,) = cache_dirs(tmp_path)
    assert partial.endswith(".partial") and (bin_dir.parent.parent / partial / "bin" / "etcd").exists()
    assert not bin_dir.exists()

    done = run()
    assert done.returncode == 0, done.stderr
    assert cache_dirs(tmp_path) == [bin_dir.parent.name]  # the killed build's leftovers are gone
    assert sorted(p.name for p in bin_dir.iterdir()) == sorted(controlplane.COMPONENTS)
    stages = (bin_dir.parent / "kwok-stages.yaml").read_text()
    assert [line.split(": ")[1] for line in stages.splitlines() if "name:" in line] == [Path(s).name for s in STAGES]
    built = [line for line in done.stdout.splitlines() if ", built): " in line]
    assert [line.split(":")[0] for line in built] == [f"==> {name}" for name in controlplane.COMPONENTS]
    assert f"==> kube-apiserver: Kubernetes v{K} (" in done.stdout

    again = run()
    assert again.returncode == 0 and "building" not in again.stdout
    assert [line.split(":")[0] for line in again.stdout.splitlines()] == [f"==> {n}" for n in controlplane.COMPONENTS]
    assert all(", cached): " in line for line in again.stdout.splitlines())


def test_a_binary_stamped_with_another_version_fails_the_build(run, tmp_path):
    done = run(FAKE_K="0.0.0-master")
    assert done.returncode == 1 and f'reports "Kubernetes v0.0.0-master", not Kubernetes v{K}' in done.stderr
    assert cache_dirs(tmp_path) == []
