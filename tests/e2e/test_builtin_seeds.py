"""The seed built-ins' output is what a cluster accepts: every object of a flow rendered with postgres-seed or
mysql-seed (named by short name), passes strict Kubernetes schema
validation, and the flow directory builds with `kubectl kustomize`; Kardinal's own demos render with only the
plugin definition's `name` changed to `postgres-seed`."""

from __future__ import annotations

import pytest
from support import demo_file, kubectl_kustomize, standin_sources, validate_strict
from support.repos import SEED_DATABASES, seeded_shop

from renderer import api
from renderer.render.plan.flow_spec import build_flow

KARDINAL_DEMOS = ("kardinal-kontrol__ci__obd-demo.yaml", "kardinal__ci__obd-demo.yaml")


def kinds_and_names(objects: list[dict]) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in objects)


def check_flow(result, out) -> None:
    for flow in result.flows:
        for obj in flow.objects:
            validate_strict(obj)
    paths = api.write(result, out)
    assert kinds_and_names(kubectl_kustomize(paths[0])) == kinds_and_names(result.main.objects)


@pytest.mark.parametrize("plugin", sorted(SEED_DATABASES))
def test_flow_with_a_seed_builtin_is_valid_and_builds(harness, plugin):
    seeded_shop(harness, plugin)
    result = harness.render("pr-7", {"shop": "example.com/shop:2"})
    assert ("ConfigMap", "seed-shop-seed-pr-7") in kinds_and_names(result.main.objects)
    check_flow(result, harness.tmp / "out")


@pytest.mark.parametrize("demo", KARDINAL_DEMOS)
def test_kardinal_demo_with_only_the_name_changed(demo, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    text = demo_file(demo).read_text()
    changed = text.replace("name: github.com/leoporoli/postgres-seed-plugin", "name: postgres-seed")
    changed = changed.replace("name: github.com/kurtosis-tech/postgres-seed-plugin", "name: postgres-seed")
    assert changed != text
    (repo / "manifest.yaml").write_text(changed)
    options = api.Options(repo=repo, plugin_sources=standin_sources())  # jsdelivr-api: Kardinal's plugin stand-in
    result = api.render(options, build_flow("pr-9", {"frontend": "kurtosistech/frontend:demo"}, []))
    seeds = [o for o in result.main.objects if o["metadata"]["name"] == "seed-postgres-seed-plugin-pr-9"]
    assert [o["kind"] for o in seeds] == ["ConfigMap"] and "CREATE TABLE" in seeds[0]["data"]["seed.sql"]
    check_flow(result, tmp_path / "out")
