"""A re-render of a git checkout reads only the files git's index does not vouch for (`core.gitindex`), and writes
what a `--no-cache` render of the same files writes: after a one-file change it reads that file; an edit that keeps
the size and puts the mtime back is still seen (the ctime moved); with `.gitattributes`, or a checkout whose line
endings git converts, the files are read; the skipped files count in the read budget."""

from __future__ import annotations

import os
import time

import pytest
from support import app_yaml
from support.caches import own_cache

from renderer.core import files, source
from renderer.core.cache import blob_id

pytestmark = pytest.mark.e2e  # real git repositories and commits

RENDER = ["render", "--flow", "pr-1", "--service", "api=api:2", "--stdout"]
PAST = time.time() - 3600


@pytest.fixture
def repo(harness, monkeypatch):
    """A committed repository (each file an hour old, so git's index vouches for all of them) with its own cache."""
    api = app_yaml("api", containers=[{"name": "main", "image": "api:1",
                                       "env": [{"name": "LOG_LEVEL", "value": "info"}]}])
    harness.write("api.yaml", api.replace("annotations: {}",
                                          "annotations: {kardinal.dev.service/dependencies: 'db:http'}"))
    harness.write("db.yaml", app_yaml("db"))
    for i in range(5):
        harness.write(f"more/config-{i}.yaml", f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n"
                                               f"data: {{a: b}}\n")
    age(harness)
    harness.commit("files")
    own_cache(monkeypatch, harness.tmp / "cache")
    return harness


def age(harness) -> None:
    for path in harness.root.rglob("*"):
        if ".git" not in path.parts and path.is_file():
            os.utime(path, (PAST, PAST))


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The repository files each `read_regular` of the work tree source read, by name."""
    seen: list[str] = []
    real = source.read_regular

    def spy(path, shown=None, limit=None):
        seen.append(shown or str(path))
        return real(path, shown, limit)

    monkeypatch.setattr(source, "read_regular", spy)
    return seen


def manifests(seen: list[str]) -> set[str]:
    return {p for p in seen if p.endswith(".yaml")}


def render(harness, reads: list[str]) -> tuple[str, set[str]]:
    """A render with the cache, the manifests it read, and a check that `--no-cache` writes the same."""
    reads.clear()
    cached = harness.cli(*RENDER)
    read = manifests(reads)
    fresh = harness.cli(*RENDER, "--no-cache")
    assert cached.returncode == 0 and fresh.returncode == 0, cached.stderr + fresh.stderr
    assert cached.stdout == fresh.stdout
    return cached.stdout, read


ALL = {"api.yaml", "db.yaml", *(f"more/config-{i}.yaml" for i in range(5))}


def test_a_re_render_after_a_one_file_change_reads_only_that_file(repo, reads):
    _, first = render(repo, reads)
    assert first == ALL
    _, again = render(repo, reads)
    assert again == set()  # nothing moved: git's index vouches for every file
    path = repo.root / "api.yaml"
    path.write_text(path.read_text().replace('"value": "info"', '"value": "debug"'))
    out, changed = render(repo, reads)
    assert changed == {"api.yaml"} and "value: debug" in out


def test_an_edit_that_keeps_the_size_and_the_mtime_is_seen(repo, reads):
    render(repo, reads)
    path = repo.root / "api.yaml"
    text = path.read_text()
    assert '"value": "info"' in text
    path.write_text(text.replace('"value": "info"', '"value": "warn"'))  # the same size
    os.utime(path, (PAST, PAST))  # and the mtime git recorded: only the ctime says it moved
    out, read = render(repo, reads)
    assert read == {"api.yaml"} and "value: warn" in out and "value: info" not in out


def test_a_file_changed_since_the_stored_model_is_read_each_time_and_only_it(repo, reads):
    """git's new record vouches for the new bytes, whose blob is not the one the stored model was made of."""
    render(repo, reads)
    path = repo.root / "api.yaml"
    path.write_text(path.read_text().replace('"value": "info"', '"value": "warn"'))
    os.utime(path, (PAST, PAST))
    repo.git("add", "api.yaml")  # git hashes it anew and records its stat data
    out, read = render(repo, reads)
    assert read == {"api.yaml"} and "value: warn" in out  # not stored yet: read once
    _, again = render(repo, reads)
    assert again == {"api.yaml"}


def test_with_gitattributes_every_file_is_read(repo, reads):
    repo.write(".gitattributes", "*.yaml text\n")
    render(repo, reads)
    _, again = render(repo, reads)
    assert again == ALL


def test_a_checkout_whose_line_endings_git_converts_is_read(repo, reads):
    """git's blob is the committed LF text; the file on disk is CRLF: another size, so the file is read."""
    render(repo, reads)
    repo.git("config", "core.autocrlf", "true")
    (repo.root / "db.yaml").unlink()
    repo.git("checkout", "--", "db.yaml")
    assert b"\r\n" in (repo.root / "db.yaml").read_bytes()
    os.utime(repo.root / "db.yaml", (PAST, PAST))
    repo.git("update-index", "--refresh")
    index_blob = repo.git("ls-files", "-s", "db.yaml").split()[1]
    assert index_blob != blob_id((repo.root / "db.yaml").read_bytes())
    _, read = render(repo, reads)
    assert read == {"db.yaml"}


def test_the_files_not_read_count_in_the_read_budget(repo, reads, monkeypatch):
    render(repo, reads)
    total = sum((repo.root / p).stat().st_size for p in ALL)
    monkeypatch.setattr(source, "MAX_TOTAL_BYTES", total - 1)
    reads.clear()
    cached = repo.cli(*RENDER)
    assert cached.returncode == 1 and "files read are" in cached.stderr, cached.stderr
    assert manifests(reads) == set()  # refused on the sizes git vouched for, as reading them would have been


def test_only_files_listed_through_real_directories_under_the_limits_are_vouched_for(repo, monkeypatch):
    src = source.WorktreeSource(repo.root)
    listed = src.list_files(["**/*.yaml"], [])
    known = {p: (blob_id((repo.root / p).read_bytes()), (repo.root / p).stat().st_size) for p in listed}
    assert src.unchanged(known) == set(listed)
    assert src._budget.total == sum(size for _, size in known.values())
    other = dict(known)
    other["api.yaml"] = ("0" * 40, known["api.yaml"][1])  # another blob
    other["db.yaml"] = (known["db.yaml"][0], known["db.yaml"][1] + 1)  # another size
    other["unlisted.yaml"] = known["api.yaml"]
    assert source.WorktreeSource(repo.root).unchanged(other) == set()  # nothing listed yet
    fresh = source.WorktreeSource(repo.root)
    fresh.list_files(["**/*.yaml"], [])
    assert fresh.unchanged(other) == set(listed) - {"api.yaml", "db.yaml"}
    monkeypatch.setattr(files, "MAX_FILE_BYTES", known["db.yaml"][1] - 1)
    fresh = source.WorktreeSource(repo.root)
    fresh.list_files(["**/*.yaml"], [])
    big = {p for p, (_, size) in known.items() if size > files.MAX_FILE_BYTES}
    assert "db.yaml" in big and fresh.unchanged(known) == set(listed) - big
