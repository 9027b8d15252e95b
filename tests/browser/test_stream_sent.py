"""A stream's Sent list in the app: each send with its delivered and opened counts,
Edit before it goes out (and the refusal after, in words), Withdraw once sent."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.browser.conftest import AppServer, axe_scan, problems, sign_in, watched
from tests.browser.test_streams import _new_stream


def follower(server: AppServer, code: str, page: Page | None = None) -> str:
    """A person following the stream ``code``; signed in on ``page`` when given."""
    person = server.person("sub")
    answer = httpx.post(
        f"{server.base}/api/streams/subscribe", json={"code": code}, headers=server.bearer(person)
    )
    assert answer.status_code == 201, answer.text
    if page is not None:
        sign_in(page, person)
    return person


def send(card: Locator, title: str) -> None:
    card.get_by_label("Title").fill(title)
    card.get_by_role("button", name="Send").click()
    expect(card.get_by_text("Sent to 1 subscriber")).to_be_visible()


def test_sent_counts_edit_and_withdraw(
    contexts: Callable[[], BrowserContext], server: AppServer
) -> None:
    publisher = watched(contexts().new_page())
    owner = server.person("pub")
    sign_in(publisher, owner)
    code = _new_stream(publisher, "Gate")
    reader = watched(contexts().new_page())
    follower(server, code, reader)

    card = publisher.get_by_role("region", name="Gate")
    publisher.reload()
    send(card, "Gate open")
    entry = reader.get_by_role("listitem").filter(has_text="Gate open")
    expect(entry).to_be_visible()
    reader.get_by_role("button", name="Mark all read").click()
    expect(reader.get_by_text("0 unread")).to_be_visible()

    card.get_by_text("Sent", exact=True).click()
    sent = card.get_by_role("list", name="Sent to Gate").get_by_role("listitem")
    expect(sent.filter(has_text="Gate open")).to_contain_text("Delivered")
    card.get_by_role("button", name="Refresh").click()
    expect(sent.filter(has_text="Gate open")).to_contain_text("1 delivered · 1 opened")
    expect(sent.get_by_role("button", name="Edit")).to_have_count(0)
    assert not axe_scan(publisher)
    publisher.once("dialog", lambda dialog: dialog.accept())
    sent.get_by_role("button", name="Withdraw").click()
    expect(sent.filter(has_text="Gate open")).to_contain_text("Withdrawn")
    expect(entry).to_have_count(0)  # gone from the reader's inbox, live

    # A send held by its only follower's snooze has gone nowhere yet: it can be edited.
    night = _new_stream(publisher, "Night")
    sleeper = follower(server, night)
    headers = server.bearer(sleeper)
    device = {"platform": "android", "token": "sleeper-phone"}
    assert httpx.post(f"{server.base}/api/devices", json=device, headers=headers).is_success
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    snooze = {"snoozeUntil": later}
    snoozed = httpx.patch(f"{server.base}/api/account", json=snooze, headers=headers)
    assert snoozed.status_code == 200, snoozed.text
    card = publisher.get_by_role("region", name="Night")
    send(card, "Night run at 2")
    card.get_by_text("Sent", exact=True).click()
    item = card.get_by_role("list", name="Sent to Night").get_by_role("listitem")
    expect(item).to_contain_text("1 held by quiet hours")
    item.get_by_role("button", name="Edit").click()
    item.get_by_label("New title").fill("Night run at 3")
    item.get_by_role("button", name="Save").click()
    expect(item.get_by_role("heading", name="Night run at 3")).to_be_visible()
    key = httpx.post(
        f"{server.base}/api/keys",
        json={"name": "check", "scopes": ["notifications:read", "notifications:write"]},
        headers=server.bearer(owner),
    ).json()["key"]
    listed = httpx.get(f"{server.base}/api/notifications", headers={"X-API-Key": key}).json()
    edited = next(n for n in listed["items"] if n["title"].startswith("Night run"))
    assert (edited["title"], edited["revision"]) == ("Night run at 3", 2)

    # Cancelled meanwhile (elsewhere): the edit is refused, in words.
    url = f"{server.base}/api/notifications/{edited['id']}"
    assert httpx.delete(url, headers={"X-API-Key": key}).status_code == 200
    item.get_by_role("button", name="Edit").click()
    item.get_by_label("New title").fill("Night run at 4")
    item.get_by_role("button", name="Save").click()
    expect(item.get_by_text("It has already gone out (or was cancelled)")).to_be_visible()
    assert httpx.get(url, headers={"X-API-Key": key}).json()["title"] == "Night run at 3"
    assert not problems(publisher)
    assert not problems(reader)
