"""Retention: the engine's process deletes settled history in small steady slices.

Notifications settled more than ``keep`` ago go with their deliveries
(PUSHCORE_RETENTION; 0 keeps everything), the stats' minute buckets older
than any window go too, and so do expired refresh tokens, single sign-on
rows and `live` devices unused for 30 days (neither registered again nor
delivered to). Each batch is one short transaction of at most ``batch`` deliveries
and ``batch`` notifications, followed by a pause: on SQLite a claim of the
engine waits for the one writer, so no batch may hold it for long. When a
pass finds nothing more, the task rests a second: under a steady load each
pass deletes about a second's worth, so a short retention takes effect
within seconds, and a long one never piles up a minute's worth to delete in
one burst (those bursts were the soak's p99 peaks).
Every wait is :meth:`Clock.sleep_until`, so tests run it on fake time.

SQLite reuses the pages deleted rows free (its default, auto_vacuum off), so
under a steady load the file stops growing once it holds ``keep`` worth of
history; it never shrinks by itself (``VACUUM`` does that, offline).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TypeVar

import attrs

from pushcore.consistency import detach_device
from pushcore.domain.idempotency import REPLAY_WINDOW
from pushcore.domain.inbox import Withdrawn
from pushcore.domain.scheduling import STALE_LIVE_DEVICE
from pushcore.ports import Clock, InboxSignal, Store, Transaction

log = logging.getLogger("pushcore.retention")
T = TypeVar("T")
# How far back the stats look (24 hours, in whole minutes), and a margin.
ACTIVITY_KEPT = timedelta(hours=25)


async def finish_in_thread(thread: ThreadPoolExecutor, work: Callable[[], T]) -> T:
    """``work``'s result, run on ``thread``; cancelled, it still waits for ``work`` to end.

    Stopping, a transaction goes on in its thread: it must end before anyone closes
    the store under it (a connection closed while in use crashes SQLite).
    """
    running = thread.submit(work)
    try:
        return await asyncio.shield(asyncio.wrap_future(running))
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await asyncio.wrap_future(running)
        raise


@attrs.frozen
class RetentionConfig:
    """How long settled notifications are kept, and how the deleting is paced."""

    keep: timedelta = timedelta(days=30)  # 0: keep everything
    batch: int = 200
    pause: timedelta = timedelta(milliseconds=100)  # between two batches
    rest: timedelta = timedelta(seconds=1)  # between two passes


class Retention:
    """Deletes what is past retention, batch by batch, until stopped."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: RetentionConfig,
        inbox: InboxSignal | None = None,
    ) -> None:
        self._store = store
        self._inbox = inbox
        self._clock = clock
        self.config = config
        # One thread: on SQLite one connection, never a second writer of ours.
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="pushcore-retention")

    def sweep(self) -> int:
        """One batch: delete what is past retention (up to ``batch`` of each kind); the rows."""
        now = self._clock.now()
        with self._store.transaction() as tx:
            deleted = tx.retention.prune_activity(now - ACTIVITY_KEPT, self.config.batch)
            # An Idempotency-Key's answer is replayed for 24 h and then forgotten,
            # whatever PUSHCORE_RETENTION keeps of notifications.
            deleted += tx.idempotency_keys.delete_older_than(now - REPLAY_WINDOW, self.config.batch)
            # An expired refresh token is refused whatever its row says.
            deleted += tx.refresh_tokens.delete_expired(now, self.config.batch)
            # A revocation outlives its session's last access token, no longer.
            deleted += tx.session_revocations.delete_expired(now, self.config.batch)
            # Sign-in round trips and one-time codes are refused once expired anyway.
            deleted += tx.sign_ins.delete_expired(now, self.config.batch)
            deleted += self._remove_stale_live_devices(tx, now)
            if self.config.keep > timedelta(0):
                deleted += tx.retention.delete_settled(now - self.config.keep, self.config.batch)
                # The event log is kept as long as the notifications it tells of; a
                # batch each sweep (not counted: the pace follows the notifications).
                tx.events.delete_before(now - self.config.keep, self.config.batch)
            # Entries past their notification's expiresAt leave the inbox (API.md).
            expired = tx.inbox.expire(now, self.config.batch)
            told = {a: tx.inbox.announce(a, Withdrawn(tuple(ids))) for a, ids in expired.items()}
        for account_id, ids in expired.items():
            if not told[account_id] and self._inbox is not None:
                self._inbox.changed(account_id, Withdrawn(tuple(ids)))
        return deleted + sum(len(ids) for ids in expired.values())

    def _remove_stale_live_devices(self, tx: Transaction, now: datetime) -> int:
        """Remove live devices unused for STALE_LIVE_DEVICE, whatever ``keep`` says."""
        # A bound on what an account holds, not history: an app or `pushctl
        # listen` registers its live device again each time it opens.
        stale = tx.devices.stale_live(now - STALE_LIVE_DEVICE, self.config.batch)
        for account_id, device_id in stale:
            if tx.devices.delete(account_id, device_id):
                detach_device(tx, device_id, now, "device_removed")
        return len(stale)

    async def _sweep_in_thread(self) -> int:
        return await finish_in_thread(self._thread, self.sweep)

    async def run(self) -> None:
        """Sweep batch by batch with a pause between, rest when nothing is left; until cancelled."""
        try:
            while True:
                try:
                    deleted = await self._sweep_in_thread()
                except Exception:
                    # A database hiccup must not end retention; the next pass tries again.
                    log.exception("retention batch failed")
                    deleted = 0
                wait = self.config.pause if deleted else self.config.rest
                await self._clock.sleep_until(self._clock.now() + wait)
        finally:
            self._thread.shutdown(wait=False)
