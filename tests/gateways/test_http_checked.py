"""``checked``: the batch's shared SSRF check, awaited by each post of the batch."""

from __future__ import annotations

import asyncio
import ipaddress

import pytest

from pushcore.domain.addresses import IPAddress
from pushcore.gateways._http import checked

ADDRESS = ipaddress.ip_address("192.0.2.7")


async def _check(started: asyncio.Event, release: asyncio.Event) -> IPAddress:
    started.set()
    await release.wait()
    return ADDRESS


def test_a_post_cancelled_while_the_check_runs_leaves_it_to_the_others() -> None:
    async def go() -> None:
        started, release = asyncio.Event(), asyncio.Event()
        resolving = asyncio.ensure_future(_check(started, release))
        first = asyncio.ensure_future(checked(resolving))
        second = asyncio.ensure_future(checked(resolving))
        await started.wait()
        first.cancel()
        await asyncio.sleep(0)
        release.set()
        assert await second == ADDRESS
        assert not resolving.cancelled()
        with pytest.raises(asyncio.CancelledError):
            await first

    asyncio.run(go())


def test_a_finished_check_answers_at_once_its_address_or_its_refusal() -> None:
    async def go() -> None:
        async def refuse() -> IPAddress:
            raise ValueError("must be an http or https URL")

        done = asyncio.ensure_future(asyncio.sleep(0, ADDRESS))
        refused = asyncio.ensure_future(refuse())
        await asyncio.wait([done, refused])
        # Without a turn of the loop: no shield, no future of its own.
        step = checked(done).__await__()
        with pytest.raises(StopIteration) as stopped:
            step.send(None)
        assert stopped.value.value == ADDRESS
        with pytest.raises(ValueError, match="http or https"):
            checked(refused).__await__().send(None)

    asyncio.run(go())
