"""Fuzz: no input reaches the user as "internal error" or a traceback.

Every command ends in exit 0, 1 or 2 with, on failure, devlane's own one-line errors, whatever the
manifests, `.devlane.yaml`, the flow file or the Argo CD CMP parameters hold. The generators start
from a valid repository and put values of every YAML type (and raw text) in the places devlane reads,
so a missing type check anywhere in load, model, plan, clone, routing or emit shows up as a crash.
The runs are in-process (`harness.cli`) and bounded (`max_examples`, `deadline`): about a second each,
deterministic; `DEVLANE_FUZZ_EXAMPLES=5000` fuzzes longer with fresh random inputs.
"""

from __future__ import annotations

import copy
import json
import os
from datetime import timedelta

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

K = "kardinal.dev.service/"
APP = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "labels": {"app": "api"}},
       "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "api"}},
                "template": {"metadata": {"labels": {"app": "api"}}, "spec": {
                    "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "echo db"]}],
                    "containers": [{"name": "main", "image": "api:1", "args": ["--db", "db:5432"],
                                    "env": [{"name": "DB_URL", "value": "postgres://db:5432/x"},
                                            {"name": "CFG", "valueFrom": {"configMapKeyRef": {"name": "cfg",
                                                                                            "key": "url"}}}],
                                    "envFrom": [{"configMapRef": {"name": "cfg"}}],
                                    "ports": [{"name": "http", "containerPort": 8080}]}],
                    "volumes": [{"name": "v", "configMap": {"name": "cfg"}},
                                {"name": "p", "projected": {"sources": [{"secret": {"name": "s"}}]}}]}}}}
SERVICE = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "api", "annotations": {K + "dependencies": "db:tcp", K + "plugins": "seed"}},
           "spec": {"selector": {"app": "api"}, "ports": [{"name": "http", "port": 80, "appProtocol": "HTTP"}]}}
DB = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
      "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
               "template": {"metadata": {"labels": {"app": "db"}},
                            "spec": {"containers": [{"name": "pg", "image": "postgres:16"}]}}}}
DB_SERVICE = {"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": "db", "annotations": {K + "stateful": "true"}},
              "spec": {"selector": {"app": "db"}, "ports": [{"name": "tcp", "port": 5432}]}}
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
              "data": {"url": "http://db:5432", "app.yaml": "db:\n  host: db\n", "x.json": '{"host": "db"}'}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"DB": "db:5432"},
          "data": {"X": "ZGI6NTQzMg=="}}
INGRESS = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "web", "annotations": {K + "ingress": "true"}},
           "spec": {"tls": [{"hosts": ["shop.example.com"]}], "defaultBackend": {"service": {"name": "api"}},
                    "rules": [{"host": "shop.example.com", "http": {"paths": [
                        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "api",
                                                                                   "port": {"number": 80}}}}]}}]}}
ROUTE = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
         "metadata": {"name": "r", "annotations": {K + "route": "true"}},
         "spec": {"hostnames": ["r.example.com"], "parentRefs": [{"name": "gw"}],
                  "rules": [{"backendRefs": [{"name": "api", "port": 80}]}]}}
JOB = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "migrate"},
       "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
           "containers": [{"name": "m", "image": "m:1", "env": [{"name": "DB_HOST", "value": "db"}]}]}}}}}}
PLUGINS = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "defs", "annotations": {
    K + "plugin-definition": "- name: seed\n  type: stateful\n  servicename: seed\n  args: {seed: x}\n"}}}
BASE = [APP, SERVICE, DB, DB_SERVICE, CONFIG_MAP, SECRET, INGRESS, ROUTE, JOB, PLUGINS]

WORDS = ["api", "db", "db:tcp", "api:http", "seed", "true", "false", "http", "x", "", "-", "[", "{", "pr-1",
         "http://db:5432", "a=b;c=d", "db.other:tcp", "0", "Service", "v1", "apps/v1", "name", "spec"]
KEYS = st.sampled_from(["name", "namespace", "spec", "metadata", "annotations", "labels", "containers", "env",
                        "value", "ports", "selector", "template", "data", "rules", "host", "backend", "service",
                        "image", "kind", "apiVersion", "x", K + "dependencies", K + "plugins", K + "stateful",
                        K + "shared", K + "external", K + "ingress"]) | st.text(max_size=6)
SCALARS = (st.none() | st.booleans() | st.integers(-3, 70000) | st.floats(allow_nan=False, width=16)
           | st.sampled_from(WORDS) | st.text(max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=6)
pytestmark = [pytest.mark.e2e, pytest.mark.sandbox_free]  # about five seconds in all; in-process parsing

EXAMPLES = int(os.environ.get("DEVLANE_FUZZ_EXAMPLES", "0"))  # set to fuzz longer, with fresh random inputs
FUZZ = settings(max_examples=EXAMPLES or 40, deadline=timedelta(seconds=5), derandomize=not EXAMPLES, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
RUN = ["render", "--flow", "pr-1", "--service", "api=api:2", "--stdout"]


def _containers(value):
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, list):
        return list(range(len(value)))
    return []


TEXT = st.lists(st.sampled_from([*"ab:- \n\t[]{},&*!|>'\"#%@`?=.0\\é", "<<", "---", "\n- ", "\n  ", "apiVersion: v1\n",
                                 "kind: Service\n", "metadata: {name: x}\n", "&a ", "*a", "!!str ", "!!binary "]),
                max_size=60).map("".join)


ANNOTATIONS = [K + "dependencies", K + "plugins", K + "plugin-definition", K + "stateful", K + "shared",
               K + "external", K + "ingress", K + "host", "devlane.dev/container", "devlane.dev/workload",
               "devlane.dev/no-rewrite"]


@st.composite
def mutated_documents(draw) -> list:
    """The base repository with 1-4 places (any depth, any document) replaced by a value of any type, and
    maybe an annotation (a plugin definition's YAML included) set to any text."""
    docs = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 4))):
        parent, key = docs, draw(st.integers(0, len(docs) - 1))
        while _containers(parent[key]) and draw(st.booleans()):
            parent, keys = parent[key], _containers(parent[key])
            key = keys[draw(st.integers(0, len(keys) - 1))]
        parent[key] = draw(VALUES)
    if draw(st.booleans()):
        doc = docs[draw(st.integers(0, len(docs) - 1))]
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            text = draw(st.sampled_from(WORDS) | VALUES.map(yaml.safe_dump) | TEXT)
            annotations = doc["metadata"].get("annotations")
            doc["metadata"]["annotations"] = {**(annotations if isinstance(annotations, dict) else {}),
                                              draw(st.sampled_from(ANNOTATIONS)): text}
    return docs


def _ok(out) -> None:
    """Exit 0, 1 or 2, and never a crash: no traceback, no "internal error"."""
    assert out.returncode in (0, 1, 2), out
    assert "internal error" not in out.stderr and "Traceback" not in out.stderr, out.stderr


SEED = """
def create_flow(service_specs, pod_specs, flow_uuid, seed="x"):
    return {"pod_specs": pod_specs, "config_map": {"seed": str(seed)}}
"""


def _write_docs(harness, docs: list) -> None:
    """The manifests, with the `seed` plugin they use built in (in-process, no plugin process)."""
    if not (harness.tmp / "builtins" / "seed").exists():
        harness.builtin("seed", SEED)
    harness.write("app.yaml", yaml.safe_dump_all(docs, sort_keys=False))


@FUZZ
@given(docs=mutated_documents())
def test_any_manifest_values(harness, docs):
    _write_docs(harness, docs)
    for argv in (RUN, ["lint"], ["plan", "--flow", "pr-1", "--service", "api=api:2"],
                 ["preview", "--flow", "pr-1", "--service", "api=api:2"]):
        _ok(harness.cli(*argv))




@FUZZ
@given(text=TEXT)
def test_any_manifest_text(harness, text):
    harness.write("app.yaml", yaml.safe_dump_all(BASE, sort_keys=False))
    harness.write("other.yaml", text)
    _ok(harness.cli(*RUN))


CONFIG_KEYS = st.sampled_from(["apiVersion", "kind", "manifests", "exclude", "routing", "domain", "namespace",
                               "output", "replicas", "plugins", "policy", "pipeline"])


@FUZZ
@given(config=st.dictionaries(CONFIG_KEYS, VALUES, max_size=4),
       nested=st.dictionaries(st.sampled_from(["sources", "timeoutSeconds", "warningsAsErrors", "strict", "plugin",
                                               "stage", "args", "name", "behavior"]), VALUES, max_size=3))
def test_any_config(harness, config, nested):
    _write_docs(harness, BASE)
    for key in ("plugins", "policy"):
        if isinstance(config.get(key), dict):
            config[key].update(nested)
    if isinstance(config.get("pipeline"), list):
        config["pipeline"].append(nested)
    harness.write(".devlane.yaml", yaml.safe_dump({"apiVersion": "devlane.dev/v1alpha1", "kind": "Config", **config}))
    _ok(harness.cli(*RUN))
    _ok(harness.cli("lint"))


FLOW = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Flow", "metadata": {"name": "pr-1"},
        "spec": {"services": [{"name": "api", "image": "api:2", "env": {"A": "b"}}],
                 "template": {"file": "t.yaml", "args": {"a": 1}}}}
KARDINAL_FLOW = {"apiVersion": "core.kardinal.dev/v1", "kind": "Flow", "metadata": {"name": "pr-1"},
                 "spec": {"service": "api", "image": "api:2"}}


@st.composite
def mutated_flow(draw) -> dict:
    flow = copy.deepcopy(draw(st.sampled_from([FLOW, KARDINAL_FLOW])))
    parent, key = {"root": flow}, "root"
    while _containers(parent[key]) and draw(st.booleans()):
        parent, keys = parent[key], _containers(parent[key])
        key = keys[draw(st.integers(0, len(keys) - 1))]
    parent[key] = draw(VALUES)
    return parent["root"] if key == "root" else flow


@FUZZ
@given(flow=mutated_flow())
def test_any_flow_file(harness, flow):
    _write_docs(harness, BASE)
    harness.write("t.yaml", yaml.safe_dump(SERVICE))
    path = harness.write("flow.yaml", yaml.safe_dump(flow))
    _ok(harness.cli("render", "--flow-file", str(path), "--stdout"))


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.sampled_from(["pr-1", "api=api:2", "api", ""])
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["name", "string", "array", "map"]) | st.text(max_size=4), inner, max_size=3),
                    max_leaves=6)


@FUZZ
@given(params=JSON, flow_id=st.none() | st.sampled_from(["pr-1", "pr-1\n", "PR", ""]) | st.text(max_size=6),
       timeout=st.none() | st.sampled_from(["90s", "1m30s", "0s", "x", "5"]) | st.text(max_size=5),
       flat=st.dictionaries(st.sampled_from(["PARAM_FLOW_ID", "PARAM_SERVICES_0", "PARAM_SERVICES_x",
                                             "KUBE_API_VERSIONS"]), st.text(max_size=10), max_size=3))
def test_any_cmp_parameters(harness, params, flow_id, timeout, flat):
    _write_docs(harness, BASE)
    env = {"ARGOCD_APP_PARAMETERS": json.dumps(params), **flat}
    if flow_id is not None:
        env["ARGOCD_ENV_FLOW_ID"] = flow_id
    if timeout is not None:
        env["ARGOCD_EXEC_TIMEOUT"] = timeout
    env = {k: v.replace("\0", "") for k, v in env.items()}
    _ok(harness.cli("cmp", "generate", cwd=harness.root, env=env))
