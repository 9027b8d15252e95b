"""The settings a live channel's events are told quiet by, read for many channels at once.

A stream send's entry reaches every subscriber's open channel in the same
moment; each channel that has not read its account's settings within the
cache's second would otherwise take a thread and a read transaction of its
own (10,000 of them for 10,000 subscribers, the whole of a replacement's
time on the live channels). Here the channels that miss within one turn of
the event loop share one read.
"""

from __future__ import annotations

import asyncio
import weakref

from starlette.concurrency import run_in_threadpool

from pushcore.domain.recipient import RecipientSettings
from pushcore.services.recipient import RecipientService

_BATCHES: weakref.WeakKeyDictionary[RecipientService, SettingsBatch] = weakref.WeakKeyDictionary()


def batch_of(recipients: RecipientService) -> SettingsBatch:
    """The one batch of this process's recipient service."""
    found = _BATCHES.get(recipients)
    if found is None:
        found = _BATCHES[recipients] = SettingsBatch(recipients)
    return found


class SettingsBatch:
    """Coalesces the settings reads of the channels that miss the cache together."""

    def __init__(self, recipients: RecipientService) -> None:
        self._recipients = recipients
        self._waiting: dict[str, asyncio.Future[RecipientSettings]] | None = None
        self._reading: set[asyncio.Task[None]] = set()  # held: a task only weakly referenced may go

    async def of(self, account_id: str) -> RecipientSettings:
        """The account's settings: remembered, or read with the others asked meanwhile."""
        found = self._recipients.recent(account_id)
        if found is not None:
            return found
        if self._waiting is None:
            self._waiting = {}
            task = asyncio.get_running_loop().create_task(self._read())
            self._reading.add(task)
            task.add_done_callback(self._reading.discard)
        waiting = self._waiting.get(account_id)
        if waiting is None:
            waiting = self._waiting[account_id] = asyncio.get_running_loop().create_future()
        return await asyncio.shield(waiting)

    async def _read(self) -> None:
        # One turn of the loop: the other channels woken by the same event ask first.
        await asyncio.sleep(0)
        waiting, self._waiting = self._waiting or {}, None
        try:
            found = await run_in_threadpool(self._recipients.settings_of, sorted(waiting))
        except Exception as exc:  # each channel hears it, as from a read of its own
            for future in waiting.values():
                if not future.done():
                    future.set_exception(exc)
            return
        for account_id, future in waiting.items():
            if not future.done():
                future.set_result(found[account_id])
