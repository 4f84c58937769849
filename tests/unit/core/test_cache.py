"""The cache store (`renderer.core.cache`): keys are git blob ids; a damaged entry of any kind is a miss, never
an error, and the next write repairs it; a value JSON would change is not stored; a write that cannot happen
(no directory, a file-size limit) leaves nothing behind; the size bound evicts the least recently used first;
and processes writing, reading and clearing one directory at once only ever read whole entries.

Its use by the parser is in tests/unit/render/test_parsing.py; a real full disk in tests/e2e/test_cache_disk_full.py.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import resource
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from renderer.core import cache as cache_module
from renderer.core.cache import Cache, blob_id, encode, size_limit, write_entry

KIND = "test-kind"
KEY = "0123456789abcdef0123456789abcdef01234567"
OTHER = "f" * 40
VALUE = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "é", "labels": {}},
         "data": {"n": "1"}, "list": [1, -2.5, 10 ** 30, True, None, [], "ünïcode \u2028 \x00"]}  # fmt: skip


@pytest.fixture
def cache(tmp_path) -> Cache:
    return Cache(tmp_path / "cache")


def entry(cache: Cache, key: str = KEY) -> Path:
    return Path(cache._path(KIND, key))


def temp_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob(".tmp-*"))


def test_blob_id_is_what_git_hash_object_says(tmp_path):
    contents = [b"", b"apiVersion: v1\nkind: ConfigMap\n", b"\x00\xff binary \r\n", "ünïcode\n".encode()]
    for i, data in enumerate(contents):
        (tmp_path / f"f{i}").write_bytes(data)
    out = subprocess.run(["git", "hash-object", "--no-filters", *(f"f{i}" for i in range(len(contents)))],
                         cwd=tmp_path, capture_output=True, text=True, check=True, timeout=30)  # fmt: skip
    assert out.stdout.split() == [blob_id(data) for data in contents]


def test_a_value_comes_back_as_it_was_put(cache):
    assert cache.get(KIND, KEY) is None
    assert cache.put(KIND, KEY, VALUE)
    assert cache.get(KIND, KEY) == VALUE
    assert cache.get_raw(KIND, KEY) == cache_module.encode(VALUE)
    counted = cache.counters
    assert (counted.hits, counted.misses, counted.writes, counted.failed) == (2, 1, 1, 0)
    assert counted.kinds == {KIND: [2, 1]}
    assert Cache(cache.root).get(KIND, KEY) == VALUE  # another process's view: what is on disk
    with pytest.raises(ValueError, match="bad cache key"):
        cache.get(KIND, "../../etc/passwd")


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-3])


def _flip(offset: int) -> Callable[[Path], None]:
    def flip(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[offset] ^= 0x01
        path.write_bytes(bytes(data))

    return flip


def _append(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b" ")


def _symlink_to_a_good_entry(path: Path) -> None:
    elsewhere = path.parent / "elsewhere"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)


MAGIC = len(b"devlane-cache-1\n")
DAMAGES: dict[str, Callable[[Path], None]] = {
    "truncated": _truncate,
    "header only": lambda p: p.write_bytes(p.read_bytes()[:MAGIC + 8 + 16]),
    "shorter than a header": lambda p: p.write_bytes(p.read_bytes()[:10]),
    "payload byte flipped": _flip(-1),
    "length byte flipped": _flip(MAGIC + 7),
    "digest byte flipped": _flip(MAGIC + 8),
    "wrong magic": _flip(0),
    "bytes appended": _append,
    "empty file": lambda p: p.write_bytes(b""),
    "a symlink to a whole entry": _symlink_to_a_good_entry,  # never followed: not ours to trust
    "checked but not JSON": lambda p: write_entry(str(p), b"{not json"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_entry_is_a_miss_and_the_next_write_repairs_it(cache, damage):
    assert cache.put(KIND, KEY, VALUE)
    DAMAGES[damage](entry(cache))
    assert cache.get(KIND, KEY) is None
    if damage != "checked but not JSON":  # its payload passes the checks: `get` is the one that refuses it
        assert cache.get_raw(KIND, KEY) is None
    assert cache.put(KIND, KEY, VALUE)
    assert cache.get(KIND, KEY) == VALUE
    assert not entry(cache).is_symlink()
    assert temp_files(cache.root) == []


def test_a_full_directory_where_an_entry_goes_is_a_miss_and_a_failed_write(cache):
    entry(cache).mkdir(parents=True)
    (entry(cache) / "something").write_text("not ours to delete")
    assert cache.get(KIND, KEY) is None
    assert cache.get_raw(KIND, KEY) is None
    assert cache.put(KIND, KEY, VALUE) is False
    assert cache.counters.failed == 1
    assert temp_files(cache.root) == []
    cache.clear()  # removes entries, never what someone put in a directory there
    assert (entry(cache) / "something").read_text() == "not ours to delete"


def test_a_write_repairs_a_directory_where_its_entry_goes(cache):
    entry(cache).mkdir(parents=True)
    assert cache.put(KIND, KEY, VALUE)
    assert cache.get(KIND, KEY) == VALUE


EXACT_ONLY = {
    "a date": {"when": datetime.date(2024, 1, 1)},
    "a datetime": [datetime.datetime(2024, 1, 1, 10, 0, tzinfo=datetime.UTC)],
    "bytes": {"data": b"\x00\x01"},
    "a set": {"tags": {"a", "b"}},
    "a lone surrogate": {"text": "\ud800"},
    "an integer key": {"ports": {80: "http"}},
    "a boolean key": {True: "on"},
    "a tuple": {"pairs": [("a", 1)]},
}


@pytest.mark.parametrize("value", EXACT_ONLY.values(), ids=list(EXACT_ONLY))
def test_a_value_json_would_change_is_not_stored(cache, value):
    assert cache.put(KIND, KEY, value) is False
    assert cache.get(KIND, KEY) is None
    assert cache.counters.writes == 0 and not entry(cache).exists()


def test_a_write_that_cannot_make_its_directory_fails_cleanly(tmp_path):
    root = tmp_path / "not-a-directory"
    root.write_text("a regular file where the cache directory goes")
    blocked = Cache(root)
    assert blocked.put(KIND, KEY, VALUE) is False
    assert blocked.get(KIND, KEY) is None
    assert blocked.counters.failed == 1 and blocked.counters.writes == 0
    assert write_entry(str(root / "v1" / KIND / "01" / KEY), b"{}") is False
    assert blocked.stats()["entries"] == 0 and blocked.evict(force=True) == 0 and blocked.clear() == (0, 0)
    assert root.read_text() == "a regular file where the cache directory goes"
    assert [p.name for p in tmp_path.iterdir()] == ["not-a-directory"]


def test_a_write_cut_short_by_a_file_size_limit_leaves_nothing(cache):
    """A full disk in miniature: past RLIMIT_FSIZE a write fails with EFBIG (SIGXFSZ ignored), mid-entry."""
    big = {"text": "x" * 8192}

    def limited() -> list[str]:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        problems = ["a write past the limit succeeded"] if cache.put(KIND, KEY, big) else []
        problems += [] if cache.put(KIND, OTHER, {"a": 1}) else ["a write within the limit failed"]
        return problems + ([] if cache.counters.failed == 1 else [f"{cache.counters.failed} failed writes counted"])

    assert forked(limited) == []
    assert cache.get(KIND, KEY) is None and cache.get(KIND, OTHER) == {"a": 1}
    assert temp_files(cache.root) == []


# --------------------------------------------------------------------------------------------------
# The size bound


def test_eviction_removes_the_least_recently_used_until_under_the_bound(cache):
    for i in range(10):
        assert cache.put(KIND, f"{i:02d}" * 20, {"i": i, "pad": "x" * 1000})
    size = entry(cache, "00" * 20).stat().st_size
    bounded = Cache(cache.root, limit=size * 6)
    now = os.stat(cache.root).st_mtime
    for i in range(10):  # entry i last used i + 2 hours ago: 9 the longest ago
        os.utime(entry(cache, f"{i:02d}" * 20), (now - 3600 * (i + 2), now - 3600 * (i + 2)))
    assert bounded.get(KIND, "09" * 20) == {"i": 9, "pad": "x" * 1000}  # a hit: now the most recently used

    removed = bounded.evict(force=True)

    left = sorted(int(p.name[:2]) for p in (cache.root / "v1" / KIND).rglob("*") if p.is_file())
    assert left == [0, 1, 2, 3, 9] and removed == 5  # under 90% of the bound, the oldest gone first
    assert bounded.stats()["bytes"] <= bounded.limit * 9 // 10


def test_eviction_waits_between_scans_unless_this_run_wrote_much(cache):
    for i in range(4):
        cache.put(KIND, f"{i:02d}" * 20, {"pad": "x" * 1000})
    assert Cache(cache.root, limit=10 ** 9).evict(force=True) == 0  # under the bound: the scan leaves its stamp
    small = Cache(cache.root, limit=2500)
    assert small.evict() == 0  # checked moments ago
    assert small.stats()["entries"] == 4
    small.put(KIND, "ff" * 20, {"pad": "y" * 300})  # a run that wrote a tenth of the bound checks at once
    assert small.evict() > 0 and small.stats()["bytes"] <= 2500 * 9 // 10


@pytest.mark.parametrize("text,limit", [("", 1024 ** 3), ("500M", 500 * 1024 ** 2), ("2GiB", 2 * 1024 ** 3),
                                        ("1.5k", 1536), ("12345", 12345), ("lots", 1024 ** 3)])  # fmt: skip
def test_the_size_bound_reads_units_and_ignores_typos(text, limit):
    assert size_limit(text) == limit


# --------------------------------------------------------------------------------------------------
# Packs: many entries in one file (parses)

PAYLOADS = {f"{i:02x}" * 20: cache_module.encode({"i": i, "pad": "x" * 50}) for i in range(5)}


def packs_of(cache: Cache) -> list[Path]:
    return sorted((cache.root / "v1" / KIND).glob("*.pack"))


def test_a_pack_gives_back_each_entry_it_holds(cache):
    assert cache.put_many(KIND, PAYLOADS)
    assert len(packs_of(cache)) == 1
    assert cache.get_many(KIND, [*PAYLOADS, OTHER]) == PAYLOADS
    counted = cache.counters
    assert (counted.hits, counted.misses, counted.writes) == (5, 1, 5)
    assert cache.put_many(KIND, {}) and len(packs_of(cache)) == 1
    with pytest.raises(ValueError, match="bad cache key"):
        cache.put_many(KIND, {"../x": b"{}"})


def _index_start(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[-32:-24], "big")


def _flip_index(path: Path) -> None:
    _flip(_index_start(path) + 2)(path)


def _symlink_to_a_good_pack(path: Path) -> None:
    elsewhere = path.parent / "elsewhere"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)


PACK_DAMAGES: dict[str, Callable[[Path], None]] = {
    "truncated": _truncate,
    "bytes appended": _append,
    "trailer byte flipped": _flip(-1),
    "index byte flipped": _flip_index,
    "wrong magic": _flip(0),
    "empty file": lambda p: p.write_bytes(b""),
    "a symlink to a whole pack": _symlink_to_a_good_pack,
}


@pytest.mark.parametrize("damage", sorted(PACK_DAMAGES))
def test_a_damaged_pack_is_a_miss_and_the_next_write_repairs_it(cache, damage):
    assert cache.put_many(KIND, PAYLOADS)
    PACK_DAMAGES[damage](packs_of(cache)[0])
    assert cache.get_many(KIND, list(PAYLOADS)) == {}
    assert cache.put_many(KIND, PAYLOADS)
    assert cache.get_many(KIND, list(PAYLOADS)) == PAYLOADS
    assert temp_files(cache.root) == []


def test_a_damaged_entry_of_a_pack_is_a_miss_the_others_hit(cache):
    assert cache.put_many(KIND, PAYLOADS)
    _flip(len(b"devlane-pack-1\n") + 3)(packs_of(cache)[0])  # inside the first entry (keys in order)
    first = min(PAYLOADS)
    assert cache.get_many(KIND, list(PAYLOADS)) == {k: v for k, v in PAYLOADS.items() if k != first}


def test_packs_are_merged_when_there_are_many_the_newest_copy_winning(cache):
    keys = list(PAYLOADS)
    for key in keys:
        assert cache.put_many(KIND, {key: PAYLOADS[key]})
    assert cache.compact(KIND, most=len(keys)) is False  # not more than `most`
    assert cache.put_many(KIND, {keys[0]: b'{"newer":true}'})
    past = os.stat(packs_of(cache)[0]).st_mtime - 7200
    for path in packs_of(cache):  # every pack but the newest copy of keys[0] used two hours ago
        if cache_module._read_pack(str(path), None) != {keys[0]: b'{"newer":true}'}:
            os.utime(path, (past, past))
    assert cache.compact(KIND, most=len(keys))
    assert len(packs_of(cache)) == 1
    assert cache.get_many(KIND, keys) == {**PAYLOADS, keys[0]: b'{"newer":true}'}


def test_compacting_never_loses_an_entry(cache):
    assert cache.put_many(KIND, PAYLOADS)  # one pack holds them all (an earlier compaction, a cold render)
    for key, payload in PAYLOADS.items():  # and others a subset each (concurrent renders of parts)
        assert cache.put_many(KIND, {key: payload})
    assert cache.compact(KIND, most=len(PAYLOADS))
    assert cache.get_many(KIND, list(PAYLOADS)) == PAYLOADS


def test_a_pack_whose_index_claims_a_huge_entry_is_a_miss(cache):
    table = json.dumps({KEY: [len(b"devlane-pack-1\n"), 2 ** 40, "00" * 16]}).encode()
    pack = cache.root / "v1" / KIND / "foreign.pack"
    pack.parent.mkdir(parents=True)
    pack.write_bytes(b"devlane-pack-1\n" + table + len(b"devlane-pack-1\n").to_bytes(8, "big")
                     + len(table).to_bytes(8, "big") + hashlib.blake2b(table, digest_size=16).digest())
    assert cache.get_many(KIND, [KEY]) == {}


def test_a_pack_read_is_a_use_and_eviction_goes_by_packs(cache):
    for key, payload in PAYLOADS.items():
        assert cache.put_many(KIND, {key: payload})
    packs = {next(iter(cache_module._read_pack(str(p), None))): p for p in packs_of(cache)}
    now = os.stat(cache.root).st_mtime
    for i, key in enumerate(PAYLOADS):  # the pack of key i last used i + 2 hours ago
        os.utime(packs[key], (now - 3600 * (i + 2), now - 3600 * (i + 2)))
    oldest = max(PAYLOADS)
    assert cache.get_many(KIND, [oldest]) == {oldest: PAYLOADS[oldest]}  # now the most recently used
    size = packs[oldest].stat().st_size
    assert Cache(cache.root, limit=size * 3).evict(force=True) == 3  # down to 90%: two packs
    assert sorted(cache.get_many(KIND, list(PAYLOADS))) == [min(PAYLOADS), oldest]


# --------------------------------------------------------------------------------------------------
# Several processes at once


def forked(*jobs: Callable[[], list[str]]) -> list[str]:
    """Run each job in its own forked process, all released at once; what they report (a crash is reported too)."""
    go_read, go_write = os.pipe()
    children = []
    for job in jobs:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(read_end)
            os.close(go_write)
            os.read(go_read, 1)
            try:
                report = "\n".join(job()[:20])
            except BaseException as exc:
                report = f"raised {exc!r}"
            os.write(write_end, report.encode()[:60000])
            os._exit(0)
        os.close(write_end)
        children.append((pid, read_end))
    os.close(go_read)
    os.close(go_write)
    problems = []
    for pid, read_end in children:
        with os.fdopen(read_end, "rb") as handle:
            report = handle.read().decode()
        _, status = os.waitpid(pid, 0)
        problems += [report] if report else []
        problems += [f"child exited with status {status}"] if status else []
    return problems


def value_of(key: str) -> dict:
    """What a key holds, the same for every writer (a key names its content), some kilobytes so reads and
    writes of one entry overlap."""
    return {"key": key, "body": [key * 40] * (int(key[:2], 16) % 7 + 1)}


def writer(root: Path, seed: int, packs: bool, rounds: int = 90, need_hits: bool = True) -> Callable[[], list[str]]:
    """A process putting and getting six keys every writer uses and six of its own, in its own order: one
    entry at a time, or three at a time in packs (and compacting them now and then). `need_hits`: a run in which no
    read found anything is a failure (not while another process clears the cache: it may win every race)."""
    keys = [f"{i:02x}" * 20 for i in range(6)] + [f"ee{seed:02x}{i:02x}" + "0" * 34 for i in range(6)]

    def job() -> list[str]:
        store, problems, hits = Cache(root, limit=10 ** 9), [], 0
        for i in range(rounds):
            batch = [keys[(i * 5 + seed + j) % 12] for j in range(3 if packs else 1)]
            if (i // 12 + seed) % 3 == 0:
                if packs:
                    store.put_many(KIND, {key: encode(value_of(key)) for key in batch})
                else:
                    store.put(KIND, batch[0], value_of(batch[0]))
            if packs:
                got = {key: json.loads(payload) for key, payload in store.get_many(KIND, batch).items()}
                if i % 10 == seed:
                    store.compact(KIND, most=2)
            else:
                got = {key: value for key in batch if (value := store.get(KIND, key)) is not None}
            problems += [f"{key}: read {str(value)[:80]}" for key, value in got.items() if value != value_of(key)]
            hits += len(got)
        return problems + ([] if hits or not need_hits else ["no read found anything"])

    return job


def clearer(root: Path, rounds: int = 15) -> Callable[[], list[str]]:
    def job() -> list[str]:
        store = Cache(root)
        for _ in range(rounds):
            store.clear()
        return []

    return job


def stored(cache: Cache) -> dict[str, object]:
    """Every key the cache holds, one entry at a time or in packs, and its value."""
    found = {}
    for _, _, path in cache.entries():
        name = os.path.basename(path)
        if name.endswith(".pack"):
            found.update((key, json.loads(payload)) for key, payload in cache_module._read_pack(path, None).items())
        else:
            found[name] = cache.get(KIND, name)
    return found


@pytest.mark.parametrize("packs", [False, True], ids=["entries", "packs"])
def test_concurrent_writers_and_readers_see_whole_entries_or_none(cache, packs):
    assert forked(*(writer(cache.root, seed, packs) for seed in range(3))) == []
    assert temp_files(cache.root) == []
    found = stored(cache)
    assert all(value == value_of(key) for key, value in found.items())
    assert len(found) == 6 + 3 * 6  # every key written stays, compaction or not


def test_clearing_while_others_write_fails_none_of_them(cache):
    writers = [writer(cache.root, seed, packs=seed % 2 == 1, need_hits=False) for seed in range(3)]
    assert forked(clearer(cache.root), *writers) == []
    assert temp_files(cache.root) == []
    assert all(value == value_of(key) for key, value in stored(cache).items())
    assert forked(writer(cache.root, 0, packs=False)) == []  # and the cleared cache works: it stores and reads
