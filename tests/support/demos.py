"""Kardinal's own demo manifests (../shared/seeds-data/kardinal-demo, used in place): the flow each one renders and
the options a repository holding one needs (tests/e2e/test_kardinal_demo.py, tests/e2e/test_cache_corpora.py)."""

from __future__ import annotations

from pathlib import Path

from renderer import api

from .paths import standin_sources

OBD = "kardinal-kontrol__ci__obd-demo.yaml"
# name -> (demo file, the images of a flow on it)
DEMOS = {
    "kontrol-obd": (OBD, {"frontend": "kurtosistech/frontend:demo"}),
    "kardinal-obd-statefulset": ("kardinal__ci__obd-demo.yaml", {"frontend": "kurtosistech/frontend:demo"}),
    "playground-obd": ("kardinal-playground__obd-demo.yaml", {"frontend": "kurtosistech/frontend:demo"}),
    "new-obd-gateway": ("new-obd__release__obd-kardinal.yaml", {"frontend": "kurtosistech/frontend:demo"}),
    "neon": ("kardinal-playground__neon-postgres-demo__obd-demo.yaml", {"cartservice": "kurtosistech/cartservice:x"}),
    "voting-app": ("kardinal__examples__voting-app__k8s-manifest.yaml", {"voting-app-ui": "kurtosistech/ui:dev"}),
}


def demo_options(repo: Path, **options) -> api.Options:
    """Options for a repository holding one demo as `manifest.yaml` (see the `demo_repo` fixture), its plugins
    served by our stand-ins. The voting app has objects with and without a namespace: `.devlane.yaml` says which."""
    if "voting-app" in (repo / "manifest.yaml").read_text():
        (repo / ".devlane.yaml").write_text("namespace: voting-app\n")
    return api.Options(repo=repo, plugin_sources=standin_sources(), **options)
