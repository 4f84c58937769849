"""A hostile repository names files outside itself, and gets nothing: every path a repository gives (Helm values
files and charts, kustomize resources, bases, generators and patches, `inputs:` paths, plugin sources), symlinks
followed, must stay inside it (renderer/core/fence.py), or the render stops with one error naming the field and
the path; a directory beside it only where the operator allows it (--allow-path, $DEVLANE_ALLOW_PATHS). Each
case runs the real CLI, with bwrap and without it (the fence does not depend on the sandbox), with a planted
secret outside the repository and a planted kubeconfig in HOME; neither reaches stdout or stderr.

With bwrap, a build tool sees only the system, itself and the repository: a stand-in kustomize (the operator's
$DEVLANE_KUSTOMIZE) reports what it can read, and /etc, HOME, the host's /tmp and the directory beside the
repository are not there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support import SHOP_CHART, app_yaml

from renderer.host import confine

pytestmark = pytest.mark.e2e

SECRET = "PLANTED-SECRET-4c1d"
KUBE_TOKEN = "PLANTED-KUBE-TOKEN-9e7f"
FLOW = ("--flow", "pr-1", "--service", "shop-api=api:2", "--stdout")
needs_helm = pytest.mark.skipif(shutil.which("helm") is None, reason="helm not installed (run tests/setup_helm.sh)")
needs_kustomize = pytest.mark.skipif(shutil.which("kubectl") is None and shutil.which("kustomize") is None,
                                     reason="kubectl (kustomize) not installed")


@pytest.fixture
def mode(sandbox) -> dict:
    """The environment of the real `devlane` processes: the sandbox's (`support.sandbox`), inherited."""
    return {}


@pytest.fixture
def planted(harness, tmp_path) -> dict[str, Path]:
    """A secret beside the repository and a kubeconfig in the HOME the render runs with."""
    outside = tmp_path / "outside"
    (outside / "base").mkdir(parents=True)
    (outside / "secret.yaml").write_text(f"image: {SECRET}\n")
    (outside / "secret.env").write_text(f"TOKEN={SECRET}\n")
    (outside / "leak.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: leak}}\n"
                                       f"data: {{token: {SECRET}}}\n")  # fmt: skip
    (outside / "base" / "kustomization.yaml").write_text("resources: [leak.yaml]\n")
    shutil.copy(outside / "leak.yaml", outside / "base" / "leak.yaml")
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(f"users: [{{name: x, user: {{token: {KUBE_TOKEN}}}}}]\nimage: x\n")
    return {"outside": outside, "home": home}


def chart(harness, rel: str = "charts/shop") -> Path:
    for name, text in SHOP_CHART.items():
        harness.write(f"{rel}/{name}", text)
    return harness.root / rel


def run(harness, planted, mode, *extra: str):
    return harness.run("render", *FLOW, *extra, env={"HOME": str(planted["home"]), **mode})


def refused(out, *said: str) -> None:
    assert out.returncode == 1 and out.stdout == "", out.stderr
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("devlane: error:")]
    assert len(errors) == 1, out.stderr
    assert "outside the repository" in out.stderr and all(s in out.stderr for s in said), out.stderr
    assert SECRET not in out.stderr and KUBE_TOKEN not in out.stderr and "Traceback" not in out.stderr


# --------------------------------------------------------------------------------------------------
# Helm


@needs_helm
@pytest.mark.parametrize("values", ["relative", "absolute-home", "symlink", "dotdot-home"])
def test_a_values_file_outside_the_repository_is_refused(harness, planted, mode, values):
    chart(harness)
    named = {"relative": "../outside/secret.yaml", "absolute-home": str(planted["home"] / ".kube" / "config"),
             "symlink": "env/linked.yaml", "dotdot-home": "../home/.kube/config"}[values]
    if values == "symlink":
        (harness.root / "env").mkdir()
        (harness.root / "env" / "linked.yaml").symlink_to(planted["outside"] / "secret.yaml")
    harness.config({"inputs": [{"helm": "charts/shop", "values": [named]}]})
    refused(run(harness, planted, mode), "the values file", named)


@needs_helm
@pytest.mark.parametrize("where", ["template", "subchart", "chart"])
def test_a_symlink_out_of_a_chart_is_refused(harness, planted, mode, where):
    directory = chart(harness)
    if where == "template":
        (directory / "templates" / "leak.yaml").symlink_to(planted["outside"] / "leak.yaml")
    elif where == "subchart":
        (directory / "charts").mkdir()
        (directory / "charts" / "leak").symlink_to(planted["outside"] / "base")
    else:
        harness.config({"inputs": [{"helm": "linked-chart"}]})
        (harness.root / "linked-chart").symlink_to(planted["outside"])
    if where != "chart":
        harness.config({"inputs": [{"helm": "charts/shop"}]})
    refused(run(harness, planted, mode), "resolves to")


@needs_helm
def test_a_chart_inside_the_repository_still_renders(harness, planted, mode):
    chart(harness)
    harness.write("env/dev.yaml", "image: api:3\n")
    (harness.root / "env" / "linked.yaml").symlink_to(harness.root / "env" / "dev.yaml")  # a link inside is fine
    harness.config({"inputs": [{"helm": "charts/shop", "values": ["env/linked.yaml"]}]})
    out = run(harness, planted, mode)
    assert out.returncode == 0, out.stderr
    assert "name: shop-api-pr-1" in out.stdout and "image: api:2" in out.stdout


# --------------------------------------------------------------------------------------------------
# kustomize


def kustomization(harness, text: str) -> None:
    harness.write("app/app.yaml", app_yaml("shop-api"))
    harness.write("app/kustomization.yaml", text)
    harness.config({"inputs": [{"kustomize": "app"}]})


@needs_kustomize
@pytest.mark.parametrize(("text", "field"), [
    ("resources: [app.yaml, ../../outside/base]\n", "resources entry '../../outside/base'"),
    ("resources: [app.yaml, ../../outside/leak.yaml]\n", "resources entry '../../outside/leak.yaml'"),
    ("resources: [app.yaml]\nconfigMapGenerator: [{name: c, files: [t=../../outside/secret.yaml]}]\n",
     "configMapGenerator entry '../../outside/secret.yaml'"),
    ("resources: [app.yaml]\nsecretGenerator: [{name: s, envs: [../../outside/secret.env]}]\n",
     "secretGenerator entry '../../outside/secret.env'"),
    ("resources: [app.yaml]\npatches: [{path: OUTSIDE/leak.yaml}]\n", "patches entry '"),
    ("resources: [app.yaml]\npatchesStrategicMerge: [../../outside/leak.yaml]\n", "patchesStrategicMerge entry"),
    ("resources: [app.yaml, linked]\n", "the symlink app/linked resolves to"),
])  # fmt: skip
def test_a_kustomization_naming_anything_outside_is_refused(harness, planted, mode, text, field):
    kustomization(harness, text.replace("OUTSIDE", str(planted["outside"])))
    if "linked" in text:
        (harness.root / "app" / "linked").symlink_to(planted["outside"] / "base")
    refused(run(harness, planted, mode), "app/kustomization.yaml", field)


@needs_kustomize
def test_a_symlink_out_of_a_kustomization_directory_is_refused(harness, planted, mode):
    kustomization(harness, "resources: [app.yaml]\n")
    (harness.root / "app" / "notes.txt").symlink_to(planted["outside"] / "secret.yaml")  # unnamed, yet readable
    refused(run(harness, planted, mode), "the symlink app/notes.txt resolves to")


@needs_kustomize
def test_an_inputs_path_outside_is_refused_and_the_operator_may_allow_a_directory(harness, planted, mode):
    harness.config({"inputs": [{"kustomize": "../outside/base"}]})
    harness.write("keep.txt", "")
    out = run(harness, planted, mode)
    refused(out, "the `kustomize:` path ../outside/base")
    kustomization(harness, "resources: [app.yaml, ../../outside/base]\n")
    out = run(harness, planted, mode, "--allow-path", str(planted["outside"]))  # the operator's monorepo bases
    assert out.returncode == 0, out.stderr
    out = harness.run("render", *FLOW, env={"HOME": str(planted["home"]), "DEVLANE_ALLOW_PATHS":
                                            str(planted["outside"]), **mode})  # fmt: skip
    assert out.returncode == 0, out.stderr


def test_a_plugin_source_outside_is_refused(harness, planted, mode):
    harness.write("app.yaml", app_yaml("shop-api", "seed"))
    harness.plugin_definition({"name": "acme/seed", "type": "stateful", "servicename": "seed"}, name="seed-def")
    (planted["outside"] / "plugin").mkdir()
    (planted["outside"] / "plugin" / "main.py").write_text("def create_flow(service_specs, pod_specs, flow_uuid):\n"
                                                           "    return {'pod_specs': pod_specs}\n")
    harness.config({"plugins": {"sources": {"acme/seed": {"path": "../outside/plugin"}}}})
    refused(run(harness, planted, mode), "plugins.sources.acme/seed.path (../outside/plugin) in .devlane.yaml")


# --------------------------------------------------------------------------------------------------
# What a build tool sees (bwrap)

SEES = r"""#!/bin/sh
seen=$(for p in /etc/hostname /etc/passwd "$1/.kube/config" "$2/secret.yaml" "$3/app.yaml"; do
  [ -r "$p" ] && printf '%s ' "$(basename "$p")"; done)
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seen}\ndata: {readable: "%s", tmp: "%s"}\n' \
  "$seen" "$(ls /tmp | tr '\n' ' ')"
"""


@needs_kustomize
@pytest.mark.sandbox_own  # about bwrap itself
def test_a_build_tool_sees_only_the_system_itself_and_the_repository(harness, planted, tmp_path, monkeypatch):
    """The operator's tool ($DEVLANE_KUSTOMIZE, here a script standing in for kustomize) is asked to read /etc,
    the kubeconfig in HOME, the secret beside the repository and the repository's own file: only the last one is
    there, and /tmp holds nothing but its scratch directory."""
    if confine.confinement().method != "bwrap":
        pytest.skip("the tool view needs bwrap")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "sees").write_text(SEES)
    (tools / "sees").chmod(0o755)
    kustomization(harness, "resources: [app.yaml]\n")
    monkeypatch.setenv("HOME", str(planted["home"]))
    monkeypatch.setenv("DEVLANE_KUSTOMIZE", f"{tools / 'sees'} {planted['home']} {planted['outside']} "
                                            f"{harness.root / 'app'}")  # fmt: skip
    from renderer.core.source import open_source
    from renderer.render.inputs import load

    seen = next(d.obj for d in load.read(open_source(harness.root, None)).documents if d.name == "seen")
    assert seen["data"]["readable"].split() == ["app.yaml"], seen
    # /tmp holds its scratch directory and the way to the repository (the tests' repositories live under /tmp)
    shown = set(seen["data"]["tmp"].split())
    assert shown <= {Path(harness.root).parts[2], *(n for n in shown if n.startswith("devlane-plugin-"))}, seen


# --------------------------------------------------------------------------------------------------
# Deadlines: a build that never ends is killed when the command's budget does


@needs_kustomize
@pytest.mark.parametrize("front", ["render", "cmp"])
def test_a_build_blocked_on_a_fifo_ends_with_the_budget(harness, planted, mode, front):
    import json
    import time

    kustomization(harness, "resources: [app.yaml, blocked.yaml]\n")
    os.mkfifo(harness.root / "app" / "blocked.yaml")
    started = time.monotonic()
    if front == "render":
        out = run(harness, planted, mode, "--timeout", "6")
    else:
        env = {"ARGOCD_ENV_FLOW_ID": "pr-1", "ARGOCD_EXEC_TIMEOUT": "7s", "HOME": str(planted["home"]),
               "ARGOCD_APP_PARAMETERS": json.dumps([{"name": "services", "array": ["shop-api=api:2"]}]), **mode}
        out = harness.run("cmp", "generate", cwd=harness.root, env=env)
    elapsed = time.monotonic() - started
    assert out.returncode == 1 and out.stdout == "", out.stderr
    assert "app (kustomize build)" in out.stderr and "timed out after" in out.stderr, out.stderr
    assert "the command's time budget" in out.stderr and "Traceback" not in out.stderr
    assert elapsed < 30, f"the build ran {elapsed:.0f} s past a budget of a few seconds"
