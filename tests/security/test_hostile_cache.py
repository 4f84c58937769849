"""The cache can be wrong only by being absent (renderer/core/cache.py): an entry moved or copied to another key is
a miss (its checksum binds its key); no stat signature stands in for a file's content (every file is read and
hashed; tests/cli/test_cache_cli.py); a symlink planted anywhere in the cache is never followed, by renders or
by `cache clear`, which deletes only the cache's own files; and an edit reached through a symlinked file or
subchart changes the build's key. For random edits (through symlinks, with racily clean
times, swapped and planted entries) the cached render equals the `--no-cache` one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import SHOP_CHART

from renderer import api
from renderer.core import cache as cache_module
from renderer.core.cache import Cache
from renderer.render.plan.flow_spec import FlowRequest, resolve

pytestmark = pytest.mark.e2e

KIND = "test-kind"
KEY, OTHER = "0123456789abcdef0123456789abcdef01234567", "f" * 40


def stream(repo: Path, cache: bool, service: str = "api", **options) -> str:
    """The flow as one YAML stream, or the error it ends in."""
    try:
        result = api.render(api.Options(repo=repo, cache=cache, **options),
                            resolve(FlowRequest("pr-1", {service: "api:2"})))  # fmt: skip
    except Exception as exc:  # the same error either way is the same answer
        return f"error: {exc}"
    return "".join(f.stream() for f in result.flows)


# --------------------------------------------------------------------------------------------------
# Entries bound to their keys


def test_an_entry_copied_over_another_key_is_a_miss(tmp_path):
    cache = Cache(tmp_path / "cache")
    assert cache.put(KIND, KEY, {"answer": "right"}) and cache.put(KIND, OTHER, {"answer": "wrong"})
    shutil.copy(cache._path(KIND, OTHER), cache._path(KIND, KEY))
    assert cache.get(KIND, KEY) is None
    os.makedirs(os.path.dirname(cache._path("other-kind", OTHER)))
    shutil.copy(cache._path(KIND, OTHER), cache._path("other-kind", OTHER))  # the same key, another kind
    assert cache.get("other-kind", OTHER) is None


def test_a_pack_row_pointing_at_another_keys_payload_is_a_miss(tmp_path):
    """A pack rewritten so that KEY's row names OTHER's payload and digest (its own checksum recomputed, as anyone
    can): the row's digest was made for OTHER, so KEY misses."""
    import hashlib
    import json

    cache = Cache(tmp_path / "cache")
    assert cache.put_many(KIND, {KEY: b'"right"', OTHER: b'"wrong"'})
    (pack,) = Path(cache._top, KIND).glob("*.pack")
    fd = os.open(pack, os.O_RDONLY)
    index, start, _ = cache_module._pack_index(fd)
    body = os.pread(fd, start, 0)
    os.close(fd)
    index[KEY] = index[OTHER]
    table = json.dumps(index, separators=(",", ":")).encode()
    trailer = start.to_bytes(8, "big") + len(table).to_bytes(8, "big") + hashlib.blake2b(
        table, digest_size=cache_module._DIGEST).digest()
    pack.write_bytes(body + table + trailer)
    assert cache.get_many(KIND, [KEY, OTHER]) == {OTHER: b'"wrong"'}


# --------------------------------------------------------------------------------------------------
# Symlinks planted in the cache


def test_a_symlink_planted_in_the_cache_is_never_followed(tmp_path):
    root = tmp_path / "cache"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "keep").mkdir(parents=True)
    (elsewhere / "keep" / "user-file").write_text("mine")
    (elsewhere / KEY[:2]).mkdir()
    (root / "v1").mkdir(parents=True)
    (root / "v1" / KIND).symlink_to(elsewhere)  # a kind directory that leads out of the cache
    cache = Cache(root)
    assert not cache.put(KIND, KEY, {"a": 1})  # never written through the link
    assert not (elsewhere / KEY[:2] / KEY).exists()
    assert cache.get(KIND, KEY) is None
    (root / "v1" / "files-1").mkdir()
    (root / "v1" / "files-1" / "ab").symlink_to(elsewhere / "keep")
    assert cache.clear() == (0, 0)
    assert (elsewhere / "keep" / "user-file").read_text() == "mine"  # clear deletes only the cache's own files
    (root / "v1" / "files-1" / "not-ours.txt").write_text("x")
    cache.clear()
    assert (root / "v1" / "files-1" / "not-ours.txt").exists()


def test_a_cache_root_that_is_a_symlink_is_not_used(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    cache = Cache(tmp_path / "link")
    assert not cache.put(KIND, KEY, {"a": 1}) and cache.get(KIND, KEY) is None
    assert list((tmp_path / "real").iterdir()) == []


# --------------------------------------------------------------------------------------------------
# Keys follow content through symlinks (Helm), and cached == uncached for random edits


@pytest.mark.skipif(shutil.which("helm") is None, reason="helm not installed (run tests/setup_helm.sh)")
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.sampled_from(["linked-values", "linked-template", "plant", "swap", "touch-back"]),
                      min_size=1, max_size=4))
def test_cached_equals_uncached_after_edits_through_symlinks_and_planted_entries(edits, tmp_path_factory,
                                                                                 monkeypatch):
    base = tmp_path_factory.mktemp("cache-edits")
    monkeypatch.setenv("DEVLANE_CACHE", str(base / "cache"))
    repo = base / "repo"
    for name, text in SHOP_CHART.items():
        (repo / "chart" / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / "chart" / name).write_text(text)
    (repo / "shared").mkdir()
    (repo / "shared" / "values.yaml").write_text("image: api:1\nlogLevel: info\n")
    (repo / "shared" / "extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n"
                                               "data: {v: '1'}\n")  # fmt: skip
    (repo / "env").mkdir()
    (repo / "env" / "values.yaml").symlink_to(repo / "shared" / "values.yaml")
    (repo / "chart" / "templates" / "extra.yaml").symlink_to(repo / "shared" / "extra.yaml")
    (repo / ".devlane.yaml").write_text("inputs: [{helm: chart, values: [env/values.yaml], releaseName: shop}]\n")
    assert stream(repo, True, "shop-api") == stream(repo, False, "shop-api")
    for i, edit in enumerate(edits):
        if edit == "linked-values":  # an edit reached only through the values file's link
            (repo / "shared" / "values.yaml").write_text(f"image: api:1\nlogLevel: level{i}\n")
        elif edit == "linked-template":  # and through a template's
            (repo / "shared" / "extra.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: extra}}\n"
                                                       f"data: {{v: '{i}'}}\n")  # fmt: skip
        elif edit == "plant":  # another key's entry copied over every build entry
            entries = [p for p in Path(base / "cache").rglob("*") if p.is_file() and p.parent.name != "shard"]
            for p in entries[1:]:
                shutil.copy(entries[0], p)
        elif edit == "swap":  # two entries trade places
            entries = sorted(p for p in Path(base / "cache").rglob("*") if p.is_file())
            if len(entries) > 1:
                a, b = entries[0].read_bytes(), entries[-1].read_bytes()
                entries[0].write_bytes(b)
                entries[-1].write_bytes(a)
        else:  # racily clean: the same size and mtime after an edit of the linked file
            target = repo / "shared" / "values.yaml"
            st_before = target.stat()
            target.write_text(target.read_text().replace("api:1", "api:9"))
            os.utime(target, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
        assert stream(repo, True, "shop-api") == stream(repo, False, "shop-api"), edit
