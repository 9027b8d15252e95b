"""client.inbox: what reached the account, and its live channel (a user token, or a key
with notifications:read to look and notifications:write to change)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Generator, Sequence

from pushcore.client._call import AsyncSender, Auth, Call, SyncSender, json_body, one, path, query
from pushcore.client._live import AGAIN, CHANNEL, EventParser, LiveEvent, Resume, asked_wait
from pushcore.client._resource import (
    Pages,
    Resource,
    S_co,
    Steps,
    by_mode,
    endpoint,
    listing,
    steps,
)
from pushcore.converter import DeletedView, InboxEntryView, InboxPageView, UnreadView

PAGE_SIZE = 100


def page(
    unread: bool | None = None, limit: int | None = None, cursor: str | None = None
) -> Call[InboxPageView]:
    """One page of the inbox, newest first, with the unread count."""
    params = query(limit=PAGE_SIZE if limit is None else limit, unread=unread, cursor=cursor)
    return Call("GET", "/api/inbox", Auth.EITHER, one(InboxPageView), params=params)


def read_some(ids: Sequence[str] | None = None, up_to: str | None = None) -> Call[UnreadView]:
    """Mark entries read, by ``ids`` or ``up_to`` (that one and every older); the unread
    count after."""
    data = json_body(ids=None if ids is None else list(ids), up_to=up_to)
    return Call("POST", "/api/inbox/read", Auth.EITHER, one(UnreadView), data)


def dismiss(entry_id: str) -> Call[DeletedView]:
    """Take an entry out of the inbox."""
    return Call("DELETE", path("/api/inbox/{}", entry_id), Auth.EITHER, one(DeletedView))


def read(ids: Sequence[str] | None = None, up_to: str | None = None) -> Steps[UnreadView]:
    """Mark entries read, by ``ids`` or ``up_to`` (that one and every older), or with
    neither every entry there is now; the unread count after."""
    if ids is None and up_to is None:
        newest: InboxPageView = yield page(limit=1)
        # Every entry is the newest one and every older: nothing to read in an empty inbox.
        if not newest.items:
            return UnreadView(newest.unread)
        up_to = newest.items[0].id
    unread: UnreadView = yield read_some(ids, up_to)
    return unread


def entries(unread: bool | None = None) -> Pages[InboxEntryView]:
    """Every entry (only unread ones with ``unread=True``), newest first."""
    return Pages(lambda cursor: page(unread, cursor=cursor))


def follow(sender: SyncSender, since: str | None = None) -> Generator[LiveEvent, None, None]:
    """The live channel, for ever: new entries (``InboxEntryView``), reads
    (``ReadEventView``) and dismissals (``DismissedEventView``), after the entry
    ``since`` (None: only new ones). Reconnects by itself, resuming after the last
    entry seen; raises the API's error (a 401 once the credential is no longer good)."""
    resume = Resume(since)
    while True:
        try:
            response = sender.open(CHANNEL, resume.headers())
            try:
                resume.opened(response)
                parser = EventParser()
                for line in response.iter_lines():
                    event = parser.feed(line)
                    if event is not None:
                        resume.seen(event)
                        yield event
            finally:
                response.close()
            delay = resume.wait()
        except AGAIN as again:
            delay = resume.wait(asked_wait(again))
        time.sleep(delay)


async def follow_async(
    sender: AsyncSender, since: str | None = None
) -> AsyncGenerator[LiveEvent, None]:
    """:func:`follow`, as an async iterator."""
    resume = Resume(since)
    while True:
        try:
            response = await sender.open(CHANNEL, resume.headers())
            try:
                resume.opened(response)
                parser = EventParser()
                async for line in response.aiter_lines():
                    event = parser.feed(line)
                    if event is not None:
                        resume.seen(event)
                        yield event
            finally:
                await response.aclose()
            delay = resume.wait()
        except AGAIN as again:
            delay = resume.wait(asked_wait(again))
        await asyncio.sleep(delay)


class Inbox(Resource[S_co]):
    """``client.inbox`` (its methods awaitable on AsyncClient; ``events`` an async iterator)"""

    page = endpoint(page)
    dismiss = endpoint(dismiss)
    read = steps(read)
    list = listing(entries)
    events = by_mode(follow, follow_async)
