"""The quota devlane renders for a lane's namespace: the budget as requests.*, and a LimitRange the API server
accepts (a default request never above the default limit)."""

from __future__ import annotations

from renderer.render.output.lifecycle import quota_objects
from renderer.render.settings.lifecycle import budget_of


def test_the_quota_is_the_budget_and_the_limit_range_stays_valid():
    budget = budget_of({"cpu": "1500m", "memory": "3Gi", "storage": "10Gi", "devCopies": 4})
    quota, limits = quota_objects(["shop-pr-1"], "pr-1", budget, {"default": {"memory": "64Mi", "cpu": "1"}})
    assert quota["spec"]["hard"] == {"requests.cpu": "1500m", "requests.memory": "3Gi", "requests.storage": "10Gi"}
    # 128Mi would be above the 64Mi default limit: the built-in default request gives way; 100m CPU stays
    assert limits["spec"]["limits"] == [{"type": "Container", "defaultRequest": {"cpu": "100m"},
                                         "default": {"memory": "64Mi", "cpu": "1"}}]
    assert {o["metadata"]["namespace"] for o in (quota, limits)} == {"shop-pr-1"}


def test_without_a_budget_only_the_limit_range():
    [limits] = quota_objects(["a-pr-1"], "pr-1", budget_of({}), {})
    assert limits["kind"] == "LimitRange" and limits["spec"]["limits"][0]["defaultRequest"] == {"cpu": "100m",
                                                                                               "memory": "128Mi"}
