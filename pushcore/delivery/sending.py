"""A batch handed to its platform's gateway, and each answer passed on to be recorded.

The engine (delivery/engine.py) decides what goes when and how much is in flight;
this is what happens to one platform's share of a batch once handed. Nothing here
is lost: a gateway that raises, or is missing, still yields an outcome for every
delivery (a retry, or a failure), which the engine's ``settle`` records.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence

from pushcore.delivery.pace import RecordPace
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Dispatch, Failed, Outcome, Retry
from pushcore.ports import EachGateway, Gateway

log = logging.getLogger("pushcore.delivery")

Settle = Callable[[list[tuple[Dispatch, Outcome]]], Awaitable[None]]


async def send(
    gateway: Gateway | None,
    platform: Platform,
    group: Sequence[Dispatch],
    settle: Settle,
    pace: RecordPace | None = None,
) -> None:
    """Send ``group`` (all of ``platform``) through ``gateway``; settle each outcome.
    With ``pace``, each answer is noted there as it comes, and requests (a batch
    gateway's batch) wait for it to be ready (delivery/pace.py)."""
    if gateway is None:
        failed = Failed(f"No gateway for {platform.value} devices")
        await settle([(d, failed) for d in group])
        return
    if isinstance(gateway, EachGateway):
        await _send_each(platform, gateway, group, settle, pace)
        return
    if pace is not None:
        await pace.ready()
    try:
        outcomes: Sequence[Outcome] = await gateway.send(group)
    except Exception as exc:
        outcomes = [_gateway_error(platform, exc)] * len(group)
    if pace is not None:
        for dispatch in group:
            pace.answered(dispatch.delivery.id)
    await settle(list(zip(group, outcomes, strict=True)))


async def _send_each(
    platform: Platform,
    gateway: EachGateway,
    group: Sequence[Dispatch],
    settle: Settle,
    pace: RecordPace | None,
) -> None:
    """Record each delivery as soon as it is answered (those answered meanwhile
    together): a receiver that hangs holds its own delivery, never its batch's."""
    try:
        answers = gateway.send_each(group, None if pace is None else pace.ready)
    except Exception as exc:
        await settle([(d, _gateway_error(platform, exc)) for d in group])
        return
    answered: list[tuple[Dispatch, asyncio.Future[Outcome]]] = []
    news = asyncio.Event()
    ended = False

    def done(dispatch: Dispatch, answer: asyncio.Future[Outcome]) -> None:
        if ended:
            return  # given up below (its cancel comes here after)
        if pace is not None:
            pace.answered(dispatch.delivery.id)
        answered.append((dispatch, answer))
        news.set()

    for dispatch, answer in zip(group, answers, strict=True):
        answer.add_done_callback(functools.partial(done, dispatch))
    left = len(group)
    try:
        while left:
            await news.wait()
            news.clear()
            ready, answered[:] = answered[:], []
            left -= len(ready)
            await settle([(d, _answer(platform, a)) for d, a in ready])
    finally:
        ended = True
        if pace is not None and answered:
            # Noted and never passed on (stopping): not what the next sends wait for.
            pace.recorded((d.delivery.id for d, _ in answered), stored=False)
        for answer in answers:
            answer.cancel()  # stopping: nothing left to wait for (no-op when done)


def _gateway_error(platform: Platform, exc: Exception) -> Outcome:
    # A gateway bug or outage must not lose the deliveries: retry them.
    log.error("gateway %s failed", platform.value, exc_info=exc)
    return Retry(f"Gateway error: {type(exc).__name__}")


def _answer(platform: Platform, answer: asyncio.Future[Outcome]) -> Outcome:
    if answer.cancelled():
        return Retry("Gateway send cancelled")
    exc = answer.exception()
    if isinstance(exc, Exception):
        return _gateway_error(platform, exc)
    return answer.result()
