"""The shape of what devlane reads in each object: which fields must be mappings, lists or plain values.

The API server refuses an object whose fields have the wrong type (`spec: [1, 2]`, a label value that
is a list); so does kubectl. devlane reads the repository before any of them, so it checks the same
for every field it reads and names the first field that is wrong, instead of failing deep inside a
stage. A null field counts as absent, as in Kubernetes (a null item in a list of objects does not);
fields devlane does not read are not checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import Problem, Where

SCALAR = "a plain value"  # a string, number, boolean or null: never a list or mapping
TEXT = "a string"  # a string (or null), where devlane works on the text: host names
Shape = Any  # SCALAR, TEXT, a dict of field -> Shape (a mapping), or [Shape] (a list of those)

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
_STATEFUL = {**_WORKLOAD, "volumeClaimTemplates": [{"metadata": _META, "spec": {}}]}
_BACKEND = {"service": {"name": SCALAR, "port": {}}}
_LEAVES = (SCALAR, TEXT)
SHAPES: dict[str, dict] = {
    "Deployment": {"spec": _WORKLOAD}, "StatefulSet": {"spec": _STATEFUL}, "DaemonSet": {"spec": _WORKLOAD},
    "ReplicaSet": {"spec": _WORKLOAD}, "Job": {"spec": _WORKLOAD},
    "ReplicationController": {"spec": {"selector": _LABELS, "template": _TEMPLATE}},
    "CronJob": {"spec": {"jobTemplate": {"spec": _WORKLOAD}}},
    "Pod": {"spec": _POD_SPEC},
    "Service": {"spec": {"selector": _LABELS, "ports": [{"name": SCALAR, "port": SCALAR, "appProtocol": SCALAR}]}},
    "ConfigMap": {"data": _LABELS},
    "Secret": {"data": _LABELS, "stringData": _LABELS},
    "Ingress": {"spec": {"defaultBackend": _BACKEND, "tls": [{"hosts": [TEXT]}],
                         "rules": [{"host": TEXT, "http": {"paths": [{"backend": _BACKEND}]}}]}},
    "HTTPRoute": {"spec": {"hostnames": [TEXT], "parentRefs": [{}],
                           "rules": [{"backendRefs": [{"name": SCALAR, "namespace": SCALAR, "kind": SCALAR,
                                                       "group": SCALAR}]}]}},
    "Gateway": {"spec": {"listeners": [{"hostname": TEXT}]}},
    "PersistentVolumeClaim": {"spec": {}},
}  # fmt: skip


_COLLECTIONS = frozenset({dict, list, set})  # a set: YAML's `!!set`
_MAP, _LIST = "map", "list"


def _compile(shape: Shape) -> tuple:
    """A shape as the walk reads it fastest: ("list", item), or ("map", plain keys, text keys, nested
    (key, shape) pairs, whether every value must be plain)."""
    if isinstance(shape, list):
        return (_LIST, shape[0] if shape[0] in _LEAVES else _compile(shape[0]))
    return (_MAP, tuple(k for k, v in shape.items() if v is SCALAR and k != "*"),
            tuple(k for k, v in shape.items() if v is TEXT),
            tuple((k, _compile(v)) for k, v in shape.items() if v not in _LEAVES), shape.get("*") is SCALAR)


_OBJECT = {"apiVersion": SCALAR, "kind": SCALAR, "metadata": _META}  # every object
_COMPILED = {kind: _compile({**_OBJECT, **shape}) for kind, shape in SHAPES.items()}
_ANY_KIND = _compile(_OBJECT)
Path = tuple | None  # (parent path, key or index), built as the walk goes: cheaper than a string per field


def shape_problem(obj: dict) -> str | None:
    """The first field of `obj` (a Kubernetes object) that devlane reads with the wrong type, in words.

    This runs on every object, so the walk follows the compiled shapes (a few levels deep), checks plain
    values in place, and spells a field's path only when it is wrong."""
    kind = obj.get("kind")
    stack: list[tuple[Any, tuple, Path]] = [(obj, _COMPILED.get(kind, _ANY_KIND) if type(kind) is str else _ANY_KIND,
                                             None)]
    while stack:
        value, shape, path = stack.pop()
        if shape[0] is _LIST:
            if type(value) is not list:
                return f"{_spell(path)} must be a list, not {_kind(value)}"
            item = shape[1]
            for i, v in enumerate(value):
                if item is SCALAR:
                    if type(v) in _COLLECTIONS:
                        return f"{_spell((path, i))} must be a plain value, not {_kind(v)}"
                elif item is TEXT:
                    if v is not None and type(v) is not str:
                        return f"{_spell((path, i))} must be a string, not {_kind(v)}"
                elif v is None:  # a null field is absent; a null item of a list of objects is wrong
                    return f"{_spell((path, i))} must be a mapping, not null"
                else:
                    stack.append((v, item, (path, i)))
            continue
        if type(value) is not dict:
            return f"{_spell(path)} must be a mapping, not {_kind(value)}"
        _, plain, text, nested, star = shape
        for key in value if star else plain:
            if type(value.get(key)) in _COLLECTIONS:
                return f"{_spell((path, key))} must be a plain value, not {_kind(value[key])}"
        for key in text:
            if value.get(key) is not None and type(value[key]) is not str:
                return f"{_spell((path, key))} must be a string, not {_kind(value[key])}"
        for key, sub in nested:
            v = value.get(key)
            if v is not None:
                stack.append((v, sub, (path, key)))
    return None


def _spell(path: Path) -> str:
    """`spec.ports[0].name` from a path."""
    parts: list[str] = []
    while path is not None:
        path, key = path
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(reversed(parts)).lstrip(".")


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, set):
        return "a set"
    return f"{type(value).__name__} {value!r}"[:60]


def check(obj: dict, where: Where | Callable[[], Where], problem: str | bool | None = False) -> Problem | None:
    """A problem for an object of the wrong shape (None: fine); `problem`: its `shape_problem`, when known;
    `where` may be a function, called only when there is a problem."""
    problem = shape_problem(obj) if problem is False else problem
    if problem is None:
        return None
    return Problem(f"field {problem}", where if isinstance(where, Where) else where(),
                   hint="fix the field's type (the Kubernetes API refuses it too), or exclude the file with "
                        "`exclude:` in .devlane.yaml", code="schema")
