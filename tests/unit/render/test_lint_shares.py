"""lint checks the reach of every service in two shares, the second in a forked child (`checks.lint_shares`): the
findings, and their order, are those of one pass, whether the child sends them, fails, or sends garbage."""

from __future__ import annotations

import json

import pytest

from renderer.core import parallel
from renderer.render.checks import lint_shares, reach

SERVICES = 6  # every one reads a store outside the repository: findings in both shares, and order to keep


def _container(i: int) -> list[dict]:
    return [{"name": "main", "image": f"api-{i}:1",
             "env": [{"name": "DB_URL", "value": f"postgres://db-{i}.example.com:5432/x"}]}]  # fmt: skip


def _lint(harness) -> list[tuple[str, str]]:
    out = harness.cli("lint", "-o", "json", "--no-cache")
    return [(p["code"], p["message"]) for p in json.loads(out.stdout)["problems"]]


@pytest.fixture
def repo(harness):
    for i in range(SERVICES):
        harness.app(f"api-{i}", containers=_container(i), file=f"api-{i}.yaml")
    return harness


@pytest.fixture
def serial(repo, monkeypatch) -> list[tuple[str, str]]:
    """What one pass finds (no spare core)."""
    with monkeypatch.context() as m:
        m.setattr(parallel, "available_cpus", lambda: 1)
        found = _lint(repo)
    assert [c for c, _ in found] == ["undeclared-outside-store"] * SERVICES
    return found


def _beside(monkeypatch, sent) -> list[int]:
    """Split from any size, a spare core, no other thread; the child's share done by `sent(work, item)`."""
    forks: list[int] = []

    def fork_map(items, share_of, work, local):
        forks.append(len(items))
        local(share_of[0])
        return [None, *(sent(work, items[i]) for share in share_of[1:] for i in share)]

    monkeypatch.setattr(lint_shares, "BESIDE_UNITS", 1)
    monkeypatch.setattr(lint_shares.parallel, "available_cpus", lambda: 2)
    monkeypatch.setattr(lint_shares.threading, "active_count", lambda: 1)
    monkeypatch.setattr(lint_shares.parallel, "fork_map", fork_map)
    return forks


@pytest.mark.parametrize("sent", [
    pytest.param(lambda work, item: work(item), id="the child's rows"),
    pytest.param(lambda work, item: None, id="a child that failed"),
    pytest.param(lambda work, item: b"[[1, 2]]", id="rows that are no problems"),
    pytest.param(lambda work, item: b"{not json", id="garbage"),
])  # fmt: skip
def test_the_shares_find_what_one_pass_finds(repo, serial, monkeypatch, sent) -> None:
    forks = _beside(monkeypatch, sent)
    assert _lint(repo) == serial
    assert forks == [2]


@pytest.mark.parametrize(("cpus", "threads", "units"), [(1, 1, 1), (2, 2, 1), (2, 1, SERVICES + 1)])
def test_no_fork_without_a_spare_core_with_another_thread_or_for_a_small_repository(repo, serial, monkeypatch, cpus,
                                                                                    threads, units) -> None:
    forks = _beside(monkeypatch, lambda work, item: work(item))
    monkeypatch.setattr(lint_shares.parallel, "available_cpus", lambda: cpus)
    monkeypatch.setattr(lint_shares.threading, "active_count", lambda: threads)
    monkeypatch.setattr(lint_shares, "BESIDE_UNITS", units)
    assert _lint(repo) == serial
    assert forks == []


def test_the_child_checks_the_last_five_eighths_and_sends_their_rows(repo, monkeypatch) -> None:
    """What the child sends: the problems of its share, the last 5/8 of the units (this process runs the other
    checks beside its own share), as rows (messages naming its services only)."""
    rows: list[bytes] = []
    _beside(monkeypatch, lambda work, item: rows.append(work(item)) or rows[-1])
    _lint(repo)
    [sent] = rows
    messages = [row[0] for row in json.loads(sent)]
    assert len(messages) == 4  # round(6 * 5 / 8): units api-2 to api-5
    assert all(f"db-{i}.example.com" in m for i, m in zip(range(2, SERVICES), messages, strict=True))


def test_units_are_each_workload_once_in_key_order(harness) -> None:
    """Two Services selecting one Deployment are one unit: its reach is checked (and said) once."""
    from renderer import api

    harness.app("api", containers=_container(0))
    harness.write("extra.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: api-alias\nspec:\n  selector:\n"
                  "    app: api\n  ports:\n    - port: 80\n")
    model = api.read(api.Options(repo=harness.root)).model
    assert len(reach.lint_units(model)) == 1 < len([k for k, n in model.services.items() if n.workload is not None])
    assert len(reach.undeclared(model)) == 1


@pytest.mark.e2e  # forks this process
def test_a_real_child_sends_the_second_half(repo, monkeypatch) -> None:
    from renderer import api

    model = api.read(api.Options(repo=repo.root)).model
    one_pass = reach.undeclared(model)
    monkeypatch.setattr(lint_shares, "BESIDE_UNITS", 1)
    monkeypatch.setattr(lint_shares.parallel, "available_cpus", lambda: 2)
    monkeypatch.setattr(lint_shares.threading, "active_count", lambda: 1)
    sent: list[bytes | None] = []
    fork_map = parallel.fork_map
    monkeypatch.setattr(lint_shares.parallel, "fork_map", lambda *a: sent.extend(fork_map(*a)) or sent)
    undeclared, others = lint_shares.undeclared_beside(model, frozenset(), lambda: [])
    assert undeclared == one_pass and others == [] and len(one_pass) == SERVICES
    assert sent[0] is None and sent[1] is not None  # the second half came from the child
