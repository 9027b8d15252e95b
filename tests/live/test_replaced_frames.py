"""A replacement on the live channel: `withdrawn` for the old entry, then the new entry."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from pushcore.domain.inputs import NewNotification
from tests.live.conftest import LiveServer


def notify(live: LiveServer, title: str, key: str) -> str:
    request = NewNotification(title=title, scheduled_at=datetime.now(UTC), collapse_key=key)
    return asyncio.run(live.services.notifications.create("alice", request)).id


def test_a_replacement_withdraws_the_old_entry_then_adds_the_new(live: LiveServer) -> None:
    user = live.user("alice")
    alice = live.listen(user)
    notify(live, "running", "build-7")
    assert alice.wait_for(lambda events: len(events) == 1)
    (old,) = alice.notifications()
    assert (old.data["collapseKey"], old.data["replaces"]) == ("build-7", None)

    new_id = notify(live, "passed", "build-7")
    assert alice.wait_for(lambda events: len(events) == 3)
    withdrawn, new = alice.events[1:]
    assert (withdrawn.event, withdrawn.data, withdrawn.id) == ("withdrawn", {"ids": [old.id]}, None)
    assert (new.event, new.data["notificationId"], new.data["replaces"]) == (
        "notification",
        new_id,
        old.id,
    )
    # A channel resuming from before the old entry replays only what stands now: the
    # old entry is gone, the new one says what it replaced.
    resumed = live.listen(user, "?since=inb_000000000000" + "0" * 20)
    assert resumed.wait_for(lambda events: len(events) == 2)
    assert [e.event for e in resumed.events] == ["withdrawn", "notification"]
    page = live.request("GET", "/api/inbox", headers=user).json()
    assert [i["id"] for i in page["items"]] == [new.id]
