"""The page views' one shape (``items``, ``nextCursor``) and how their cursors are coded."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Self

import attrs

from pushcore.converter._views import View
from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.paging import Page
from pushcore.domain.validation import about

NEXT_PAGE = "Pass as `cursor` for the next page; null: last page."


@attrs.frozen
class Cursor:
    """An opaque cursor: base64url (unpadded) of the id the next page continues after.

    ``ids`` is what a decoded cursor must match; ``pattern`` and ``example`` are
    what the API document says of one.
    """

    ids: re.Pattern[str]
    pattern: str
    example: str | None = None

    def encode(self, key: str | None) -> str | None:
        """The cursor that continues after ``key``; None (the last page) for None."""
        if not key:
            return None
        return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")

    def decode(self, cursor: str) -> str:
        """The id ``cursor`` continues after; ValidationError when it is not one of ours."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        except (binascii.Error, ValueError):
            raw = ""
        if not self.ids.fullmatch(raw):
            raise ValidationError([FieldError("cursor", "is not a valid cursor")])
        return raw

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of a cursor, as the ``cursor`` query parameter declares it."""
        if self.example is None:
            return {"type": "string", "pattern": self.pattern}
        return {"type": "string", "pattern": self.pattern, "examples": [self.example]}

    def field(self) -> Any:
        """A page view's ``next_cursor`` field, coded by this cursor."""
        return attrs.field(metadata=about(NEXT_PAGE, pattern=self.pattern, example=self.example))


class PageView(View):
    """Base of the page views: each declares ``items`` and ``next_cursor`` (its schema)
    and says how an item is viewed (``item``) and its cursor coded (``cursor``: None,
    the last item's key itself)."""

    __slots__ = ()

    item: ClassVar[Callable[..., Any] | None] = None  # None: the items are views
    cursor: ClassVar[Cursor | None] = None

    if TYPE_CHECKING:

        def __init__(self, items: tuple[Any, ...], next_cursor: str | None) -> None: ...

    @classmethod
    def of(cls, page: Page[Any]) -> Self:
        """The view of ``page``, whose cursor continues after its ``next_key``."""
        view = cls.item
        items = tuple(page.items if view is None else (view(i) for i in page.items))
        key = page.next_key
        return cls(items, key if cls.cursor is None else cls.cursor.encode(key))
