"""The hub alone: a slow channel is closed, not waited for; the others go on."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from pushcore import build_services, load_settings
from pushcore.domain.inbox import InboxEntry, InboxItem
from pushcore.live import LiveHub, LiveLimits
from pushcore.runtime.system import SystemClock
from pushcore.storage import open_store
from tests.contract.test_queue_contract import make_notification


def item(seq: int, account: str = "alice") -> InboxItem:
    entry = InboxEntry(seq, account, f"ntf_{seq}", datetime.now(UTC))
    return InboxItem(entry, make_notification(f"ntf_{seq}", account))


def test_a_channel_that_does_not_keep_up_is_closed_and_others_go_on(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'db'}")
    hub = LiveHub(store, SystemClock(), LiveLimits(queue=2))

    async def scenario() -> None:
        slow = await hub.open("alice", None, None)
        quick = await hub.open("alice", None, None)
        other = await hub.open("bob", None, None)
        for seq in (1, 2):
            hub._hand("alice", item(seq))
        assert [(await quick.queue.get()).entry.seq for _ in range(2)] == [1, 2]  # type: ignore[union-attr]
        hub._hand("alice", item(3))
        hub._hand("bob", item(4, "bob"))
        assert slow.ended == "slow"
        assert quick.ended is None
        assert other.ended is None
        assert (await quick.queue.get()).entry.seq == 3  # type: ignore[union-attr]
        for channel in (slow, quick, other):
            hub.forget(channel)
        assert hub.stats.slow == 1
        assert hub.open_channels == 0
        await hub.aclose()

    try:
        asyncio.run(scenario())
    finally:
        hub.close()
        store.close()


def test_the_services_hub_is_the_inbox_signal_of_the_engine(tmp_path: Path) -> None:
    services = build_services(load_settings(env={}, data_dir=tmp_path))
    try:
        # Nothing open: a signal is dropped without a loop to wake.
        services.live.committed()
        assert services.live.open_channels == 0
    finally:
        services.close()
