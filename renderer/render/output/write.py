"""Write: put rendered flows on disk atomically, and take them away (`delete`) the same way.

Every change to `<out>/flows/` happens under that directory's lock (`core/dirlock.py`), so renders and
deletes into one output directory take turns. A flow directory is staged next to its final place
(`.devlane-tmp-*`) and swapped in with `renameat2(RENAME_EXCHANGE)`: a reader of `flows/<id>` sees the
old tree or the new one, never nothing. Where the OS or the filesystem cannot exchange, the old tree
is moved aside (`.devlane-old-*`) and the new one renamed in: not atomic for readers, and a kill
between the two renames leaves the flow only in the aside directory, which the next run puts back.
Whoever takes the lock first reclaims what dead runs left (`reclaim`): nothing is staged but under the
lock, so every `.devlane-*` entry it finds belongs to a run that is gone. devlane writes nothing
outside `flows/<id>/` but that lock file, which exists only while a run holds it.

No symlink is followed on the way (`core/anchored.py`): `flows/` is opened from the repository root (or from the
operator's `--out`) one component at a time without following links, and a symlink there, or directly in `flows/`
(a flow, `_mesh`, the lock file), is refused before anything is written or removed. Everything after that is done
relative to the open `flows/` (`dir_fd`), so a directory swapped for a link meanwhile redirects nothing, and a tree
is removed without following the links in it.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import stat
import time
from contextlib import ExitStack, suppress
from pathlib import Path

from ...core import files
from ...core.anchored import O_DIR, OpenDir, first_link, open_dir, read_at, symlink_error, write_at
from ...core.dirlock import DirLock, alive
from ...core.source import Source
from ...errors import DevlaneError, Problem, UsageError, fail
from ..routing.mesh import MESH_DIR
from .emit import RenderedFlow, mesh_flow

LOCK_WAIT = 120.0  # seconds a render or delete waits for another one into the same output directory
PREFIX = ".devlane-"
STAGED, ASIDE, DOOMED = f"{PREFIX}tmp-", f"{PREFIX}old-", f"{PREFIX}delete-"
LINK_HINT = ("remove the symlink (devlane makes the output directories itself), or write outside the repository "
             "with --out DIR")


class Output:
    """`<out>/flows/` under its lock (a context manager): reclaims what dead runs left, then writes or removes.

    Directories it had to create are removed again if they are still empty at the end (a failed render
    leaves nothing behind). With `create=False` a missing `flows/` stays missing and unlocked: a delete has
    nothing there to remove. `repository`: the repository none of whose symlinks is followed on the way to
    `flows/` (None: all of `out_dir` is the operator's, its symlinks too; `flows/` and what it holds never are).
    """

    def __init__(self, out_dir: Path, wait: float | None = None, create: bool = True,
                 repository: Path | None = None):
        self.flows = Path(out_dir) / "flows"
        self.repository = Path(out_dir if repository is None else repository)
        self.wait = LOCK_WAIT if wait is None else wait
        self.create = create
        self._dir: OpenDir | None = None
        self._stack = ExitStack()

    @property
    def fd(self) -> int:
        """`flows/`, open (inside the context, when it exists)."""
        assert self._dir is not None
        return self._dir.fd

    def __enter__(self) -> Output:
        deadline = time.monotonic() + self.wait
        try:
            while True:
                self._dir = open_dir(self.flows, self.repository, self.create, LINK_HINT)
                if self._dir is None:
                    return self
                found = first_link(self._dir.fd)
                if found is not None:
                    raise symlink_error(self.flows / found[0], found[1], LINK_HINT)
                try:
                    self._stack.enter_context(DirLock(self.flows, max(0.0, deadline - time.monotonic()),
                                                      dir_fd=self._dir.fd))
                    break
                except FileNotFoundError:  # a failed run removed the empty directory this one opened: again
                    self._dir.close()
            reclaim(self.fd)
        except OSError as exc:
            self.__exit__()
            raise output_error(exc, self.flows) from None
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        if self._dir is not None:
            self._dir.close(prune=True)
            self._dir = None

    def write(self, flows: list[RenderedFlow]) -> list[Path]:
        """Stage every flow (and `_mesh`, rebuilt with them), then swap each in; returns their paths. Nothing
        changes when staging fails."""
        staged: list[tuple[str, str]] = []
        final = self.flows
        flows = [f for f in flows if f.flow_id != MESH_DIR]
        try:
            routes = self._mesh({f.flow_id: f.metadata for f in flows})
            for flow in [*flows, *([routes] if routes else [])]:
                final = self.flows / flow.flow_id
                staged.append((_stage(flow, self.fd), flow.flow_id))
            for tmp, name in staged:
                final = self.flows / name
                _swap(self.fd, tmp, name)
        except OSError as exc:
            raise output_error(exc, final) from None
        finally:
            for tmp, _ in staged:
                _discard(self.fd, tmp)  # a swapped tmp holds the old tree; an unswapped one, the new
        return [self.flows / name for _, name in staged]  # `_mesh` last, when a flow routes a host

    def present(self) -> list[str]:
        """The flows in the output directory (`flows/<id>/` with a flow.metadata), sorted; `_mesh` is none."""
        if self._dir is None:
            return []
        return [e.name for e in sorted(os.scandir(self.fd), key=lambda e: e.name)
                if not e.name.startswith((".", "_")) and e.is_dir(follow_symlinks=False) and self._has_metadata(e.name)]

    def holds(self, name: str) -> bool:
        """Whether `flows/<name>` is a directory (a symlink never is one)."""
        return self._dir is not None and _kind(self.fd, name) == stat.S_IFDIR

    def remove(self, name: str) -> Path | None:
        """Remove `flows/<name>`, then rebuild `_mesh` from the flows that remain; None when it was not there."""
        if self._dir is None:
            return None
        removed = _remove(self.fd, name, self.flows / name)
        routes = self._mesh({name: None})
        if routes is None:
            return removed
        tmp = None
        try:
            tmp = _stage(routes, self.fd)
            _swap(self.fd, tmp, MESH_DIR)
        except OSError as exc:
            raise output_error(exc, self.flows / MESH_DIR) from None
        finally:
            if tmp is not None:
                _discard(self.fd, tmp)
        return removed

    def metadata(self, name: str) -> dict | None:
        """`flows/<name>/flow.metadata` (None: none there). One devlane cannot read is an error naming it: dropping
        a flow's routes from `_mesh` would cut that flow off silently."""
        try:
            data = self._read(name, "flow.metadata")
            doc = None if data is None else json.loads(data)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise fail(f"cannot read {self.flows / name / 'flow.metadata'}: {reason}",
                       hint=f"re-render flow {name}, or delete it", code="output") from None
        return doc if isinstance(doc, dict) else None

    def read_rendered(self, name: str, source: Source, root: Path, ref: str | None) -> dict[str, bytes]:
        """A rendered flow's files, from the work tree or, with `--ref`, from git; at least one."""
        flow_dir = self.flows / name
        if ref is None:
            found = self._files(name)
        else:
            try:
                rel = flow_dir.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                raise UsageError(f"with --ref, the output directory must be inside the repository: {flow_dir}"
                                 ) from None
            found = {Path(f).name: source.read(f) for f in source.list_files([f"{rel}/*"], [])}
        if not found:
            where = f"{flow_dir}" + (f" at {ref}" if ref else "")
            raise DevlaneError(Problem(f"no rendered flow {name} in {where}",
                                       hint="pass --out DIR (the render's output root) or --ref REF"))
        return found

    def _files(self, name: str) -> dict[str, bytes]:
        """The regular files of `flows/<name>/` (a symlink among them is refused, never read through)."""
        sub = self._open(name)
        if sub is None:
            return {}
        out: dict[str, bytes] = {}
        try:
            for entry in sorted(os.scandir(sub), key=lambda e: e.name):
                if entry.is_symlink() or entry.is_file(follow_symlinks=False):
                    data = read_at(sub, entry.name, self.flows / name / entry.name, files.MAX_FILE_BYTES)
                    out.update({entry.name: data} if data is not None else {})
        except OSError as exc:
            raise fail(f"cannot read {self.flows / name}: {exc.strerror}", hint=f"re-render flow {name}, or delete it",
                       code="output") from None
        finally:
            os.close(sub)
        return out

    def _open(self, name: str) -> int | None:
        """`flows/<name>/`, opened (None: no such directory)."""
        if self._dir is None:
            return None
        try:
            return os.open(name, O_DIR, dir_fd=self.fd)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _read(self, name: str, file: str) -> bytes | None:
        sub = self._open(name)
        if sub is None:
            return None
        try:
            return read_at(sub, file, self.flows / name / file, files.MAX_FILE_BYTES)
        finally:
            os.close(sub)

    def _has_metadata(self, name: str) -> bool:
        sub = self._open(name)
        if sub is None:
            return False
        try:
            return _kind(sub, "flow.metadata") is not None
        finally:
            os.close(sub)

    def _mesh(self, pending: dict[str, dict | None]) -> RenderedFlow | None:
        """`flows/_mesh/` from the `mesh` records of every flow present once `pending` is applied (a flow's new
        metadata, or None for a flow going away). Without an istio flow pending and no `_mesh` yet, no flow
        present routes a host (any that did made `_mesh`), so the common render reads no other flow's metadata."""
        keep = self.holds(MESH_DIR)
        if not keep and not any((m or {}).get("mesh", {}).get("mode") == "istio" for m in pending.values()):
            return None
        metadata: dict[str, dict] = {}
        if self._dir is not None:
            for entry in sorted(os.scandir(self.fd), key=lambda e: e.name):
                if entry.name.startswith((".", "_")) or not entry.is_dir(follow_symlinks=False):
                    continue
                meta = self.metadata(entry.name)
                if meta is not None:
                    metadata[entry.name] = meta
        for name, meta in pending.items():
            if meta is None:
                metadata.pop(name, None)
            else:
                metadata[name] = meta
        records = {name: meta["mesh"] for name, meta in metadata.items()
                   if meta.get("kind") == "FlowMetadata" and (meta.get("mesh") or {}).get("mode") == "istio"}
        return mesh_flow(records, keep=keep)


def write_flows(flows: list[RenderedFlow], out_dir: Path, wait: float | None = None) -> list[Path]:
    """Write every flow directory under `out_dir/flows/` under its lock; returns their paths."""
    with Output(out_dir, wait) as out:
        return out.write(flows)


def _kind(parent: int, name: str) -> int | None:
    """The type (`stat.S_IFDIR`, `S_IFLNK`, ...) of `name` in the open directory `parent`, not followed; None: none."""
    try:
        return stat.S_IFMT(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return None


def _stage(flow: RenderedFlow, parent: int) -> str:
    """The flow's files in a new `.devlane-tmp-*` directory of `parent`; returns its name."""
    tmp = f"{STAGED}{flow.flow_id}.{os.getpid()}.{secrets.token_hex(4)}"
    os.mkdir(tmp, 0o700, dir_fd=parent)
    try:
        fd = os.open(tmp, O_DIR, dir_fd=parent)
        try:
            for name, text in [*flow.files.items(), ("kustomization.yaml", flow.kustomization()),
                               ("flow.metadata", flow.metadata_text()), ("README.md", flow.readme)]:
                write_at(fd, name, text.encode("utf-8"))
            os.fchmod(fd, 0o755)
        finally:
            os.close(fd)
    except BaseException:
        _discard(parent, tmp)
        raise
    return tmp


def _exchange(parent: int, a: str, b: str) -> bool:
    """`files.exchange` of two entries of the open directory `parent`, named through `/proc/self/fd` (the directory
    itself, wherever it is now); False without /proc, as where the OS cannot exchange."""
    at = f"/proc/self/fd/{parent}"
    return os.path.isdir(at) and files.exchange(Path(at, a), Path(at, b))


def _swap(parent: int, tmp: str, final: str) -> None:
    """Put the staged `tmp` at `final` (both in `parent`); afterwards `tmp` holds the old tree, if there was one."""
    if _kind(parent, final) is None:  # the first render of this flow; under the lock nobody else creates it
        os.rename(tmp, final, src_dir_fd=parent, dst_dir_fd=parent)
        return
    if _exchange(parent, tmp, final):
        return
    aside = f"{ASIDE}{final}.{os.getpid()}.{secrets.token_hex(4)}"
    os.mkdir(aside, 0o700, dir_fd=parent)
    aside_fd = os.open(aside, O_DIR, dir_fd=parent)
    try:
        os.rename(final, final, src_dir_fd=parent, dst_dir_fd=aside_fd)
        try:
            os.rename(tmp, final, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            os.rename(final, final, src_dir_fd=aside_fd, dst_dir_fd=parent)
            raise
    finally:
        os.close(aside_fd)
    _discard(parent, aside)


def _doomed_name(name: str) -> str:
    return f"{DOOMED}{name.removeprefix(PREFIX)}.{os.getpid()}.{secrets.token_hex(4)}"


def _discard(parent: int, name: str, required: bool = False) -> None:
    """Remove a file or a tree of the open directory `parent`, following no symlink (a link goes, never what it
    points to). A flow directory or an aside copy is renamed to a `.devlane-delete-*` name first, so that a tree
    still being removed is never taken for either; when that rename fails, an aside copy stays whole for the next
    run, and `required` raises. Staging and doomed trees go where they are."""
    if _kind(parent, name) is None:
        return
    if not name.startswith((STAGED, DOOMED)):
        try:
            doomed = _doomed_name(name)
            os.rename(name, doomed, src_dir_fd=parent, dst_dir_fd=parent)
            name = doomed
        except OSError:
            if required:
                raise
            return
    if _kind(parent, name) == stat.S_IFDIR:
        shutil.rmtree(name, ignore_errors=True, dir_fd=parent)  # fd-based: follows no link inside the tree
    else:
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=parent)


def reclaim(flows: int) -> None:
    """Under the lock (`flows`: open): put back a flow that a killed swap left only aside, and remove every other
    leftover."""
    for entry in sorted(os.scandir(flows), key=lambda e: e.name):
        if not entry.name.startswith(PREFIX):
            continue
        if entry.name.startswith(ASIDE) and entry.is_dir(follow_symlinks=False):
            aside = os.open(entry.name, O_DIR, dir_fd=flows)
            try:
                for moved in sorted(os.listdir(aside)):  # `.devlane-old-*/<id>`: the complete old tree
                    if not moved.startswith(".") and _kind(flows, moved) is None:
                        os.rename(moved, moved, src_dir_fd=aside, dst_dir_fd=flows)
            finally:
                os.close(aside)
        _discard(flows, entry.name)


def remove_dir(path: Path, repository: Path, hint: str) -> Path | None:
    """Remove a directory outside the output lock (a flow's provision records): under a unique name, after
    removing the leftovers of deletes whose process is gone; None when it is not there. No symlink of the
    repository is followed on the way to it, nor is `path` one (`hint`: what to do about one)."""
    try:
        parent = open_dir(path.parent, repository, False, hint)
        if parent is None:
            return None
    except OSError as exc:
        raise output_error(exc, path, "remove") from None
    try:
        for entry in sorted(os.scandir(parent.fd), key=lambda e: e.name):
            if entry.name.startswith(DOOMED) and not _owner_alive(entry.name):
                _discard(parent.fd, entry.name)
        if _kind(parent.fd, path.name) == stat.S_IFLNK:
            raise symlink_error(path, os.readlink(path.name, dir_fd=parent.fd), hint)
        return _remove(parent.fd, path.name, path)
    finally:
        parent.close()


def _remove(parent: int, name: str, shown: Path) -> Path | None:
    """Renamed aside first, so a killed delete leaves no half directory; None when nothing is there."""
    if _kind(parent, name) is None:
        return None
    try:
        _discard(parent, name, required=True)
    except OSError as exc:
        raise output_error(exc, shown, "remove") from None
    return shown


def _owner_alive(name: str) -> bool:
    """`.devlane-delete-<name>.<pid>.<random>`: whether that pid runs (and is not this process)."""
    parts = name.rsplit(".", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return False  # written by an older devlane
    pid = int(parts[1])
    return pid != os.getpid() and alive(pid)


OUTPUT_ERRORS = {
    errno.ENOSPC: ("the disk is full", "free space on that filesystem, or pass --out DIR on another one"),
    errno.EDQUOT: ("the disk quota is used up", "free space within your quota, or pass --out DIR elsewhere"),
    errno.EFBIG: ("a file is larger than the file-size limit (ulimit -f)",
                  "raise the limit (ulimit -f unlimited), or pass --out DIR"),
    errno.EROFS: ("the filesystem is read-only", "pass --out DIR on a writable filesystem"),
    errno.EACCES: ("permission denied", "make the output directory writable for this user, or pass --out DIR"),
    errno.EPERM: ("operation not permitted", "make the output directory writable for this user, or pass --out DIR"),
}


def output_error(exc: OSError, path: Path, doing: str = "write") -> DevlaneError:
    """One clear error for a failed change under the output directory: the path, the cause, the fix."""
    reason, hint = OUTPUT_ERRORS.get(exc.errno or 0, (exc.strerror or str(exc),
                                                      "check the output directory, or pass --out DIR"))
    return fail(f"cannot {doing} {path}: {reason}; the previous output is unchanged", hint=hint, code="output")
