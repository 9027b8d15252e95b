"""PATCHes that reach the group writer together: one locked read and one UPDATE for the
group, each still answered as if it ran alone, one after the other (SQLite and PostgreSQL).

Each test holds the writer in a first work while its PATCHes queue, so that they
form the next group, and checks that they did (one ``lock_for_edit`` of them all).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, cast

import pytest

from pushcore.converter import request_json, structure_request
from pushcore.domain.errors import NotEditable, NotFound, RevisionMismatch, ValidationError
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import Notification
from pushcore.domain.revisions import merge_patch
from pushcore.ports import Transaction
from pushcore.services import NotificationDetail
from pushcore.storage.group import GroupWriter
from pushcore.storage.sql.notifications import Notifications
from tests.delivery.conftest import ALICE, BOB, Harness, until

Edit = Coroutine[Any, Any, NotificationDetail]


def patch(h: Harness, n: Notification, if_revision: int | None, **fields: Any) -> Edit:
    """PATCH ``n`` as ALICE, as the HTTP handler does (merged into the locked revision)."""

    def apply(found: Notification) -> NewNotification:
        return structure_request(NewNotification, merge_patch(request_json(found), fields))

    return h.services.notifications.edit(ALICE, n.id, if_revision, apply)


@pytest.fixture
def prepared(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ids of each group's one read of its edits' notifications."""
    calls: list[list[str]] = []
    real = Notifications.lock_for_edit

    def spy(self: Notifications, notification_ids: Sequence[str]) -> None:
        calls.append(list(notification_ids))
        real(self, notification_ids)

    monkeypatch.setattr(Notifications, "lock_for_edit", spy)
    return calls


@pytest.fixture
def single_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids read FOR UPDATE one at a time (an edit not served by its group's read)."""
    calls: list[str] = []
    real = Notifications.get

    def spy(self: Notifications, account_id: str, notification_id: str, **kw: Any) -> Any:
        if kw.get("for_update"):
            calls.append(notification_id)
        return real(self, account_id, notification_id, **kw)

    monkeypatch.setattr(Notifications, "get", spy)
    return calls


def in_one_group(h: Harness, edits: Sequence[Edit]) -> list[Any]:
    """Each edit's answer (or error), the edits queued while the writer is busy."""
    writer = cast("GroupWriter", h.services.writes)
    # No time bound to speak of (this harness's own writer): a loaded machine must
    # not carry the last edits to a group of their own.
    writer._max_seconds = 30
    busy, release = threading.Event(), threading.Event()

    def hold(tx: Transaction) -> None:
        busy.set()
        assert release.wait(30)

    async def scenario() -> list[Any]:
        held = writer.submit(hold)
        await asyncio.to_thread(busy.wait, 30)
        tasks = [asyncio.ensure_future(e) for e in edits]
        # Queued behind the held group: the next group takes them all.
        await until(lambda: writer._queue.qsize() == len(edits))
        release.set()
        answers = await asyncio.gather(*tasks, return_exceptions=True)
        held.result(30)
        return answers

    return asyncio.run(scenario())


def test_two_patches_of_one_notification_in_one_group_behave_as_one_after_the_other(
    db: Harness, prepared: list[list[str]], single_reads: list[str]
) -> None:
    h = db
    h.device("tok-a")
    n, other = h.notify_in(60, body="old body"), h.notify_in(60)

    first, second, third, beside = in_one_group(
        h,
        [
            patch(h, n, 1, title="first"),
            patch(h, n, 1, title="second"),  # revision 1 is gone: 412
            patch(h, n, 2, body="third"),  # on top of the first
            patch(h, other, 1, title="beside"),
        ],
    )

    assert isinstance(beside, NotificationDetail)
    assert beside.notification.revision == 2
    assert isinstance(first, NotificationDetail)
    assert (first.notification.revision, first.notification.title) == (2, "first")
    assert isinstance(second, RevisionMismatch)
    assert isinstance(third, NotificationDetail)
    edited = third.notification
    assert (edited.revision, edited.title, edited.body) == (3, "first", "third")
    stored = h.get(n)
    assert stored.notification == edited
    assert stored.deliveries == third.deliveries
    # Rounds of distinct notifications, each read after the round before wrote.
    assert prepared == [[n.id, other.id], [n.id], [n.id]]
    assert single_reads == [n.id, n.id]  # a round of one reads as a lone PATCH does


def test_a_failing_patch_in_a_group_fails_no_other(
    db: Harness, prepared: list[list[str]], single_reads: list[str]
) -> None:
    h = db
    h.device("tok-a")
    h.device("tok-b", account=BOB)
    kept, stale, invalid, cancelled, later = (h.notify_in(60, title=f"t{i}") for i in range(5))
    bobs = h.notify_in(60, account=BOB)
    h.services.notifications.cancel(ALICE, cancelled.id)
    single_reads.clear()  # the cancel's

    answers = in_one_group(
        h,
        [
            patch(h, kept, 1, title="kept"),
            patch(h, stale, 7, title="stale"),
            patch(h, bobs, None, title="not alice's"),
            patch(h, invalid, None, delay="a fortnight"),
            patch(h, cancelled, None, title="too late"),
            patch(h, later, None, title="later"),
        ],
    )

    assert prepared == [[kept.id, stale.id, bobs.id, invalid.id, cancelled.id, later.id]]
    assert single_reads == []  # every edit found its row in the group's one read
    ok, mismatch, missing, bad, refused, ok_later = answers
    assert [type(a) for a in (mismatch, missing, bad, refused)] == [
        RevisionMismatch,
        NotFound,
        ValidationError,
        NotEditable,
    ]
    for answer, n, title in ((ok, kept, "kept"), (ok_later, later, "later")):
        assert isinstance(answer, NotificationDetail)
        assert (answer.notification.title, answer.notification.revision) == (title, 2)
        assert h.get(n) == answer
    for n in (stale, invalid, cancelled):
        assert h.get(n).notification.revision == 1
    assert h.get(bobs, account=BOB).notification.title == bobs.title


def test_a_patch_after_the_claim_is_409_beside_one_that_is_not(
    db: Harness, prepared: list[list[str]]
) -> None:
    h = db
    h.device("tok-a")
    claimed = h.notify()
    free = h.notify_in(60)
    engine = h.engine()
    h.clock.set(claimed.scheduled_at)

    async def claim() -> None:
        h.gateway.hold()
        await engine.tick()
        await until(lambda: h.gateway.waiting == 1)

    asyncio.run(claim())
    late, edited = in_one_group(
        h, [patch(h, claimed, None, title="too late"), patch(h, free, None, title="new")]
    )

    assert prepared == [[claimed.id, free.id]]
    assert isinstance(late, NotEditable)
    assert isinstance(edited, NotificationDetail)
    assert edited.notification.title == "new"

    async def finish() -> None:
        h.gateway.let_go()
        await engine.drain()

    asyncio.run(finish())
    assert [(s.title, s.revision) for s in h.gateway.sent] == [(claimed.title, 1)]
