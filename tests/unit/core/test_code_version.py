"""`core.code_version`: a cache kind is named by the source of the code that shapes its entries, found by
following imports, so no module that shapes the stored model can change unseen (a hand-kept list of files
missed two: `config_annotations` and `core/jsonio`)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from support import ROOT

from renderer.core import code_version
from renderer.render.stored import model_entry


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A copy of the package to edit (the digest of a copy is computed as of the installed one)."""
    top = tmp_path_factory.mktemp("home")
    shutil.copytree(ROOT / "renderer", top / "renderer", ignore=shutil.ignore_patterns("__pycache__"))
    return top


def shaping(home: Path) -> list[str]:
    return code_version.closure([m for p in model_entry.SHAPED_BY for m in code_version.package_modules(p, home)],
                                home)


def test_the_models_kind_follows_every_module_that_shapes_the_model(home):
    found = shaping(home)
    # what the stored model holds is shaped by these, among others: each is reached through the imports
    for module in ("renderer.render.inputs.config_annotations", "renderer.core.jsonio", "renderer.core.k8s",
                   "renderer.render.model.topology", "renderer.render.model.repo_index", "renderer.errors",
                   "renderer.render.stored.model_codec", "renderer.render.inputs.parsing"):
        assert module in found, module
    # and not the stages after it, nor the front doors
    assert not [m for m in found if m.startswith(("renderer.render.output", "renderer.render.plugins",
                                                  "renderer.cli", "renderer.views", "renderer.api"))]


def test_changing_any_module_that_shapes_the_model_changes_the_version(home):
    roots = [m for p in model_entry.SHAPED_BY for m in code_version.package_modules(p, home)]
    before = code_version.digest(roots, home)
    assert before == code_version.digest(roots, home)  # deterministic
    files = code_version.modules(home)
    for module in shaping(home):
        path = Path(files[module])
        text = path.read_bytes()
        path.write_bytes(text + b"\n# an edit\n")
        try:
            assert code_version.digest(roots, home) != before, module
        finally:
            path.write_bytes(text)
    assert code_version.digest(roots, home) == before


def test_a_module_added_to_a_shaping_package_counts_unlisted(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(ROOT / "renderer", home / "renderer", ignore=shutil.ignore_patterns("__pycache__"))
    before = code_version.digest(code_version.package_modules("renderer.render.model", home), home)
    code_version.modules.cache_clear()
    try:
        (home / "renderer/render/model/new_pass.py").write_text("X = 1\n")
        assert code_version.digest(code_version.package_modules("renderer.render.model", home), home) != before
    finally:
        code_version.modules.cache_clear()


def test_imports_are_read_wherever_they_stand(tmp_path):
    home = tmp_path / "home"
    (home / "renderer/pkg").mkdir(parents=True)
    for name in ("__init__", "a", "b", "c", "d", "e", "f"):
        (home / f"renderer/pkg/{name}.py").write_text("")
    (home / "renderer/__init__.py").write_text("")
    (home / "renderer/pkg/a.py").write_text(
        "from . import b  # a module by name\n"
        "from .c import (\n    thing,\n    other,\n)\n"
        "def late():\n    from .d import x\n"
        "import renderer.pkg.e\n"
        "text = 'from .f import y'  # not a statement: inside a string on the line\n")
    code_version.modules.cache_clear()
    try:
        assert code_version.closure(["renderer.pkg.a"], home) == [
            "renderer.pkg", "renderer.pkg.a", "renderer.pkg.b", "renderer.pkg.c", "renderer.pkg.d", "renderer.pkg.e"]
    finally:
        code_version.modules.cache_clear()


def test_the_layers_the_model_kind_names_are_those_below_the_plan():
    """`SHAPED_BY` is every stage of render/ up to the stored model, as the pipeline contract orders them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [pipeline] = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "pipeline"]
    layers = pipeline["layers"]
    below = layers[layers.index("stored"):]
    assert sorted(model_entry.SHAPED_BY) == sorted(f"renderer.render.{name}" for name in below)
