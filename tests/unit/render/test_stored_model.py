"""What makes the stored model (`render.stored`) safe to reuse, on every plain-YAML corpus (the examples, Kardinal's
demos) and on a repository of odd shapes: the passes over the whole repository read only the outlines (a model built
from documents whose bodies raise on access is the model of the real documents), and a stored model reads back as
the same model."""

from __future__ import annotations

import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import EXAMPLE, ROOT, demo_file
from support.demos import DEMOS

from renderer.core.k8s import outline
from renderer.core.source import WorktreeSource
from renderer.render.inputs import document, load
from renderer.render.model.repo_index import SelectorIndex, pod_items
from renderer.render.model.topology import build_model
from renderer.render.stored import model_codec

ODD = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, annotations: {kardinal.dev.service/dependencies: "api:8080"}}
spec:
  schedule: "0 0 * * *"
  jobTemplate: {spec: {template: {metadata: {labels: {job: nightly}},
                spec: {containers: [{name: run, image: r:1, env: [{name: A, value: b}]}]}}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec: {template: {spec: {containers: [{image: noname:1}, {name: second}]}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, labels: {app: api}}
spec:
  selector: {matchLabels: {app: api}, matchExpressions: [{key: tier, operator: NotIn, values: [db]}]}
  template:
    metadata: {labels: {app: api}, annotations: {x: y}}
    spec: {containers: [{name: web, image: w:1, ports: [{containerPort: 8080}]}, {name: side, image: s:1}]}
---
apiVersion: v1
kind: Service
metadata: {name: api, annotations: {devlane.dev/container: side}}
spec: {selector: {app: api}, ports: [{port: 8080, appProtocol: HTTP}]}
---
apiVersion: v1
kind: Service
metadata: {name: legacy, annotations: {kardinal.dev.service/ingress: "true", kardinal.dev.service/host: a.b}}
spec: {selector: {app: api}, ports: [{name: http, port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route, annotations: {kardinal.dev.service/route: "true"}}
spec: {hostnames: [shop.example.com], rules: [{backendRefs: [{name: api, port: 8080}]}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: lone, labels: {app: lone}}
spec: {containers: [{name: c, image: c:1}]}
"""


def corpora() -> list[tuple[str, Path | str]]:
    found: list[tuple[str, Path | str]] = [("bookshop", EXAMPLE), ("cloudshop", ROOT / "examples" / "cloudshop"),
                                           ("odd", ODD)]
    return found + [(name, file) for name, (file, _) in sorted(DEMOS.items())]


@pytest.fixture(params=corpora(), ids=lambda c: c[0])
def documents(request, tmp_path) -> list[document.Document]:
    """The corpus's documents, as loading reads them (config annotations applied)."""
    name, src = request.param
    repo = tmp_path / "repo"
    if isinstance(src, Path):
        shutil.copytree(src, repo, ignore=shutil.ignore_patterns("rendered"))
    else:
        repo.mkdir()
        if name == "odd":
            (repo / "odd.yaml").write_text(src)
        else:
            path = demo_file(src)
            if not path.exists():
                pytest.skip(f"{path} not available")
            shutil.copy(path, repo / "manifest.yaml")
    return load.read(WorktreeSource(repo)).documents


def bodiless(documents: list[document.Document]) -> list[document.Document]:
    """The documents with their outlines only: reading a body raises."""
    def body() -> dict:
        raise AssertionError("a pass over the whole repository read a body")
    out = []
    for d in documents:  # a Document whose fields come from its outline, and whose object raises
        doc = object.__new__(document.Document)
        doc.__dict__.update(document.head(outline(d.obj)), outline=outline(d.obj), file=d.file, index=d.index,
                            _body=body)
        out.append(doc)
    return out


def outlineless(documents: list[document.Document]) -> list[document.Document]:
    """The documents as a reused model makes them (`Document.lean`), whose bodies (and so outlines) raise."""
    def nothing() -> dict:
        raise AssertionError("a stored pass read a document")
    return [document.Document.lean((d.kind, d.api_version, d.name, d.namespace), d.file, d.index, nothing)
            for d in documents]


def test_the_passes_over_the_whole_repository_read_outlines_only(documents):
    real, outlined = build_model(documents), build_model(bodiless(documents))
    assert real.services, "a corpus without services tests nothing"
    assert model_codec.encode(outlined) == model_codec.encode(real) is not None
    assert outlined.index.selector_keys == real.index.selector_keys

    def selectors(model):
        return [(d.file, d.index, ns, sel, plain) for d, ns, sel, plain in model.index.selectors]
    assert selectors(outlined) == selectors(real) and selectors(real)
    assert outlined.index.claims == real.index.claims and outlined.index.names == real.index.names
    assert outlined.index.services == real.index.services


def test_a_stored_model_reads_back_as_the_same_model(documents):
    model = build_model(documents, "shop")
    stored = model_codec.encode(model)
    back = model_codec.decode(stored, documents, "shop")
    assert back is not None and model_codec.encode(back) == stored
    assert back.services == model.services and back.entries == model.entries and back.problems == model.problems
    assert back.plugin_defs == model.plugin_defs and back.externals == model.externals
    assert back.objects == model.objects and back.service_keys == model.service_keys
    assert {k: [n.key for n in v] for k, v in back.selecting.items()} == \
        {k: [n.key for n in v] for k, v in model.selecting.items()}
    assert model_codec.decode(stored, documents[:-1], "shop") is None  # other documents
    assert model_codec.decode(stored, documents, None) is None  # another default namespace


def test_the_passes_stored_with_the_model_read_back_as_they_run(documents):
    """Selector keys, baseline selectors and pods, and Services' selectors: the stored rows, decoded, are what
    the passes find on the documents (by place, in order), and a stored model answers from them alone."""
    model = build_model(documents, "shop")
    stored = model_codec.encode(model)
    assert stored is not None
    assert set(stored["tables"]) == {"selector_keys", "selectors", "services", "pods", "selector_index"}
    back = model_codec.decode(stored, outlineless(documents), "shop")  # the passes never ask a document
    assert back is not None and isinstance(back.index, model_codec.StoredIndex)

    def places(rows):
        return [tuple((d.file, d.index) if isinstance(d, document.Document) else d for d in row) for row in rows]
    assert back.index.selector_keys == model.index.selector_keys
    assert places(back.index.selectors) == places(model.index.selectors)
    assert places(back.index.service_selectors) == places(model.index.service_selectors)
    assert places(back.index.pods) == places(model.index.pods)
    assert "selector_index" in stored["tables"]  # the corpora's selectors are strings: the index is stored
    items = pod_items([d.outline for d in documents], "shop")
    items += [(ns, {**labels, "extra": "x"}, obj) for ns, labels, obj in items]  # pods with more labels match too
    hits = [((d.file, d.index), item.get("metadata", {}).get("name")) for d, item in
            back.index.selector_index.hits(items)]
    assert hits == [((d.file, d.index), item.get("metadata", {}).get("name")) for d, item in
                    SelectorIndex(model.index.selectors).hits(items)]


def test_an_outline_keeps_what_the_passes_read_where_they_read_it():
    obj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "n"},
           "spec": {"schedule": "x", "jobTemplate": {"spec": {"backoffLimit": 1, "template": {
               "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}, "odd"],
                                                            "volumes": []}}}}}}
    assert outline(obj) == {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "n"}, "spec": {
        "jobTemplate": {"spec": {"template": {"metadata": {"labels": {"a": "b"}},
                                              "spec": {"containers": [{"name": "c"}, "odd"]}}}}}}
    service = {"kind": "Service", "spec": {"selector": {"a": "b"}, "ports": [{"port": 1}], "type": "ClusterIP"}}
    assert outline(service) == {"kind": "Service", "spec": {"selector": {"a": "b"}, "ports": [{"port": 1}]}}
    route = {"kind": "HTTPRoute", "spec": {"rules": [{"backendRefs": []}]}}
    assert outline(route) == route  # an entry point's whole spec
    assert outline({"kind": "X", "spec": "text"}) == {"kind": "X", "spec": "text"}
    assert outline({"kind": "Deployment", "spec": {"template": {"spec": {"volumes": []}}}}) == \
        {"kind": "Deployment", "spec": {"template": {"spec": {}}}}  # a template without containers stays one


def test_a_deferred_body_is_decoded_once_whichever_thread_reads_it_first():
    calls: list[int] = []
    started = threading.Event()

    def body() -> dict:
        calls.append(1)
        started.wait(1)  # hold the decode open while the other threads ask too
        return {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}

    doc = document.Document.lean(("ConfigMap", "v1", "c", None), "c.yaml", 0, body)
    assert doc.name == "c" and calls == []  # the head needs no body
    with ThreadPoolExecutor(4) as pool:
        seen = [pool.submit(lambda: doc.obj) for _ in range(4)]
        started.set()
        objects = [f.result() for f in seen]
    assert calls == [1] and all(o is objects[0] for o in objects) and objects[0]["data"] == {"a": "b"}


_FIELDS = ["kind", "spec", "template", "jobTemplate", "containers", "name", "selector", "ports", "metadata", "labels"]
_ANY = st.recursive(st.none() | st.booleans() | st.integers() | st.sampled_from(["CronJob", "Ingress", "x"]),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(_FIELDS), inner, max_size=4), max_leaves=15)


@settings(max_examples=30)
@given(st.dictionaries(st.sampled_from(_FIELDS), _ANY, max_size=5))
def test_any_mapping_has_an_outline(obj):
    """Outlines are taken of every mapping of a changed file, before its shape is judged (a kind that is a
    list once crashed the set lookup of entry-point kinds)."""
    out = outline(obj)
    assert set(out) <= set(obj) and all(out[k] is obj[k] for k in ("apiVersion", "kind", "metadata") if k in out)
