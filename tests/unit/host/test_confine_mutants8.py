"""The sandbox as a plugin meets it (`renderer/host/confine.py`, mutation testing, issue 41): real bwrap runs of a
few milliseconds each, where this machine has it, read from inside what the command line promised (a private
/tmp and /dev/shm of 64 MiB, read-only, the host's /tmp hidden whatever TMPDIR says, the host's network namespace
only when asked, the tool view without /etc, the address-space limit when no memory cgroup binds); then what the
wrappers are built from: which builder each method and view gets, what a plugin keeps under a hidden directory
(devlane itself, PATH entries, a version manager's root, a virtualenv's prefix), which `.git` directories are
hidden, and what the operator's variable grants when it is unset.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from renderer.host import confine
from renderer.host.confine import GRANT_ENV, MIB, Confinement, Wrapper
from renderer.host.sandbox import plugin_env

from .test_confine_policy import pairs, triples

SCRATCH_BYTES = 64 * MIB  # written here: the size of a plugin's private /tmp and /dev/shm


@pytest.fixture(scope="module")
def bwrap() -> Confinement:
    """This machine's sandbox, which must be bwrap wherever a bwrap found here runs at all (else the tests of real
    runs skip): a command line bwrap refuses makes the probe fall back to a weaker method, and that is a failure."""
    usable = [w for w in confine.bwrap_candidates()
              if subprocess.run([w.path, "--unshare-user", "--ro-bind", "/", "/", "--", "true"],
                                capture_output=True, timeout=30).returncode == 0]
    if not usable:
        pytest.skip("no bwrap that runs here")
    found = confine.best(["bwrap"])
    assert found.method == "bwrap", found.reason
    return found


def run(jail: confine.Jail, work: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(jail.argv, capture_output=True, text=True, timeout=60, env=plugin_env(str(work)))
    finally:
        jail.end()


INSIDE = """
import errno, json, os, sys
out = {d: os.statvfs(d).f_blocks * os.statvfs(d).f_frsize for d in ("/tmp", "/dev/shm")}
out["marker"] = os.path.exists("/tmp/" + sys.argv[1])
try:
    open("/tmp/written", "w").close()
    out["write"] = "ok"
except OSError as exc:
    out["write"] = errno.errorcode[exc.errno]
print(json.dumps(out))
"""


def test_a_plugin_gets_a_small_private_read_only_tmp_and_never_the_hosts(bwrap, tmp_path, monkeypatch):
    """TMPDIR elsewhere does not un-hide /tmp; a directory read from under /tmp does not make /tmp writable."""
    work, other = tmp_path / "work", tmp_path / "other-tmp"
    work.mkdir()
    other.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(other))
    with tempfile.NamedTemporaryFile(dir="/tmp", prefix="devlane-host-marker-") as marker:
        name = os.path.basename(marker.name)  # a path would be kept: a script named by path is bound back
        jail = bwrap.wrap([sys.executable, "-c", INSIDE, name], writable=[str(work)], readable=[str(tmp_path)])
        out = run(jail, work)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"/tmp": SCRATCH_BYTES, "/dev/shm": SCRATCH_BYTES, "marker": False,
                                      "write": "EROFS"}


def test_the_hosts_network_namespace_only_when_asked(bwrap, tmp_path):
    script = "import os; print(os.readlink('/proc/self/ns/net'))"
    host = os.readlink("/proc/self/ns/net")
    seen = {}
    for network in (False, True):
        out = run(bwrap.wrap([sys.executable, "-c", script], writable=[str(tmp_path)], network=network), tmp_path)
        assert out.returncode == 0, out.stderr
        seen[network] = out.stdout.strip()
    assert seen[True] == host and seen[False] != host


def test_the_tool_view_shows_no_etc(bwrap, tmp_path):
    script = "test -e /etc/passwd && echo etc; echo end"
    for view, said in (("tool", "end"), ("host", "etc\nend")):
        out = run(bwrap.wrap(["/bin/sh", "-c", script], writable=[str(tmp_path)], view=view), tmp_path)
        assert (out.returncode, out.stdout.strip()) == (0, said), (view, out.stderr)


@pytest.mark.skipif(not shutil.which("prlimit"), reason="no prlimit here")
def test_without_a_memory_cgroup_the_address_space_is_limited(bwrap, tmp_path):
    script = "import resource; print(resource.getrlimit(resource.RLIMIT_AS)[0])"
    limits = confine.Limits(memory_mib=1536)
    out = run(replace(bwrap, cgroups=()).wrap([sys.executable, "-c", script], writable=[str(tmp_path)],
                                              limits=limits), tmp_path)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == 1536 * MIB != resource.RLIM_INFINITY


# -- which builder ---------------------------------------------------------------------------------------------------


def test_bwrap_without_a_known_binary_is_run_by_name():
    assert confine._namespaces("bwrap", None, ["plugin"], [], [], False)[0] == "bwrap"


@pytest.mark.parametrize("network", [False, True])
def test_unshare_wraps_the_plugin_and_keeps_the_network_only_when_asked(network):
    argv = confine._namespaces("unshare", None, ["plugin"], [], [], network)
    assert argv[-1] == "plugin" and argv[0] == (shutil.which("setpriv") or "setpriv")
    assert (shutil.which("unshare") or "unshare") in argv and ("--net" in argv) is (not network)


def test_a_parent_is_no_prefix_of_a_sibling_whatever_it_ends_with():
    assert not confine._under("/a/b/c", "/a/bX") and confine._under("/a/bX/c", "/a/bX")
    assert not confine._under("/a/b/c", "/a/b/X") and confine._under("/a/b/X/c", "/a/b/X/")


# -- what a plugin keeps under a hidden directory -------------------------------------------------------------------


@pytest.fixture
def bare_path(tmp_path, monkeypatch) -> Path:
    """A working directory holding directories named like a fallback (`XXXX`), and no PATH at all."""
    (tmp_path / "XXXX").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PATH", raising=False)
    monkeypatch.delenv(GRANT_ENV, raising=False)
    return tmp_path


def test_devlane_itself_is_kept_and_nothing_from_a_missing_path(bare_path):
    kept = confine._keep_paths([], [])
    assert str(confine._DEVLANE_ROOT) in kept
    assert not [k for k in kept if k.startswith(str(bare_path))]


def test_the_operator_grants_nothing_when_the_variable_is_unset(bare_path):
    assert confine.granted_paths() == []


def test_each_path_entry_is_kept_as_itself_and_a_shims_directory_as_its_root(tmp_path, monkeypatch):
    plain, shims, shimsx = tmp_path / "tools" / "bin", tmp_path / "pyenv" / "shims", tmp_path / "x" / "shimsX"
    for d in (plain, shims, shimsx):
        d.mkdir(parents=True)
    monkeypatch.setenv("PATH", os.pathsep.join([str(plain), f"{shims}/", str(shimsx)]))
    kept = confine._keep_paths([], [])
    assert [k for k in kept if k.startswith(str(tmp_path))] == [str(plain), str(tmp_path / "pyenv"), str(shimsx)]


def test_a_programs_prefix_is_kept_and_missing_or_repeated_paths_are_not(tmp_path, monkeypatch):
    """A virtualenv's tool needs its prefix; a path that does not exist is not bound, and none twice."""
    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    tool = prefix / "bin" / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(prefix / "bin"))
    readable = [str(tmp_path / "missing"), str(prefix / "bin"), str(prefix / "bin")]
    kept = [k for k in confine._keep_paths(["tool"], readable) if k.startswith(str(tmp_path))]
    assert kept == [str(prefix / "bin"), str(prefix)]


def test_the_host_view_binds_what_it_keeps_shortest_first(tmp_path, monkeypatch):
    """A parent before what it holds, in one fixed order (the length, not the name)."""
    home = tmp_path / "home"
    for d in ("a-long", "b"):
        (home / d).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    argv = confine._bwrap("bwrap", ["plugin"], [], [str(home / "a-long"), str(home / "b")], False)
    binds = [src for src, dest in triples(argv, "--ro-bind") if src == dest and src.startswith(str(home))]
    assert binds == [str(home / "b"), str(home / "a-long")]
    assert str(home) in pairs(argv, "--remount-ro")


def test_only_the_git_directories_that_exist_are_hidden_each_once(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a").mkdir()
    (repo / "b").mkdir()
    assert confine._git_dirs([str(repo / "a"), str(repo / "b")]) == [str(repo / ".git")]
    assert confine._git_dirs([str(tmp_path)]) == []


def test_a_bwrap_wrapper_names_its_binary(tmp_path):
    argv = Confinement("bwrap", "x", (), binary=Wrapper("/opt/bwrap", "x")).wrap(["p"], writable=[str(tmp_path)]).argv
    assert "/opt/bwrap" in argv and argv[-1] == "p"
