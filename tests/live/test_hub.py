"""The hub alone: a slow channel is closed, not waited for; the others go on."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pushcore import build_services, load_settings
from pushcore.domain.errors import RateLimited
from pushcore.domain.inbox import Dismissed, InboxEntry, InboxItem, Read
from pushcore.domain.inputs import InboxRead, NewStream, StreamSend
from pushcore.live import Channel, LiveHub, LiveLimits
from pushcore.runtime.system import SystemClock
from pushcore.storage import open_store
from pushcore.storage.sql.inbox import change_payloads, read_change
from tests.contract.test_queue_contract import make_notification
from tests.pg import Cluster


def item(seq: int, account: str = "alice") -> InboxItem:
    entry = InboxEntry(seq, f"inb_{seq:032x}", account, f"ntf_{seq}", datetime.now(UTC))
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


@pytest.mark.postgres
def test_on_postgres_entries_reads_and_dismissals_reach_another_process_s_channels(
    tmp_path: Path, pg_cluster: Cluster
) -> None:
    url = pg_cluster.create_database()
    settings = load_settings(env={"PUSHCORE_DATABASE_URL": url}, data_dir=tmp_path)
    here, there = build_services(settings), build_services(settings)
    stream = asyncio.run(there.streams.create("pub", NewStream(name="Deploys"))).stream
    there.streams.subscribe("alice", stream.code)

    async def scenario() -> list[object]:
        channel = await here.live.open("alice", None, None)
        await asyncio.sleep(0.5)  # listening by now
        await there.streams.send("pub", stream.id, StreamSend(title="t"))
        entry = await asyncio.wait_for(channel.queue.get(), 5)
        assert isinstance(entry, InboxItem)
        await asyncio.to_thread(there.inbox.read, "alice", InboxRead(ids=(entry.entry.id,)))
        read = await asyncio.wait_for(channel.queue.get(), 5)
        await asyncio.to_thread(there.inbox.dismiss, "alice", entry.entry.id)
        dismissed = await asyncio.wait_for(channel.queue.get(), 5)
        here.live.forget(channel)
        await here.live.aclose()
        return [entry, read, dismissed]

    try:
        entry, read, dismissed = asyncio.run(scenario())
    finally:
        here.close()
        there.close()
    assert isinstance(entry, InboxItem)
    assert read == Read((entry.entry.id,), 0)
    assert dismissed == Dismissed(entry.entry.id)


def test_long_reads_are_told_in_payloads_postgres_takes() -> None:
    ids = tuple(f"inb_{i:032x}" for i in range(1000))
    payloads = change_payloads("alice", Read(ids, 3))
    assert all(len(p.encode()) < 8000 for p in payloads)
    told = [read_change(p) for p in payloads]
    changes = [t[1] for t in told if t is not None]
    assert [i for change in changes if isinstance(change, Read) for i in change.ids] == list(ids)
    assert read_change("") is None
    assert read_change(change_payloads("bob", Dismissed("inb_1"))[0]) == ("bob", Dismissed("inb_1"))


def test_channels_opening_together_start_one_loop_and_keep_the_bound(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'db'}")
    hub = LiveHub(store, SystemClock())

    async def scenario() -> list[object]:
        opened: list[object] = await asyncio.gather(
            *(hub.open("alice", None, None) for _ in range(25)), return_exceptions=True
        )
        loops = [t for t in asyncio.all_tasks() if t.get_name() == "pushcore-live-hub"]
        assert len(loops) == 1
        await hub.aclose()
        return opened

    try:
        opened = asyncio.run(scenario())
    finally:
        hub.close()
        store.close()
    assert sum(isinstance(o, Channel) for o in opened) == 20
    assert sum(isinstance(o, RateLimited) for o in opened) == 5


def test_at_the_process_bound_the_longest_idle_channel_is_closed(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'db'}")
    hub = LiveHub(store, SystemClock(), LiveLimits(channels=3, per_address=2))

    async def scenario() -> None:
        first = await hub.open("alice", None, None, "10.0.0.1")
        second = await hub.open("bob", None, None, "10.0.0.1")
        with pytest.raises(RateLimited):
            await hub.open("carol", None, None, "10.0.0.1")  # the address's two are open
        third = await hub.open("carol", None, None, "10.0.0.2")
        hub._hand("alice", item(1))  # alice's channel had an event: bob's is idlest
        fourth = await hub.open("dave", None, None, "10.0.0.3")
        assert second.ended == "bound"
        assert (first.ended, third.ended, fourth.ended) == (None, None, None)
        assert hub.open_channels == 3
        assert hub.stats.bound == 1
        # The address's count went with the closed channel.
        assert (await hub.open("erin", None, None, "10.0.0.1")).ended is None
        assert third.ended == "bound"  # the idlest then: it never had an event
        await hub.aclose()

    try:
        asyncio.run(scenario())
    finally:
        hub.close()
        store.close()
