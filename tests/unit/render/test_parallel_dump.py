"""Objects dumped across forked children (a wide flow's thousands of files) give the same text, in the same
order, as dumping them one by one here."""

from __future__ import annotations

import pytest

from renderer.core import parallel
from renderer.core.yamlio import dump
from renderer.render.output import emit


def _objects(n: int) -> list[dict]:
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "labels": {"i": str(i)}},
             "data": {"text": "line one\nline two\n" * (i % 3), "n": str(i), "empty": ""}} for i in range(n)]


@pytest.mark.skipif(not parallel.can_fork(), reason="forked dumping is for Linux")
def test_forked_dumps_equal_serial_ones(monkeypatch):
    objects = _objects(41)
    monkeypatch.setattr(emit, "PARALLEL_OBJECTS", 2)
    monkeypatch.setattr(parallel, "available_cpus", lambda: 3)
    forked = emit._dumped(objects)
    assert forked == [dump(o) for o in objects]
    assert "line two" in forked[40] and "name: cm-40" in forked[40]


def test_render_files_names_and_texts_do_not_depend_on_forking(monkeypatch):
    objects = _objects(12)
    serial = emit.render_files(objects)
    monkeypatch.setattr(emit, "PARALLEL_OBJECTS", 2)
    monkeypatch.setattr(parallel, "available_cpus", lambda: 2)
    assert emit.render_files(objects) == serial
    assert sorted(serial[0]) == [f"configmap-cm-{i}.yaml" for i in sorted(range(12), key=lambda i: f"cm-{i}")]
