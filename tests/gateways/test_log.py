"""The log gateway: fails every dispatch with its reason, and keeps the last few."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import attrs
import pytest

from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Dispatch, Failed, Outcome
from pushcore.gateways.log import LogGateway
from tests.gateways.support import dispatch

REASON = "APNs is not configured (set PUSHCORE_APNS_KEY_FILE, _KEY_ID, _TEAM_ID, _TOPIC)"


def ios(suffix: str) -> Dispatch:
    """A dispatch to an iOS device (the log gateway never reads the token)."""
    base = dispatch("0123abcd" * 8, suffix=suffix)
    return attrs.evolve(base, device=attrs.evolve(base.device, platform=Platform.IOS))


def run(gateway: LogGateway, dispatches: Sequence[Dispatch]) -> list[Outcome]:
    """One send, then close."""

    async def go() -> list[Outcome]:
        try:
            return list(await gateway.send(dispatches))
        finally:
            await gateway.aclose()

    return asyncio.run(go())


def test_every_dispatch_fails_with_the_configured_reason() -> None:
    gateway = LogGateway(REASON)
    dispatches = [ios(str(i)) for i in range(3)]

    assert run(gateway, dispatches) == [Failed(REASON)] * 3
    assert list(gateway.records) == dispatches
    assert gateway.reason == REASON


def test_an_empty_send_records_nothing() -> None:
    gateway = LogGateway(REASON)

    assert run(gateway, []) == []
    assert list(gateway.records) == []


def test_records_keep_only_the_last_ones() -> None:
    gateway = LogGateway(REASON, keep=3)
    dispatches = [ios(str(i)) for i in range(5)]

    async def go() -> list[Outcome]:
        outcomes = list(await gateway.send(dispatches[:2]))
        outcomes += await gateway.send(dispatches[2:])
        return outcomes

    assert asyncio.run(go()) == [Failed(REASON)] * 5
    assert list(gateway.records) == dispatches[2:]


def test_each_dispatch_is_logged_with_what_to_configure(caplog: pytest.LogCaptureFixture) -> None:
    gateway = LogGateway(REASON)

    with caplog.at_level(logging.WARNING, logger="pushcore.delivery"):
        run(gateway, [ios("a"), ios("b")])

    messages = [r.getMessage() for r in caplog.records if r.name == "pushcore.delivery"]
    assert messages == [
        f"not delivered: notification ntf_a to ios device dev_a: {REASON}",
        f"not delivered: notification ntf_b to ios device dev_b: {REASON}",
    ]
    assert all(r.levelno == logging.WARNING for r in caplog.records)
