"""Every kustomize directory and Helm chart of the real-world apps (../shared/realworld, used in place; skipped
when absent), read by devlane itself: the model is exactly what `kubectl kustomize` / `helm template` build,
and a one-service flow renders from it, whose dev pods read only objects that exist in the build or the flow,
which the independent isolation checker passes, which `kubectl kustomize` builds and strict validation accepts.

The flow's service is chosen from the independent build (a Service selecting exactly one workload, else a lone
workload); the 21 `kind: Component` directories are built through the overlays that use them; a directory
that builds no workload (only ConfigMaps, say) has its model checked and no flow. Annotated flows on the same
inputs are in test_realworld_isolation.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support import kubectl_kustomize, validate_strict, yamlc
from support.isolation import check_flow, load_flow, pod_spec
from support.realworld import (
    FLOW,
    IMAGE,
    INPUTS,
    NEEDS_CONFIG,
    REALWORLD,
    REFUSED,
    UMBRELLA,
    api_render,
    app_top,
    chart_input,
    helm_bin,
    target,
    umbrella_copy,
)

from renderer import api
from renderer.errors import DevlaneError

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (kustomize) not installed")]

def test_the_corpus_is_all_there():
    if not REALWORLD.is_dir():
        pytest.skip(f"real-world inputs not available ({REALWORLD})")
    kinds = [p.values[1] for p in INPUTS]
    assert kinds.count("kustomize") >= 108 and kinds.count("helm") >= 34  # the corpus only grows


# --------------------------------------------------------------------------------------------------
# The independent build (the flow's target: support.realworld.target)


def built_by_the_tool(path: Path, kind: str, helm_args: list[str] | None = None) -> list[dict]:
    if kind == "kustomize":
        return kubectl_kustomize(path)
    out = subprocess.run([helm_bin(), "template", *(helm_args or [path.name.lower(), str(path)]), "--include-crds"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return [d for d in yamlc.safe_load_all(out.stdout) if d]


def comparable(obj: dict) -> str:
    """An object as text for comparison; Secret values left out, since charts generate random passwords
    (two runs of `helm template` differ there)."""
    if obj.get("kind") == "Secret":
        obj = {k: v for k, v in obj.items() if k not in ("data", "stringData")}
    return yaml.safe_dump(obj, sort_keys=True)


# --------------------------------------------------------------------------------------------------
# The sweep


@pytest.mark.parametrize("path,kind", INPUTS)
def test_a_flow_renders_from_every_realworld_input(path: Path, kind: str, tmp_path: Path):
    rel = path.relative_to(REALWORLD).as_posix()
    helm_args = None
    if kind == "helm":
        helm_bin()
        path, helm_args = chart_input(umbrella_copy(tmp_path) if rel == UMBRELLA else path, tmp_path)
    expected = built_by_the_tool(path, kind, helm_args)
    service = target(expected)
    if service is None:  # nothing a flow could change: the model alone
        from renderer.core.source import open_source
        from renderer.render.inputs import load

        documents = load.read(open_source(path, None), top=app_top(path)).documents
        assert sorted(comparable(d.obj) for d in documents) == sorted(comparable(o) for o in expected)
        return
    result = api_render(path, service)
    if rel in REFUSED:
        assert isinstance(result, DevlaneError) and REFUSED[rel] in str(result), result
        return
    if rel in NEEDS_CONFIG:
        said, services, (ns, name, key, value) = NEEDS_CONFIG[rel]
        assert isinstance(result, DevlaneError) and said in str(result), result
        assert ".devlane.yaml" in str(result.problems[0].hint)
        path = tmp_path / "copy" / path.relative_to(REALWORLD)
        shutil.copytree(REALWORLD / rel.split("/", 1)[0], tmp_path / "copy" / rel.split("/", 1)[0])
        (path / ".devlane.yaml").write_text(yaml.safe_dump({"services": services}))
        result = api_render(path, service)
        svc = next(o for o in expected if o["kind"] == "Service" and o["metadata"]["name"] == name
                   and o["metadata"].get("namespace") == ns)  # fmt: skip
        svc["metadata"].setdefault("annotations", {})[key] = value
    assert not isinstance(result, DevlaneError), str(result)

    # the model is the build
    assert sorted(comparable(d.obj) for d in result.loaded.documents) == sorted(comparable(o) for o in expected)

    # the flow, as Argo CD or Flux would apply it
    out = tmp_path / "out"
    api.write(result, out)
    flow = load_flow(out / "flows" / FLOW)
    images = {c.get("image") for o in flow for c in pod_spec(o).get("containers") or []}
    assert IMAGE in images, f"{service}: the dev copy does not run the new image"
    violations = [str(v) for v in check_flow(expected, flow, FLOW) if v.kind != "unwired"]
    assert not violations, "\n".join(violations)
    built = kubectl_kustomize(out / "flows" / FLOW)
    assert len(built) == len(flow)
    for obj in built:
        validate_strict(obj)
