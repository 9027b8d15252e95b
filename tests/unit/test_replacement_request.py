"""The pure rule of a replacement's request (domain/collapse.replacement_request)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.collapse import replacement_request
from pushcore.domain.errors import ValidationError
from pushcore.domain.revisions import TIMING_FIELDS

ORIGINAL = {"title": "Build 7", "body": "running", "metadata": {"a": "1"}, "collapseKey": "k"}
NOW = "2026-11-27T00:00:00.000Z"
fields = st.dictionaries(
    st.sampled_from(["title", "body", "sound", "priority", "metadata", "renotify"]),
    st.one_of(st.none(), st.text(max_size=5), st.booleans()),
    max_size=4,
)
timings = st.sampled_from([{}, {"delay": "1h"}, {"scheduledAt": "2030-01-01T00:00:00Z"}])


@given(fields, timings)
def test_given_fields_win_the_rest_is_the_original_and_the_key_stays(
    given_fields: dict[str, Any], timing: dict[str, str]
) -> None:
    merged = replacement_request(ORIGINAL, given_fields | timing, "k", NOW)
    assert merged["collapseKey"] == "k"
    for name, value in given_fields.items():
        assert merged.get(name) == value if value is not None else name not in merged
    for name in ORIGINAL.keys() - given_fields.keys():
        assert merged[name] == ORIGINAL[name]
    # One timing: the one given, or now.
    assert {n for n in TIMING_FIELDS if n in merged} == set(timing or {"scheduledAt": NOW})
    if not timing:
        assert merged["scheduledAt"] == NOW


@pytest.mark.parametrize(
    "body",
    [[1], "x", {"collapseKey": "other"}, {"delay": "1h", "scheduledAt": NOW}, {"status": "X"}],
)
def test_refusals(body: Any) -> None:
    with pytest.raises(ValidationError):
        replacement_request(ORIGINAL, body, "k", NOW)


def test_no_body_is_the_original_now_and_the_same_key_is_accepted() -> None:
    expected = ORIGINAL | {"scheduledAt": NOW}
    assert replacement_request(ORIGINAL, None, "k", NOW) == expected
    assert replacement_request(ORIGINAL, {"collapseKey": "k"}, "k", NOW) == expected
