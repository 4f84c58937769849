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
import tracemalloc
from pathlib import Path

import pytest

from renderer.core import anchored
from renderer.core.anchored import (
    first_link,
    open_child,
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
    link.symlink_to(
        {
            "absolute": scene["srv"] / "lanes",
            "relative": Path("..", "srv", "lanes"),
            "dot-relative": Path(".", "..", "srv", "lanes"),
            "dotdot-relative": Path("..", "ci", "..", "srv", "lanes"),
        }[target]
    )
    real = scene["srv"] / "lanes"
    assert trusted_prefix(link / "flows" / "pr-1", scene["repo"]) == (str(real), ("flows", "pr-1"))
    (real / "flows").mkdir()
    assert trusted_prefix(link / "flows" / "pr-1", scene["repo"]) == (str(real / "flows"), ("pr-1",))


def test_an_operators_link_into_the_repository_is_followed_only_to_its_root(scene):
    repo = scene["repo"]
    (repo / "rendered" / "sneaky").symlink_to(scene["tenant"])  # the pull request's link, below the root
    (scene["tmp"] / "into").symlink_to(repo / "rendered")
    assert trusted_prefix(scene["tmp"] / "into" / "sneaky" / "flows", repo) == (
        str(repo),
        ("rendered", "sneaky", "flows"),
    )
    (scene["tmp"] / "up").symlink_to(Path("ci", "repo", "rendered", "..", "rendered"))  # `..` below the root: kept
    assert trusted_prefix(scene["tmp"] / "up" / "flows", repo) == (str(repo), ("rendered", "..", "rendered", "flows"))
    (scene["tmp"] / "out").symlink_to(Path("ci", "repo", "..", "repo", "rendered"))  # the root's `..` is the operator's
    assert trusted_prefix(scene["tmp"] / "out" / "flows", repo) == (str(repo), ("rendered", "flows"))
    (scene["tmp"] / "slashes").symlink_to("/" + str(repo / "rendered"))  # `//tmp/...`: still the repository's root
    assert trusted_prefix(scene["tmp"] / "slashes" / "sneaky" / "flows", repo) == (
        str(repo),
        ("rendered", "sneaky", "flows"),
    )


@pytest.mark.parametrize("name", ["XXXX", "XX.XX", "...", ".x"])
def test_a_component_named_almost_like_dot_is_a_component_like_any_other(scene, name):
    """Only `.` (and an empty component) is skipped; a directory may be named anything else, on either side of
    the repository's root."""
    (scene["srv"] / name / "lanes").mkdir(parents=True)
    assert trusted_prefix(scene["srv"] / name / "lanes", scene["repo"]) == (str(scene["srv"] / name / "lanes"), ())
    repo = scene["repo"]
    opened = open_dir(repo / name / "x", repo, create=True, hint=HINT)
    assert opened.path == repo / name / "x"
    assert os.path.samestat(os.fstat(opened.fd), os.stat(repo / name / "x"))
    opened.close()
    assert not (repo / "x").exists()


def test_a_missing_component_ends_the_operators_part(scene):
    assert trusted_prefix(scene["tmp"] / "new" / "out" / "flows", scene["repo"]) == (
        str(scene["tmp"]),
        ("new", "out", "flows"),
    )


def test_a_loop_of_links_outside_is_the_kernels_error(scene):
    (scene["tmp"] / "a").symlink_to(scene["tmp"] / "b")
    (scene["tmp"] / "b").symlink_to(scene["tmp"] / "a")
    with pytest.raises(OSError) as info:
        trusted_prefix(scene["tmp"] / "a" / "x", scene["repo"])
    assert info.value.errno == errno.ELOOP
    assert info.value.filename == str(scene["tmp"] / "a")  # the link the 41st hop was on, for the caller's message


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


def test_pruning_stops_at_the_first_directory_it_cannot_remove_whatever_the_reason(scene):
    """A directory devlane made that is gone when it prunes was removed by someone else (another run, the
    operator): devlane leaves the ones above it, whose use it no longer knows, even when they are empty."""
    repo = scene["repo"]
    opened = open_dir(repo / "a" / "b" / "c", repo, create=True, hint=HINT)
    (repo / "a" / "b" / "c").rmdir()
    opened.close(prune=True)
    assert (repo / "a" / "b").is_dir()


def test_a_directory_opened_as_descriptor_0_is_closed_too(scene):
    """Run with its standard input closed (`devlane render ... <&-`), the first directory devlane opens is
    descriptor 0: closing it must still close it, not leak it as if it were already closed."""
    saved = os.dup(0)
    try:
        os.close(0)
        opened = open_dir(scene["srv"] / "lanes", scene["repo"], create=False, hint=HINT)
        assert opened.fd == 0
        opened.close()
        assert opened.fd == -1
        with pytest.raises(OSError) as info:
            os.fstat(0)
        assert info.value.errno == errno.EBADF
    finally:
        os.dup2(saved, 0)
        os.close(saved)


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
    parts = {
        "output": ("out",),
        "flows": ("rendered", "flows2"),
        "flow": ("rendered", "flows", "pr-7"),
        "leaf": ("rendered", "flows", "pr-7", "_mesh"),
    }[where]
    (repo.joinpath(*parts[:-1])).mkdir(parents=True, exist_ok=True)
    aim = scene["tenant"] / "flows" if target == "outside" else repo / "rendered"
    repo.joinpath(*parts).symlink_to(aim)
    for create in (True, False):
        err = symlink_refusal(lambda c=create: open_dir(repo.joinpath(*parts, "x"), repo, create=c, hint=HINT))
        assert str(repo.joinpath(*parts)) in err.problems[0].message and f"(to {aim})" in err.problems[0].message
        assert err.problems[0].hint == HINT
    assert os.listdir(scene["tenant"] / "flows") == []  # nothing made through the link
    assert not (repo / "rendered" / "x").exists()


@pytest.mark.parametrize("before", ["rendered", "new"])
def test_a_dotdot_inside_the_repository_is_refused(scene, before):
    """After an existing directory, or one devlane had to create on the way: that one is removed again."""
    repo = scene["repo"]
    (scene["tmp"] / "up").symlink_to(Path("ci", "repo", before, "..", "rendered"))
    err = symlink_refusal(lambda: open_dir(scene["tmp"] / "up" / "flows", repo, create=True, hint=HINT))
    assert "through '..' inside the repository" in err.problems[0].message
    assert err.problems[0].hint == "give a path without '..'"
    assert sorted(os.listdir(repo)) == ["rendered"]


@pytest.mark.parametrize("where", ["repository", "operator"])
@pytest.mark.parametrize("create", [True, False])
def test_a_file_where_a_directory_should_be_is_an_os_error_not_a_symlink_error(scene, where, create):
    """In the repository, or the operator's own path (`--out` naming a file): never a file opened as a directory."""
    repo = scene["repo"]
    file = repo / "rendered" / "flows" / "pr-1" if where == "repository" else scene["srv"] / "lanes.txt"
    file.write_text("")
    with pytest.raises(OSError) as info:
        open_dir(file / "x" if where == "repository" else file, repo, create=create, hint=HINT)
    assert not isinstance(info.value, DevlaneError) and info.value.errno == errno.ENOTDIR


@pytest.mark.parametrize(("exists", "create", "made"), [(True, False, False), (True, True, False), (False, True, True)])
def test_open_child_says_whether_it_made_the_directory(scene, exists, create, made):
    repo = scene["repo"]
    if exists:
        (repo / "child").mkdir()
    parent = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd, got = open_child(parent, "child", repo / "child", create, HINT)
        assert got is made and os.path.samestat(os.fstat(fd), os.stat(repo / "child"))
        os.close(fd)
    finally:
        os.close(parent)


def test_open_child_gives_none_and_not_made_for_a_missing_directory_without_create(scene):
    parent = os.open(scene["repo"], os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert open_child(parent, "child", scene["repo"] / "child", False, HINT) == (None, False)
    finally:
        os.close(parent)
    assert not (scene["repo"] / "child").exists()


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


@pytest.mark.parametrize(
    ("shape", "code", "hint"),
    [
        ("link", "symlink", "replace the link by the file devlane wrote (re-render the flow)"),
        ("fifo", "output", "re-render the flow, or delete it"),
        ("over-limit", "output", "re-render the flow, or delete it"),
    ],
)
def test_each_refusal_of_read_at_names_the_file_and_tells_the_fix(flow_dir, scene, shape, code, hint):
    opened, path = flow_dir
    if shape == "link":
        (path / "f.yaml").symlink_to(scene["tenant"])
    elif shape == "fifo":
        os.mkfifo(path / "f.yaml")
    else:
        (path / "f.yaml").write_bytes(b"x" * 11)
    with pytest.raises(DevlaneError) as info:
        read_at(opened.fd, "f.yaml", path / "f.yaml", 10)
    [problem] = info.value.problems
    assert problem.message.startswith(f"{path / 'f.yaml'} is ") and (problem.code, problem.hint) == (code, hint)


def test_read_at_reads_no_more_than_its_limit_of_a_huge_file(flow_dir):
    """A rendered file swapped for a huge one (here 64 MiB, sparse) is refused after reading limit + 1 bytes, not
    after loading it whole."""
    opened, path = flow_dir
    with open(path / "huge.yaml", "wb") as handle:
        handle.truncate(64 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(DevlaneError, match="over the 1,000-byte limit"):
            read_at(opened.fd, "huge.yaml", path / "huge.yaml", 1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_write_at_creates_a_file_by_the_umask_and_never_executable(flow_dir):
    opened, path = flow_dir
    old = os.umask(0o022)
    try:
        write_at(opened.fd, "a.yaml", b"x: 1\n")
    finally:
        os.umask(old)
    assert (path / "a.yaml").stat().st_mode & 0o777 == 0o644


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
    assert problem.message == (
        "/r/out is a symlink (to /elsewhere): devlane never writes or removes through a symlink in the repository or "
        "under the output directory, since it could lead anywhere (another lane, another checkout)"
    )
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
