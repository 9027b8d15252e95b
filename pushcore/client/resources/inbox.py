"""client.inbox: what reached the account, and its live channel (a user token, or a key
with notifications:read to look and notifications:write to change)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Sequence

from pushcore.client._call import (
    AsyncResource,
    Auth,
    Call,
    SyncResource,
    asynchronous,
    every,
    every_async,
    json_body,
    one,
    path,
    sync,
)
from pushcore.client._live import AGAIN, CHANNEL, EventParser, LiveEvent, Resume, asked_wait
from pushcore.converter import DeletedView, InboxEntryView, InboxPageView, UnreadView

PAGE_SIZE = 100


def page(
    unread: bool | None = None, limit: int | None = None, cursor: str | None = None
) -> Call[InboxPageView]:
    """One page of the inbox, newest first, with the unread count."""
    params = {"limit": str(PAGE_SIZE if limit is None else limit)}
    if unread is not None:
        params["unread"] = "true" if unread else "false"
    if cursor is not None:
        params["cursor"] = cursor
    return Call("GET", "/api/inbox", Auth.EITHER, one(InboxPageView), params=params)


def read_some(ids: Sequence[str] | None = None, up_to: str | None = None) -> Call[UnreadView]:
    """Mark entries read, by ``ids`` or ``up_to`` (that one and every older); the unread
    count after."""
    data = json_body(ids=None if ids is None else list(ids), up_to=up_to)
    return Call("POST", "/api/inbox/read", Auth.EITHER, one(UnreadView), data)


def _newest(page: InboxPageView) -> Call[UnreadView] | UnreadView:
    # Every entry is the newest one and every older: nothing to read in an empty inbox.
    return read_some(up_to=page.items[0].id) if page.items else UnreadView(page.unread)


def dismiss(entry_id: str) -> Call[DeletedView]:
    """Take an entry out of the inbox."""
    return Call("DELETE", path("/api/inbox/{}", entry_id), Auth.EITHER, one(DeletedView))


class Inbox(SyncResource):
    """``client.inbox``"""

    page = sync(page)
    dismiss = sync(dismiss)

    def read(self, ids: Sequence[str] | None = None, up_to: str | None = None) -> UnreadView:
        """Mark entries read, by ``ids`` or ``up_to`` (that one and every older), or with
        neither every entry there is now; the unread count after."""
        if ids is not None or up_to is not None:
            return self._sender.send(read_some(ids, up_to))
        newest = _newest(self.page(limit=1))
        return newest if isinstance(newest, UnreadView) else self._sender.send(newest)

    def list(self, unread: bool | None = None) -> Iterator[InboxEntryView]:
        """Every entry (only unread ones with ``unread=True``), newest first."""
        return every(lambda cursor: self.page(unread, cursor=cursor))

    def events(self, since: str | None = None) -> Generator[LiveEvent, None, None]:
        """The live channel, for ever: new entries (``InboxEntryView``), reads
        (``ReadEventView``) and dismissals (``DismissedEventView``), after the entry
        ``since`` (None: only new ones). Reconnects by itself, resuming after the last
        entry seen; raises the API's error (a 401 once the credential is no longer good)."""
        resume = Resume(since)
        while True:
            try:
                response = self._sender.open(CHANNEL, resume.headers())
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


class AsyncInbox(AsyncResource):
    """``client.inbox`` of the async client."""

    page = asynchronous(page)
    dismiss = asynchronous(dismiss)

    async def read(self, ids: Sequence[str] | None = None, up_to: str | None = None) -> UnreadView:
        """:meth:`Inbox.read`, awaited."""
        if ids is not None or up_to is not None:
            return await self._sender.send(read_some(ids, up_to))
        newest = _newest(await self.page(limit=1))
        return newest if isinstance(newest, UnreadView) else await self._sender.send(newest)

    def list(self, unread: bool | None = None) -> AsyncIterator[InboxEntryView]:
        """Every entry (only unread ones with ``unread=True``), newest first."""
        return every_async(lambda cursor: self.page(unread, cursor=cursor))

    async def events(self, since: str | None = None) -> AsyncGenerator[LiveEvent, None]:
        """:meth:`Inbox.events`, as an async iterator."""
        resume = Resume(since)
        while True:
            try:
                response = await self._sender.open(CHANNEL, resume.headers())
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
