"""`parallel.shares`: contiguous shares of about equal size, the parent's `lead` times a child's (it also decodes
what the children send), and the parse's choice of that lead."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.core import parallel
from renderer.render.inputs import parsing


def _covering(split: list[range], n: int) -> bool:
    return [i for share in split for i in share] == list(range(n)) and all(len(share) for share in split)


@pytest.mark.parametrize("parts", [1, 2, 3, 4])
def test_equal_items_are_shared_equally_without_a_lead(parts):
    split = parallel.shares([1] * 120, parts)
    assert [len(share) for share in split] == [120 // parts] * parts


@pytest.mark.parametrize(("lead", "first"), [(1.0, 50), (0.83, 46), (0.5, 34), (0.25, 20)])
def test_the_first_share_is_lead_times_each_other(lead, first):
    split = parallel.shares([1] * 100, 2, lead=lead)
    assert [len(share) for share in split] == [first, 100 - first]  # lead / (lead + 1) of the whole, rounded up


def test_with_more_children_each_other_share_stays_equal():
    split = parallel.shares([1] * 290, 3, lead=0.9)
    assert [len(share) for share in split] == [90, 100, 100]


def test_the_shares_follow_the_sizes():
    split = parallel.shares([10] * 10 + [1] * 100, 2)  # the first ten items weigh as much as the rest
    assert split == [range(0, 10), range(10, 110)]


@given(st.lists(st.integers(0, 1000), max_size=60), st.integers(1, 5), st.sampled_from([0.25, 0.5, 0.83, 1.0]))
def test_shares_cover_every_index_once_in_order(sizes, parts, lead):
    split = parallel.shares(sizes, parts, lead=lead)
    assert _covering(split, len(sizes)) and len(split) <= parts


@pytest.mark.parametrize(("workers", "lead"), [(1, 1.0), (2, 0.83), (3, 0.66), (5, 0.32), (6, 0.25), (16, 0.25)])
def test_the_parse_gives_the_parent_less_the_more_children_it_decodes(workers, lead):
    assert parsing.lead_share(workers) == pytest.approx(lead)


def test_a_parallel_parse_splits_by_its_lead(monkeypatch):
    seen: list[list[int]] = []
    monkeypatch.setattr(parsing, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(parallel, "can_fork", lambda: True)
    monkeypatch.setattr(parallel, "fork_map", lambda todo, split, *_: seen.append([len(s) for s in split]) or
                        [None] * len(todo))
    files = [(f"f{i}.yaml", b"a: 1\n") for i in range(100)]
    parsing.parse_files(files, None, workers=2)
    assert seen == [[46, 54]]
