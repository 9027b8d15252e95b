"""The hub: one per process, it finds new inbox entries and hands them to open channels.

One reader for every channel of the process: when entries may have been
committed (this process's engine or a stream send says so at once; another
process's, through the store's watch, or a cheap poll of the latest entry's
number while channels are open), the hub reads the entries after the last it
handed out, for the accounts that have open channels, in one query, and puts
each in the queue of each channel of its account. A channel's queue is
bounded: a client that does not keep up has its channel closed (it resumes
by id), and nobody else waits for it. Reads and dismissals of this process
are handed out the same way, without the database.

Entries are numbered in commit order (storage/sql/inbox.py), so "after the
last handed out" misses none. A channel that opens registers first and then
replays from the database what it asks for (``since``, or the hub's position
when it opened), dropping what the hub hands it twice: no entry is lost
between the replay and the live part, and none is repeated.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Protocol, TypeVar

import attrs

from pushcore.domain.errors import RateLimited
from pushcore.domain.inbox import InboxChange, InboxItem
from pushcore.domain.scopes import Failure
from pushcore.ports import Clock, InboxSignal, Store

log = logging.getLogger("pushcore.live")
T = TypeVar("T")

Event = InboxItem | InboxChange
Changed = Callable[[str, InboxChange], None]
# Starts watching the database for what other processes commit (new entries:
# the first function; reads and dismissals: the second); returns what stops it.
Watch = Callable[[Callable[[], None], Changed], Callable[[], None]]


class SignedOutSessions(Protocol):
    """Which sessions are signed out (pushcore.services.revocations.SignedOut)."""

    def among(self, session_ids: Collection[str]) -> Collection[str]:
        """Those of ``session_ids`` that are signed out (may read the store)."""
        ...


@attrs.frozen
class LiveLimits:
    """How the hub bounds its work."""

    per_account: int = 20  # open channels of one account
    per_address: int = 100  # open channels from one client address
    # Open channels of the process; at the bound the longest-idle one is closed for a
    # new one. `pushctl serve` derives it from the connection bound (pushcore_http.server).
    channels: int = 1000
    queue: int = 256  # events waiting for one channel before it is closed as too slow
    poll: float = 0.15  # seconds between looks at the latest entry, without a watch
    backstop: float = 2.0  # the same, with a watch (a NOTIFY may be lost with its connection)
    batch: int = 1000  # entries read at once
    key_check: float = 5.0  # seconds between checks that channels' API keys still hold
    # Seconds between checks that channels' sessions are not signed out (API.md: a
    # sign-out ends them within 1 s; a check costs a look at a set, or one query
    # once the process's copy of the signed-out sessions is 0.5 s old).
    session_check: float = 0.25
    keepalive: float = 15.0  # seconds: API.md's most between two lines of a quiet channel
    by_account: int = 64  # up to this many accounts with channels, read by account


@attrs.define
class LiveStats:
    """What the live channels of this process did, for /metrics (plain counters: read
    when scraped, never locked, as only the event loop changes them)."""

    events: int = 0  # events sent (entries, reads, dismissals)
    replays: int = 0  # channels that resumed from an id and had entries to replay
    replayed: int = 0  # entries sent by those replays
    slow: int = 0  # channels closed because their client did not keep up
    bound: int = 0  # channels closed for a new one, at the process's bound


class Tick:
    """Put in a channel's queue by its pacer (pushcore/live/stream.py): a keep-alive line
    is due, or the credential's expiry came."""


TICK = Tick()


class Channel:
    """One open live channel: its account, its queue, and why it ends."""

    __slots__ = ("account_id", "address", "ended", "key_id", "last_seq", "queue", "session_id")

    def __init__(
        self, account_id: str, key_id: str | None, last_seq: int, size: int, address: str = ""
    ) -> None:
        self.account_id = account_id
        self.key_id = key_id
        self.address = address  # the client's, as the rate limits count it
        self.session_id: str | None = None  # the session of the token it was opened with
        self.last_seq = last_seq  # the latest entry this channel has sent or skipped
        self.queue: asyncio.Queue[Event | Tick | None] = asyncio.Queue(size)
        self.ended: str | None = None  # "slow", "revoked", "bound": the channel must close

    def end(self, reason: str) -> None:
        """Close the channel (its reader stops at its next event)."""
        if self.ended is None:
            self.ended = reason
            # A full queue: its reader is busy with events and sees ``ended`` next.
            with contextlib.suppress(asyncio.QueueFull):
                self.queue.put_nowait(None)


class LiveHub:
    """Brings inbox entries, reads and dismissals to the open channels of this process.

    ``committed`` and ``changed`` (the InboxSignal port) may be called from any
    thread; the rest runs on the event loop of the channels.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        limits: LiveLimits | None = None,
        watch: Watch | None = None,
        signed_out: SignedOutSessions | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self.limits = limits or LiveLimits()
        self._watch = watch
        self.stats = LiveStats()
        self._channels: dict[str, set[Channel]] = defaultdict(set)
        # Every open channel, the one that got an event longest ago first (moved to the
        # end when it gets one): the bound's victim is a dict lookup, not a scan.
        self._idle: dict[Channel, None] = {}
        self._by_address: dict[str, int] = defaultdict(int)
        self._sessions: dict[str, int] = defaultdict(int)  # open channels by session
        self._loop: asyncio.AbstractEventLoop | None = None
        self._poke: asyncio.Event | None = None
        self._starting = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._signed_out = signed_out
        self._sessions_task: asyncio.Task[None] | None = None
        self._stop_watch: Callable[[], None] | None = None
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="pushcore-live")
        self.position = 0  # the latest entry handed out (or known when the hub started)
        # Other processes to tell of this one's entries and changes, where no database
        # does (the workers of `pushctl serve --workers N` on SQLite).
        self.tell: InboxSignal | None = None

    @property
    def open_channels(self) -> int:
        """How many channels are open in this process."""
        return len(self._idle)

    # InboxSignal, from any thread.

    def committed(self) -> None:
        """Entries may have been committed: look now (and tell ``tell``)."""
        self.look()
        if self.tell is not None:
            self.tell.committed()

    def changed(self, account_id: str, change: InboxChange) -> None:
        """Hand a read or a dismissal to the account's channels (and tell ``tell``)."""
        self.hand(account_id, change)
        if self.tell is not None:
            self.tell.changed(account_id, change)

    # What other processes did (a watch, pushcore.live.siblings), from any thread.

    def look(self) -> None:
        """Entries may have been committed: look now."""
        loop, poke = self._loop, self._poke
        if loop is not None and poke is not None and not loop.is_closed():
            loop.call_soon_threadsafe(poke.set)

    def hand(self, account_id: str, change: InboxChange) -> None:
        """Hand a read or a dismissal to the account's channels."""
        loop = self._loop
        if loop is not None and not loop.is_closed() and account_id in self._channels:
            loop.call_soon_threadsafe(self._hand, account_id, change)

    # Channels, on the loop.

    async def open(
        self,
        account_id: str,
        key_id: str | None,
        since: int | None,
        address: str = "",
        session_id: str | None = None,
    ) -> Channel:
        """Register a channel; it starts after ``since`` (None: after the latest entry),
        and ends when the session ``session_id`` (if given) is signed out.

        RateLimited when the account, or the client ``address``, has its most channels
        open already. At the process's bound, the longest-idle channel is closed for it
        (its client resumes by id).
        """
        await self._start()
        limits = self.limits
        # No wait between the counts and the registration: two opens cannot both pass.
        if len(self._channels.get(account_id, ())) >= limits.per_account:
            raise RateLimited(
                f"At most {limits.per_account} live channels per account are open at once",
                retry_after=2,
            )
        if address and self._by_address.get(address, 0) >= limits.per_address:
            raise RateLimited(
                f"At most {limits.per_address} live channels per client address are open at once",
                retry_after=2,
            )
        while len(self._idle) >= max(limits.channels, 1):
            victim = next(iter(self._idle))
            victim.end("bound")
            self.forget(victim)
        channel = Channel(
            account_id, key_id, self.position if since is None else since, limits.queue, address
        )
        channel.session_id = session_id
        if session_id is not None:
            self._sessions[session_id] += 1
        self._channels[account_id].add(channel)
        self._idle[channel] = None
        if address:
            self._by_address[address] += 1
        return channel

    def forget(self, channel: Channel) -> None:
        """Forget a channel (its response ended, or it was closed for the bound)."""
        channels = self._channels.get(channel.account_id)
        if channels is None or channel not in channels:
            return
        channels.discard(channel)
        if not channels:
            del self._channels[channel.account_id]
        del self._idle[channel]
        _count_down(self._by_address, channel.address)
        _count_down(self._sessions, channel.session_id)
        if channel.ended == "slow":
            self.stats.slow += 1
        elif channel.ended == "bound":
            self.stats.bound += 1

    def active(self, channel: Channel) -> None:
        """The channel got an event: it is the least idle now."""
        if channel in self._idle:
            del self._idle[channel]
            self._idle[channel] = None

    async def replay(self, channel: Channel) -> Sequence[InboxItem]:
        """The next entries of the channel's account after its position, from the
        database, oldest first (empty once it has caught up)."""
        items, _ = await self._read(
            functools.partial(self._after, [channel.account_id], channel.last_seq)
        )
        if items:
            self.active(channel)
        return items

    def _after(self, accounts: Sequence[str] | None, seq: int) -> tuple[Sequence[InboxItem], int]:
        # The latest number from the same snapshot: every entry up to it of these
        # accounts is in the answer (numbers follow commits), when it is not full.
        with self._store.read() as tx:
            return tx.inbox.after(accounts, seq, self.limits.batch), tx.inbox.last_seq()

    async def _read(self, read: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._reader, read)

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._poke, self._starting = loop, asyncio.Event(), asyncio.Lock()
        # One start at a time: two channels opening together must not start two loops.
        async with self._starting:
            if self._task is None or self._task.done():
                self.position = await self._latest()
                # Its first look comes after the caller registers its channel (no wait
                # between this and the registration), or it would end at once.
                self._task = loop.create_task(self._run(), name="pushcore-live-hub")
                if self._watch is not None and self._stop_watch is None:
                    self._stop_watch = self._watch(self.look, self.hand)
            sessions = self._sessions_task
            if self._signed_out is not None and (sessions is None or sessions.done()):
                # Likewise (it looks after a sleep); it may have ended while _run had not.
                self._sessions_task = loop.create_task(
                    self._end_signed_out(self._signed_out), name="pushcore-live-sessions"
                )

    async def _latest(self) -> int:
        def read() -> int:
            with self._store.read() as tx:
                return tx.inbox.last_seq()

        return await self._read(read)

    async def _run(self) -> None:
        assert self._poke is not None
        poke = self._poke
        interval = self.limits.poll if self._watch is None else self.limits.backstop
        keys_due = self._clock.now()
        while self._channels:
            try:
                await asyncio.wait_for(poke.wait(), interval)
                look = True
            except TimeoutError:
                look = False
            poke.clear()
            try:
                if not look:
                    # A look at one number: is there anything after our position?
                    look = await self._latest() > self.position
                if look:
                    await self._catch_up()
                if self._clock.now() >= keys_due:
                    keys_due = self._clock.now() + _seconds(self.limits.key_check)
                    await self._check_keys()
            except Exception:
                # The database away (Unavailable) or anything else: channels stay
                # open and the next look tries again.
                log.warning("live channels: could not read new entries", exc_info=True)
                await asyncio.sleep(interval)
        if self._stop_watch is not None:
            self._stop_watch()
            self._stop_watch = None

    async def _catch_up(self) -> None:
        while self._channels:
            # Few accounts: an index range each. Many: one walk by number, the
            # entries of accounts with no channel dropped here (cheaper than
            # thousands of ranges when a stream send reaches most of them).
            few = len(self._channels) <= self.limits.by_account
            accounts, position = sorted(self._channels) if few else None, self.position
            found, latest = await self._read(functools.partial(self._after, accounts, position))
            for item in found:
                self._hand(item.entry.account_id, item)
            if len(found) == self.limits.batch:
                self.position = found[-1].entry.seq
                continue
            # Nothing else up to ``latest`` is for an open channel; one opened
            # since the read replays it itself.
            self.position = max(position, latest)
            return

    def _hand(self, account_id: str, event: Event) -> None:
        for channel in tuple(self._channels.get(account_id, ())):
            if channel.ended is not None:
                continue
            try:
                channel.queue.put_nowait(event)
            except asyncio.QueueFull:
                channel.end("slow")
            else:
                self.active(channel)

    async def _check_keys(self) -> None:
        keyed = {
            (c.account_id, c.key_id)
            for channels in self._channels.values()
            for c in channels
            if c.key_id is not None
        }
        if not keyed:
            return
        now = self._clock.now()

        def unusable() -> set[str]:
            dead: set[str] = set()
            with self._store.read() as tx:
                for account_id, key_id in keyed:
                    key = tx.api_keys.get(account_id, key_id)
                    if key is None or isinstance(key.check_usable(now), Failure):
                        dead.add(key_id)
            return dead

        dead = await self._read(unusable)
        for channels in tuple(self._channels.values()):
            for channel in tuple(channels):
                if channel.key_id in dead:
                    channel.end("revoked")

    async def _end_signed_out(self, signed_out: SignedOutSessions) -> None:
        # Its own loop beside _run's, which may sleep for seconds between looks.
        while True:
            await asyncio.sleep(self.limits.session_check)
            if not self._channels:
                return
            # Kept as channels open and close: a walk over 10,000 channels four times a
            # second cost the loop more than the look at the signed-out set.
            sessions = set(self._sessions)
            if not sessions:
                continue
            try:
                ended = await self._read(functools.partial(signed_out.among, sessions))
            except Exception:
                log.warning("live channels: could not read signed-out sessions", exc_info=True)
                continue
            if not ended:
                continue
            for channels in tuple(self._channels.values()):
                for channel in tuple(channels):
                    if channel.session_id in ended:
                        channel.end("signed out")

    def end_all(self, reason: str) -> None:
        """End every open channel (their clients resume by id, elsewhere or later)."""
        for channels in tuple(self._channels.values()):
            for channel in tuple(channels):
                channel.end(reason)

    async def aclose(self) -> None:
        """Stop looking (at shutdown); open channels end."""
        self.end_all("shutdown")
        tasks = [t for t in (self._task, self._sessions_task) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task = self._sessions_task = None
        if self._stop_watch is not None:
            self._stop_watch()
            self._stop_watch = None

    def close(self) -> None:
        """Release the reader's thread (the services close)."""
        self._reader.shutdown(wait=False)


def _count_down(counts: dict[str, int], key: str | None) -> None:
    """One fewer of ``key`` (none: nothing); gone at zero."""
    if key:
        left = counts[key] - 1
        if left:
            counts[key] = left
        else:
            del counts[key]


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)
