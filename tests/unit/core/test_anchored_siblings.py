"""Where devlane writes and removes (`renderer/core/anchored.py`), each path shape on its own case (issue 41,
points 2-3): the operator's part of a path (outside the repository) is followed link by link, absolute and
relative targets, `.` and `..` in them, a loop; from the repository down nothing is followed, not even a link
that stays inside; `..` inside the repository, a file where a directory should be, a symlinked or special file
read back, a file over its limit, a path reached in place through a link out of the working directory (and a
sibling directory whose name starts like the working directory's, which is not inside it). Real files, links
and directory descriptors in a temp dir; every refusal is the error itself.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from renderer.core import anchored
from renderer.core.anchored import (
    first_link,
    open_dir,
    reached_in_place,
    read_at,
    symlink_error,
    trusted_prefix,
    write_at,
)
from renderer.errors import DevlaneError

HINT = "remove the link"


@pytest.fixture
def scene(tmp_path) -> dict[str, Path]:
    """`ci/repo` (the repository, with `rendered/flows`), `srv/lanes` (the operator's output directory elsewhere)
    and `tenant-b/flows` (another tenant's lanes)."""
    repo = tmp_path / "ci" / "repo"
    (repo / "rendered" / "flows").mkdir(parents=True)
    (tmp_path / "srv" / "lanes").mkdir(parents=True)
    (tmp_path / "tenant-b" / "flows").mkdir(parents=True)
    return {"tmp": tmp_path, "repo": repo, "srv": tmp_path / "srv", "tenant": tmp_path / "tenant-b"}


def symlink_refusal(call) -> DevlaneError:
    with pytest.raises(DevlaneError) as info:
        call()
    [problem] = info.value.problems
    assert problem.code == "symlink", problem
    return info.value


# -- trusted_prefix: the operator's part, followed; the repository's, not -----------------------------------------


def test_a_path_in_the_repository_is_anchored_at_the_repository(scene):
    repo = scene["repo"]
    assert trusted_prefix(repo / "rendered" / "flows" / "pr-1", repo) == (str(repo), ("rendered", "flows", "pr-1"))
    assert trusted_prefix(repo, repo) == (str(repo), ())
    assert trusted_prefix(repo / "." / "rendered", repo) == (str(repo), ("rendered",))


def test_a_link_in_the_repository_is_never_followed_even_one_that_stays_inside(scene):
    repo = scene["repo"]
    (repo / "out").symlink_to(scene["tenant"])
    (repo / "inner").symlink_to(repo / "rendered")
    assert trusted_prefix(repo / "out" / "flows", repo) == (str(repo), ("out", "flows"))
    assert trusted_prefix(repo / "inner" / "flows", repo) == (str(repo), ("inner", "flows"))


@pytest.mark.parametrize("target", ["absolute", "relative", "dot-relative", "dotdot-relative"])
def test_the_operators_links_outside_the_repository_are_followed(scene, target):
    link = scene["tmp"] / "ci" / "lanes"
    link.symlink_to({"absolute": scene["srv"] / "lanes", "relative": Path("..", "srv", "lanes"),
                     "dot-relative": Path(".", "..", "srv", "lanes"),
                     "dotdot-relative": Path("..", "ci", "..", "srv", "lanes")}[target])
    real = scene["srv"] / "lanes"
    assert trusted_prefix(link / "flows" / "pr-1", scene["repo"]) == (str(real), ("flows", "pr-1"))
    (real / "flows").mkdir()
    assert trusted_prefix(link / "flows" / "pr-1", scene["repo"]) == (str(real / "flows"), ("pr-1",))


def test_an_operators_link_into_the_repository_is_followed_only_to_its_root(scene):
    repo = scene["repo"]
    (repo / "rendered" / "sneaky").symlink_to(scene["tenant"])  # the pull request's link, below the root
    (scene["tmp"] / "into").symlink_to(repo / "rendered")
    assert trusted_prefix(scene["tmp"] / "into" / "sneaky" / "flows", repo) == (str(repo),
                                                                                ("rendered", "sneaky", "flows"))
    (scene["tmp"] / "up").symlink_to(Path("ci", "repo", "rendered", "..", "rendered"))  # `..` below the root: kept
    assert trusted_prefix(scene["tmp"] / "up" / "flows", repo) == (str(repo), ("rendered", "..", "rendered", "flows"))
    (scene["tmp"] / "out").symlink_to(Path("ci", "repo", "..", "repo", "rendered"))  # the root's `..` is the operator's
    assert trusted_prefix(scene["tmp"] / "out" / "flows", repo) == (str(repo), ("rendered", "flows"))


def test_a_missing_component_ends_the_operators_part(scene):
    assert trusted_prefix(scene["tmp"] / "new" / "out" / "flows", scene["repo"]) == (str(scene["tmp"]),
                                                                                   ("new", "out", "flows"))


def test_a_loop_of_links_outside_is_the_kernels_error(scene):
    (scene["tmp"] / "a").symlink_to(scene["tmp"] / "b")
    (scene["tmp"] / "b").symlink_to(scene["tmp"] / "a")
    with pytest.raises(OSError) as info:
        trusted_prefix(scene["tmp"] / "a" / "x", scene["repo"])
    assert info.value.errno == errno.ELOOP


def test_forty_hops_are_followed_and_the_forty_first_is_not(scene, monkeypatch):
    tmp = scene["tmp"]
    for i in range(39):
        (tmp / f"l{i}").symlink_to(tmp / f"l{i + 1}")
    (tmp / "l39").symlink_to(scene["srv"])  # the 40th link
    assert trusted_prefix(tmp / "l0" / "lanes", scene["repo"]) == (str(scene["srv"] / "lanes"), ())
    monkeypatch.setattr(anchored, "_MAX_HOPS", 39)
    with pytest.raises(OSError, match="Too many levels"):
        trusted_prefix(tmp / "l0" / "lanes", scene["repo"])


# -- open_dir: nothing followed from the repository down -------------------------------------------------------------


def test_open_dir_creates_and_prunes_only_what_it_made(scene):
    repo = scene["repo"]
    opened = open_dir(repo / "rendered" / "flows" / "pr-1" / "x", repo, create=True, hint=HINT)
    assert opened is not None and opened.path == repo / "rendered" / "flows" / "pr-1" / "x"
    assert os.path.samestat(os.fstat(opened.fd), os.stat(repo / "rendered" / "flows" / "pr-1" / "x"))
    opened.close(prune=True)
    assert opened.fd == -1 and not (repo / "rendered" / "flows" / "pr-1").exists()
    assert (repo / "rendered" / "flows").is_dir()  # it existed: never pruned
    opened.close(prune=True)  # twice is nothing
    kept = open_dir(repo / "rendered" / "flows" / "pr-2", repo, create=True, hint=HINT)
    kept.close()
    assert (repo / "rendered" / "flows" / "pr-2").is_dir()


def test_pruning_stops_at_a_directory_that_holds_something(scene):
    repo = scene["repo"]
    opened = open_dir(repo / "a" / "b" / "c", repo, create=True, hint=HINT)
    (repo / "a" / "b" / "keep.txt").write_text("")
    opened.close(prune=True)
    assert not (repo / "a" / "b" / "c").exists() and (repo / "a" / "b" / "keep.txt").exists()


def test_open_dir_gives_none_for_a_missing_directory_unless_asked_to_create(scene):
    repo = scene["repo"]
    assert open_dir(repo / "rendered" / "nope" / "deeper", repo, create=False, hint=HINT) is None
    assert not (repo / "rendered" / "nope").exists()
    opened = open_dir(scene["srv"] / "lanes", repo, create=False, hint=HINT)  # the operator's, outside
    assert opened is not None
    opened.close()


@pytest.mark.parametrize("where", ["output", "flows", "flow", "leaf"])
@pytest.mark.parametrize("target", ["outside", "inside"])
def test_a_symlink_anywhere_from_the_repository_down_is_refused(scene, where, target):
    repo = scene["repo"]
    parts = {"output": ("out",), "flows": ("rendered", "flows2"), "flow": ("rendered", "flows", "pr-7"),
             "leaf": ("rendered", "flows", "pr-7", "_mesh")}[where]
    (repo.joinpath(*parts[:-1])).mkdir(parents=True, exist_ok=True)
    aim = scene["tenant"] / "flows" if target == "outside" else repo / "rendered"
    repo.joinpath(*parts).symlink_to(aim)
    for create in (True, False):
        err = symlink_refusal(lambda c=create: open_dir(repo.joinpath(*parts, "x"), repo, create=c, hint=HINT))
        assert str(repo.joinpath(*parts)) in err.problems[0].message and f"(to {aim})" in err.problems[0].message
        assert err.problems[0].hint == HINT
    assert os.listdir(scene["tenant"] / "flows") == []  # nothing made through the link
    assert not (repo / "rendered" / "x").exists()


def test_a_dotdot_inside_the_repository_is_refused(scene):
    repo = scene["repo"]
    (scene["tmp"] / "up").symlink_to(Path("ci", "repo", "rendered", "..", "rendered"))
    err = symlink_refusal(lambda: open_dir(scene["tmp"] / "up" / "flows", repo, create=True, hint=HINT))
    assert "through '..' inside the repository" in err.problems[0].message
    assert err.problems[0].hint == "give a path without '..'"


def test_a_file_where_a_directory_should_be_is_an_os_error_not_a_symlink_error(scene):
    repo = scene["repo"]
    (repo / "rendered" / "flows" / "pr-1").write_text("")
    with pytest.raises(OSError) as info:
        open_dir(repo / "rendered" / "flows" / "pr-1" / "x", repo, create=True, hint=HINT)
    assert not isinstance(info.value, DevlaneError) and info.value.errno == errno.ENOTDIR


# -- reading and writing in an open directory -------------------------------------------------------------------------


@pytest.fixture
def flow_dir(scene):
    opened = open_dir(scene["repo"] / "rendered" / "flows" / "pr-1", scene["repo"], create=True, hint=HINT)
    yield opened, scene["repo"] / "rendered" / "flows" / "pr-1"
    opened.close()


def test_read_at_reads_a_regular_file_within_its_limit(flow_dir):
    opened, path = flow_dir
    (path / "a.yaml").write_bytes(b"12345")
    assert read_at(opened.fd, "a.yaml", path / "a.yaml", 5) == b"12345"  # exactly the limit
    assert read_at(opened.fd, "missing.yaml", path / "missing.yaml", 5) is None
    with pytest.raises(DevlaneError, match="over the 4-byte limit") as info:
        read_at(opened.fd, "a.yaml", path / "a.yaml", 4)
    assert info.value.problems[0].code == "output"


@pytest.mark.parametrize("target", ["outside", "inside", "dangling"])
def test_read_at_refuses_a_symlink_wherever_it_points(flow_dir, scene, target):
    opened, path = flow_dir
    (scene["tenant"] / "secret.yaml").write_text("token: x\n")
    (path / "real.yaml").write_text("a: 1\n")
    aim = {"outside": scene["tenant"] / "secret.yaml", "inside": path / "real.yaml", "dangling": path / "nope"}[target]
    (path / "link.yaml").symlink_to(aim)
    err = symlink_refusal(lambda: read_at(opened.fd, "link.yaml", path / "link.yaml", 1000))
    assert f"{path / 'link.yaml'} is a symlink (to {aim})" in err.problems[0].message


def test_read_at_refuses_what_is_not_a_regular_file(flow_dir):
    opened, path = flow_dir
    os.mkfifo(path / "odd")  # opened without blocking, never read
    with pytest.raises(DevlaneError, match="is not a regular file") as info:
        read_at(opened.fd, "odd", path / "odd", 1000)
    assert info.value.problems[0].code == "output"
    (path / "dir").mkdir()
    with pytest.raises(IsADirectoryError):  # an OSError the callers word ("cannot read ...: Is a directory")
        read_at(opened.fd, "dir", path / "dir", 1000)


def test_write_at_creates_a_new_file_and_never_through_a_link(flow_dir, scene):
    opened, path = flow_dir
    write_at(opened.fd, "a.yaml", b"x: 1\n", 0o600)
    assert (path / "a.yaml").read_bytes() == b"x: 1\n" and (path / "a.yaml").stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileExistsError):
        write_at(opened.fd, "a.yaml", b"again")
    (path / "b.yaml").symlink_to(scene["tenant"] / "victim.yaml")  # dangling: O_CREAT would make it
    with pytest.raises(FileExistsError):
        write_at(opened.fd, "b.yaml", b"pwned")
    assert not (scene["tenant"] / "victim.yaml").exists()


def test_first_link_is_the_first_by_name(flow_dir, scene):
    opened, path = flow_dir
    (path / "a.yaml").write_text("")
    assert first_link(opened.fd) is None
    (path / "z").symlink_to(scene["tenant"])
    (path / "m").symlink_to("relative/target")
    (path / "b-dir").mkdir()
    assert first_link(opened.fd) == ("m", "relative/target")


def test_the_symlink_error_names_the_link_its_target_and_the_fix():
    err = symlink_error("/r/out", "/elsewhere", "the fix")
    [problem] = err.problems
    assert problem.message.startswith("/r/out is a symlink (to /elsewhere): devlane never writes or removes")
    assert problem.hint == "the fix" and problem.code == "symlink"


# -- reached_in_place: the working directory's tree, reached without a link out ---------------------------------------


@pytest.mark.parametrize("shape", ["top", "nested", "relative-target"])
def test_a_repository_path_reached_through_a_link_out_of_the_working_directory_is_refused(scene, shape):
    work = scene["tmp"] / "ci"
    (work / "examples").mkdir()
    if shape == "top":
        (work / "shop").symlink_to(scene["tenant"])
        path = work / "shop"
    elif shape == "nested":
        (work / "examples" / "shop").symlink_to(scene["tenant"])
        path = work / "examples" / "shop" / "flows"
    else:
        (work / "examples" / "shop").symlink_to(Path("..", "..", "tenant-b"))
        path = work / "examples" / "shop"
    err = symlink_refusal(lambda: reached_in_place(path, work))
    assert "that leads out of " + str(work) in err.problems[0].message


def test_links_that_stay_in_the_working_directory_and_paths_outside_it_are_the_operators(scene, monkeypatch):
    work = scene["tmp"] / "ci"
    (work / "alias").symlink_to(scene["repo"])
    reached_in_place(work / "alias", work)  # stays inside
    reached_in_place(scene["tenant"], work)  # the operator named a path outside: theirs, links included
    (scene["tmp"] / "ci-evil").symlink_to(scene["tenant"])  # beside the working directory, its name a prefix
    reached_in_place(scene["tmp"] / "ci-evil", work)
    reached_in_place(work, work)
    monkeypatch.chdir(work)  # the anchor defaults to the current directory
    reached_in_place("alias")
    (work / "out").symlink_to(scene["tenant"])
    symlink_refusal(lambda: reached_in_place("out"))
