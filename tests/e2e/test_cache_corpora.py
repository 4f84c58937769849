"""A cached render writes exactly what a `--no-cache` render writes, on every test corpus: the examples (bookshop
and cloudshop with their plugins, the inventory kustomize overlay), Kardinal's demos (../shared/seeds-data), and
every real-world kustomize directory and Helm chart (../shared/realworld), each skipped when absent.

Each corpus is rendered three times as the CLI renders (`api.rendering`), in-process: with the cache off (which
must leave `$DEVLANE_CACHE` untouched), into an empty cache (cold: parses are written) and again (warm: they are
read back). Every written file, and the model the render read (each object, in order) or its error, must be the
same bytes all three times.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from support import demo_file, tree, yamlc
from support.caches import opened_caches, own_cache
from support.corpora import EXAMPLES, copied
from support.demos import DEMOS, demo_options
from support.realworld import (
    EMPTY,
    FLOW,
    IMAGE,
    INPUTS,
    REALWORLD,
    UMBRELLA,
    app_top,
    chart_input,
    helm_bin,
    target,
    umbrella_copy,
)

from renderer import api
from renderer.core import yamlio
from renderer.errors import DevlaneError
from renderer.render.plan.flow_spec import FlowRequest, FlowSpec, build_flow, resolve

MODES = ("no-cache", "cold", "warm")
# Charts that generate a random password unless given one: two `helm template` runs differ there, cached or not,
# so they render from a copy that sets it.
PINNED = {"retail-store-sample-app/src/orders/chart": {"app.persistence.secret.password": "pinned"},
          UMBRELLA: {"orders.app.persistence.secret.password": "pinned"}}


def rendered(options: api.Options, flow: FlowChoice, out: Path) -> dict[str, bytes]:
    """What one render shows: the model it read, and every file it wrote (or its error). `flow` may be chosen from
    the documents the render read (then `flow.chosen` keeps it for the next renders)."""
    model: list[str] = []
    try:
        with api.rendering(options, out) as run:  # loaded: what the model is built from, even if the render fails
            model.extend(f"# {d.file} {d.index}\n{yamlio.dump(d.obj)}" for d in run.session.loaded.documents)
            run.write(run.render(flow.choose(run.session.loaded.documents)))
        shown = tree(out)
    except DevlaneError as exc:
        shown = {"(error)": str(exc).encode()}
    return {"(model)": "".join(model).encode(), **shown}


@dataclasses.dataclass
class FlowChoice:
    """The flow of the three renders: given, or chosen by `pick` from what the first render read."""

    chosen: api.FlowInput | None = None
    pick: Callable[[list], api.FlowInput] | None = None

    def choose(self, documents: list) -> api.FlowInput:
        if self.chosen is None:
            self.chosen = self.pick(documents)  # type: ignore[misc]
        return self.chosen


def same_three_ways(options: api.Options, flow: api.FlowInput | FlowChoice, tmp_path: Path,
                    monkeypatch) -> dict[str, bytes]:
    """Render with the cache off, cold and warm; every file the same bytes, and the warm render read the cache.
    Returns what the renders showed."""
    root = own_cache(monkeypatch, tmp_path / "cache")
    opened = opened_caches(monkeypatch)
    seen = {}
    choice = flow if isinstance(flow, FlowChoice) else FlowChoice(chosen=flow)
    for mode in MODES:
        seen[mode] = rendered(dataclasses.replace(options, cache=mode != "no-cache"), choice, tmp_path / mode)
        if mode == "no-cache":
            assert not root.exists(), "--no-cache wrote to the cache"
    for mode in MODES[1:]:
        differ = sorted(k for k in seen[mode].keys() | seen["no-cache"].keys()
                        if seen[mode].get(k) != seen["no-cache"].get(k))
        assert differ == [], f"{mode} cache: differs from --no-cache in {differ}"
    _, cold, warm = opened
    assert cold is not None and warm is not None and cold.counters.writes > 0
    assert warm.counters.hits > 0 and warm.counters.writes == 0, warm.counters.summary()
    return seen["no-cache"]


def objects_of(shown: dict[str, bytes], flow_id: str) -> list[dict]:
    prefix = f"flows/{flow_id}/"
    return [yamlc.safe_load(text) for name, text in shown.items()
            if name.startswith(prefix) and name.endswith(".yaml") and name != f"{prefix}kustomization.yaml"]


# --------------------------------------------------------------------------------------------------
# The examples (support.corpora.EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_render_the_same_cached_or_not(name, tmp_path, monkeypatch):
    src, inside, flow = EXAMPLES[name]
    top = copied(src, tmp_path)
    repo = top / inside
    shown = same_three_ways(api.Options(repo=repo, top=top), flow(repo), tmp_path, monkeypatch)
    assert "(error)" not in shown, shown.get("(error)")
    flow_id = flow(repo).id
    assert any(o["kind"] == "Deployment" for o in objects_of(shown, flow_id))


# --------------------------------------------------------------------------------------------------
# Kardinal's demos


@pytest.mark.parametrize("demo", sorted(DEMOS))
def test_kardinal_demos_render_the_same_cached_or_not(demo, demo_repo, tmp_path, monkeypatch):
    name, images = DEMOS[demo]
    repo = demo_repo(name)
    shown = same_three_ways(demo_options(repo), build_flow("pr-9", images, []), tmp_path, monkeypatch)
    assert "(error)" not in shown, shown.get("(error)")
    assert {o["kind"] for o in objects_of(shown, "pr-9")} >= {"Deployment", "Service"}


@pytest.mark.parametrize("template,args", [("kardinal__ci__template.yaml", "kardinal__ci__template_args.yaml"),
                                           ("new-obd__release__template.yaml", "new-obd__release__template_args.yaml")])
def test_kardinal_templates_render_the_same_cached_or_not(template, args, demo_repo, tmp_path, monkeypatch):
    base = "kardinal__ci__obd-demo.yaml" if "kardinal__" in template else "new-obd__release__obd-kardinal.yaml"
    repo = demo_repo(base)
    flow = resolve(FlowRequest("pr-6", {"frontend": "x/frontend:6"}, template=demo_file(template),
                               template_args_file=demo_file(args)))  # fmt: skip
    shown = same_three_ways(demo_options(repo), flow, tmp_path, monkeypatch)
    assert "(error)" not in shown, shown.get("(error)")
    assert any(name.startswith("flows/shared/") for name in shown)


# --------------------------------------------------------------------------------------------------
# The real-world inputs


def realworld_flow(documents: list) -> FlowSpec:
    """A one-service flow on the input's target (support.realworld), chosen from the documents the uncached render
    read; a flow with no service where nothing could change."""
    service = target([d.obj for d in documents])
    return build_flow(FLOW, {service: IMAGE} if service else {}, [])


@pytest.mark.parametrize("path,kind", INPUTS)
def test_realworld_inputs_render_the_same_cached_or_not(path: Path, kind: str, tmp_path, monkeypatch):
    if shutil.which("kubectl") is None and shutil.which("kustomize") is None:
        pytest.skip("kustomize not installed")
    rel = path.relative_to(REALWORLD).as_posix()
    if kind == "helm":
        helm_bin()
    if rel == UMBRELLA:
        path = umbrella_copy(tmp_path)
    elif rel in PINNED:
        path = copied(path, tmp_path)
    if rel in PINNED:
        (path / ".devlane.yaml").write_text(yaml.safe_dump({"inputs": [{"helm": ".", "set": PINNED[rel]}]}))
    elif kind == "helm":
        path = chart_input(path, tmp_path)[0]
    options = api.Options(repo=path, top=app_top(path))
    shown = same_three_ways(options, FlowChoice(pick=realworld_flow), tmp_path, monkeypatch)
    assert shown["(model)"].count(b"\napiVersion: ") > 0 or rel in EMPTY
