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
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import tempfile
from contextlib import ExitStack
from pathlib import Path

from ...core import files
from ...core.dirlock import DirLock, alive
from ...core.source import Source
from ...errors import DevlaneError, Problem, UsageError, fail
from ..routing.mesh import MESH_DIR
from .emit import RenderedFlow, mesh_flow

LOCK_WAIT = 120.0  # seconds a render or delete waits for another one into the same output directory
PREFIX = ".devlane-"
STAGED, ASIDE, DOOMED = f"{PREFIX}tmp-", f"{PREFIX}old-", f"{PREFIX}delete-"


class Output:
    """`<out>/flows/` under its lock (a context manager): reclaims what dead runs left, then writes or removes.

    Directories it had to create are removed again if they are still empty at the end (a failed render
    leaves nothing behind). With `create=False` a missing `flows/` stays missing and unlocked: a delete has
    nothing there to remove.
    """

    def __init__(self, out_dir: Path, wait: float | None = None, create: bool = True):
        self.flows = Path(out_dir) / "flows"
        self.wait = LOCK_WAIT if wait is None else wait
        self.create = create
        self._made: list[Path] = []
        self._stack = ExitStack()

    def __enter__(self) -> Output:
        try:
            if self.create:
                self._made = _missing(self.flows)
            elif not self.flows.is_dir():
                return self
            self._stack.enter_context(DirLock(self.flows, self.wait, self.create))
            reclaim(self.flows)
        except OSError as exc:
            self.__exit__()
            raise output_error(exc, self.flows) from None
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        for made in self._made:  # deepest first; rmdir refuses a directory that holds anything
            try:
                os.rmdir(made)
            except OSError:
                break

    def write(self, flows: list[RenderedFlow]) -> list[Path]:
        """Stage every flow (and `_mesh`, rebuilt with them), then swap each in; returns their paths. Nothing
        changes when staging fails."""
        staged: list[tuple[Path, Path]] = []
        final = self.flows
        flows = [f for f in flows if f.flow_id != MESH_DIR]
        try:
            routes = self._mesh({f.flow_id: f.metadata for f in flows})
            for flow in [*flows, *([routes] if routes else [])]:
                final = self.flows / flow.flow_id
                staged.append((_stage(flow, self.flows), final))
            for tmp, final in staged:
                _swap(tmp, final)
        except OSError as exc:
            raise output_error(exc, final) from None
        finally:
            for tmp, _ in staged:
                _discard(tmp)  # a swapped tmp holds the old tree; an unswapped one, the new
        return [final for _, final in staged]  # `_mesh` last, when a flow routes a host

    def present(self) -> list[str]:
        """The flows in the output directory (`flows/<id>/` with a flow.metadata), sorted; `_mesh` is none."""
        if not self.flows.is_dir():
            return []
        return sorted(e.name for e in os.scandir(self.flows) if not e.name.startswith((".", "_"))
                      and e.is_dir(follow_symlinks=False) and os.path.isfile(os.path.join(e.path, "flow.metadata")))

    def remove(self, name: str) -> Path | None:
        """Remove `flows/<name>`, then rebuild `_mesh` from the flows that remain; None when it was not there."""
        removed = _remove(self.flows / name)
        routes = self._mesh({name: None})
        if routes is None:
            return removed
        tmp = None
        try:
            tmp = _stage(routes, self.flows)
            _swap(tmp, self.flows / MESH_DIR)
        except OSError as exc:
            raise output_error(exc, self.flows / MESH_DIR) from None
        finally:
            if tmp is not None:
                _discard(tmp)
        return removed

    def _mesh(self, pending: dict[str, dict | None]) -> RenderedFlow | None:
        """`flows/_mesh/` from the `mesh` records of every flow present once `pending` is applied (a flow's new
        metadata, or None for a flow going away). Without an istio flow pending and no `_mesh` yet, no flow
        present routes a host (any that did made `_mesh`), so the common render reads no other flow's metadata."""
        keep = (self.flows / MESH_DIR).is_dir()
        if not keep and not any((m or {}).get("mesh", {}).get("mode") == "istio" for m in pending.values()):
            return None
        metadata: dict[str, dict] = {}
        if self.flows.is_dir():
            for entry in sorted(os.scandir(self.flows), key=lambda e: e.name):
                if entry.name.startswith((".", "_")) or not entry.is_dir(follow_symlinks=False):
                    continue
                meta = read_metadata_file(Path(entry.path) / "flow.metadata")
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


def read_metadata(flow_dir: Path) -> dict | None:
    """A flow directory's flow.metadata (None when missing; one devlane cannot read is an error)."""
    return read_metadata_file(flow_dir / "flow.metadata")


def read_metadata_file(path: Path) -> dict | None:
    """A flow directory's `flow.metadata` (None: none there). One devlane cannot read stops the run: dropping its
    routes from `_mesh` would cut that flow off silently."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise fail(f"cannot read {path}: {exc}", hint=f"re-render flow {path.parent.name}, or delete it",
                   code="output") from None
    return data if isinstance(data, dict) else None


def write_flows(flows: list[RenderedFlow], out_dir: Path, wait: float | None = None) -> list[Path]:
    """Write every flow directory under `out_dir/flows/` under its lock; returns their paths."""
    with Output(out_dir, wait) as out:
        return out.write(flows)


def _missing(path: Path) -> list[Path]:
    """`path` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while not os.path.lexists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def _stage(flow: RenderedFlow, parent: Path) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix=f"{STAGED}{flow.flow_id}.{os.getpid()}.", dir=parent))
    try:
        for name, text in flow.files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        (tmp / "kustomization.yaml").write_text(flow.kustomization(), encoding="utf-8")
        (tmp / "flow.metadata").write_text(flow.metadata_text(), encoding="utf-8")
        (tmp / "README.md").write_text(flow.readme, encoding="utf-8")
        os.chmod(tmp, 0o755)
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def _swap(tmp: Path, final: Path) -> None:
    """Put the staged `tmp` at `final`; afterwards `tmp` holds the old tree, if there was one."""
    if not os.path.lexists(final):
        os.rename(tmp, final)  # the first render of this flow; under the lock nobody else creates it
        return
    if files.exchange(tmp, final):
        return
    aside = Path(tempfile.mkdtemp(prefix=f"{ASIDE}{final.name}.{os.getpid()}.", dir=final.parent))
    os.rename(final, aside / final.name)
    try:
        os.rename(tmp, final)
    except BaseException:
        os.rename(aside / final.name, final)
        raise
    _discard(aside)


def _doomed_name(path: Path) -> Path:
    return path.with_name(f"{DOOMED}{path.name.removeprefix(PREFIX)}.{os.getpid()}.{secrets.token_hex(4)}")


def _discard(path: Path, required: bool = False) -> None:
    """Remove a file or a tree. A flow directory or an aside copy is renamed to a `.devlane-delete-*` name
    first, so that a tree still being removed is never taken for either; when that rename fails, an aside
    copy stays whole for the next run, and `required` raises. Staging and doomed trees go where they are."""
    if not os.path.lexists(path):
        return
    if not path.name.startswith((STAGED, DOOMED)):
        try:
            doomed = _doomed_name(path)
            os.rename(path, doomed)
            path = doomed
        except OSError:
            if required:
                raise
            return
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def reclaim(flows: Path) -> None:
    """Under the lock: put back a flow that a killed swap left only aside, and remove every other leftover."""
    for entry in sorted(os.scandir(flows), key=lambda e: e.name):
        if not entry.name.startswith(PREFIX):
            continue
        path = Path(entry.path)
        if entry.name.startswith(ASIDE) and entry.is_dir(follow_symlinks=False):
            for moved in sorted(path.iterdir()):  # `.devlane-old-*/<id>`: the complete old tree
                if not moved.name.startswith(".") and not os.path.lexists(flows / moved.name):
                    os.rename(moved, flows / moved.name)
        _discard(path)


def remove_dir(path: Path) -> Path | None:
    """Remove a directory outside the output lock (a flow's provision records): under a unique name, after
    removing the leftovers of deletes whose process is gone; None when it is not there."""
    if path.parent.is_dir():
        for entry in path.parent.iterdir():
            if entry.name.startswith(DOOMED) and not _owner_alive(entry.name):
                _discard(entry)
    return _remove(path)


def _remove(path: Path) -> Path | None:
    """Renamed aside first, so a killed delete leaves no half directory; None when nothing is there."""
    if not os.path.lexists(path):
        return None
    try:
        _discard(path, required=True)
    except OSError as exc:
        raise output_error(exc, path, "remove") from None
    return path


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


def read_rendered(source: Source, root: Path, flow_dir: Path, ref: str | None) -> dict[str, bytes]:
    """A rendered flow's files, from the work tree or, with `--ref`, from git; at least one."""
    if ref is None:
        files = {p.name: p.read_bytes() for p in sorted(flow_dir.iterdir()) if p.is_file()} if flow_dir.is_dir() else {}
    else:
        try:
            rel = flow_dir.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise UsageError(f"with --ref, the output directory must be inside the repository: {flow_dir}") from None
        files = {Path(f).name: source.read(f) for f in source.list_files([f"{rel}/*"], [])}
    if not files:
        where = f"{flow_dir}" + (f" at {ref}" if ref else "")
        raise DevlaneError(Problem(f"no rendered flow {flow_dir.name} in {where}",
                                   hint="pass --out DIR (the render's output root) or --ref REF"))
    return files
