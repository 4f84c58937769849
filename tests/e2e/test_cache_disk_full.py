"""A full disk under `$DEVLANE_CACHE` costs cache entries, never the render: `devlane render` of the bookshop
example (its plugins as real processes) with its cache on a 16 KiB tmpfs, mounted in an unprivileged user and
mount namespace (`unshare -rm`; skipped where the kernel does not allow it). With the disk full, the render exits 0,
writes the same bytes as a `--no-cache` render and leaves nothing on the disk (its write failed midway); with room
again, the next render fills the cache and the one after reads every parse from it, writing the same bytes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from support import EXAMPLE, ROOT, run_cli, tree

FLOW = ["--flow", "pr-7", "--service", "orders=ghcr.io/acme/bookshop-orders:pr-7"]
# In the namespace (the mount goes with it): fill the tiny disk, render, make room, render twice; after each
# render, what is on the disk. Arguments: the cache directory, python, the repository, an output directory
# per render, the flow.
SCRIPT = """
cache=$1 python=$2 repo=$3 full=$4 room=$5 warm=$6
shift 6
mount -t tmpfs -o size=16k tmpfs "$cache" || exit 97
listing() { echo "== $1"; (cd "$cache" && find . -type f ! -name filler -printf '%P\\n'); }
dd if=/dev/zero of="$cache/filler" bs=1k 2>/dev/null
DEVLANE_CACHE="$cache" "$python" -m renderer.cli render "$repo" "$@" --out "$full" --debug || exit $?
listing full
rm "$cache/filler"
DEVLANE_CACHE="$cache" "$python" -m renderer.cli render "$repo" "$@" --out "$room" || exit $?
listing room
DEVLANE_CACHE="$cache" "$python" -m renderer.cli render "$repo" "$@" --out "$warm" --debug || exit $?
listing warm
"""


def _namespaces_work(tmp_path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    try:
        done = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=16k tmpfs "$1"', "sh", str(probe)],
                              capture_output=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def test_a_render_with_its_cache_on_a_full_disk_succeeds_and_writes_the_same(tmp_path):
    if not _namespaces_work(tmp_path):
        pytest.skip("no unprivileged user and mount namespaces here (unshare -rm; mount -t tmpfs)")
    repo = shutil.copytree(EXAMPLE, tmp_path / "repo", ignore=shutil.ignore_patterns("rendered"))
    expected = run_cli("render", str(repo), *FLOW, "--out", str(tmp_path / "expected"), "--no-cache")
    assert expected.returncode == 0, expected.stderr
    cache = tmp_path / "cache"
    cache.mkdir()
    outs = [tmp_path / step for step in ("full", "room", "warm")]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(["unshare", "-rm", "sh", "-c", SCRIPT, "sh", str(cache), sys.executable, str(repo),
                           *map(str, outs), *FLOW], capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr

    left = dict(re.findall(r"== (\w+)\n([^=]*)", done.stdout))
    assert not re.search(r"\.tmp-|\.pack", left["full"]), left  # the write failed and took its temporary file
    packs = re.findall(r"\S+\.pack", left["room"])
    assert packs and ".tmp-" not in left["room"], left
    assert re.findall(r"\S+\.pack", left["warm"]) == packs  # read, nothing new to write
    said = re.findall(r"[ ,]yaml-\w+ (\d+) hit\(s\) (\d+) miss\(es\); (\d+) written \([\d,]+ bytes\)"
                      r"(?:, (\d+) write\(s\) failed)?", done.stderr)  # fmt: skip
    assert said == [("0", "8", "0", "8"), ("8", "0", "0", "")], done.stderr  # full: 8 writes failed; warm: all read
    for out in outs:
        assert tree(out) == tree(tmp_path / "expected")
