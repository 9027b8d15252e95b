"""The inbox as API JSON: entries, pages, and the live channel's events."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

import attrs

from pushcore.converter._views import View, copy_fields, count, ident
from pushcore.converter.content import ContentView, content_of
from pushcore.converter.notifications import StreamRefView
from pushcore.domain.inbox import InboxItem, InboxPage
from pushcore.domain.inputs import EXAMPLE_FUTURE_TIME
from pushcore.domain.validation import about

ENTRY_ID = about(
    "The entry's id: opaque, prefixed `inb_`, sorts by creation time, counts nothing.",
    example="inb_019ac2f1e4a87c2d9b0e5f4a6c1d3b27",
)
UNREAD = count("Every unread entry of the account.")


@attrs.frozen
class InboxEntryView(ContentView):
    """A notification in the inbox of one account."""

    schema_name: ClassVar[str] = "InboxEntry"

    id: str = attrs.field(metadata=ENTRY_ID)
    notification_id: str = attrs.field(metadata=ident("ntf", "notification"))
    stream: StreamRefView | None = attrs.field(metadata=about("The stream of a stream send."))
    delivered_at: datetime = attrs.field(
        metadata=about("When it reached the inbox (its due time).")
    )
    read_at: datetime | None
    replaces: str | None = attrs.field(
        metadata=about("The entry this one took the place of (same collapse key); else null.")
    )
    collapse_key: str | None = attrs.field(metadata=about("The notification's collapse key."))
    expires_at: datetime | None = attrs.field(
        metadata=about("When it leaves the inbox; null: never.", example=EXAMPLE_FUTURE_TIME)
    )

    @classmethod
    def of(cls, item: InboxItem) -> InboxEntryView:
        """The view of an entry with its notification."""
        n = item.notification
        return copy_fields(
            cls,
            n,
            id=item.entry.id,
            notification_id=n.id,
            stream=None if n.stream is None else copy_fields(StreamRefView, n.stream),
            delivered_at=item.entry.delivered_at,
            read_at=item.entry.read_at,
            replaces=item.entry.replaces,
            expires_at=getattr(n, "expires_at", None),
            **content_of(n),
        )


@attrs.frozen
class InboxPageView(View):
    """A page of the inbox, newest first, and the unread count."""

    items: tuple[InboxEntryView, ...]
    next_cursor: str | None = attrs.field(
        metadata=about("Pass as `cursor` for the next page; null: last page.")
    )
    unread: int = attrs.field(metadata=UNREAD)

    @classmethod
    def of(cls, page: InboxPage) -> InboxPageView:
        """The view of a page."""
        cursor = page.next_before
        return cls(tuple(InboxEntryView.of(i) for i in page.items), cursor, page.unread)


@attrs.frozen
class UnreadView(View):
    """What marking entries read answers."""

    unread: int = attrs.field(metadata=UNREAD)


@attrs.frozen
class ReadEventView(View):
    """The data of a live channel's `read` event."""

    ids: tuple[str, ...] = attrs.field(metadata=about("The entries just marked read."))
    unread: int = attrs.field(metadata=UNREAD)


@attrs.frozen
class DismissedEventView(View):
    """The data of a live channel's `dismissed` event."""

    id: str = attrs.field(metadata=ENTRY_ID)


@attrs.frozen
class WithdrawnEventView(View):
    """The data of a live channel's `withdrawn` event."""

    ids: tuple[str, ...] = attrs.field(
        metadata=about("The entries taken out of the inbox (withdrawn or expired).")
    )
