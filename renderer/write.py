"""Write: put rendered flows on disk atomically.

Each flow directory is staged next to its final place and swapped in by rename, so a failed
render leaves the previous output untouched. devlane writes nothing outside `flows/<id>/`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .emit import RenderedFlow
from .errors import fail


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
