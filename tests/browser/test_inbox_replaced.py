"""A replacement takes its predecessor's place in the open inbox, and a withdrawal
removes it, without a reload (API.md, "In the app: when, quiet hours, what happened")."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from tests.browser.conftest import AppServer, Publication, sign_in


def _send(stream: Publication, title: str) -> str:
    sent = httpx.post(
        f"{stream.base}/api/streams/{stream.id}/send",
        json={"title": title, "collapseKey": "match-7"},
        headers={"X-API-Key": stream.key},
    )
    assert sent.status_code == 201, sent.text
    notification_id: str = sent.json()["notificationId"]
    return notification_id


def test_a_replacement_takes_the_old_entrys_place_and_a_withdrawal_removes_it(
    page: Page, server: AppServer
) -> None:
    person = server.person()
    stream = server.stream("Scores", person)
    sign_in(page, person)
    inbox = page.get_by_role("list", name="Notifications")
    _send(stream, "Score 1-0")
    expect(inbox.get_by_text("Score 1-0")).to_be_visible()
    expect(page.get_by_text("1 unread")).to_be_visible()

    newer = _send(stream, "Score 2-0")
    expect(inbox.get_by_text("Score 2-0")).to_be_visible()
    expect(inbox.get_by_text("Score 1-0")).to_have_count(0)
    expect(inbox.get_by_role("listitem")).to_have_count(1)
    expect(page.get_by_text("1 unread")).to_be_visible()

    withdrawn = httpx.post(
        f"{stream.base}/api/notifications/{newer}/withdraw", headers={"X-API-Key": stream.key}
    )
    assert withdrawn.status_code == 200, withdrawn.text
    expect(inbox.get_by_text("Score 2-0")).to_have_count(0)
    expect(page.get_by_text("0 unread")).to_be_visible()
