"""What each layer the probe's facts give says (`confine._layers`, issue 41, surviving mutants): how every layer of a
full sandbox is enforced, and for each one missing why, in the words `plugins describe` shows the operator (the
fact seen, the tool, what to use instead); a probe reply without the cgroup or capability facts is read, not crashed
on. In-process, with fake facts (`facts`/`layers` of test_confine_policy.py), a non-root euid and prlimit on PATH.
"""

from __future__ import annotations

import pytest

from renderer.host import confine
from renderer.host.confine import Layer, Limits

from .test_confine_mutants3 import held
from .test_confine_policy import facts, layers

# Written in the tests, never taken from the module: what each layer of a full unshare sandbox says
ENFORCED = held("unshare")


@pytest.fixture(autouse=True)
def host(monkeypatch):
    """Not root (RLIMIT_NPROC binds), and prlimit installed (a missing rlimit says what was seen instead)."""
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(confine.shutil, "which", lambda name: f"/usr/bin/{name}")


def own(ns: str) -> dict:
    """The probe's namespaces, with `ns` devlane's own."""
    return {**facts()["ns"], ns: confine._ns_ids()[ns]}


def test_each_layer_of_a_full_sandbox_says_how_it_is_enforced():
    assert layers() == {name: Layer(name, True, how) for name, how in ENFORCED.items()}


@pytest.mark.parametrize(("over", "layer", "why"), [
    ({"ns": own("user")}, "user-namespace", "not with util-linux unshare"),
    ({"interfaces": ["lo", "eth0"]}, "network-namespace", "interfaces ['lo', 'eth0'] are reachable"),
    ({"outsideWritable": True}, "read-only-filesystem",
     "the plugin can write wherever devlane's user can (without bwrap)"),
    ({"parentVisible": True}, "private-proc",
     "devlane's /proc entries are visible (needs a PID namespace with its own /proc)"),
    ({"hiddenVisible": True}, "hidden-secrets",
     "HOME (cloud and kube credentials) is readable (without bwrap)"),
    ({"caps": "000001ffffffffff"}, "no-capabilities",
     "capabilities 000001ffffffffff inside its user namespace"),
    ({"ns": own("pid")}, "kill-on-exit",
     "only the process group is killed; a process that calls setsid escapes"),
    ({"nproc": 255}, "process-limit", "not applied (nproc=255)"),
    ({"cpu": 121}, "cpu-time-limit", "not applied (cpu=121)"),
])  # fmt: skip
def test_each_missing_layer_says_what_the_probe_saw(over, layer, why):
    assert layers(**over)[layer] == Layer(layer, False, why)


@pytest.mark.parametrize("method", ["bwrap", "unshare", "python"])
def test_the_parent_death_signal_the_probe_saw_is_enforced_whatever_the_method(method):
    """bwrap sets it itself (so it holds even unseen); any other method holds it only when the probe saw SIGKILL."""
    assert layers(method)["parent-death-signal"] == Layer("parent-death-signal", True, "SIGKILL when devlane dies")
    unseen = layers(method, pdeathsig=0)["parent-death-signal"]
    assert (unseen.enforced, unseen.how) == (
        (True, "SIGKILL when devlane dies") if method == "bwrap" else (False, "not set")
    )


def test_as_root_without_a_pid_namespace_nothing_bounds_the_processes(monkeypatch):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 0)
    assert layers(ns=own("pid"))["process-limit"] == Layer(
        "process-limit", False, "no pids cgroup can be created here, and RLIMIT_NPROC does not bind root"
    )


@pytest.mark.parametrize("absent", ["cgroup", "caps", "interfaces"])
def test_a_probe_reply_without_a_fact_is_read_and_what_rests_on_it_is_not_claimed(absent):
    """Another wrapper's output (an operator's bwrap) may lack a key: no crash, and no cgroup is assumed."""
    sparse = {k: v for k, v in facts(ns=own("pid")).items() if k != absent}
    got = {la.name: la for la in confine._layers("unshare", sparse, Limits(), (("pids", "/x"),), True)}
    assert list(got) == list(ENFORCED)
    assert got["kill-on-exit"].enforced is False and got["process-limit"].how == "256 processes (prlimit)"
    assert got["network-namespace"].enforced is (absent != "interfaces")
    assert got["no-capabilities"].enforced is (absent != "caps")  # capabilities not seen are not dropped
