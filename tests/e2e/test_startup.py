"""Start-up imports only what the command uses (a fresh interpreter: end-to-end), `devlane --help` loads no library
code (no `renderer.api`, no YAML), and a `render` then a `cmp generate` of a small repository with a
`.devlane.yaml` and a built-in plugin with an `argsSchema` load no gRPC, jsonschema, GitPython,
kubernetes-validate, ruamel.yaml or rich, and no front door of another command. An eager import added
back anywhere on those paths fails here; how long start-up takes is measured, never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support import ROOT
from support.repos import seeded_shop

# Each command runs in the same interpreter, after the one before: what a later one must not load, the
# earlier ones must not have loaded either.
SCRIPT = """
import contextlib, io, json, os, sys
from renderer.cli import main

repo, out = sys.argv[1:3]
seen = {}
for name, argv, env in [
    ("--help", ["--help"], {}),
    ("render", ["render", repo, "--flow", "pr-7", "--service", "shop=example.com/shop:2", "--out", out], {}),
    ("cmp generate", ["cmp", "generate"],
     {"ARGOCD_ENV_FLOW_ID": "pr-7", "PARAM_SERVICES_0": "shop=example.com/shop:2"}),
]:
    os.environ.update(env)
    os.chdir(repo)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    seen[name] = {"code": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue(),
                  "modules": sorted(sys.modules)}
print(json.dumps(seen))
"""
OPTIONAL = ["grpc", "google.protobuf", "jsonschema", "git", "kubernetes_validate", "ruamel", "rich", "kubernetes"]
OTHER_COMMANDS = ["renderer.views.inspect", "renderer.views.diff", "renderer.views.markdown", "renderer.views.preview",
                  "renderer.authoring", "renderer.protocol.grpc", "renderer.host.grpc_client",
                  "renderer.sdk.grpc_server", "renderer.live"]
LIBRARY = ["renderer.api", "renderer.session", "renderer.render", "renderer.host", "renderer.sdk",
           "renderer.core.cache", "yaml", "concurrent"]
NOT_LOADED = {
    "--help": OPTIONAL + OTHER_COMMANDS + LIBRARY,
    "render": OPTIONAL + OTHER_COMMANDS,
    "cmp generate": OPTIONAL + OTHER_COMMANDS,
}


def _loaded(modules: list[str], packages: list[str]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages)]


def test_each_command_loads_none_of_what_it_does_not_use(harness):
    seeded_shop(harness, "postgres-seed")
    harness.config({"routing": "none"})
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(harness.root), str(harness.tmp / "out")], env=env,
                          capture_output=True, text=True, timeout=120, cwd=harness.tmp)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert {name: run["code"] for name, run in seen.items()} == dict.fromkeys(NOT_LOADED, 0), done.stdout
    loaded = {name: _loaded(seen[name]["modules"], packages) for name, packages in NOT_LOADED.items()}
    assert loaded == {name: [] for name in NOT_LOADED}
    # what was checked were real runs: help printed, the built-in ran in-process, Argo CD got the objects
    assert "render" in seen["--help"]["stdout"] and "cmp" in seen["--help"]["stdout"]
    assert "rendered flow pr-7" in seen["render"]["stderr"]
    assert {"renderer.api", "renderer.core.conforms", "plugins._dbseed"} <= set(seen["render"]["modules"])
    assert "name: seed-shop-seed-pr-7" in seen["cmp generate"]["stdout"]


LINT = """
import contextlib, io, json, sys
from renderer.cli import main

stdout = io.StringIO()
with contextlib.redirect_stdout(stdout):
    code = main(["lint", sys.argv[1]])
print(json.dumps({"code": code, "stdout": stdout.getvalue(), "modules": sorted(sys.modules)}))
"""
# what only finding problems needs: a lint whose stored findings hold loads none of it (`renderer.linting`)
PIPELINE = ["renderer.api", "renderer.render.checks", "renderer.render.plan", "renderer.render.copies",
            "renderer.render.plugins", "renderer.render.routing", "renderer.render.output"]


def test_a_lint_of_an_unchanged_repository_loads_no_check_and_no_render_pipeline(harness):
    seeded_shop(harness, "postgres-seed")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "DEVLANE_CACHE": str(harness.tmp / "cache")}
    runs = []
    for _ in range(2):  # the first finds and stores, the second reads back
        done = subprocess.run([sys.executable, "-c", LINT, str(harness.root)], env=env, capture_output=True, text=True,
                              timeout=120, cwd=harness.tmp)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    first, second = runs
    assert first["code"] == second["code"] == 0 and second["stdout"] == first["stdout"]
    assert "0 error(s)" in second["stdout"]
    assert {"renderer.render.checks.repository", "renderer.render.checks.reach"} <= set(first["modules"])
    assert _loaded(second["modules"], PIPELINE) == []
    assert "renderer.host.plugin_host" in second["modules"]  # the plugin's sources resolved anew, as on every run
