"""The stored model (`render.stored`, the early cutoff), from the command line, in-process: a change no outline sees
(an env value, an image) reuses it and decodes only the files the flow reads; a change an outline holds (a
dependency, a selector label, a container's name) is a miss; an entry of another form, a parse the cache lost since,
and a file JSON cannot carry exactly are handled. Every render writes what a `--no-cache` render of the same files
writes."""

from __future__ import annotations

import json

import pytest
from support import app_yaml
from support.caches import opened_caches, own_cache

from renderer.core.cache import Cache, encode
from renderer.render.inputs import parsing
from renderer.render.stored import lean_documents, model_entry

RENDER = ["render", "--flow", "pr-1", "--service", "api=api:2", "--stdout"]
API = "api.yaml"


@pytest.fixture
def repo(harness, monkeypatch):
    """api depends on db; a ConfigMap; and this test's own cache directory."""
    api = app_yaml("api", containers=[{"name": "main", "image": "api:1",
                                       "env": [{"name": "LOG_LEVEL", "value": "info"}]}])
    harness.write(API, api.replace("annotations: {}", "annotations: {kardinal.dev.service/dependencies: 'db:http'}"))
    harness.write("db.yaml", app_yaml("db"))
    harness.write("config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n")
    own_cache(monkeypatch, harness.tmp / "cache")
    return harness


def edit(harness, old: str, new: str, name: str = API) -> None:
    path = harness.root / name
    text = path.read_text()
    assert old in text, f"{old!r} not in {name}"
    path.write_text(text.replace(old, new))


def render_twice(harness, monkeypatch) -> tuple[str, Cache]:
    """A render with the cache (the one under test) and a `--no-cache` one: the same output. Returns the output
    and the cache the first one opened."""
    opened = opened_caches(monkeypatch)
    cached, fresh = harness.cli(*RENDER), harness.cli(*RENDER, "--no-cache")
    assert cached.returncode == 0 and fresh.returncode == 0, cached.stderr + fresh.stderr
    assert cached.stdout == fresh.stdout
    assert opened[0] is not None
    return cached.stdout, opened[0]


def model_counts(cache: Cache) -> list[int]:
    """[hits, misses] of the stored model."""
    return cache.counters.kinds.get(model_entry.cache_kind(), [0, 0])


def test_a_change_no_outline_sees_reuses_the_model_and_decodes_only_what_the_flow_reads(repo, monkeypatch):
    first, cold = render_twice(repo, monkeypatch)
    assert model_counts(cold) == [0, 1] and "value: info" in first
    edit(repo, '"value": "info"', '"value": "debug"')
    edit(repo, '"image": "db:1"', '"image": "db:7"', "db.yaml")  # db's dev copy is not in this flow
    decoded: list[str] = []
    read_body = lean_documents.StoredFile.body

    def spy(self, index):
        decoded.append(self.path)
        return read_body(self, index)

    monkeypatch.setattr(lean_documents.StoredFile, "body", spy)
    out, warm = render_twice(repo, monkeypatch)
    assert decoded and "config.yaml" not in decoded  # the stored passes answered for the ConfigMap's file
    assert model_counts(warm) == [1, 0]
    assert "value: debug" in out and "value: info" not in out
    # the two changed files were parsed; config.yaml, which the flow does not read, was never decoded
    assert warm.counters.kinds[parsing.cache_kind()] == [0, 2]


@pytest.mark.parametrize("old,new,differs", [
    ("db:http", "db:80", False),  # an annotation: the edge names the port by number now (the same port)
    ("labels: {app: api}", "labels: {app: api, tier: web}", True),  # the pod template's labels
    ('"name": "main"', '"name": "server"', True),  # a container's name: the model's target container
])
def test_a_change_an_outline_holds_is_a_miss(repo, monkeypatch, old, new, differs):
    before, _ = render_twice(repo, monkeypatch)
    edit(repo, old, new)
    after, warm = render_twice(repo, monkeypatch)
    assert model_counts(warm) == [0, 1]
    assert (after != before) is differs


def stored_entry(harness) -> tuple[str, dict]:
    """The key and content of the one stored model."""
    [path] = [p for p in (harness.tmp / "cache").rglob("*") if p.is_file() and model_entry.cache_kind() in str(p)]
    return path.name, json.loads(Cache(harness.tmp / "cache").get_raw(model_entry.cache_kind(), path.name) or b"")


def test_an_entry_that_does_not_fit_is_not_used(repo, monkeypatch):
    render_twice(repo, monkeypatch)
    key, stored = stored_entry(repo)
    cache = Cache(repo.tmp / "cache")
    cache.put_raw(model_entry.cache_kind(), key, encode({**stored, "files": [["0" * 40, 1]] * 3}))
    out, warm = render_twice(repo, monkeypatch)
    assert model_counts(warm) == [0, 1] and "LOG_LEVEL" in out
    cache.put_raw(model_entry.cache_kind(), key, encode({**stored, "model": {"nodes": [[1, 2]]}}))
    out, warm = render_twice(repo, monkeypatch)  # the documents hold, the model is built again
    assert model_counts(warm) == [1, 0] and "LOG_LEVEL" in out


def test_a_parse_the_cache_lost_is_read_from_the_file(repo, monkeypatch):
    render_twice(repo, monkeypatch)
    edit(repo, '"value": "info"', '"value": "warn"')
    for pack in (repo.tmp / "cache").rglob("*.pack"):
        assert parsing.cache_kind() in str(pack)
        pack.unlink()  # every parse gone, the model kept
    out, warm = render_twice(repo, monkeypatch)
    assert model_counts(warm) == [1, 0] and "value: warn" in out


def test_a_file_json_cannot_carry_exactly_is_never_stored(repo, monkeypatch):
    repo.write("anchors.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: &l {x: y}, "
                               "annotations: *l}\ndata: {b: c}\n")
    render_twice(repo, monkeypatch)
    _, again = render_twice(repo, monkeypatch)
    assert model_counts(again) == [0, 1] and again.counters.writes == 0


@pytest.mark.parametrize("kind", ["[]", "{a: b}", "7"])
def test_a_kind_that_is_not_a_string_after_a_stored_model_is_no_crash(repo, monkeypatch, kind):
    """Found by the manifest fuzzer: the heads of a changed file are outlined before its shape is judged, and a
    kind that is a list cannot be looked up in a set. The render says what `--no-cache` says of it."""
    render_twice(repo, monkeypatch)
    repo.write("config.yaml", f"apiVersion: v1\nkind: {kind}\nmetadata: {{name: settings}}\nspec: {{a: b}}\n")
    cached, fresh = repo.cli(*RENDER), repo.cli(*RENDER, "--no-cache")
    assert "internal error" not in cached.stderr
    assert (cached.returncode, cached.stdout, cached.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
