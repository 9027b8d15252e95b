"""Work handed in by many tasks, done in one go for whatever arrived meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class Coalescer(Generic[Item, Result]):
    """Runs ``flush`` on everything submitted while the previous flush ran.

    Batches sent at their own due times finish one by one; a transaction
    each would keep the database's write lock so busy that the next claim
    waited behind them. Each submitter gets the result of the flush that
    took its items, or its exception.
    """

    def __init__(self, flush: Callable[[list[Item]], Awaitable[Result]]) -> None:
        self._flush = flush
        self._queued: list[tuple[Sequence[Item], asyncio.Future[Result]]] = []
        self._flushing = False

    async def submit(self, items: Sequence[Item]) -> Result:
        """Queue ``items``; the result of the flush that includes them."""
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._queued.append((items, future))
        if not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._queued:
                batch, self._queued = self._queued, []
                await flush_group(self._flush, batch)
        finally:
            self._flushing = False


async def flush_group(
    flush: Callable[[list[Item]], Awaitable[Result]],
    group: Sequence[tuple[Sequence[Item], asyncio.Future[Result]]],
) -> None:
    """Flush a group's items together and settle each submitter's future with the
    result, or with the error (each waiting submitter reports it)."""
    try:
        result = await flush([item for items, _ in group for item in items])
    except Exception as exc:
        for _, future in group:
            if not future.done():
                future.set_exception(exc)
        return
    for _, future in group:
        if not future.done():
            future.set_result(result)
