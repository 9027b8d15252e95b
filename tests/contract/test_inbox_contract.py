"""The inbox on every database: written when notifications fall due, read, dismissed, kept
as long as their notifications.

The engine's claims are run by hand (``Ledger.claim``) on a fake clock: the
inbox is written in the claim's transaction, so no gateway is needed to tell.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from pushcore import Services, build_services, load_settings
from pushcore.delivery import EngineConfig
from pushcore.delivery.ledger import Ledger
from pushcore.delivery.retention import Retention, RetentionConfig
from pushcore.domain.errors import NotFound, ValidationError
from pushcore.domain.inbox import InboxPage, entry_id_prefix, is_entry_id
from pushcore.domain.inputs import InboxRead, NewDevice, NewNotification, NewStream, StreamSend
from pushcore.domain.model import Notification, Platform, Stream
from pushcore.domain.scheduling import Delay
from pushcore.domain.states import NotificationStatus
from pushcore.gateways.live import LiveGateway
from pushcore.ports import Store
from tests.fakes.clock import FakeClock

N = NotificationStatus
DUE = timedelta(seconds=5)  # the default delay


class Inboxes:
    """Services on ``store`` and a fake clock, with a hand-driven claim."""

    def __init__(self, store: Store, tmp_path: Path) -> None:
        self.clock = FakeClock()
        settings = load_settings(env={}, data_dir=tmp_path)
        self.services: Services = build_services(settings, store=store, clock=self.clock)
        self.ledger = Ledger(store, self.clock, EngineConfig(), "engine-a", random.random)

    def device(self, account: str, token: str, platform: Platform = Platform.ANDROID) -> None:
        self.services.devices.register(account, NewDevice(token=token, platform=platform))

    def stream(self, *subscribers: str) -> Stream:
        stream = asyncio.run(self.services.streams.create("pub", NewStream(name="Deploys"))).stream
        for account in subscribers:
            self.services.streams.subscribe(account, stream.code)
        return stream

    def notify(self, account: str, title: str = "hello", **fields: object) -> Notification:
        request = NewNotification(title=title, **fields)  # type: ignore[arg-type]
        return asyncio.run(self.services.notifications.create(account, request))

    def claim(self, after: timedelta = DUE) -> None:
        self.clock.advance(after)
        self.ledger.claim(self.clock.now(), 100)

    def page(self, account: str, **options: object) -> InboxPage:
        return self.services.inbox.page(account, **options)  # type: ignore[arg-type]

    def titles(self, account: str) -> list[str]:
        return [i.notification.title for i in self.page(account).items]


@pytest.fixture
def ib(store: Store, tmp_path: Path) -> Iterator[Inboxes]:
    inboxes = Inboxes(store, tmp_path)
    yield inboxes
    inboxes.services.writes.close()


def test_an_own_notification_reaches_its_owner_when_it_falls_due(ib: Inboxes) -> None:
    ib.device("alice", "tok-a")
    sent = ib.notify("alice")
    ib.claim(DUE - timedelta(seconds=1))
    assert ib.titles("alice") == []
    ib.claim(timedelta(seconds=1))
    page = ib.page("alice")
    assert [i.notification.id for i in page.items] == [sent.id]
    entry = page.items[0].entry
    assert entry.delivered_at == sent.scheduled_at
    assert (entry.read_at, page.unread) == (None, 1)
    assert ib.titles("bob") == []


def test_a_notification_without_a_device_reaches_the_inbox_at_its_due_time(
    ib: Inboxes,
) -> None:
    sent = ib.notify("alice")
    ib.claim(DUE - timedelta(milliseconds=1))
    assert ib.titles("alice") == []
    ib.claim(timedelta(milliseconds=1))
    assert ib.titles("alice") == ["hello"]
    # Waiting for a device, as before: the inbox does not change the status.
    assert ib.services.notifications.get("alice", sent.id).notification.status is N.SCHEDULED
    # A device that comes later gets a delivery; the entry is not written twice.
    ib.device("alice", "tok-a")
    ib.claim(timedelta(seconds=1))
    assert ib.titles("alice") == ["hello"]


def test_a_notification_cancelled_before_it_is_due_never_appears(ib: Inboxes) -> None:
    ib.device("alice", "tok-a")
    cancelled = ib.notify("alice", "cancelled")
    ib.notify("alice", "kept", delay=Delay.CUSTOM, custom_delay=10)
    bare = ib.notify("bob", "cancelled")
    ib.services.notifications.cancel("alice", cancelled.id)
    ib.services.notifications.cancel("bob", bare.id)
    ib.claim(timedelta(seconds=20))
    assert ib.titles("alice") == ["kept"]
    assert ib.titles("bob") == []


def test_a_stream_send_reaches_each_subscriber_at_send_time_not_the_publisher(
    ib: Inboxes,
) -> None:
    streams = ib.services.streams
    stream = ib.stream("with-device", "no-device")
    ib.device("with-device", "tok-w")
    ib.device("pub", "tok-p")
    result = asyncio.run(streams.send("pub", stream.id, StreamSend(title="v2 is out")))
    streams.subscribe("late", stream.code)
    assert result.sent == 1
    for account in ("with-device", "no-device"):
        (item,) = ib.page(account).items
        assert item.notification.id == result.notification.id
        assert item.notification.stream is not None
        assert item.notification.stream.code == stream.code
    ib.claim()
    assert ib.titles("pub") == []
    assert ib.titles("late") == []
    assert ib.titles("with-device") == ["v2 is out"]


def test_a_stream_send_to_subscribers_without_devices_fails_but_reaches_their_inboxes(
    ib: Inboxes,
) -> None:
    streams = ib.services.streams
    stream = ib.stream("no-device")
    result = asyncio.run(streams.send("pub", stream.id, StreamSend(title="v2")))
    assert result.notification.status is N.FAILED
    assert ib.titles("no-device") == ["v2"]


def test_pages_go_newest_first_with_a_cursor_and_an_unread_filter(ib: Inboxes) -> None:
    for i in range(5):
        ib.notify("alice", f"n{i}", delay=Delay.CUSTOM, custom_delay=10 + i)
    ib.claim(timedelta(seconds=20))
    first = ib.page("alice", limit=2)
    assert [i.notification.title for i in first.items] == ["n4", "n3"]
    assert first.next_before is not None
    rest = ib.page("alice", limit=10, before=first.next_before)
    assert [i.notification.title for i in rest.items] == ["n2", "n1", "n0"]
    assert rest.next_before is None
    inbox = ib.services.inbox
    assert inbox.read("alice", InboxRead(ids=(first.items[0].entry.id,))) == 4
    unread = ib.page("alice", unread=True)
    assert [i.notification.title for i in unread.items] == ["n3", "n2", "n1", "n0"]
    assert unread.unread == 4
    with pytest.raises(ValidationError):
        ib.page("alice", before="ntf_nope")


def test_reading_by_ids_and_up_to_and_dismissing(ib: Inboxes) -> None:
    for i in range(4):
        ib.notify("alice", f"n{i}", delay=Delay.CUSTOM, custom_delay=10 + i)
    ib.notify("bob", "theirs")
    ib.claim(timedelta(seconds=20))
    ids = [i.entry.id for i in reversed(ib.page("alice").items)]  # oldest first
    (bobs,) = [i.entry.id for i in ib.page("bob").items]
    inbox = ib.services.inbox
    # Another account's id is passed over: it changes nothing of theirs.
    assert inbox.read("alice", InboxRead(ids=(ids[0], bobs))) == 3
    assert ib.page("bob").unread == 1
    assert inbox.read("alice", InboxRead(up_to=ids[2])) == 1
    assert [i.entry.read_at is None for i in ib.page("alice").items] == [True, False, False, False]
    with pytest.raises(ValidationError):
        inbox.read("alice", InboxRead())
    with pytest.raises(ValidationError):
        inbox.read("alice", InboxRead(ids=(ids[0],), up_to=ids[1]))
    inbox.dismiss("alice", ids[3])
    assert ib.page("alice").unread == 0
    assert len(ib.page("alice").items) == 3
    for wrong in (bobs, ids[3], "inb_nope"):
        with pytest.raises(NotFound):
            inbox.dismiss("alice", wrong)


def test_a_dismissed_entry_does_not_come_back_with_another_delivery(ib: Inboxes) -> None:
    ib.device("alice", "tok-a")
    ib.device("alice", "tok-b")
    ib.notify("alice")
    # One delivery per batch: the second device's comes in a second claim.
    ib.clock.advance(DUE)
    ib.ledger.claim(ib.clock.now(), 1)
    (item,) = ib.page("alice").items
    ib.services.inbox.dismiss("alice", item.entry.id)
    ib.ledger.claim(ib.clock.now(), 1)
    assert ib.titles("alice") == []


def test_entries_after_a_number_come_oldest_first_for_the_accounts_asked(
    ib: Inboxes, store: Store
) -> None:
    for account in ("alice", "bob", "carol", "alice"):
        ib.notify(account, account)
    ib.claim()
    with store.read() as tx:
        everyone = tx.inbox.after(["alice", "bob", "carol"], 0, 10)
        seqs = [i.entry.seq for i in everyone]
        assert seqs == sorted(seqs)
        assert tx.inbox.last_seq() == seqs[-1]
        alices = tx.inbox.after(["alice"], seqs[0], 10)
    assert [i.entry.account_id for i in alices] == ["alice"]


def test_retention_deletes_entries_with_their_notifications(ib: Inboxes, store: Store) -> None:
    streams = ib.services.streams
    stream = ib.stream("sub0", "sub1", "sub2")
    asyncio.run(streams.send("pub", stream.id, StreamSend(title="gone")))  # FAILED at once
    ib.notify("alice", "kept")
    ib.claim()
    ib.clock.advance(timedelta(hours=2))
    retention = Retention(store, ib.clock, RetentionConfig(keep=timedelta(hours=1), batch=2))
    while retention.sweep():
        pass
    assert [ib.titles(f"sub{i}") for i in range(3)] == [[], [], []]
    assert ib.titles("alice") == ["kept"]  # SCHEDULED, waiting for a device: not settled


def test_a_subscriber_whose_only_device_is_live_is_reached_through_the_inbox(
    ib: Inboxes,
) -> None:
    stream = ib.stream("app-only")
    ib.device("app-only", "browser tab 1", Platform.LIVE)
    result = asyncio.run(ib.services.streams.send("pub", stream.id, StreamSend(title="v2")))
    assert (result.sent, result.notification.status) == (1, N.QUEUED)
    ib.clock.advance(timedelta(seconds=1))
    claim = ib.ledger.claim(ib.clock.now(), 10)
    outcomes = asyncio.run(LiveGateway().send(claim.dispatches))
    answered = list(zip(claim.dispatches, outcomes, strict=True))
    ib.ledger.record(answered)
    ib.ledger.roll_up(answered)  # as the engine does, once the record has committed
    detail = ib.services.notifications.get("pub", result.notification.id)
    assert detail.notification.status is N.DELIVERED
    assert ib.titles("app-only") == ["v2"]


def test_a_live_device_token_is_any_1_to_200_characters(ib: Inboxes) -> None:
    ib.device("alice", "x" * 200, Platform.LIVE)
    with pytest.raises(ValidationError):
        ib.device("alice", "x" * 201, Platform.LIVE)


def test_ids_tell_their_creation_time_and_nothing_of_other_accounts(ib: Inboxes) -> None:
    ib.notify("bob", "b1")
    ib.notify("carol", "c1")
    ib.claim()
    for i in range(100):
        ib.notify("alice", f"a{i}")
    ib.claim()
    ib.notify("bob", "b2")
    ib.notify("carol", "c2")
    ib.claim()
    second = entry_id_prefix(ib.clock.now())

    def ids(account: str) -> list[str]:
        return [i.entry.id for i in reversed(ib.page(account, limit=100).items)]

    bob, carol, alice = ids("bob"), ids("carol"), ids("alice")
    assert all(is_entry_id(i) for i in bob + carol + alice)
    # All but the random tail is the time: the same for bob, whose entries had
    # alice's hundred between them, as for carol, whose had none.
    assert [i[:16] for i in bob] == [i[:16] for i in carol]
    assert bob[1][:16] == second
    assert bob[0] < bob[1]  # sorted by creation time
    # A hundred entries of one moment share only it: no count in their tails.
    tails = sorted(int(i[16:], 16) for i in alice)
    assert len(set(tails)) == 100
    assert max(b - a for a, b in itertools.pairwise(tails)) > 1000


def test_a_resume_id_replays_exactly_what_came_after_it_even_when_it_is_gone(
    ib: Inboxes,
) -> None:
    for title in ("e1", "e2", "e3"):
        ib.notify("bob", title)
        ib.claim()
    e1, e2, e3 = (i.entry for i in reversed(ib.page("bob").items))
    inbox = ib.services.inbox

    def replay(value: str) -> list[str]:
        return [
            i.notification.title
            for i in inbox.after("bob", inbox.resume_point("bob", value, "since"))
        ]

    assert replay(e1.id) == ["e2", "e3"]
    assert replay(e3.id) == []
    inbox.dismiss("bob", e2.id)
    assert replay(e2.id) == ["e3"]
    # An id bob does not have (gone by retention, or never his): by its time.
    between = e1.id[:16] + "f" * 20
    assert replay(between) == ["e3"]
    assert replay(entry_id_prefix(e1.delivered_at - timedelta(hours=1)) + "0" * 20) == ["e1", "e3"]
    with pytest.raises(ValidationError):
        inbox.resume_point("bob", "inb_nope", "since")
    # An id from before the change (the position in base32) resumes where it was.
    assert inbox.resume_point("bob", "inb_000000000000Z", "since") == 31
