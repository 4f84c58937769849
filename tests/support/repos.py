"""Repositories several test layers build the same way."""

from __future__ import annotations

from pathlib import Path

from renderer.authoring.scaffold import scaffold

from .harness import Harness
from .paths import EXAMPLE

BOOKSHOP_PLUGINS = ("seed-postgres", "stripe-test-mode")


def inspection_repo(harness: Harness) -> Path:
    """A scaffolded exec plugin, a scaffolded Kardinal plugin with an External definition, a missing plugin
    (for `plugins list | describe`)."""
    scaffold("flags", "exec", harness.root / "plugins")
    scaffold("notify", "kardinal-python", harness.root / "plugins")
    harness.app("app", "flags-app,notify-app,gone", containers=[{"name": "app", "image": "example.com/app:1"}])
    harness.plugin_definition(
        {"name": "./plugins/flags", "type": "stateful", "servicename": "flags-app", "args": {"mode": "preview"}},
        {"name": "./plugins/notify", "type": "external", "servicename": "notify-app", "sideEffects": "External",
         "args": {"api_token": "s3cr3t", "channel": "dev"}},
        {"name": "./plugins/missing", "type": "external", "servicename": "gone"},
        file="defs.yaml",
    )
    harness.config({"exclude": ["plugins/**"]})
    return harness.root


def bookshop_builtins(harness: Harness) -> Path:
    """The bookshop example, its plugins moved out of the repository and served as built-ins by plain name: the
    real plugin code, run in-process, so no process is started."""
    harness.copy(EXAMPLE)
    builtins = harness.builtins()
    for name in BOOKSHOP_PLUGINS:
        (harness.root / "plugins" / name).rename(builtins / name)
    defs = harness.root / "k8s" / "plugins.yaml"
    defs.write_text(defs.read_text().replace("name: ./plugins/", "name: "))
    return harness.root
