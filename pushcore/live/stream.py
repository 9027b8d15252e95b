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
from pushcore.live.hub import TICK, Channel, LiveHub, Tick
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
    pacer = _Pacer(channel, hub.limits.keepalive, clock, until)
    try:
        while channel.ended is None:
            # No timer per wait: a stream send wakes every channel of the process at
            # once, and the pacer's one timer per channel says when a line is due.
            event = await channel.queue.get()
            if isinstance(event, Tick):
                if pacer.expired():
                    return  # the credential expired: the client resumes with a new one
                yield KEEPALIVE
                continue
            if event is None or channel.ended is not None:
                return
            if isinstance(event, InboxItem):
                if event.entry.seq <= channel.last_seq:
                    continue  # replayed already
                channel.last_seq = event.entry.seq
            pacer.sent()
            yield event
            hub.stats.events += 1
    finally:
        pacer.stop()


class _Pacer:
    """One timer per channel, not one per wait: it puts a :class:`Tick` in the channel's
    queue when the channel was quiet for ``keepalive`` seconds, or ``until`` came."""

    def __init__(
        self, channel: Channel, keepalive: float, clock: Clock, until: datetime | None
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._channel, self._keepalive, self._clock, self._until = channel, keepalive, clock, until
        self._last = self._loop.time()  # when the channel last sent a line
        self._handle: asyncio.TimerHandle | None = None
        self._arm()

    def sent(self) -> None:
        """The channel sent an event (the keep-alive can wait)."""
        self._last = self._loop.time()

    def expired(self) -> bool:
        """Whether the credential's expiry has come."""
        return self._until is not None and self._clock.now() >= self._until

    def stop(self) -> None:
        """No more ticks (the channel ended)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        at = self._last + self._keepalive
        if self._until is not None:
            left = (self._until - self._clock.now()).total_seconds()
            at = min(at, self._loop.time() + max(left, 0.0))
        self._handle = self._loop.call_at(at, self._fire)

    def _fire(self) -> None:
        now = self._loop.time()
        expired = self.expired()
        if expired or now - self._last >= self._keepalive:
            self._last = now  # the keep-alive line counts as one
            try:
                self._channel.queue.put_nowait(TICK)
            except asyncio.QueueFull:
                # The channel is busy sending: no keep-alive is needed, and it hears
                # of the expiry a second later.
                if expired:
                    self._handle = self._loop.call_later(1.0, self._fire)
                    return
        if not expired:
            self._arm()
