"""The work tree's file index (`core.fileindex`): a file is taken from the cache by its signature only while the
signature is the one recorded; files changed within the racy margin are never recorded; a damaged index, a
parse evicted meanwhile, a deleted file and a symlink all fall back to reading, and every load gives the
documents a load without the cache gives."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from renderer.core import fileindex
from renderer.core.cache import Cache, blob_id
from renderer.core.fileindex import FileIndex, signature
from renderer.core.source import WorktreeSource
from renderer.render import load, parsing

INCLUDES, EXCLUDES = ["**/*.yaml"], []


def _cm(name: str, value: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{k: {value}}}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("a", "b", "c"):
        (root / f"{name}.yaml").write_text(_cm(name, "v1"))
    return root


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path / "cache")


class Loads:
    """load_documents on `repo`, recording which files each call read."""

    def __init__(self, repo: Path, cache: Cache, monkeypatch: pytest.MonkeyPatch):
        self.repo, self.cache, self.read = repo, cache, []
        real = WorktreeSource.read
        monkeypatch.setattr(WorktreeSource, "read", lambda source, path: self.read.append(path) or real(source, path))

    def __call__(self) -> dict[str, str]:
        """`k` of each ConfigMap by name; also checks the file digests against the files."""
        self.read = []
        found = load.load_documents(WorktreeSource(self.repo), INCLUDES, EXCLUDES, self.cache)
        docs, files = found.documents, found.files
        for path, sha in files.items():
            assert sha == hashlib.sha256((self.repo / path).read_bytes()).hexdigest()
        return {d.name: d.obj["data"]["k"] for d in docs}


@pytest.fixture
def loads(repo, cache, monkeypatch) -> Loads:
    monkeypatch.setattr(fileindex, "RACY_NS", 0)
    return Loads(repo, cache, monkeypatch)


def test_unchanged_files_are_not_read_again_and_a_changed_one_is(loads, repo):
    assert loads() == {"a": "v1", "b": "v1", "c": "v1"} and sorted(loads.read) == ["a.yaml", "b.yaml", "c.yaml"]
    assert loads() == {"a": "v1", "b": "v1", "c": "v1"} and loads.read == []
    (repo / "b.yaml").write_text(_cm("b", "v2"))  # the same size: the timestamps tell
    assert loads() == {"a": "v1", "b": "v2", "c": "v1"} and loads.read == ["b.yaml"]
    assert loads() == {"a": "v1", "b": "v2", "c": "v1"} and loads.read == []


def test_a_change_that_restores_size_and_mtime_is_still_seen(loads, repo):
    """ctime cannot be set from user space: restoring the mtime after a same-size edit does not hide it."""
    loads()
    path = repo / "a.yaml"
    st = path.stat()
    path.write_text(_cm("a", "v9"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert loads()["a"] == "v9" and loads.read == ["a.yaml"]


def test_a_file_replaced_by_another_inode_is_read(loads, repo):
    loads()
    (repo / "new.tmp").write_text(_cm("c", "v3"))
    os.replace(repo / "new.tmp", repo / "c.yaml")
    assert loads()["c"] == "v3" and loads.read == ["c.yaml"]


def test_files_changed_within_the_racy_margin_are_read_every_time(repo, cache, monkeypatch):
    monkeypatch.setattr(fileindex, "RACY_NS", 3600 * 10**9)
    loads = Loads(repo, cache, monkeypatch)
    loads()
    loads()
    assert sorted(loads.read) == ["a.yaml", "b.yaml", "c.yaml"]


def test_a_deleted_file_leaves_the_index_and_a_new_one_is_read(loads, repo, cache):
    loads()
    (repo / "b.yaml").unlink()
    (repo / "d.yaml").write_text(_cm("d", "v1"))
    assert loads() == {"a": "v1", "c": "v1", "d": "v1"} and loads.read == ["d.yaml"]
    index = FileIndex(cache, os.path.realpath(repo), "\0".join([*INCLUDES, "", *EXCLUDES]))
    assert sorted(index.entries) == ["a.yaml", "c.yaml", "d.yaml"]


def test_a_parse_evicted_meanwhile_is_read_and_parsed_again(loads, cache):
    loads()
    for pack in (cache.root / "v1" / parsing.cache_kind()).glob("*.pack"):
        pack.unlink()
    assert loads() == {"a": "v1", "b": "v1", "c": "v1"} and sorted(loads.read) == ["a.yaml", "b.yaml", "c.yaml"]


@pytest.mark.parametrize("damage", [b"", b"not an entry", None])
def test_a_damaged_or_foreign_index_costs_one_read_of_every_file(loads, cache, damage):
    loads()
    (entry,) = [p for p in (cache.root / "v1" / fileindex.KIND).rglob("*") if p.is_file()]
    if damage is None:  # a well-formed entry naming the wrong blob for a signature that does not match
        key = entry.name
        wrong = {"a.yaml": [0, 0, 0, 0, 0, blob_id(b"x"), "0" * 64]}
        assert cache.put(fileindex.KIND, key, wrong)
    else:
        entry.write_bytes(damage)
    assert loads() == {"a": "v1", "b": "v1", "c": "v1"} and sorted(loads.read) == ["a.yaml", "b.yaml", "c.yaml"]


def test_each_listing_keeps_its_own_index(repo, cache, monkeypatch):
    monkeypatch.setattr(fileindex, "RACY_NS", 0)
    loads = Loads(repo, cache, monkeypatch)
    loads()
    docs = load.load_documents(WorktreeSource(repo), ["a.yaml"], EXCLUDES, cache).documents  # another listing
    assert [d.name for d in docs] == ["a"]
    loads()
    assert loads.read == []  # the narrower listing did not drop b and c from this one's index


def test_a_symlink_has_no_signature_and_is_read_through_its_checks(repo, cache, monkeypatch):
    (repo / "link.yaml").symlink_to(repo / "a.yaml")
    monkeypatch.setattr(fileindex, "RACY_NS", 0)
    source = WorktreeSource(repo)
    source.list_files(INCLUDES, EXCLUDES)
    assert source.signature("link.yaml") is None and source.signature("a.yaml") == signature(
        os.lstat(repo / "a.yaml"))
    loads = Loads(repo, cache, monkeypatch)
    loads()
    loads()
    assert loads.read == ["link.yaml"]


def test_record_skips_recent_files_whose_old_entry_no_longer_matches(tmp_path, cache):
    index = FileIndex(cache, str(tmp_path))
    old = (10, 1, 1, 7, 8)
    index.record("x.yaml", old, "b" * 40, "s" * 64)
    assert index.lookup("x.yaml", old) == ("b" * 40, "s" * 64)
    index.changed = False
    recent = (10, time.time_ns(), time.time_ns(), 7, 8)
    index.record("x.yaml", recent, "c" * 40, "t" * 64)
    assert index.lookup("x.yaml", recent) is None and not index.changed
    assert index.lookup("x.yaml", old) == ("b" * 40, "s" * 64)  # stale, but no file has that signature now
