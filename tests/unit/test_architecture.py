"""The layers are checked, not just drawn: the import-linter contracts in pyproject.toml hold, and no
module reaches into another module's private (`_name`) definitions."""

from __future__ import annotations

import ast
import contextlib
import io

import pytest
from support import ROOT

RENDERER = ROOT / "renderer"


def _lint_imports() -> tuple[bool, str]:
    pytest.importorskip("importlinter", reason="import-linter is a test tool of the main venv (.ci/lowest.py)")
    from importlinter import configuration
    from importlinter.application.use_cases import lint_imports

    configuration.configure()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ok = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_logo=True, cache_dir=None)
    return ok, out.getvalue()


@pytest.mark.e2e  # the whole import graph (.ci/run also runs lint-imports before the tests)
def test_the_import_contracts_hold():
    ok, report = _lint_imports()
    assert ok, report
    assert report.count("KEPT") == 4 and "BROKEN" not in report


def _module_name(path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(importer: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_uses(path, importer: str | None = None) -> list[str]:
    """`from X import _name`, and `X._name` where X is a devlane module this file imported."""
    importer = importer or _module_name(path)
    tree = ast.parse(path.read_text(), filename=str(path))
    found, aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(importer, node, path.name == "__init__.py")
            if not source.startswith("renderer"):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.name}:{node.lineno}: from {source} import {alias.name}")
                aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            aliases |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("renderer")}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and node.attr.startswith("_") and not node.attr.startswith("__"):
            found.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


@pytest.mark.e2e  # every module's syntax tree: the whole suite's tier, as the import graph above
def test_no_module_uses_another_modules_private_names():
    offenders = [use for path in sorted(RENDERER.rglob("*.py")) if "_pb2" not in path.name
                 for use in _private_uses(path)]  # fmt: skip
    assert offenders == []


def test_the_private_name_check_finds_what_it_looks_for(tmp_path):
    """The check above would catch both forms (a check that cannot fail proves nothing)."""
    probe = tmp_path / "probe.py"
    probe.write_text("from ..host import process\nfrom ..host.process import _result_lines\nprocess._private\n")
    assert _private_uses(probe, "renderer.views.probe") == [
        "probe.py:2: from renderer.host.process import _result_lines", "probe.py:3: process._private"]


STORED = "renderer.render.stored"
SEAM = {f"{STORED}.memo", f"{STORED}.lint_entry"}  # `ModelMemo` and `model_for`: what the session opens and the
# pipeline asks; `lint_entry`: lint's stored findings, which lint reads and writes and its checks return


def _stored_imports(path, importer: str | None = None) -> list[tuple[int, str]]:
    """(line, module) of each stored-model module a module outside `render.stored` imports."""
    importer = importer or _module_name(path)
    text = path.read_text()
    if importer == STORED or importer.startswith(f"{STORED}.") or "stored" not in text:
        return []
    found = []
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(importer, node, path.name == "__init__.py")
            names = [source] if source != STORED else [f"{STORED}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names if n == STORED or n.startswith(f"{STORED}.")]
    return found


def test_the_stored_model_has_one_seam():
    """No stage decodes stored tables: outside `render.stored`, only its `memo` is imported (by the session and the
    API) and lint's entry (by lint and its checks), and no module but the stored package's own reads a stored
    entry."""
    imports = {_module_name(p): (p.name, _stored_imports(p)) for p in sorted(RENDERER.rglob("*.py"))}
    offenders = [f"{name}:{line}: {m}" for name, found in imports.values() for line, m in found if m not in SEAM]
    assert offenders == []
    assert sorted(module for module, (_, found) in imports.items() if found) == [
        "renderer.api", "renderer.linting", "renderer.render.checks.repository", "renderer.session"]


def test_the_seam_check_finds_what_it_looks_for(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from ..stored import model_codec\nfrom ..stored.memo import ModelMemo\n"
                     "import renderer.render.stored.lean_documents\n")
    found = _stored_imports(probe, "renderer.render.copies.probe")
    assert [(line, m) for line, m in found if m not in SEAM] == [
        (1, "renderer.render.stored.model_codec"), (3, "renderer.render.stored.lean_documents")]
