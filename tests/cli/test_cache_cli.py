"""The cache from the command line, in-process: `devlane cache stats` (text, JSON) and `cache clear` on a cache a
render filled; `--no-cache` on every command that reads a repository and on `cmp generate`, which then neither
reads the cache (a planted entry is ignored) nor writes it; and a warm render after a one-file change, which
parses that one file and writes what a `--no-cache` render of the changed repository writes."""

from __future__ import annotations

import argparse
import json

import pytest
from support import app_yaml
from support.caches import opened_caches, own_cache

from renderer.cli import build_parser
from renderer.core.cache import Cache, blob_id, encode
from renderer.core.source import WorktreeSource
from renderer.render.inputs import parsing
from renderer.render.stored import model_entry

RENDER = ["render", "--flow", "pr-1", "--service", "api=api:2", "--stdout"]


@pytest.fixture
def cache_root(harness, monkeypatch):
    """A repository of three files (two services and a ConfigMap), and a cache directory of this test's own."""
    harness.write("api.yaml", app_yaml("api", containers=[{"name": "main", "image": "api:1",
                                                           "env": [{"name": "LOG_LEVEL", "value": "info"}]}]))
    harness.write("db.yaml", app_yaml("db"))
    harness.write("config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n")
    return own_cache(monkeypatch, harness.tmp / "cache")


def cached(harness, root, *more: bytes) -> list[str]:
    """Which of the repository's files (and `more` contents) the cache holds parses of, by blob id."""
    contents = [p.read_bytes() for p in sorted(harness.root.glob("*.yaml"))] + list(more)
    return sorted(Cache(root).get_many(parsing.cache_kind(), [blob_id(data) for data in contents]))


def _filled(harness, cache_root, monkeypatch) -> int:
    """Render once with a 500 MiB bound; the bytes the cache then holds."""
    monkeypatch.setenv("DEVLANE_CACHE_SIZE", "500M")
    assert harness.render("pr-1", {"api": "api:2"}).flows
    assert len(cached(harness, cache_root)) == 3
    return sum(p.stat().st_size for p in cache_root.rglob("*") if p.is_file())


def test_stats_and_clear_on_a_cache_a_render_filled(harness, cache_root, monkeypatch):
    size = _filled(harness, cache_root, monkeypatch)
    as_json = harness.cli("cache", "stats", "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    found = json.loads(as_json.stdout)
    assert (found["directory"], found["bytes"], found["limit"]) == (str(cache_root), size, 500 * 1024 ** 2)
    kinds = found["kinds"]  # the parses, and the repository's model (`render.stored`)
    assert sorted(kinds) == sorted([parsing.cache_kind(), model_entry.cache_kind()])
    assert kinds[parsing.cache_kind()]["bytes"] + kinds[model_entry.cache_kind()]["bytes"] == size
    assert kinds[model_entry.cache_kind()]["entries"] == 1
    assert found["entries"] > 0 and found["oldest"] <= found["newest"]

    text = harness.cli("cache", "stats")
    assert text.returncode == 0, text.stderr
    assert 1024 <= size < 1024 ** 2
    human = f"{size / 1024:,.1f} KiB"
    assert f"cache directory: {cache_root}\n" in text.stdout
    assert f"({human}) of a 500.0 MiB bound ($DEVLANE_CACHE_SIZE sets it)" in text.stdout
    assert " parsed YAML files, " in text.stdout and " 1 repository model(s), " in text.stdout
    assert "least recently used: " in text.stdout

    cleared = harness.cli("cache", "clear")
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout.endswith(f" ({human}) from {cache_root}\n")
    assert cached(harness, cache_root) == []
    assert [p.name for p in cache_root.rglob("*") if p.is_file()] == [".evicted"]  # when it last checked the size
    assert json.loads(harness.cli("cache", "stats", "-o", "json").stdout)["entries"] == 0
    assert "least recently used" not in harness.cli("cache", "stats").stdout


def test_stats_and_clear_count_parses_not_files(harness, cache_root, monkeypatch):
    _filled(harness, cache_root, monkeypatch)
    assert json.loads(harness.cli("cache", "stats", "-o", "json").stdout)["entries"] == 4  # and the model
    assert ": 3 parsed YAML files, " in harness.cli("cache", "stats").stdout
    assert harness.cli("cache", "clear").stdout.startswith("removed 4 entries ")


def _repository_commands() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand that reads a repository (it takes REPO), and `cmp generate`."""
    found = {}
    top = build_parser()
    for name, parser in _subcommands(top).items():
        inner = _subcommands(parser)
        for sub, leaf in [(name, parser)] if not inner else [(f"{name} {k}", v) for k, v in inner.items()]:
            if any(a.dest == "repo" for a in leaf._actions) or sub == "cmp generate":
                found[sub] = leaf
    return found


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def test_every_command_that_reads_a_repository_takes_no_cache():
    commands = _repository_commands()
    assert {"render", "plan", "lint", "diff", "preview", "provision", "delete", "cmp generate"} <= set(commands)
    for name, parser in commands.items():
        assert any("--no-cache" in a.option_strings and a.dest == "cache" for a in parser._actions), name


def test_no_cache_neither_reads_nor_writes_the_cache(harness, cache_root):
    data = (harness.root / "api.yaml").read_bytes()
    (parsed,) = parsing.parse_files([("api.yaml", data)], None)
    parsed.docs[0]["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "planted"
    assert Cache(cache_root).put_many(parsing.cache_kind(), {blob_id(data): encode([parsed.docs, parsed.shapes])})
    planted = harness.cli(*RENDER)
    assert planted.returncode == 0, planted.stderr
    assert "value: planted" in planted.stdout  # the cache is read: a planted entry stands for the file

    before = sorted(p.relative_to(cache_root) for p in cache_root.rglob("*"))
    for args in (RENDER, ["plan", "--flow", "pr-1", "--service", "api=api:2"], ["lint"]):
        out = harness.cli(*args, "--no-cache")
        assert out.returncode == 0, out.stderr
        assert "planted" not in out.stdout
    generate = harness.cli("cmp", "generate", "--no-cache", cwd=harness.root,
                           env={"ARGOCD_ENV_FLOW_ID": "pr-1", "PARAM_SERVICES_0": "api=api:2"})  # fmt: skip
    assert generate.returncode == 0, generate.stderr
    assert "value: info" in generate.stdout and "planted" not in generate.stdout
    assert sorted(p.relative_to(cache_root) for p in cache_root.rglob("*")) == before


def test_no_cache_leaves_the_cache_directory_alone_and_a_render_fills_it(harness, cache_root):
    assert harness.cli(*RENDER, "--no-cache").returncode == 0
    assert not cache_root.exists()
    assert harness.cli(*RENDER).returncode == 0
    assert len(cached(harness, cache_root)) == 3


def test_a_warm_render_after_a_one_file_change_parses_that_file_only(harness, cache_root, monkeypatch):
    opened = opened_caches(monkeypatch)
    assert harness.cli(*RENDER).returncode == 0
    api = harness.root / "api.yaml"
    before = api.read_bytes()
    api.write_text(api.read_text().replace('"value": "info"', '"value": "debug"'))

    warm = harness.cli(*RENDER)
    fresh = harness.cli(*RENDER, "--no-cache")

    assert warm.returncode == 0 and fresh.returncode == 0, warm.stderr + fresh.stderr
    _, counted, off = (c.counters if c else None for c in opened)
    # the env value is no part of an outline: the stored model holds, the other two files are never decoded
    assert counted.kinds[model_entry.cache_kind()] == [1, 0] and off is None
    assert counted.kinds[parsing.cache_kind()] == [0, 1] and counted.writes == 1
    assert not any(kind.startswith("files-") for kind in counted.kinds)  # no file index: every file is read
    assert len(cached(harness, cache_root, before)) == 4
    assert warm.stdout == fresh.stdout
    assert "value: debug" in warm.stdout and "value: info" not in warm.stdout


def test_a_warm_render_reads_every_file_and_parses_only_the_changed_one(harness, cache_root, monkeypatch):
    """No stat signature is trusted for content (a cache others can write could lie about it): a warm render
    reads and hashes every file, and parses only the one whose content changed, writing what --no-cache writes."""
    read: list[str] = []
    real = WorktreeSource.read
    monkeypatch.setattr(WorktreeSource, "read", lambda self, path: read.append(path) or real(self, path))
    opened = opened_caches(monkeypatch)
    assert harness.cli(*RENDER).returncode == 0
    api = harness.root / "api.yaml"
    api.write_text(api.read_text().replace('"value": "info"', '"value": "warn"'))
    read.clear()
    warm = harness.cli(*RENDER)
    assert sorted(read) == ["api.yaml", "config.yaml", "db.yaml"]
    assert opened[-1].counters.kinds[parsing.cache_kind()] == [0, 1]  # one parse; the others from the cache
    fresh = harness.cli(*RENDER, "--no-cache")
    assert warm.returncode == 0 and warm.stdout == fresh.stdout and "value: warn" in warm.stdout


def test_a_ref_render_reads_what_a_work_tree_render_wrote(harness, cache_root, monkeypatch):
    """Keys are git blob ids, computed alike for work-tree files and blobs: the same content is one entry."""
    harness.commit("three files")
    opened = opened_caches(monkeypatch)
    worktree = harness.cli(*RENDER)
    at_head = harness.cli(*RENDER, "--ref", "HEAD")
    assert worktree.returncode == 0 and at_head.returncode == 0, worktree.stderr + at_head.stderr
    assert at_head.stdout == worktree.stdout
    _, from_git = opened
    # the same blobs: the work tree's model holds, and no file is decoded before a stage reads it
    assert from_git.counters.kinds == {model_entry.cache_kind(): [1, 0], parsing.cache_kind(): [1, 0]}
    assert from_git.counters.writes == 0
