"""The bundled examples as the corpus tests render them (tests/e2e/test_cache_corpora.py,
tests/e2e/test_emitter_go_readers.py): each example's directory, the directory rendered inside it, and its flow."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from renderer import api
from renderer.render.plan.flow_spec import FlowRequest, build_flow, resolve

from .paths import EXAMPLE, ROOT

EXAMPLES: dict[str, tuple[Path, str, Callable[[Path], api.FlowInput]]] = {
    # name: (example directory, the directory rendered inside it, its flow)
    "bookshop": (EXAMPLE, ".", lambda repo: resolve(FlowRequest(flow_file=repo / "flows" / "pr-7.yaml"))),
    "cloudshop": (ROOT / "examples" / "cloudshop", ".",
                  lambda repo: resolve(FlowRequest(flow_file=repo / "flows" / "pr-12.yaml"))),
    "inventory": (ROOT / "examples" / "inventory", "overlays/staging",
                  lambda repo: build_flow("pr-7", {"api": "ghcr.io/acme/inventory-api:pr-7"}, [])),
}


def copied(src: Path, tmp_path: Path) -> Path:
    """A copy of an example (or an app) under `tmp_path/repo/`, without its rendered output."""
    return Path(shutil.copytree(src, tmp_path / "repo" / src.name, ignore=shutil.ignore_patterns("rendered")))
