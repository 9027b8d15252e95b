"""DELETE /api/webhooks/:id of another account's endpoint: a 404 that changes nothing,
its pending attempts included (API.md: bad input changes nothing)."""

from __future__ import annotations

from tests.events.conftest import World


def test_another_account_s_delete_leaves_the_pending_attempts(world: World) -> None:
    made = world.create("https://93.184.215.14/hook")
    path = f"/api/webhooks/{made['id']}"
    queued = world.client.post(f"{path}/test", headers=world.auth())
    assert queued.status_code == 202
    answer = world.client.delete(path, headers=world.auth("mallory"))
    assert answer.status_code == 404
    attempts = world.client.get(f"{path}/attempts", headers=world.auth()).json()["items"]
    assert [(a["eventId"], a["status"]) for a in attempts] == [
        (queued.json()["eventId"], "pending")
    ]
