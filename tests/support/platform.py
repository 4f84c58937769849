"""The plugin-platform repository of the behaviour tests: api and worker (each using the plugin instances
its argument names), optionally an entry Ingress, a seed ConfigMap, and the fixture plugins of
tests/fixtures/platform copied outside the repository (exec scripts keep their executable bit) and passed
with `--plugin-source=./NAME=DIR`. A plugin that runs logs its calls to `log` ($DEVLANE_TEST_LOG)."""

from __future__ import annotations

import json
from pathlib import Path

from . import yamlc
from .builders import yaml_doc
from .harness import Harness, Result
from .paths import FIXTURES

FLOW = "pr-1"
API = ["--service", "api=api:2"]
ENTRY = yaml_doc({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                  "metadata": {"name": "shop", "annotations": {"kardinal.dev.service/ingress": "true"}},
                  "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [{
                      "path": "/", "pathType": "Prefix",
                      "backend": {"service": {"name": "api", "port": {"number": 80}}}}]}}]}})
SEED = yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seed-data"},
                 "data": {"seed": "hello-from-the-repo"}})


def pdef(servicename: str, plugin: str = "./worker", **extra) -> dict:
    """One plugin-definition entry (type stateful)."""
    return {"name": plugin, "type": "stateful", "servicename": servicename, **extra}


class Platform:
    def __init__(self, harness: Harness):
        self.harness = harness
        plugins = harness.copy(FIXTURES / "platform", where=harness.tmp / "plugins")
        self.flags = [f"--plugin-source=./{p.name}={p}" for p in sorted(plugins.iterdir())]
        self.out = harness.tmp / "out"
        self.log = harness.tmp / "log"

    def repo(self, *defs: dict, api: str = "", worker: str = "", config: dict | None = None,
             entry: bool = True) -> None:
        """app.yaml: api and worker, the entry Ingress (with `entry`), the seed ConfigMap, then `defs`."""
        self.harness.app("api", api)
        self.harness.app("worker", worker)
        self.harness.append("app.yaml", (ENTRY if entry else "") + SEED)
        if defs:
            self.harness.plugin_definition(*defs)
        if config is not None:
            self.harness.config(config)

    def devlane(self, command: str, *flags: str, log: Path | None = None) -> Result:
        # the log lives outside the plugins' sandbox: the operator's switch lets them write its directory
        env = {"DEVLANE_TEST_LOG": str(log), "DEVLANE_SANDBOX_WRITABLE": str(log.parent)} if log is not None else None
        return self.harness.cli(command, "--flow", FLOW, *flags, *self.flags, env=env)

    def render(self, *flags: str, log: Path | None = None) -> Result:
        return self.devlane("render", *flags, "--out", str(self.out), log=log)

    def refused(self) -> Result:
        """`devlane render` of api that must fail before any plugin ran, writing nothing."""
        out = self.render(*API, log=self.log)
        assert out.returncode == 1, out.stderr
        assert not self.log.exists(), self.log.read_text()
        assert not self.out.exists()
        return out

    @property
    def flow_dir(self) -> Path:
        return self.out / "flows" / FLOW

    def objects(self) -> dict[str, dict]:
        """The rendered flow's objects by `Kind/name`, checking kustomization.yaml lists exactly the files."""
        listed = yamlc.safe_load((self.flow_dir / "kustomization.yaml").read_text())["resources"]
        files = sorted(p.name for p in self.flow_dir.glob("*.yaml") if p.name != "kustomization.yaml")
        assert sorted(listed) == files
        objs = [yamlc.safe_load((self.flow_dir / f).read_text()) for f in listed]
        return {f"{o['kind']}/{o['metadata']['name']}": o for o in objs}

    def metadata(self) -> dict:
        return json.loads((self.flow_dir / "flow.metadata").read_text())


def fixture_apps(harness: Harness, plugin: str, args: dict, **extra) -> None:
    """worker and api, both using the plugin instance `fixture` of plugin `plugin` (type external)."""
    harness.app("worker", "fixture")
    harness.app("api", "fixture")
    harness.plugin_definition({"name": plugin, "type": "external", "servicename": "fixture", "args": args, **extra},
                              name="fixture-def")
