"""Pages and cursors (pushcore.domain.paging, pushcore.converter.paging): every list's
paging reaches each item once, in order, and a cursor reads back only as one of ours."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.converter.deliveries import DELIVERY_CURSOR
from pushcore.converter.notifications import NOTIFICATION_CURSOR
from pushcore.converter.paging import Cursor
from pushcore.converter.schedules import SCHEDULE_CURSOR
from pushcore.domain.errors import ValidationError
from pushcore.domain.paging import cut

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ulids = st.text(CROCKFORD, min_size=26, max_size=26)


@given(st.lists(st.integers(), unique=True, max_size=40), st.integers(1, 12))
def test_paging_by_cut_reaches_every_item_once_in_order(rows: list[int], limit: int) -> None:
    seen: list[int] = []
    after: int | None = None
    while True:
        # What a store answers: up to limit + 1 rows after the key.
        rest = [r for r in rows if after is None or rows.index(r) > rows.index(after)]
        page = cut(rest[: limit + 1], limit, str)
        assert len(page.items) <= limit
        # A next page is promised exactly when more items follow: never an empty last page.
        assert (page.next_key is None) == (len(rest) <= limit)
        seen += page.items
        if page.next_key is None:
            break
        assert page.next_key == str(page.items[-1])
        after = int(page.next_key)
    assert seen == rows


@pytest.mark.parametrize(
    ("cursor", "prefix"),
    [(NOTIFICATION_CURSOR, "ntf_"), (SCHEDULE_CURSOR, "sch_"), (DELIVERY_CURSOR, "dlv_")],
)
@given(ulid=ulids)
def test_a_cursor_reads_back_as_its_id_and_matches_its_declared_pattern(
    cursor: Cursor, prefix: str, ulid: str
) -> None:
    coded = cursor.encode(prefix + ulid)
    assert coded is not None
    assert re.fullmatch(cursor.pattern, coded)
    assert cursor.decode(coded) == prefix + ulid


def test_no_key_is_no_cursor() -> None:
    assert NOTIFICATION_CURSOR.encode(None) is None


@pytest.mark.parametrize(
    "given_", ["", "not base64!", "bnRmXzE", "c2NoXzAxSkQzVjZRNVg4WksyTTRON1A5UjBTMVQy"]
)
def test_anything_else_is_a_400_naming_the_cursor(given_: str) -> None:
    with pytest.raises(ValidationError) as raised:
        NOTIFICATION_CURSOR.decode(given_)
    assert [(f.field, f.message) for f in raised.value.details] == [
        ("cursor", "is not a valid cursor")
    ]
