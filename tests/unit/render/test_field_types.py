"""`renderer.render.inputs.field_types`: the fields devlane reads must have their Kubernetes types; the first wrong
one is named by its path, nulls count as absent, fields devlane does not read are left alone."""

from __future__ import annotations

import pytest

from renderer.render.inputs.field_types import shape_problem

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "labels": {"app": "api"}},
              "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": {
                  "metadata": {"labels": {"app": "api"}},
                  "spec": {"containers": [{"name": "main", "image": "api:1", "args": ["--x", 1],
                                           "env": [{"name": "A", "value": "b"},
                                                   {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "m"}}}]}],
                           "volumes": [{"name": "v", "configMap": {"name": "m"}}]}}}}


def test_a_well_formed_object_passes_and_unread_fields_are_free():
    assert shape_problem(DEPLOYMENT) is None
    assert shape_problem({**DEPLOYMENT, "status": [1, 2], "spec": {**DEPLOYMENT["spec"], "strategy": "x"}}) is None
    assert shape_problem({"kind": "Widget", "metadata": {"name": "w"}, "spec": [1, 2]}) is None  # not read


@pytest.mark.parametrize(("obj", "expected"), [
    ({"kind": "Service", "metadata": {"name": "s"}, "spec": [1, 2]}, "spec must be a mapping, not a list"),
    ({"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"app": ["a"]}}},
     "spec.selector.app must be a plain value, not a list"),
    ({"kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": {"name": "http"}}},
     "spec.ports must be a list, not a mapping"),
    ({"kind": "Service", "metadata": {"name": "s", "annotations": {"a": {"b": 1}}}},
     "metadata.annotations.a must be a plain value, not a mapping"),
    ({"kind": ["Service"], "metadata": {"name": "s"}}, "kind must be a plain value, not a list"),
    ({"kind": "StatefulSet", "metadata": {"name": "d"}, "spec": {"volumeClaimTemplates": True}},
     "spec.volumeClaimTemplates must be a list, not bool True"),
    ({"kind": "StatefulSet", "metadata": {"name": "d"}, "spec": {"volumeClaimTemplates": [{"metadata": 1}]}},
     "spec.volumeClaimTemplates[0].metadata must be a mapping, not int 1"),
    ({"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"metadata": {"labels": {"app": {"a"}}}}}},
     "spec.template.metadata.labels.app must be a plain value, not a set"),  # YAML's !!set: no label value
    ({"kind": "Ingress", "metadata": {"name": "i"}, "spec": {"rules": [None]}},
     "spec.rules[0] must be a mapping, not null"),
    ({"kind": "Ingress", "metadata": {"name": "i"}, "spec": {"rules": [{"host": 5}]}},
     "spec.rules[0].host must be a string, not int 5"),
    ({"kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": {
        "containers": [{"name": "m", "env": [{"name": "A", "valueFrom": ["x"]}]}]}}}}}},
     "spec.jobTemplate.spec.template.spec.containers[0].env[0].valueFrom must be a mapping, not a list"),
])  # fmt: skip
def test_the_first_wrong_field_is_named_by_its_path(obj, expected):
    assert shape_problem(obj) == expected


def test_nulls_are_absent():
    assert shape_problem({"kind": "Service", "metadata": {"name": "s", "labels": None}, "spec": None}) is None
    assert shape_problem({"kind": "Ingress", "metadata": {"name": "i"}, "spec": {"tls": [{"hosts": [None]}]}}) is None
