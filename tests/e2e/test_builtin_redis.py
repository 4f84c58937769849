"""The redis-sidecar built-in's output is what a cluster accepts: every object of a flow rendered with it (named by
its short name, both modes, both isolation modes) passes strict Kubernetes
schema validation, and the flow directory builds with `kubectl kustomize`."""

from __future__ import annotations

import pytest
from support import ROOT, kubectl_kustomize, validate_strict
from support.redis_sidecar import PROXY_IMAGE, redis_shop

from renderer import api

PLUGIN = ROOT / "plugins" / "redis-sidecar"


def kinds_and_names(objects: list[dict]) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in objects)


@pytest.mark.parametrize(("args", "isolation"), [
    ({"image": PROXY_IMAGE}, "suffix"),
    ({"image": PROXY_IMAGE}, "namespace"),
    ({"mode": "fresh"}, "suffix"),
])
def test_flow_with_redis_sidecar_is_valid_and_builds(harness, args, isolation):
    redis_shop(harness, args=args)
    result = harness.render("pr-7", {"web": "example.com/web:2"}, isolation=isolation)
    dev = [o for o in result.main.objects if o["kind"] == "Deployment" and o["metadata"]["name"].startswith("redis")]
    [redis] = dev
    image = redis["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == (PROXY_IMAGE if "image" in args else "redis:7.4")
    assert redis["metadata"]["namespace"] == ("shop-pr-7" if isolation == "namespace" else "shop")
    for flow in result.flows:
        for obj in flow.objects:
            validate_strict(obj)
    paths = api.write(result, harness.tmp / "out")
    assert kinds_and_names(kubectl_kustomize(paths[0])) == kinds_and_names(result.main.objects)


