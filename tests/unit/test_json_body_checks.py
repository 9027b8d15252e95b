"""Request JSON: the quick check of plain bodies decides as the walk of every value does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.errors import PushcoreError
from pushcore_http import body as json_body

TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\\"), max_size=8)
SCALARS = st.none() | st.booleans() | st.integers(-(10**30), 10**30) | TEXT
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=20,
)


def outcome(raw: bytes) -> tuple[str, Any]:
    """What parse_json makes of ``raw``: the value, or the error's type and message."""
    try:
        return "value", json_body.parse_json(raw)
    except PushcoreError as exc:
        return type(exc).__name__, str(exc)


def nested(depth: int, leaf: str) -> bytes:
    return ("[" * (depth - 1) + leaf + "]" * (depth - 1)).encode()


@given(VALUES)
def test_plain_bodies_are_judged_as_by_the_full_walk(value: Any) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode()
    quick = outcome(raw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_body, "_plain", lambda _raw: False)
        assert quick == outcome(raw)


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        (nested(64, '"s"'), True),
        (nested(65, '"s"'), True),
        (nested(64, "1"), True),
        (nested(65, "1"), True),
        (b'{"title": "\\u0000"}', False),
        (b'{"title": "\\ud800"}', False),
        (b'{"title": "a\xed\xa0\x80b"}', False),
        ('{"title": "\ud55c"}'.encode(), True),
        (b'{"n": ' + b"9" * 40 + b"}", True),
        ('{"title": "caf\u00e9"}'.encode("utf-16"), False),
    ],
)
def test_depth_escapes_long_numbers_and_other_encodings(raw: bytes, plain: bool) -> None:
    assert json_body._plain(raw) is plain
    quick = outcome(raw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_body, "_plain", lambda _raw: False)
        assert quick == outcome(raw)
