"""Parsing many files at once (`renderer.render.inputs.parsing`): read from the cache, parsed here, or parsed in forked
children, every file's outcome is the same (documents, their shapes, or the error naming the file and line);
a second parse reads every file it can from the cache; what JSON cannot carry exactly (dates, binary, sets,
non-string keys, anchors) and broken files are never cached; a child that dies costs only time.

Outcomes are compared by `repr`, which tells 1 from 1.0 and True, a tuple from a list, and keeps key order."""

from __future__ import annotations

import os
import signal

import pytest
from support import yamlc

from renderer.core import parallel
from renderer.core.cache import Cache, blob_id
from renderer.errors import DevlaneError
from renderer.render.inputs import parsing
from renderer.render.inputs.parsing import parse_files

OBJECT = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"
FILES = {
    "two.yaml": OBJECT.format(name="a") + "---\n" + OBJECT.format(name="b"),
    "notes.yaml": "just: a mapping\nlist: [1, 2]\n",
    "empty.yaml": "",
    "only-comments.yaml": "# nothing\n---\n",
    "wrong-shape.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: {http: 80}\n",
    "broken.yaml": "a: 1\nb: [1, 2\nc: 3\n",
    "scalars.yaml": "f: 1.0\ni: 1\nt: true\nn: null\ns: '1'\nbig: 123456789012345678901234567890\nneg: -0.0\n"
                    "inf: .inf\nnan: .nan\noct: 0o17\nsexa: 1:30\n",
    "unicode.yaml": 'ü: "\\u2028 é \\0 \\U0001F600"\n',
    "duplicate.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\nkind: Secret\n",
    "utf16.yaml": "\ufeffkey: value in UTF-16\n",
}
BROKEN = {"broken.yaml": "broken.yaml:3: invalid YAML", "duplicate.yaml": "duplicate.yaml:4: duplicate key 'kind'"}


def items(files: dict[str, str]) -> list[tuple[str, bytes]]:
    return [(name, text.encode("utf-16") if name == "utf16.yaml" else text.encode()) for name, text in files.items()]


def shown(outcomes: list) -> list[str]:
    """Each outcome as text: the documents and shapes, or the error (its message and problems)."""
    return [f"error {exc} {exc.problems!r}" if isinstance(exc := o, DevlaneError) else repr((o.docs, o.shapes))
            for o in outcomes]  # fmt: skip


def test_a_second_parse_reads_every_file_it_can_from_the_cache(tmp_path):
    files = items(FILES)
    expected = shown(parse_files(files, None))
    for name, said in BROKEN.items():
        assert expected[list(FILES).index(name)].startswith(f"error {said}")
    assert "spec.ports must be a list, not a mapping" in expected[list(FILES).index("wrong-shape.yaml")]

    cold = Cache(tmp_path)
    assert shown(parse_files(files, cold)) == expected
    assert (cold.counters.misses, cold.counters.writes) == (len(files), len(files) - len(BROKEN))
    warm = Cache(tmp_path)
    assert shown(parse_files(files, warm)) == expected
    assert (warm.counters.hits, warm.counters.misses, warm.counters.writes) == (len(files) - len(BROKEN), 2, 0)


NOT_JSON = {
    "dates": "day: 2024-01-01\nat: 2024-01-01T10:00:00Z\n",
    "binary": "data: !!binary aGVsbG8=\n",
    "integer keys": "ports:\n  80: http\n  443: https\n",
    "a boolean key": "on: push\n",  # YAML 1.1: `on` is true
    "a null key": "~: nothing\n",
    "a float key": "1.5: x\n",
    "a set": "tags: !!set {a, b}\n",
    "anchors": "base: &b {k: [1, 2]}\nuse: *b\n",
    "merge keys": "base: &b {k: 1}\nuse:\n  <<: *b\n  j: 2\n",
    "an ordered map": "order: !!omap [a: 1, b: 2]\n",
    "pairs": "pairs: !!pairs [a: 1, a: 2]\n",
}


@pytest.mark.parametrize("text", NOT_JSON.values(), ids=list(NOT_JSON))
def test_what_json_cannot_carry_is_parsed_every_time_and_right(text, tmp_path):
    files = [("f.yaml", text.encode())]
    right = repr((list(yamlc.safe_load_all(text)), [None]))
    assert shown(parse_files(files, None)) == [right]
    cache = Cache(tmp_path)
    assert shown(parse_files(files, cache)) == [right]
    assert shown(parse_files(files, cache)) == [right]
    assert cache.counters.hits == 0 and cache.stats()["entries"] == 0


def _mutated(outcomes: list) -> list[str]:
    """The outcomes after changing the first document of the first file in place: what else changed with it."""
    outcomes[0].docs[0]["a"]["k"].append("changed")
    return shown(outcomes)


def test_no_path_shares_objects_another_does_not(tmp_path):
    anchored = "a: &x {k: [1]}\nb: *x\n---\na: &x {k: [1]}\nb: *x\n"  # within a document, `b` is `a`
    plain = "a: {k: [1]}\nb: {k: [1]}\n"
    files = items({"f.yaml": anchored, "same-as-f.yaml": anchored, "g.yaml": plain})
    cache = Cache(tmp_path)
    expected = _mutated(parse_files(files, None))
    assert expected[0].count("'changed'") == 2 and "changed" not in expected[1] + expected[2]
    assert _mutated(parse_files(files, cache)) == expected
    assert _mutated(parse_files(files, cache)) == expected
    files = items({"g.yaml": plain, "same-as-g.yaml": plain})  # cached: read back twice, two separate copies
    expected = _mutated(parse_files(files, None))
    assert _mutated(parse_files(files, cache)) == expected and cache.counters.hits == 3
    assert expected[0].count("'changed'") == 1 and "changed" not in expected[1]


# --------------------------------------------------------------------------------------------------
# In forked children


@pytest.fixture
def forking(monkeypatch) -> list[int]:
    """Parse in children whatever the size; the number of times children were started."""
    monkeypatch.setattr(parsing, "PARALLEL_BYTES", 1)
    calls: list[int] = []
    real = parallel.fork_map

    def counting(todo, split, *args):
        calls.append(len(split))
        return real(todo, split, *args)

    monkeypatch.setattr(parallel, "fork_map", counting)
    return calls


def many() -> list[tuple[str, bytes]]:
    """Files of every kind in both halves, broken ones among them."""
    files = items(FILES) + items({f"n{i}.yaml": OBJECT.format(name=f"n{i}") * (i % 2) for i in range(6)})
    return files + items({f"x-{name}": text for name, text in FILES.items()})


def test_a_parallel_parse_equals_the_serial_one_in_order(forking, tmp_path):
    files = many()
    expected = shown(parse_files(files, None, workers=1))
    assert forking == []
    assert shown(parse_files(files, None, workers=2)) == expected
    cache = Cache(tmp_path)
    assert shown(parse_files(files, cache, workers=2)) == expected  # cold: the children write their share
    assert forking == [2, 2]
    again = Cache(tmp_path)
    assert shown(parse_files(files, again, workers=2)) == expected
    assert again.counters.hits == len(files) - 2 * len(BROKEN) and again.counters.writes == 0


def _exit(*_args, **_kwargs):
    os._exit(3)


def _raise(*_args, **_kwargs):
    raise RuntimeError("a bug in the child")


def _kill(*_args, **_kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


def _garbage(*_args, **_kwargs):
    return None, b"\x00not json"


@pytest.mark.parametrize("failure", [_exit, _raise, _kill, _garbage], ids=["exits", "raises", "is killed",
                                                                            "sends garbage"])  # fmt: skip
def test_a_child_that_fails_has_its_share_done_by_the_parent(failure, forking, monkeypatch):
    files = many()
    expected = shown(parse_files(files, None, workers=1))
    parent, real = os.getpid(), parsing._parse
    monkeypatch.setattr(parsing, "_parse", lambda *args, **kwargs: real(*args, **kwargs) if os.getpid() == parent
                        else failure(*args, **kwargs))  # fmt: skip
    assert shown(parse_files(files, None, workers=2)) == expected
    assert forking == [2]


# --------------------------------------------------------------------------------------------------
# Entries written by something else


def _planted(cache: Cache, data: bytes, payload: bytes) -> None:
    """An entry for `data` written by something else, in a pack used an hour ago (older than what a parse writes)."""
    assert cache.put_many(parsing.cache_kind(), {blob_id(data): payload})
    (pack,) = (cache.root / "v1" / parsing.cache_kind()).glob("*.pack")
    past = pack.stat().st_mtime - 3600
    os.utime(pack, (past, past))


@pytest.mark.parametrize("payload", [b"[1, 2]", b'{"a": 1}', b'"xy"', b"[[1, 2], [null]]", b"[]", b"null"])
def test_an_entry_of_the_wrong_shape_is_a_miss_and_is_replaced(payload, tmp_path):
    data = FILES["two.yaml"].encode()
    cache = Cache(tmp_path)
    _planted(cache, data, payload)
    expected = shown(parse_files([("two.yaml", data)], None))
    assert shown(parse_files([("two.yaml", data)], cache)) == expected
    again = Cache(tmp_path)
    assert shown(parse_files([("two.yaml", data)], again)) == expected
    assert (again.counters.hits, again.counters.writes) == (1, 0)  # the parse that replaced it


def test_an_entry_nested_too_deep_to_decode_is_a_miss(tmp_path):
    data = FILES["two.yaml"].encode()
    cache = Cache(tmp_path)
    _planted(cache, data, b"[" * 100_000 + b"]" * 100_000)
    assert shown(parse_files([("two.yaml", data)], cache)) == shown(parse_files([("two.yaml", data)], None))


def test_merge_keys_in_many_documents_of_a_file_parse_as_pyyaml_parses_them():
    text = "".join(f"---\nbase: &b {{v: {i}}}\nk:\n  <<: *b\n  w: {i}\n" for i in range(300))
    (outcome,) = parse_files([("many.yaml", text.encode())], None)
    assert [d["k"]["v"] for d in outcome.docs] == list(range(300))
