"""The order the group writer runs a group's works in (storage/group.py: _gathered).

Works of one kind run at the place of the first of them, in rounds of distinct
keys each prepared once; works of one key, and works of no kind, keep their order.
"""

from __future__ import annotations

import itertools
from concurrent.futures import Future
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pushcore.ports import Together, Transaction
from pushcore.storage.group import MAX_ROUND, _gathered, _Job


def edits(tx: Transaction, keys: Any) -> None:
    """One kind's prepare (never called here)."""


def cancels(tx: Transaction, keys: Any) -> None:
    """Another kind's prepare."""


KINDS = {"e": edits, "c": cancels}

# A work: its kind ("e", "c", or None for an ordinary work) and key.
works = st.lists(
    st.tuples(st.sampled_from(["e", "c", None]), st.integers(0, 24)), min_size=1, max_size=64
)


def jobs_of(spec: list[tuple[str | None, int]]) -> list[_Job]:
    jobs = []
    for kind, key in spec:
        together = None if kind is None else Together(KINDS[kind], key)
        jobs.append(_Job(lambda tx: None, Future(), None, together))
    return jobs


def kind_of(job: _Job) -> Any:
    return None if job.together is None else job.together.prepare


def of_key(jobs: list[_Job], kind: Any, key: int) -> list[_Job]:
    return [j for j in jobs if kind_of(j) is kind and j.together and j.together.key == key]


def units(jobs: list[_Job]) -> list[Any]:
    """Plain works as themselves, each kind once, where it first comes."""
    found: list[Any] = []
    for job in jobs:
        kind = kind_of(job)
        if kind is None:
            found.append(job)
        elif kind not in found:
            found.append(kind)
    return found


@given(works)
def test_a_group_runs_every_work_once_in_an_order_its_callers_may_see(
    spec: list[tuple[str | None, int]],
) -> None:
    jobs = jobs_of(spec)
    ran = _gathered(list(jobs))

    assert sorted(map(id, ran)) == sorted(map(id, jobs))
    # Each kind in one run, where its first work was; the others where they were.
    assert units(ran) == units(jobs)
    for kind in KINDS.values():
        mine = [j for j in ran if kind_of(j) is kind]
        if not mine:
            continue
        first = ran.index(mine[0])
        assert ran[first : first + len(mine)] == mine
        # Works of one key in their order.
        for key in {j.together.key for j in mine if j.together}:
            assert of_key(mine, kind, key) == of_key(jobs, kind, key)
        # Rounds: each starts with a prepare of exactly its works' keys, all distinct.
        assert mine[0].prepare is not None
        starts = [i for i, j in enumerate(mine) if j.prepare is not None] + [len(mine)]
        for begin, end in itertools.pairwise(starts):
            keys = [j.together.key for j in mine[begin:end] if j.together]
            assert mine[begin].prepare == keys
            assert len(keys) <= MAX_ROUND
            assert len(set(keys)) == len(keys)


def test_a_group_of_ordinary_works_is_left_as_it_is() -> None:
    jobs = jobs_of([(None, 0), (None, 1)])
    assert _gathered(jobs) is jobs
