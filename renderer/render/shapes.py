"""The shape of what devlane reads in each object: which fields must be mappings, lists or plain values.

The API server refuses an object whose fields have the wrong type (`spec: [1, 2]`, a label value that
is a list); so does kubectl. devlane reads the repository before any of them, so it checks the same
for every field it reads and names the first field that is wrong, instead of failing deep inside a
stage. A null field counts as absent, as in Kubernetes (a null item in a list of objects does not);
fields devlane does not read are not checked.
"""

from __future__ import annotations

from typing import Any

from ..errors import Problem, Where

SCALAR = "a plain value"  # a string, number, boolean or null: never a list or mapping
Shape = Any  # SCALAR, a dict of field -> Shape (a mapping), or [Shape] (a list of those)

_LABELS = {"*": SCALAR}  # a mapping of plain values (labels, annotations, selectors, ConfigMap data)
_META = {"name": SCALAR, "namespace": SCALAR, "labels": _LABELS, "annotations": _LABELS}
_REF = {"name": SCALAR, "key": SCALAR}
_CONTAINER = {"name": SCALAR, "image": SCALAR, "command": [SCALAR], "args": [SCALAR], "ports": [{}],
              "env": [{"name": SCALAR, "value": SCALAR,
                       "valueFrom": {"configMapKeyRef": _REF, "secretKeyRef": _REF}}],
              "envFrom": [{"configMapRef": _REF, "secretRef": _REF}]}
_POD_SPEC = {"containers": [_CONTAINER], "initContainers": [_CONTAINER],
             "volumes": [{"name": SCALAR, "configMap": _REF, "secret": {"secretName": SCALAR},
                          "projected": {"sources": [{"configMap": _REF, "secret": _REF}]}}]}
_TEMPLATE = {"metadata": _META, "spec": _POD_SPEC}
_SELECTOR = {"matchLabels": _LABELS,
             "matchExpressions": [{"key": SCALAR, "operator": SCALAR, "values": [SCALAR]}]}
_WORKLOAD = {"selector": _SELECTOR, "template": _TEMPLATE, "serviceName": SCALAR}
_BACKEND = {"service": {"name": SCALAR, "port": {}}}
SHAPES: dict[str, dict] = {
    "Deployment": {"spec": _WORKLOAD}, "StatefulSet": {"spec": _WORKLOAD}, "DaemonSet": {"spec": _WORKLOAD},
    "ReplicaSet": {"spec": _WORKLOAD}, "Job": {"spec": _WORKLOAD},
    "ReplicationController": {"spec": {"selector": _LABELS, "template": _TEMPLATE}},
    "CronJob": {"spec": {"jobTemplate": {"spec": _WORKLOAD}}},
    "Pod": {"spec": _POD_SPEC},
    "Service": {"spec": {"selector": _LABELS, "ports": [{"name": SCALAR, "port": SCALAR, "appProtocol": SCALAR}]}},
    "ConfigMap": {"data": _LABELS},
    "Secret": {"data": _LABELS, "stringData": _LABELS},
    "Ingress": {"spec": {"defaultBackend": _BACKEND, "tls": [{"hosts": [SCALAR]}],
                         "rules": [{"host": SCALAR, "http": {"paths": [{"backend": _BACKEND}]}}]}},
    "HTTPRoute": {"spec": {"hostnames": [SCALAR], "parentRefs": [{}],
                           "rules": [{"backendRefs": [{"name": SCALAR, "namespace": SCALAR, "kind": SCALAR,
                                                       "group": SCALAR}]}]}},
    "Gateway": {"spec": {"listeners": [{"hostname": SCALAR}]}},
    "PersistentVolumeClaim": {"spec": {}},
}  # fmt: skip


def shape_problem(obj: dict) -> str | None:
    """The first field of `obj` (a Kubernetes object) that devlane reads with the wrong type, in words."""
    shape = {"metadata": _META, **SHAPES.get(str(obj.get("kind")), {})}
    stack: list[tuple[Any, Shape, str]] = [(obj, shape, "")]
    while stack:  # the shapes are a few levels deep: the walk is bounded by them, not by the object
        value, expected, path = stack.pop()
        if value is None:
            continue
        if expected is SCALAR:
            if isinstance(value, (dict, list)):
                return f"{path} must be a plain value, not {_kind(value)}"
        elif isinstance(expected, list):
            if not isinstance(value, list):
                return f"{path} must be a list, not {_kind(value)}"
            if isinstance(expected[0], dict) and None in value:  # a null field is absent; a null item is wrong
                return f"{path}[{value.index(None)}] must be a mapping, not null"
            stack.extend((item, expected[0], f"{path}[{i}]") for i, item in enumerate(value))
        elif not isinstance(value, dict):
            return f"{path} must be a mapping, not {_kind(value)}"
        elif "*" in expected:
            stack.extend((v, expected["*"], f"{path}.{k}") for k, v in value.items())
        else:
            stack.extend((value[k], sub, f"{path}.{k}" if path else k) for k, sub in expected.items() if k in value)
    return None


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"[:60]


def check(obj: dict, where: Where) -> Problem | None:
    """A problem for an object of the wrong shape (None: fine)."""
    problem = shape_problem(obj)
    if problem is None:
        return None
    return Problem(f"field {problem}", where,
                   hint="fix the field's type (the Kubernetes API refuses it too), or exclude the file with "
                        "`exclude:` in .devlane.yaml", code="schema")
