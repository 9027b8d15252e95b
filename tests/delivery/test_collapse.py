"""Collapse keys on SQLite and PostgreSQL: supersede before sending, replace after,
in the inbox (replaces, renotify false), the replace endpoint's audience, and the
race with the engine's claim at the due instant."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pushcore import build_services
from pushcore.converter import structure_request
from pushcore.domain.inbox import InboxItem
from pushcore.domain.inputs import InboxRead, NewNotification, StreamSend
from pushcore.domain.model import Notification
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.services.replacements import replacement_key
from tests.delivery.conftest import ALICE, DUE, Harness

BOB = "acct_bob"


def inbox(h: Harness, account: str = ALICE) -> list[InboxItem]:
    return list(h.services.inbox.page(account, limit=50).items)


def replace(h: Harness, original: Notification, **fields: Any) -> Notification:
    """What POST /api/notifications/:id/replace does once the route merged the body."""
    body = {"title": original.title, "collapseKey": replacement_key(original), **fields}
    if not {"delay", "scheduledAt"} & fields.keys():
        body["scheduledAt"] = original.created_at.isoformat()  # no timing: now
    request = structure_request(NewNotification, body)
    service = h.services.replacements
    return asyncio.run(service.replace(ALICE, service.original(ALICE, original.id), request))


def test_a_newer_one_supersedes_an_unsent_older_in_its_own_transaction(db: Harness) -> None:
    h = db
    h.device("tok-a")
    older = h.notify(title="running", collapseKey="build-7", delay="1h")
    other_key = h.notify(title="other", collapseKey="build-8", delay="1h")
    newer = h.notify(title="passed", collapseKey="build-7", delay="1h")

    found = h.get(older).notification
    assert (found.status, found.failure_reason) == (NotificationStatus.CANCELLED, "superseded")
    assert [(d.status, d.failure_reason) for d in h.deliveries(older)] == [
        (DeliveryStatus.CANCELLED, "superseded")
    ]
    assert h.status(newer) is NotificationStatus.QUEUED
    assert h.status(other_key) is NotificationStatus.QUEUED
    # Another account's key of the same name is its own thing.
    h.device("tok-b", account=BOB)
    theirs = h.notify(BOB, title="bob's", collapseKey="build-7", delay="1h")
    assert h.status(newer) is NotificationStatus.QUEUED
    # Only the newest is sent, when due.
    engine = h.engine()
    h.step(engine, newer.scheduled_at)
    sent = sorted(s.notification_id for s in h.gateway.sent)
    assert sent == sorted([newer.id, other_key.id, theirs.id])
    assert {s.notification_id for s in h.gateway.sent}.isdisjoint({older.id})
    page = h.services.notifications.list(ALICE, collapse_key="build-7")
    assert [n.id for n in page.items] == [newer.id, older.id]


def test_a_batch_keeps_the_last_item_of_each_key(db: Harness) -> None:
    h = db
    h.device("tok-a")
    requests = [
        structure_request(NewNotification, {"title": t, "collapseKey": "score", "delay": "1h"})
        for t in ("1-0", "2-0", "2-1")
    ]
    created = asyncio.run(h.services.notifications.create_many(ALICE, requests))
    assert [n.status for n in created] == [
        NotificationStatus.CANCELLED,
        NotificationStatus.CANCELLED,
        NotificationStatus.QUEUED,
    ]
    assert [h.status(n) for n in created] == [n.status for n in created]


def test_a_sent_one_is_replaced_in_the_inbox(db: Harness) -> None:
    h = db
    h.device("tok-a")
    engine = h.engine()
    first = h.notify(title="build running", collapseKey="build-7")
    h.step(engine, first.scheduled_at)
    (old,) = inbox(h)
    assert (old.entry.replaces, old.notification.collapse_key) == (None, "build-7")
    assert h.status(first) is NotificationStatus.DELIVERED

    second = h.notify(title="build passed", collapseKey="build-7")
    assert h.status(first) is NotificationStatus.DELIVERED  # taken already: not superseded
    h.step(engine, second.scheduled_at)
    (new,) = inbox(h)
    assert new.notification.id == second.id
    assert new.entry.replaces == old.entry.id
    assert new.entry.read_at is None  # renotify (default): a new alert, unread
    assert h.services.inbox.page(ALICE).unread == 1
    # Both went out with the key: the device shows only the newer.
    assert [s.notification_id for s in h.gateway.sent] == [first.id, second.id]


def test_renotify_false_keeps_read_entries_read_and_dismissed_ones_away(db: Harness) -> None:
    h = db
    engine = h.engine()
    quiet: dict[str, Any] = {"collapseKey": "score", "renotify": False}
    read = h.notify(title="1-0", **quiet)
    dismissed = h.notify(title="x", collapseKey="alarm")
    h.step(engine, DUE)
    entries = {i.notification.id: i.entry.id for i in inbox(h)}
    h.services.inbox.read(ALICE, InboxRead(ids=(entries[read.id],)))
    h.services.inbox.dismiss(ALICE, entries[dismissed.id])

    h.clock.set(DUE)
    score = h.notify(title="2-0", **quiet)
    alarm = h.notify(title="y", collapseKey="alarm", renotify=False)
    h.step(engine, score.scheduled_at)
    (shown,) = inbox(h)
    assert shown.notification.id == score.id
    assert shown.entry.replaces == entries[read.id]
    assert shown.entry.read_at is not None  # was read, stays read
    assert h.services.inbox.page(ALICE).unread == 0
    # The dismissed alarm's quiet replacement makes no entry: the inbox holds only the score.
    assert alarm.id not in {i.notification.id for i in inbox(h)}
    # A loud one brings it back.
    loud = h.notify(title="z", collapseKey="alarm")
    h.step(engine, loud.scheduled_at)
    assert [i.notification.id for i in inbox(h)] == [loud.id, score.id]


def test_replace_reaches_a_stream_sends_audience_and_supersedes_unsent(db: Harness) -> None:
    h = db
    stream = asyncio.run(h.services.streams.create(ALICE, _new_stream()))
    for account, token in ((BOB, "tok-b"), ("acct_carol", "tok-c")):
        h.device(token, account=account)
        h.services.streams.subscribe(account, stream.stream.code)
    send = StreamSend(title="v1.0 released")
    sent = asyncio.run(h.services.streams.send(ALICE, stream.stream.id, send)).notification
    h.services.streams.subscribe("acct_dave", stream.stream.code)  # after the send: not reached
    engine = h.engine()
    h.step(engine)
    old_entry = inbox(h, BOB)[0].entry.id

    replacement = replace(h, sent, title="v1.0.1 released")
    assert replacement.supersedes == sent.id
    assert replacement.collapse_key == sent.id  # it had none: its id names it
    assert replacement.stream == sent.stream
    h.step(engine)
    for account in (BOB, "acct_carol"):
        (entry,) = inbox(h, account)
        assert (entry.notification.title, entry.notification.id) == (
            "v1.0.1 released",
            replacement.id,
        )
    assert inbox(h, BOB)[0].entry.replaces == old_entry
    assert inbox(h, "acct_dave") == []
    assert sorted(s.token for s in h.gateway.for_notification(replacement.id)) == [
        "tok-b",
        "tok-c",
    ]

    # Replacing one not sent yet supersedes it: only the replacement goes out.
    h.device("tok-a")
    later = h.notify(title="typo", delay="1h")
    fixed = replace(h, later, title="fixed", delay="1h")
    assert (h.get(later).notification.failure_reason, fixed.collapse_key) == (
        "superseded",
        later.id,
    )


def test_a_quiet_stream_replacement_keeps_read_ones_read_and_dismissed_ones_away(
    db: Harness,
) -> None:
    h = db
    stream = asyncio.run(h.services.streams.create(ALICE, _new_stream()))
    people = (BOB, "acct_carol", "acct_dave")
    for account in people:
        h.services.streams.subscribe(account, stream.stream.code)
    send = StreamSend(title="2-1", collapse_key="score")
    sent = asyncio.run(h.services.streams.send(ALICE, stream.stream.id, send)).notification
    old = {a: inbox(h, a)[0].entry.id for a in people}
    h.services.inbox.read(BOB, InboxRead(ids=(old[BOB],)))
    h.services.inbox.dismiss("acct_carol", old["acct_carol"])

    quiet = replace(h, sent, title="3-1", renotify=False)
    (bob,) = inbox(h, BOB)
    assert (bob.notification.id, bob.entry.replaces) == (quiet.id, old[BOB])
    assert bob.entry.read_at is not None  # it was read: the quiet one stays read
    assert inbox(h, "acct_carol") == []  # dismissed: no new entry from a quiet one
    (dave,) = inbox(h, "acct_dave")
    assert (dave.entry.replaces, dave.entry.read_at) == (old["acct_dave"], None)

    # A loud one brings each a new, unread entry in the place of the one they see.
    loud = replace(h, quiet, title="4-1")
    for account in people:
        (entry,) = inbox(h, account)
        assert (entry.notification.id, entry.entry.read_at) == (loud.id, None)
    assert inbox(h, BOB)[0].entry.replaces == bob.entry.id
    assert inbox(h, "acct_carol")[0].entry.replaces is None  # nothing shown to replace


def test_a_create_at_the_due_instant_is_either_superseding_or_replacing(db: Harness) -> None:
    h = db
    h.device("tok-a")
    olds = [h.notify(title=f"old {i}", collapseKey=f"k{i}") for i in range(30)]
    h.clock.set(DUE)
    due = DUE.isoformat()
    engine = h.engine(batch_size=4)
    start = threading.Event()

    def newer(old: Notification) -> Notification:
        start.wait(10)
        # Due at the same instant as the older one.
        return h.notify(title=f"new {old.id}", collapseKey=old.collapse_key, scheduledAt=due)

    async def run_engine() -> None:
        start.set()
        for _ in range(100):
            await engine.tick()
            await asyncio.sleep(0)
        await engine.drain()

    with ThreadPoolExecutor(6) as pool:
        news = pool.map(newer, olds)
        asyncio.run(run_engine())
        created = list(news)
    h.step(engine)
    sent = h.gateway.sent
    assert len({s.delivery_id for s in sent}) == len(sent), "a delivery was sent twice"
    superseded = 0
    for old, new in zip(olds, created, strict=True):
        found = h.get(old).notification
        got = [s.notification_id for s in sent if s.notification_id in (old.id, new.id)]
        if found.status is NotificationStatus.CANCELLED:
            superseded += 1
            assert found.failure_reason == "superseded"
            assert got == [new.id]
        else:
            # Taken first: both went out, both with the key, so the device shows one.
            assert found.status is NotificationStatus.DELIVERED
            assert sorted(got) == sorted([old.id, new.id])
        assert new.collapse_key == old.collapse_key is not None
    assert len(h.gateway.sent) == len(olds) * 2 - superseded


def test_of_creates_with_one_key_at_once_exactly_one_stays(db: Harness) -> None:
    h = db
    h.device("tok-a")
    # Two API processes on one database: each has its own writer, so their creates
    # run at once (within one process the group writer takes them in turn).
    other = build_services(h.services.settings, clock=h.clock)
    start = threading.Barrier(8)

    def create(i: int) -> Notification:
        services = h.services if i % 2 else other
        request = structure_request(
            NewNotification, {"title": f"at once {i}", "collapseKey": "one", "delay": "1h"}
        )
        start.wait(10)
        return asyncio.run(services.notifications.create(ALICE, request))

    try:
        for _ in range(3):
            with ThreadPoolExecutor(8) as pool:
                created = list(pool.map(create, range(8)))
            found = [h.get(n).notification for n in created]
            assert [n.status for n in found].count(NotificationStatus.QUEUED) == 1
            assert all(n.failure_reason == "superseded" for n in found if n.status != "QUEUED")
    finally:
        other.close()


def _new_stream() -> Any:
    from pushcore.domain.inputs import NewStream

    return NewStream(name="Releases")
