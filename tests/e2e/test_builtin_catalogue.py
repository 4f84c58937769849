"""What every built-in's golden cases promise is what a cluster accepts: each object of each expected output
passes strict Kubernetes schema validation, custom resources the upstream CRD (strictly: an invented field
fails), and the objects a case adds build with `kubectl kustomize` in one directory."""

from __future__ import annotations

import pytest
import yaml
from support import BUILTINS, ROOT, kubectl_kustomize, validate_strict, yamlc


@pytest.mark.parametrize("plugin", BUILTINS)
def test_golden_outputs_are_valid_and_build(plugin, tmp_path):
    expected = sorted((ROOT / "plugins" / plugin / "testdata").glob("*/expected.yaml"))
    assert len(expected) >= 2
    for path in expected:
        objects = [d for d in yamlc.safe_load_all(path.read_text()) if d]
        for obj in objects:
            validate_strict(obj)
        case = tmp_path / path.parent.name
        case.mkdir()
        (case / "all.yaml").write_text(yaml.safe_dump_all(objects, sort_keys=False))
        (case / "kustomization.yaml").write_text("resources: [all.yaml]\n")
        built = kubectl_kustomize(case)
        assert sorted((o["kind"], o["metadata"]["name"]) for o in built) == \
            sorted((o["kind"], o["metadata"]["name"]) for o in objects)
