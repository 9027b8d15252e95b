"""What one open channel sends, in order: a replay from the database, then live events.

Adapter-free: an HTTP route (pushcore_http/routes/live.py) renders each event in
the server-sent events format; this decides which events, when, and when the
channel ends. The channel registers with the hub before its replay reads, so
what the hub hands over meanwhile is also read by the replay, and dropped here
by its number: no entry is lost between the replay and the live part, and none
is repeated.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime

from pushcore.domain.inbox import InboxChange, InboxItem
from pushcore.live.hub import Channel, Event, LiveHub
from pushcore.ports import Clock

KEEPALIVE = None
"""Yielded when nothing happened for the hub's keep-alive interval."""


async def follow(
    hub: LiveHub, channel: Channel, clock: Clock, until: datetime | None, resumed: bool
) -> AsyncIterator[InboxItem | InboxChange | None]:
    """The channel's entries after its position, oldest first, then its entries, reads
    and dismissals as they come, with :data:`KEEPALIVE` between; it ends when the hub
    ends the channel or at ``until`` (the credential's expiry)."""
    replayed = 0
    while channel.ended is None:
        items = await hub.replay(channel)
        for item in items:
            channel.last_seq = item.entry.seq
            yield item
        replayed += len(items)
        if len(items) < hub.limits.batch:
            break
    hub.stats.events += replayed
    if resumed and replayed:
        hub.stats.replays += 1
        hub.stats.replayed += replayed
    while channel.ended is None:
        wait = hub.limits.keepalive
        if until is not None:
            wait = min(wait, (until - clock.now()).total_seconds())
            if wait <= 0:
                return  # the credential expired: the client resumes with a new one
        event = await _next(channel.queue, wait)
        if isinstance(event, _Quiet):
            yield KEEPALIVE
            continue
        if event is None or channel.ended is not None:
            return
        if isinstance(event, InboxItem):
            if event.entry.seq <= channel.last_seq:
                continue  # replayed already
            channel.last_seq = event.entry.seq
        yield event
        hub.stats.events += 1


class _Quiet:
    """Nothing came within the wait."""


_QUIET = _Quiet()


async def _next(queue: asyncio.Queue[Event | None], wait: float) -> Event | _Quiet | None:
    """The queue's next item, or :data:`_QUIET` after ``wait`` seconds without one."""
    if not queue.empty():
        return queue.get_nowait()
    # A deadline on this task, not wait_for's task per wait: a stream send wakes
    # every channel of the process at once.
    try:
        async with asyncio.timeout(wait):
            return await queue.get()
    except TimeoutError:
        return _QUIET
