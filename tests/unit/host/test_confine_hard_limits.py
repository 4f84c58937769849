"""A plugin's limits under a hard limit devlane inherits (a CI job's `ulimit -t 60`): no process raises its hard
limit without CAP_SYS_RESOURCE, so prlimit asks for the lower of the plugin's limit and devlane's own, the probe
expects that value, and the layer says it was lowered; before, `prlimit --cpu=120` failed under `ulimit -t 60`, and
with it every sandbox method, and unpinned plugins were refused."""

from __future__ import annotations

import resource

import pytest

from renderer.host import confine
from renderer.host.cgroups import MIB
from renderer.host.confine import Limits

from .test_confine_policy import EVERY_LAYER, facts

INF = resource.RLIM_INFINITY
REAL_HARD_LIMIT = confine._hard_limit  # before the autouse fixture of conftest.py pins it


def test_the_hard_limit_is_the_second_of_each_resources_pair(monkeypatch):
    ids = {resource.RLIMIT_AS: 11, resource.RLIMIT_NPROC: 22, resource.RLIMIT_FSIZE: 33, resource.RLIMIT_CPU: 44}
    monkeypatch.setattr(confine.resource, "getrlimit", lambda which: (ids[which] - 10, ids[which]))
    assert {k: REAL_HARD_LIMIT(k) for k in ("as", "nproc", "fsize", "cpu")} == {
        "as": 11, "nproc": 22, "fsize": 33, "cpu": 44}


def test_the_hard_limit_read_is_this_processs_own():
    assert REAL_HARD_LIMIT("cpu") == resource.getrlimit(resource.RLIMIT_CPU)[1]
    assert REAL_HARD_LIMIT("nproc") == resource.getrlimit(resource.RLIMIT_NPROC)[1]


@pytest.mark.parametrize(("hard", "want", "got"), [(INF, 120, 120), (60, 120, 60), (120, 120, 120), (500, 120, 120),
                                                   (0, 5, 0)])
def test_a_value_is_capped_by_a_lower_hard_limit_only(monkeypatch, hard, want, got):
    monkeypatch.setattr(confine, "_hard_limit", lambda key: hard)
    assert confine._capped("cpu", want) == got


def hard_limits(monkeypatch, **hard: int) -> None:
    monkeypatch.setattr(confine, "_hard_limit", lambda key: hard.get(key, INF))


@pytest.mark.parametrize(("key", "flag", "hard"), [("as", "--as", 100 * MIB), ("nproc", "--nproc", 5),
                                                   ("fsize", "--fsize", 2 * MIB), ("cpu", "--cpu", 60)])
def test_prlimit_asks_for_no_more_than_devlanes_own_hard_limit(monkeypatch, key, flag, hard):
    monkeypatch.setattr(confine.shutil, "which", lambda name: "/usr/bin/prlimit")
    hard_limits(monkeypatch, **{key: hard})
    got = confine._limits_prefix("bwrap", Limits(), memory=True)
    full = {"--as": 2048 * MIB, "--nproc": 256, "--fsize": 256 * MIB, "--cpu": 120}
    assert got == ["/usr/bin/prlimit", *(f"{f}={hard if f == flag else v}" for f, v in full.items()), "--core=0", "--"]


def layers(monkeypatch, probe: dict, **hard: int) -> dict:
    hard_limits(monkeypatch, **hard)
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)
    got = confine._layers("unshare", facts(**probe), Limits(), (), True)
    assert tuple(la.name for la in got) == EVERY_LAYER
    return {la.name: la for la in got}


def test_a_lowered_cpu_limit_counts_as_applied_and_says_so(monkeypatch):
    got = layers(monkeypatch, {"cpu": 60}, cpu=60)["cpu-time-limit"]
    assert got.enforced
    assert got.how == "120 CPU seconds per process, lowered to 60 by the hard limit devlane runs under (prlimit)"
    assert layers(monkeypatch, {"cpu": 120}, cpu=60)["cpu-time-limit"].how == "not applied (cpu=120)"


@pytest.mark.parametrize(("key", "layer", "hard"), [("as", "memory-limit", 100 * MIB), ("nproc", "process-limit", 5),
                                                    ("fsize", "file-size-limit", 2 * MIB)])
def test_each_lowered_limit_is_the_one_the_probe_must_see(monkeypatch, key, layer, hard):
    lowered = layers(monkeypatch, {key: hard}, **{key: hard})[layer]
    assert lowered.enforced and f"lowered to {hard} by the hard limit" in lowered.how
    assert not layers(monkeypatch, {}, **{key: hard})[layer].enforced  # the probe saw the full value: not applied
