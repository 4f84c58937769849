"""Helm builds are pure functions of their inputs (`renderer/render/inputs/kustomize_helm.py`): a chart at the
repository's top is released under its Chart.yaml name in the work tree, at `--ref` (built in a temporary directory)
and from any directory name; a chart below the top under its directory's name; and the build cache never serves one
name's build for another (a property test over directory names, cached against `--no-cache`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import SHOP_CHART, git

from renderer import api
from renderer.render.plan.flow_spec import FlowRequest, resolve

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("helm") is None, reason="helm not installed (run tests/setup_helm.sh)")]

NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True)


def write_chart(directory: Path) -> Path:
    for name, text in SHOP_CHART.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    return directory


def stream(repo: Path, release: str, cache: bool = True, ref: str | None = None) -> str:
    """The flow on `<release>-api` as one YAML stream (what `render --stdout` prints)."""
    result = api.render(api.Options(repo=repo, ref=ref, cache=cache),
                        resolve(FlowRequest("pr-1", {f"{release}-api": "api:2"})))  # fmt: skip
    return "".join(f.stream() for f in result.flows)


def test_a_chart_at_the_top_has_one_release_name_in_the_work_tree_and_at_a_ref(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    repo = write_chart(tmp_path / "checkout-7f3a")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "chart")
    work = stream(repo, "shop")
    assert "name: shop-api-pr-1" in work
    assert [stream(repo, "shop", ref="HEAD") for _ in range(2)] == [work, work]  # the tmp dir's name is not in it
    assert stream(repo, "shop", ref="HEAD", cache=False) == work


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=NAMES, second=NAMES)
def test_cached_builds_equal_uncached_ones_whatever_the_directory_names(first, second, tmp_path_factory,
                                                                        monkeypatch):
    """The same chart bytes at the top of directories named `first` and `second` (one release name, from
    Chart.yaml), and below the top in directories so named (each its own release name): one shared cache, and
    each render equals its --no-cache twin."""
    base = tmp_path_factory.mktemp("names")
    monkeypatch.setenv("DEVLANE_CACHE", str(base / "cache"))
    for name in (first, second):
        top = write_chart(base / "top" / name)
        assert stream(top, "shop") == stream(top, "shop", cache=False)
        repo = base / "below" / name
        write_chart(repo / "charts" / name)
        (repo / ".devlane.yaml").write_text(yaml.safe_dump({"inputs": [{"helm": f"charts/{name}"}]}))
        cached = stream(repo, name)
        assert f"name: {name}-api-pr-1" in cached
        assert cached == stream(repo, name, cache=False)
    assert stream(base / "top" / first, "shop") == stream(base / "top" / second, "shop")
