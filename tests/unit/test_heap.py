"""The server's heap settings: startup objects frozen, collections less frequent."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pushcore.runtime.heap import FIRST_GENERATION_THRESHOLD, settle_heap


@pytest.fixture
def restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


@pytest.mark.usefixtures("restored")
def test_settle_heap_freezes_startup_and_raises_the_first_threshold() -> None:
    startup = [object() for _ in range(10)], {"app": [1, 2, 3]}
    settle_heap()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == FIRST_GENERATION_THRESHOLD
    # Frozen objects are out of every collection's reach, not freed.
    gc.collect()
    assert gc.get_freeze_count() > 0
    assert startup[1]["app"] == [1, 2, 3]
