"""Directories devlane writes in and removes from (the output directory, provision records), reached without
following a symlink that the repository could have put on the way.

Argo CD's repo-server and kustomize's load restrictor refuse a symlink that leads out of the repository when they
read; devlane also writes and deletes there, so it follows none at all where the pull request controls the tree: a
symlink is followed only where the operator owns the path, outside the repository (`--out /srv/lanes` may be a link
the operator made, and so may the repository path itself). From the first component that lies in the repository
down to the files, and everywhere under the output directory (`flows/`, `flows/<id>/`, `flows/_mesh/`), each
directory is opened with `O_NOFOLLOW` from the one above it (`openat`), and a symlink is refused with one error
naming it and where it points. The work that follows happens relative to the open directory (`dir_fd`), so a
directory swapped for a symlink after the check (by a plugin running meanwhile) redirects nothing.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..errors import DevlaneError, fail
from .fence import Fence

O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_HOPS = 40  # symlinks followed in the operator's part of a path, as the kernel's own limit


def symlink_error(path: str | Path, target: str, hint: str) -> DevlaneError:
    """The one error for a symlink found where devlane writes or removes: the link, where it points, the fix."""
    return fail(f"{path} is a symlink (to {target}): devlane never writes or removes through a symlink in the "
                "repository or under the output directory, since it could lead anywhere (another lane, another "
                "checkout)", hint=hint, code="symlink")


def trusted_prefix(path: str | Path, repository: str | Path) -> tuple[str, tuple[str, ...]]:
    """(anchor, rest): `path` (relative to the current directory) split where the repository begins.

    The anchor is the real path of the part the operator owns: the components outside the repository, their
    symlinks followed (one hop at a time, so a link of theirs that points into the repository is followed no further
    than its root). `rest` are the components from the first one inside the repository, or the first one that does
    not exist yet, to the end: never followed."""
    fence = Fence.around(repository)
    pending = list(Path(os.path.abspath(path)).parts[1:])
    real, hops = os.sep, 0
    while pending:
        name = pending[0]
        if name in ("", "."):
            pending.pop(0)
            continue
        if name == "..":
            real = os.path.dirname(real)
            pending.pop(0)
            continue
        if fence.contains(real):
            break
        step = os.path.join(real, name)
        try:
            mode = os.lstat(step).st_mode
        except FileNotFoundError:
            break
        pending.pop(0)
        if stat.S_ISLNK(mode):
            hops += 1
            if hops > _MAX_HOPS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), step)
            target = os.readlink(step)
            pending[:0] = Path(target).parts[1:] if os.path.isabs(target) else Path(target).parts
            real = os.sep if os.path.isabs(target) else real
        else:
            real = step
    return real, tuple(pending)


class OpenDir:
    """A directory opened without following symlinks (its fd, and the path it was reached by, for messages), with
    the directories that opening it had to create: `close(prune=True)` removes those again while they are empty."""

    def __init__(self, fd: int, path: Path, made: list[tuple[int, str]]):
        self.fd = fd
        self.path = path
        self._made = made  # (open parent fd, name), outermost first

    def close(self, prune: bool = False) -> None:
        if self.fd < 0:
            return
        os.close(self.fd)
        self.fd = -1
        keep = not prune
        for parent, name in reversed(self._made):  # deepest first; rmdir refuses a directory that holds anything
            if not keep:
                try:
                    os.rmdir(name, dir_fd=parent)
                except OSError:
                    keep = True
            os.close(parent)
        self._made = []


def open_dir(path: str | Path, repository: str | Path, create: bool, hint: str) -> OpenDir | None:
    """`path`, opened from the operator's part of it (`trusted_prefix`) one component at a time with `O_NOFOLLOW`,
    created (with its parents) when `create`; None when it does not exist and not `create`. A symlink on the way is
    `symlink_error`; another OSError is raised for the caller to word."""
    anchor, rest = trusted_prefix(path, repository)
    shown = Path(anchor)
    made: list[tuple[int, str]] = []
    fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the operator's: its links are theirs
    try:
        for name in rest:
            if name in ("", "."):
                continue
            shown = shown / name
            if name == "..":
                raise fail(f"{path} leaves {shown.parent.parent} through '..' inside the repository",
                           hint="give a path without '..'", code="symlink")
            child, created = open_child(fd, name, shown, create, hint)
            if child is None:
                OpenDir(fd, shown, made).close()
                return None
            if created:
                made.append((fd, name))
            else:
                os.close(fd)
            fd = child
    except BaseException:
        OpenDir(fd, shown, made).close(prune=True)
        raise
    return OpenDir(fd, shown, made)


def open_child(parent: int, name: str, shown: Path, create: bool, hint: str) -> tuple[int | None, bool]:
    """(fd, made) of directory `name` in the open directory `parent`, never following a symlink; (None, False) when
    it is missing and not `create`."""
    made = False
    while True:
        try:
            return os.open(name, O_DIR, dir_fd=parent), made
        except FileNotFoundError:
            if not create:
                return None, False
            try:
                os.mkdir(name, dir_fd=parent)
                made = True
            except FileExistsError:
                pass  # made meanwhile by another run: open it
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP, errno.EMLINK):
                refuse_link(parent, name, shown, hint)
            raise


def refuse_link(parent: int, name: str, shown: Path, hint: str) -> None:
    """Raise `symlink_error` when `name` in the open directory `parent` is a symlink."""
    try:
        target = os.readlink(name, dir_fd=parent)
    except OSError:
        return
    raise symlink_error(shown, target, hint)


def first_link(fd: int) -> tuple[str, str] | None:
    """(name, target) of the first symlink directly in the open directory `fd`, by name; None when it holds none."""
    for entry in sorted(os.scandir(fd), key=lambda e: e.name):
        if entry.is_symlink():
            return entry.name, os.readlink(entry.name, dir_fd=fd)
    return None


def read_at(parent: int, name: str, shown: Path, limit: int) -> bytes | None:
    """The bytes of the regular file `name` in the open directory `parent` (None: not there), at most `limit` of
    them; a symlink or anything but a regular file is an error naming `shown`."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            refuse_link(parent, name, shown, "replace the link by the file devlane wrote (re-render the flow)")
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise fail(f"{shown} is not a regular file", hint="re-render the flow, or delete it", code="output")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise fail(f"{shown} is over the {limit:,}-byte limit", hint="re-render the flow, or delete it", code="output")
    return data


def write_at(parent: int, name: str, data: bytes, mode: int = 0o666) -> None:
    """Create the file `name` (which must not exist) in the open directory `parent` and write `data` to it."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def reached_in_place(path: str | Path, anchor: str | Path | None = None) -> None:
    """Refuse a repository path that the directory devlane runs in reaches through a symlink leading out of it.

    CI runs `devlane render examples/shop` in the pull request's checkout: the operator named the path, but the pull
    request owns the tree, and could make `examples` a link to another tenant's checkout, whose files devlane would
    then read, render into and gc (Argo CD's repo-server refuses such a link out of the repository too). A path the
    operator gives outside the current directory (`/srv/repos/shop`) is theirs, links included."""
    base = os.path.abspath(anchor if anchor is not None else os.getcwd())
    lexical = os.path.abspath(path)
    if not lexical.startswith(base.rstrip(os.sep) + os.sep):
        return
    fence = Fence.around(base)
    step = base
    for name in Path(os.path.relpath(lexical, base)).parts:
        step = os.path.join(step, name)
        if os.path.islink(step) and not fence.contains(os.path.realpath(step)):
            raise fail(f"{step} is a symlink (to {os.readlink(step)}) that leads out of {base}, where devlane runs: "
                       "a repository path is never read, rendered into or collected through such a link",
                       hint="name the repository by its real path, or replace the link with the directory",
                       code="symlink")
