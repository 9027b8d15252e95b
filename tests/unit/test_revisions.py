"""Edits, collapse keys and expiry: the pure rules of API.md's "After sending"."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.collapse import is_collapse_key, web_push_topic
from pushcore.domain.errors import ValidationError
from pushcore.domain.expiry import expires_at_of, expiry_errors, seconds_left
from pushcore.domain.revisions import (
    EDITABLE,
    EXPIRY_FIELDS,
    FIXED,
    TIMING_FIELDS,
    TIMINGS,
    if_match_revision,
    merge_patch,
)

PLAIN = sorted(EDITABLE - TIMING_FIELDS - EXPIRY_FIELDS)
values = (
    st.none()
    | st.text(max_size=5)
    | st.integers()
    | st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2)
)
originals = st.dictionaries(st.sampled_from(sorted(EDITABLE)), st.text(max_size=5), max_size=6)
plain_patches = st.dictionaries(st.sampled_from(PLAIN), values, min_size=1, max_size=6)


@given(originals, plain_patches)
def test_a_patch_sets_what_it_gives_and_clears_what_it_nulls(
    original: dict[str, Any], patch: dict[str, Any]
) -> None:
    merged = merge_patch(original, patch)
    for name, value in patch.items():
        if value is None:
            assert name not in merged
        else:
            assert merged[name] == value
    for name in original.keys() - patch.keys():
        assert merged[name] == original[name]  # what it does not name stays
    assert merge_patch(merged, patch) == merged  # applying it again changes nothing


@given(originals, st.sampled_from(TIMINGS))
def test_a_new_timing_replaces_the_old_one_whole(
    original: dict[str, Any], group: frozenset[str]
) -> None:
    name = sorted(group)[0]
    merged = merge_patch(
        original | {"scheduledAt": "x", "delay": "5m", "customDelay": 9}, {name: "now"}
    )
    assert merged[name] == "now"
    assert not (TIMING_FIELDS - {name}) & merged.keys()


@given(originals, st.sampled_from(sorted(EXPIRY_FIELDS)), st.integers(1, 99) | st.none())
def test_one_expiry_replaces_the_other(original: dict[str, Any], name: str, value: Any) -> None:
    merged = merge_patch(original | {"ttl": 60, "expiresAt": "x"}, {name: value})
    assert merged.get(name) == value
    assert not (EXPIRY_FIELDS - {name}) & merged.keys()


@pytest.mark.parametrize(
    ("patch", "fields"),
    [
        ({}, ["body"]),
        ({"collapseKey": "k"}, ["collapseKey"]),
        ({"stream": None, "title": "t"}, ["stream"]),
        ({"revision": 3}, ["revision"]),
        ({"status": "CANCELLED", "collapseKey": "x"}, ["collapseKey", "status"]),
        ({"scheduledAt": "2036-01-01T00:00:00Z", "delay": "5m"}, ["body"]),
        ({"deliverAt": {}, "customDelay": 5}, ["body"]),
    ],
)
def test_what_a_patch_may_not_carry_is_a_400_naming_each_field(
    patch: dict[str, Any], fields: list[str]
) -> None:
    with pytest.raises(ValidationError) as raised:
        merge_patch({"title": "t"}, patch)
    assert sorted(d.field for d in raised.value.details) == fields


def test_a_patch_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ValidationError):
        merge_patch({}, ["title"])
    assert FIXED.isdisjoint(EDITABLE)


@pytest.mark.parametrize(
    ("header", "revision"),
    [(None, None), ("*", None), ("3", 3), ('"3"', 3), ('W/"12"', 12), (" 7 ", 7)],
)
def test_if_match_takes_a_bare_or_quoted_revision(header: str | None, revision: int | None) -> None:
    assert if_match_revision(header) == revision


@pytest.mark.parametrize("header", ["", "abc", '"3', '3"', "3, 4", "-1", '"', "W/3x"])
def test_if_match_refuses_anything_else(header: str) -> None:
    with pytest.raises(ValidationError) as raised:
        if_match_revision(header)
    assert raised.value.details[0].field == "If-Match"


@given(st.text(alphabet="ABCxyz019._~-", min_size=1, max_size=64))
def test_collapse_keys_of_the_alphabet_are_accepted(key: str) -> None:
    assert is_collapse_key(key)


@pytest.mark.parametrize("key", ["", "a" * 65, "with space", "slash/", "é", "a\n"])
def test_other_collapse_keys_are_refused(key: str) -> None:
    assert not is_collapse_key(key)


@given(st.text(alphabet="ABCxyz019._~-", min_size=1, max_size=64))
def test_a_web_push_topic_is_the_key_or_its_hash_and_always_valid(key: str) -> None:
    topic = web_push_topic(key)
    assert 1 <= len(topic) <= 32
    assert set(topic) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    if len(key) <= 32 and not set(key) & set(".~"):
        assert topic == key
    else:
        digest = base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()).decode()
        assert topic == digest[:32]


DUE = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


@given(st.integers(1, 2_419_200), st.floats(-10, 3_000_000))
def test_what_is_left_of_an_expiry_counts_down_to_zero(ttl: int, elapsed: float) -> None:
    expires = expires_at_of(DUE, ttl, None)
    assert expires == DUE + timedelta(seconds=ttl)
    left = seconds_left(expires, DUE + timedelta(seconds=elapsed))
    assert left is not None
    if elapsed >= ttl:
        assert left == 0
    else:
        assert 1 <= left <= ttl + 10
        # Never less than what is really left (to the microsecond a timedelta keeps).
        assert left >= ttl - elapsed - 1e-6


def test_without_an_expiry_nothing_is_left_to_count() -> None:
    assert expires_at_of(DUE, None, None) is None
    assert seconds_left(None, DUE) is None
    assert expires_at_of(DUE, None, DUE + timedelta(hours=1)) == DUE + timedelta(hours=1)


instants = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)


@given(instants, st.integers(1, 2_419_200) | st.none(), instants | st.none())
def test_an_expiry_is_ttl_or_a_time_after_the_due_time_never_both(
    due: datetime, ttl: int | None, expires_at: datetime | None
) -> None:
    errors = expiry_errors(due, ttl, expires_at)
    if ttl is not None and expires_at is not None:
        assert [e.field for e in errors] == ["expiresAt"]
    elif expires_at is not None and expires_at <= due:
        assert [e.message for e in errors] == ["must be after the due time"]
    else:
        assert errors == []
        resolved = expires_at_of(due, ttl, expires_at)
        assert resolved is None or resolved > due
