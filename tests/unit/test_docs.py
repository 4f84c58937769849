"""The docs stay true to the repository (issue 46 point 5): every module of `renderer/` is named in
docs/architecture.md, every relative link of README.md and docs/*.md resolves, the README stays a short
newcomer's page that starts with the two set-up blocks CI runs, and docs/versions.md agrees with the files the
versions come from (pyproject.toml, .ci/constraints.txt, tests/cluster/versions.env, tests/setup_helm.sh,
tests/support/paths.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
FENCE = re.compile(r"^(`{3,}|~{3,})")


def prose(text: str) -> str:
    """The text outside fenced code blocks (links inside code are not links)."""
    out, fence = [], None
    for line in text.splitlines():
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            fence = None
        elif fence is None:
            out.append(line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", prose(page.read_text()), re.M)}


def links(page: Path) -> list[str]:
    text = prose(page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is no link either
    return re.findall(r"\]\(([^)\s]+)\)", text)


# ------------------------------------------------------------------------------------------------
# Every module of renderer/ is named in docs/architecture.md


def _named(text: str) -> set[str]:
    """Module names in code spans, as paths relative to renderer/ (`render/copies/clone.py`), whichever way
    they are written: `renderer/core/fence.py`, `core/fence.py`, `renderer.core.fence`."""
    names = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        span = span.strip()
        if re.fullmatch(r"[\w./]+\.py", span):
            names.add(span.removeprefix("renderer/"))
        elif re.fullmatch(r"renderer(\.\w+)+", span):
            dotted = span.removeprefix("renderer.").replace(".", "/")
            names.update({dotted + ".py", dotted + "/__init__.py"})
    return names


MODULES = sorted(p.relative_to(ROOT / "renderer").as_posix() for p in (ROOT / "renderer").rglob("*.py"))


def test_there_are_modules():
    assert len(MODULES) > 100


@pytest.mark.parametrize("module", MODULES)
def test_every_renderer_module_is_named_in_architecture(module):
    named = _named((DOCS / "architecture.md").read_text())
    assert module in named, f"renderer/{module} is not named in docs/architecture.md (add it with its one job)"


# ------------------------------------------------------------------------------------------------
# Links


def _link_cases():
    for page in PAGES:
        for target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            yield pytest.param(page, target, id=f"{page.relative_to(ROOT)}->{target}")


@pytest.mark.parametrize(("page", "target"), list(_link_cases()))
def test_relative_links_resolve(page, target):
    path, _, anchor = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    assert dest.exists(), f"{page.relative_to(ROOT)} links to {target}, which a clone does not have"
    assert dest.is_relative_to(ROOT), f"{page.relative_to(ROOT)} links outside the repository: {target}"
    if anchor and dest.suffix == ".md":
        assert anchor in anchors(dest), f"{page.relative_to(ROOT)} links to #{anchor}, no heading of {dest.name}"


def test_no_machine_paths_or_shared_links():
    for page in PAGES:
        text = page.read_text()
        # this machine's work tree, a temporary directory, the shared data beside the checkout, an absolute link
        for bad in ("/" + "work/", "/" + "tmp/", "../" + "shared", "](/"):
            assert bad not in text, f"{page.relative_to(ROOT)} holds {bad!r}"


def test_docs_pages_exist():
    for name in ("commands", "annotations", "configuration", "plugins", "flows", "init", "security", "limits",
                 "troubleshooting", "development", "architecture", "from-kardinal", "compared", "versions"):
        assert (DOCS / f"{name}.md").is_file(), name


# ------------------------------------------------------------------------------------------------
# The README


def test_readme_is_short():
    assert len(README.read_text().splitlines()) < 350


def test_readme_starts_with_the_two_setup_blocks():
    """CI reads the first two fenced `sh` blocks: the install-and-render command, then the test command."""
    text = README.read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
    assert len(blocks) >= 2
    first, second = blocks[0].strip(), blocks[1].strip()
    assert first.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e . && devlane render ")
    assert "pip install -e '.[test]'" in second and "python -m pytest" in second
    # nothing but the title and two one-line introductions before them
    before = text[: text.index("```sh")]
    assert [ln for ln in before.splitlines() if ln.startswith("#")] == ["# devlane"]
    assert text.index(blocks[1]) < text.index("devlane is an **offline GitOps renderer")


def test_readme_links_every_docs_page():
    text = README.read_text()
    for page in sorted(DOCS.glob("*.md")):
        assert f"(docs/{page.name}" in text, f"README.md does not link docs/{page.name}"


# ------------------------------------------------------------------------------------------------
# The supported-versions table agrees with the files the versions come from


def _versions_rows() -> dict[str, list[str]]:
    rows = {}
    for line in (DOCS / "versions.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 3:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def _lower_bounds() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"]) + list(project["optional-dependencies"]["validate"])
    bounds = {}
    for spec in specs:
        m = re.match(r"^([A-Za-z0-9_.\-]+)\s*>=\s*([^;,\s]+)", spec)
        if m:
            bounds[m.group(1)] = m.group(2)
    return bounds


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / ".ci" / "constraints.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line)
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def _env(path: Path) -> dict[str, str]:
    return dict(re.findall(r"^([A-Z_][A-Z0-9_]*)=(\S+)", path.read_text(), re.M))


def test_versions_table_lists_every_dependency_with_its_lowest_and_known_good_versions():
    rows, pins = _versions_rows(), _constraints()
    bounds = _lower_bounds()
    assert bounds, "no lower bounds read from pyproject.toml"
    for name, lowest in bounds.items():
        assert name in rows, f"docs/versions.md has no row for {name}"
        assert rows[name][0] == lowest, f"{name}: docs say lowest {rows[name][0]}, pyproject.toml says {lowest}"
        known = pins.get(name.lower().replace("_", "-"))
        assert known, f"{name} is not pinned in .ci/constraints.txt"
        assert rows[name][1] == known, f"{name}: docs say known good {rows[name][1]}, constraints say {known}"


def test_versions_python():
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    lowest = requires.removeprefix(">=")
    assert f"| {lowest} or newer |" in (DOCS / "versions.md").read_text(), requires


def test_versions_kubernetes_helm():
    text = (DOCS / "versions.md").read_text()
    env = _env(ROOT / "tests" / "cluster" / "versions.env")
    for key in ("KUBERNETES_VERSION", "ETCD_VERSION", "KWOK_VERSION"):
        assert re.search(rf"\| {re.escape(env[key])} \| `{key}` in `tests/cluster/versions.env` \|", text), key
    kube = re.search(r'^KUBE_VERSION = "([^"]+)"', (ROOT / "tests" / "support" / "paths.py").read_text(), re.M)
    assert kube and re.search(rf"\| {re.escape(kube.group(1))} \| `KUBE_VERSION` in `tests/support/paths.py` \|",
                              text)
    helm = _env(ROOT / "tests" / "setup_helm.sh")["HELM_VERSION"]
    assert re.search(rf"^\| Helm \| {re.escape(helm)} \|", text, re.M), helm
