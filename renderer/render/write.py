"""Write: put rendered flows on disk atomically, and take them away (`delete`) the same way.

Each flow directory is staged next to its final place and swapped in by rename, so a failed
render leaves the previous output untouched. devlane writes nothing outside `flows/<id>/`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..core.source import Source
from ..errors import DevlaneError, Problem, UsageError, fail
from .emit import RenderedFlow


def _stage(flow: RenderedFlow, parent: Path) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix=f".devlane-tmp-{flow.flow_id}-", dir=parent))
    try:
        for name, text in flow.files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        (tmp / "kustomization.yaml").write_text(flow.kustomization(), encoding="utf-8")
        (tmp / "flow.metadata").write_text(flow.metadata_text(), encoding="utf-8")
        (tmp / "README.md").write_text(flow.readme, encoding="utf-8")
        os.chmod(tmp, 0o755)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def write_flows(flows: list[RenderedFlow], out_dir: Path) -> list[Path]:
    """Write every flow directory under `out_dir/flows/`; returns their paths."""
    parent = out_dir / "flows"
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise fail(f"cannot create output directory {parent}: {exc.strerror}") from None
    staged: list[tuple[Path, Path]] = []
    try:
        for flow in flows:
            staged.append((_stage(flow, parent), parent / flow.flow_id))
    except BaseException:
        for tmp, _ in staged:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    for tmp, final in staged:
        old = None
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=f".devlane-old-{final.name}-", dir=parent))
            os.rename(final, old / final.name)
        os.rename(tmp, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return [final for _, final in staged]


def remove_dirs(paths: list[Path]) -> list[Path]:
    """Remove each directory that exists: renamed aside first, so a killed delete leaves no half directory."""
    removed = []
    for path in paths:
        if path.is_dir():
            doomed = path.with_name(f".devlane-delete-{path.name}")
            os.rename(path, doomed)
            shutil.rmtree(doomed)
            removed.append(path)
    return removed


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
