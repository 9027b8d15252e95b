"""ULID ids: format and ordering (pushcore.runtime.system)."""

from __future__ import annotations

import itertools
import os
import re
import threading
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from pushcore.events import new_event_id
from pushcore.runtime.system import SecretsRandom, SystemClock, UlidGenerator, encode_ulid

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_RE = re.compile(r"^ntf_[0-9A-HJKMNP-TV-Z]{26}$")
START = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)


class FrozenClock(SystemClock):
    """A clock that stays where it is put, so every id falls in the same millisecond."""

    def __init__(self, now: datetime = START) -> None:
        self.instant = now

    def now(self) -> datetime:
        return self.instant


def decode(text: str) -> int:
    number = 0
    for char in text:
        number = number * 32 + CROCKFORD.index(char)
    return number


def test_ids_have_the_prefix_and_26_crockford_characters() -> None:
    generator = UlidGenerator()
    for prefix in ("ntf", "key", "str", "dev", "sub"):
        new = generator.new_id(prefix)
        assert re.fullmatch(prefix + r"_[0-9A-HJKMNP-TV-Z]{26}", new), new


def test_the_timestamp_is_the_first_48_bits() -> None:
    generator = UlidGenerator(FrozenClock())
    value = decode(generator.new_id("ntf")[4:])
    assert value >> 80 == int(START.timestamp() * 1000)
    assert value < 2**128


def test_10000_ids_in_one_millisecond_are_strictly_increasing() -> None:
    generator = UlidGenerator(FrozenClock())
    ids = [generator.new_id("ntf") for _ in range(10_000)]
    assert all(ID_RE.match(i) for i in ids)
    assert all(a < b for a, b in itertools.pairwise(ids))
    values = [decode(i[4:]) for i in ids]
    assert all(a < b for a, b in itertools.pairwise(values))
    # The random part absorbs the collisions: the time part still says this millisecond.
    assert {value >> 80 for value in values} == {int(START.timestamp() * 1000)}


def test_10000_ids_from_the_real_clock_in_a_tight_loop_are_strictly_increasing() -> None:
    generator = UlidGenerator()
    ids = [generator.new_id("ntf") for _ in range(10_000)]
    assert all(ID_RE.match(i) for i in ids)
    assert all(a < b for a, b in itertools.pairwise(ids))


def test_ids_keep_increasing_when_the_clock_goes_back() -> None:
    clock = FrozenClock()
    generator = UlidGenerator(clock)
    first = generator.new_id("ntf")
    clock.instant = START - timedelta(seconds=5)
    second = generator.new_id("ntf")
    clock.instant = START + timedelta(milliseconds=1)
    third = generator.new_id("ntf")
    assert first < second < third
    assert decode(third[4:]) >> 80 == int(START.timestamp() * 1000) + 1


def test_ids_made_by_many_threads_are_unique() -> None:
    generator = UlidGenerator(FrozenClock())
    results: list[list[str]] = [[] for _ in range(8)]

    def work(out: list[str]) -> None:
        out.extend(generator.new_id("dev") for _ in range(1_000))

    threads = [threading.Thread(target=work, args=(out,)) for out in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for out in results for i in out]
    assert len(set(every)) == 8_000
    for out in results:  # each thread sees its own ids in order
        assert out == sorted(out)


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_encode_ulid_round_trips(value: int) -> None:
    text = encode_ulid(value)
    assert len(text) == 26
    assert set(text) <= set(CROCKFORD)
    assert decode(text) == value


@given(
    st.integers(min_value=0, max_value=2**128 - 1), st.integers(min_value=0, max_value=2**128 - 1)
)
def test_encode_ulid_preserves_order(first: int, second: int) -> None:
    assert (encode_ulid(first) < encode_ulid(second)) == (first < second)


def test_encode_ulid_extremes() -> None:
    assert encode_ulid(0) == "0" * 26
    assert encode_ulid(2**128 - 1) == "7" + "Z" * 25


def test_system_clock_and_randomness() -> None:
    now = SystemClock().now()
    assert now.tzinfo is UTC
    assert all(0 <= SecretsRandom().randbelow(7) < 7 for _ in range(100))


def test_a_forked_child_makes_other_ids_than_its_parent() -> None:
    # Random bits are drawn for many ids at once: a child must not reuse the parent's.
    # And at one millisecond a draw below the last id becomes "the last id plus one",
    # which parent and child would both make (a 1 in 4 chance a round): 20 rounds.
    generator = UlidGenerator(FrozenClock())
    for _ in range(20):
        generator.new_id("ntf")
        reading, writing = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            os.write(writing, generator.new_id("ntf").encode())
            os._exit(0)
        os.close(writing)
        os.waitpid(child, 0)
        in_child = os.read(reading, 64).decode()
        os.close(reading)
        assert ID_RE.match(in_child)
        assert in_child != generator.new_id("ntf")


def test_a_forked_child_makes_other_event_ids_than_its_parent() -> None:
    # Event ids follow the same rule as other ids: at one millisecond a forked child
    # (serve --workers) must not make its parent's "last id plus one".
    at = FrozenClock().now()
    for _ in range(20):
        new_event_id(at)
        reading, writing = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            os.write(writing, new_event_id(at).encode())
            os._exit(0)
        os.close(writing)
        os.waitpid(child, 0)
        in_child = os.read(reading, 64).decode()
        os.close(reading)
        assert in_child.startswith("evt_")
        assert in_child != new_event_id(at)


def test_ids_drawn_in_bulk_are_in_order_with_those_drawn_one_by_one() -> None:
    generator = UlidGenerator(FrozenClock())
    ids = [generator.new_id("ntf"), *generator.new_ids("ntf", 500), generator.new_id("ntf")]
    ids += generator.new_ids("ntf", 1)
    assert len(ids) == 503
    assert all(ID_RE.match(i) for i in ids)
    assert all(a < b for a, b in itertools.pairwise(ids))
    assert {decode(i[4:]) >> 80 for i in ids} == {int(START.timestamp() * 1000)}
    assert generator.new_ids("ntf", 0) == []
