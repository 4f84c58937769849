"""What each layer says, held or not (`confine._layers`; issue 41, mutation survivors, part 3): the `how` of a layer is
what `devlane plugins describe` and a sandbox refusal show the operator, so a held layer names its tool or limit and a
missing one names the fact that gave it away (the interfaces reachable, the capabilities kept) and what would fix it.
Each probed fact is tested on its own, for each method whose wording differs."""

from __future__ import annotations

import pytest

from renderer.host import confine
from renderer.host.confine import Layer, Limits

from .test_confine_policy import EVERY_LAYER, facts, layers

TOOL = {"bwrap": "bubblewrap", "unshare": "util-linux unshare", "python": "python helper"}  # written here


@pytest.fixture(autouse=True)
def prlimit_installed(monkeypatch):
    monkeypatch.setattr(confine.shutil, "which", lambda name: f"/usr/bin/{name}")


def held(method: str) -> dict[str, str]:
    """How each layer of a full sandbox (as an unprivileged user, prlimit installed) is enforced."""
    tool = TOOL[method]
    return {
        "user-namespace": tool, "pid-namespace": tool, "mount-namespace": tool, "ipc-namespace": tool,
        "network-namespace": f"only a loopback of its own ({tool})",
        "read-only-filesystem": "only its temporary directory is writable",
        "private-proc": "a fresh /proc: devlane's environ, cmdline and fds are not there",
        "hidden-secrets": "HOME, .git and mounted secrets are hidden",
        "no-capabilities": "all capabilities dropped",
        "close-on-exec": "only its stdin, stdout and stderr are inherited",
        "parent-death-signal": "SIGKILL when devlane dies",
        "kill-on-exit": "PID namespace: every process dies with the call",
        "memory-limit": "2048 MiB of address space (prlimit)",
        "process-limit": "256 processes (prlimit)",
        "file-size-limit": "256 MiB per file (prlimit)",
        "cpu-time-limit": "120 CPU seconds per process (prlimit)",
    }  # fmt: skip


@pytest.mark.parametrize("method", sorted(TOOL))
def test_each_layer_of_a_full_sandbox_says_how_it_holds(method, monkeypatch):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)
    expected = held(method)
    assert list(expected) == list(EVERY_LAYER)
    assert layers(method) == {name: Layer(name, True, how) for name, how in expected.items()}


def own(key: str) -> dict[str, str]:
    """The probe's namespaces with `key` being devlane's own (not a new one)."""
    return {**facts()["ns"], key: confine._ns_ids()[key]}


@pytest.mark.parametrize(("method", "uid", "over", "expected"), [
    *[("unshare", 1000, {"ns": own(key)}, Layer(name, False, "not with util-linux unshare"))
      for key, name in (("user", "user-namespace"), ("pid", "pid-namespace"), ("mnt", "mount-namespace"),
                        ("ipc", "ipc-namespace"))],
    ("bwrap", 1000, {"ns": own("mnt")}, Layer("mount-namespace", False, "not with bubblewrap")),
    ("unshare", 1000, {"interfaces": ["lo", "eth0"]},
     Layer("network-namespace", False, "interfaces ['lo', 'eth0'] are reachable")),
    ("unshare", 1000, {"outsideWritable": True},
     Layer("read-only-filesystem", False, "the plugin can write wherever devlane's user can (without bwrap)")),
    ("unshare", 1000, {"parentVisible": True},
     Layer("private-proc", False, "devlane's /proc entries are visible (needs a PID namespace with its own /proc)")),
    ("unshare", 1000, {"hiddenVisible": True},
     Layer("hidden-secrets", False, "HOME (cloud and kube credentials) is readable (without bwrap)")),
    ("unshare", 1000, {"caps": "000001ffffffffff"},
     Layer("no-capabilities", False, "capabilities 000001ffffffffff inside its user namespace")),
    ("unshare", 1000, {"pdeathsig": 0}, Layer("parent-death-signal", False, "not set")),
    ("python", 1000, {"pdeathsig": 0}, Layer("parent-death-signal", False, "not set")),
    ("bwrap", 1000, {"pdeathsig": 0},  # bwrap's --die-with-parent sets it, whatever the probe reads
     Layer("parent-death-signal", True, "SIGKILL when devlane dies")),
    ("unshare", 1000, {"ns": own("pid")},
     Layer("kill-on-exit", False, "only the process group is killed; a process that calls setsid escapes")),
    ("unshare", 0, {"ns": own("pid")},
     Layer("process-limit", False, "no pids cgroup can be created here, and RLIMIT_NPROC does not bind root")),
], ids=lambda v: v.name if isinstance(v, Layer) else "-".join(v) if isinstance(v, dict) else None)  # fmt: skip
def test_a_missing_layer_names_the_fact_that_gave_it_away(monkeypatch, method, uid, over, expected):
    """The operator reads why a layer is missing from `how`: the tool that did not make the namespace, the interfaces
    the plugin can reach, the capabilities it kept, that nothing bounds root's processes."""
    monkeypatch.setattr(confine.os, "geteuid", lambda: uid)
    assert layers(method, **over)[expected.name] == expected


@pytest.mark.parametrize("key", ["cgroup", "caps"])
@pytest.mark.parametrize("method", sorted(TOOL))
def test_a_report_without_its_cgroup_or_capabilities_reads_as_their_empty_value(monkeypatch, method, key):
    """`_layers` reads both fields with "" as their default (the probe itself reports caps "" when it finds no
    CapEff line): a report without one is read like an empty one (for caps: not dropped), not a crash that would
    hide every other fact."""
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)
    without = {k: v for k, v in facts().items() if k != key}
    empty = facts(**{key: ""})
    assert confine._layers(method, without, Limits(), (), True) == confine._layers(method, empty, Limits(), (), True)


@pytest.mark.parametrize("caps", [None, "", 0, ["0000000000000000"]])
@pytest.mark.parametrize("method", sorted(TOOL))
def test_capabilities_the_probe_did_not_see_are_not_dropped(monkeypatch, method, caps):
    """No CapEff line (the probe's ""), no key, or a value that is not the kernel's hex: the layer is missing, and
    says why, rather than claiming all capabilities dropped."""
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)
    seen = {k: v for k, v in facts().items() if k != "caps"} if caps is None else facts(caps=caps)
    layer = {la.name: la for la in confine._layers(method, seen, Limits(), (), True)}["no-capabilities"]
    assert layer.enforced is False
    assert layer.how == (f"capabilities {caps} inside its user namespace" if caps else
                         "the probe did not see its capabilities (no CapEff in /proc/self/status)")
