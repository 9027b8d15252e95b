"""The client's notification list filters: ``stream_id`` and ``schedule_id`` reach the
server as ``streamId=`` and ``scheduleId=`` (what the app's Sent list reads)."""

from __future__ import annotations

import pushcore
from tests.client.fake_api import running_fake


def test_page_sends_the_stream_and_schedule_filters() -> None:
    with running_fake() as fake, pushcore.Client(fake.url, api_key="psk_x") as client:
        fake.answer(200, {"items": [], "nextCursor": None}, times=2)
        client.notifications.page(stream_id="str_1", schedule_id="sch_2", limit=5)
        client.notifications.page()
    assert [seen.path for seen in fake.seen] == [
        "/api/notifications?limit=5&streamId=str_1&scheduleId=sch_2",
        "/api/notifications?limit=100",
    ]
