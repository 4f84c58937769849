"""lint's findings are stored under the exact bytes they were found in (`render/stored/lint_entry`): an unchanged
repository is not parsed or checked again, and any byte of an input, the config or the options changing is checked
anew. Whether a plugin's sources resolve depends on more than the manifests, and is asked on every run."""

from __future__ import annotations

import json

import pytest
from support.caches import own_cache

from renderer.core import source
from renderer.render.checks import repository
from renderer.render.inputs import load

OUTSIDE = [{"name": "main", "image": "api:1", "env": [{"name": "DB_URL", "value": "postgres://db.example.com:5432/x"}]}]


def _codes(harness, *args: str) -> list[tuple[str, str]]:
    out = harness.cli("lint", "-o", "json", *args)
    return [(p["code"], p["message"]) for p in json.loads(out.stdout)["problems"]]


@pytest.fixture
def modelled(monkeypatch, tmp_path_factory) -> list[int]:
    """How many times lint modelled the repository (counted from here on), with a cache of the test's own: the
    session's cache may already hold findings another test (or an earlier run of this one) stored for the very
    bytes a test changes its repository to."""
    own_cache(monkeypatch, tmp_path_factory.mktemp("cache"))
    calls: list[int] = []
    build = repository.build_model

    def counted(*args, **kwargs):
        calls.append(1)
        return build(*args, **kwargs)

    monkeypatch.setattr(repository, "build_model", counted)
    return calls


def test_an_unchanged_repository_lints_from_its_stored_findings(harness, modelled) -> None:
    harness.app("api", containers=OUTSIDE)
    first = _codes(harness)
    assert [c for c, _ in first] == ["undeclared-outside-store"] and "db.example.com:5432" in first[0][1]
    before = len(modelled)
    assert _codes(harness) == first
    assert len(modelled) == before
    text = harness.cli("lint")
    assert text.returncode == 0 and "0 error(s), 1 warning(s)" in text.stdout


@pytest.mark.parametrize("change", ["file", "new file", "config", "routing"])
def test_any_changed_input_is_checked_anew(harness, modelled, change: str) -> None:
    harness.app("api", containers=OUTSIDE)
    _codes(harness)
    before = len(modelled)
    assert before == 1  # the first lint of these bytes
    args: tuple[str, ...] = ()
    if change == "file":
        path = harness.root / "app.yaml"
        path.write_text(path.read_text().replace("db.example.com", "dc.example.com"))
    elif change == "new file":
        harness.app("web", file="web.yaml")
    elif change == "config":
        harness.config({"sharedStores": ["db.example.com:5432"]})
    else:
        args = ("--routing", "istio")
    harness.cli("lint", *args)
    assert len(modelled) == before + 1


def test_a_changed_file_gives_its_own_findings(harness) -> None:
    harness.app("api", containers=OUTSIDE)
    assert "db.example.com:5432" in _codes(harness)[0][1]
    path = harness.root / "app.yaml"
    path.write_text(path.read_text().replace("db.example.com", "dc.example.com"))
    [(code, message)] = _codes(harness)
    assert code == "undeclared-outside-store" and "dc.example.com:5432" in message and "db.example" not in message


def test_plugin_sources_are_resolved_on_every_run(harness, modelled) -> None:
    """The plugin's directory is no manifest: deleting it changes no key, and lint still names the definition."""
    harness.app("api", plugins="seed")
    harness.plugin_definition({"name": "./plugins/seed", "type": "stateful", "servicename": "seed"})
    harness.plugin("plugins/seed", "def create_flow(service_specs, pod_specs, flow_uuid):\n    return {}\n")
    assert [c for c, _ in _codes(harness)] == []
    before = len(modelled)
    (harness.root / "plugins" / "seed" / "main.py").unlink()
    (harness.root / "plugins" / "seed").rmdir()
    [(code, message)] = _codes(harness)
    assert code == "plugin-source" and "./plugins/seed" in message
    assert len(modelled) == before  # read back: the manifests did not change


@pytest.mark.e2e  # git commits
def test_a_ref_is_keyed_by_its_blob_ids(harness, modelled) -> None:
    """`--ref`: the ref's blob ids name its files (nothing read to find the key); another commit's bytes are
    checked anew, and the work tree's edits do not count."""
    harness.app("api", containers=OUTSIDE)
    harness.commit("one")
    first = _codes(harness, "--ref", "HEAD")
    before = len(modelled)
    path = harness.root / "app.yaml"
    path.write_text(path.read_text().replace("db.example.com", "dc.example.com"))  # the work tree only
    assert _codes(harness, "--ref", "HEAD") == first and len(modelled) == before
    harness.commit("two")
    [(code, message)] = _codes(harness, "--ref", "HEAD")
    assert code == "undeclared-outside-store" and "dc.example.com:5432" in message and len(modelled) == before + 1


def test_a_miss_reads_each_file_once(harness, monkeypatch, tmp_path) -> None:
    """Without stored findings, the key's reads are handed to loading: each manifest is read from disk once."""
    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    harness.app("api", containers=OUTSIDE)
    harness.app("web", file="web.yaml")
    reads: list[str] = []
    real = source.read_regular

    def counted(path, shown, *args, **kwargs):
        reads.append(shown)
        return real(path, shown, *args, **kwargs)

    monkeypatch.setattr(source, "read_regular", counted)
    assert [c for c, _ in _codes(harness)] == ["undeclared-outside-store"]
    assert sorted(r for r in reads if r.endswith(".yaml") and r != ".devlane.yaml") == ["app.yaml", "web.yaml"]


def test_the_findings_stored_are_about_the_bytes_of_their_key(harness, monkeypatch, tmp_path) -> None:
    """A file edited between the key's reads and loading: lint checks the bytes the key was made of, so the findings
    stored under that key are theirs (the next run, on the edited bytes, is a miss and checks those)."""
    monkeypatch.setenv("DEVLANE_CACHE", str(tmp_path / "cache"))
    harness.app("api", containers=OUTSIDE)
    path = harness.root / "app.yaml"
    digests = load.input_digests

    def edited_after(*args, **kwargs):
        found = digests(*args, **kwargs)
        path.write_text(path.read_text().replace("db.example.com", "dc.example.com"))
        return found

    monkeypatch.setattr(load, "input_digests", edited_after)
    [(_, message)] = _codes(harness)
    assert "db.example.com:5432" in message
    monkeypatch.setattr(load, "input_digests", digests)
    [(_, message)] = _codes(harness)
    assert "dc.example.com:5432" in message
