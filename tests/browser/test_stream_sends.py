"""A stream in the app, after and beyond Send: its Sent list (each send with its
delivered and opened counts, Edit before it goes out and the refusal after in words,
Withdraw once sent); the send form's When (Now, Later) and Repeat (Never, Daily,
Weekdays, Weekly, a custom rule) with the next five times; its Schedules with Pause,
Resume and Delete. What the screens make is read back over the API. One server for
both tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

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


def schedules(server: AppServer, person: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{server.base}/api/schedules", headers=server.bearer(person))
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def test_repeat_later_and_the_schedules_list(page: Page, server: AppServer) -> None:
    person = server.person("pub")
    sign_in(page, person)
    _new_stream(page, "Digest")
    card = page.get_by_role("region", name="Digest")
    form = card.get_by_role("form", name="Send to Digest")

    # Now, daily: sent now, then every day at this minute; the next five shown first.
    form.get_by_label("Title").fill("Morning digest")
    form.get_by_label("Repeat").select_option("Daily")
    times = form.get_by_role("list", name="Next five times").get_by_role("listitem")
    expect(times).to_have_count(5)
    form.get_by_role("button", name="Schedule").click()
    expect(form.get_by_role("status")).to_have_text(
        "Sent to 0 subscribers (0 devices). Repeats daily."
    )
    (daily,) = schedules(server, person)
    assert (daily["rrule"], daily["state"], daily["template"]["title"]) == (
        "FREQ=DAILY",
        "ACTIVE",
        "Morning digest",
    )
    first = datetime.fromisoformat(daily["nextOccurrenceAt"].replace("Z", "+00:00"))
    start = datetime.fromisoformat(daily["start"]).replace(tzinfo=first.tzinfo)
    assert first - start == timedelta(days=1)  # not again now: it was just sent

    card.get_by_text("Schedules", exact=True).click()
    item = card.get_by_role("list", name="Schedules of Digest").get_by_role("listitem")
    expect(item).to_contain_text("Daily · Next")
    item.get_by_role("button", name="Pause").click()
    expect(item).to_contain_text("Paused")
    assert schedules(server, person)[0]["state"] == "PAUSED"
    item.get_by_role("button", name="Resume").click()
    expect(item).to_contain_text("Daily · Next")
    assert schedules(server, person)[0]["state"] == "ACTIVE"
    page.once("dialog", lambda dialog: dialog.accept())
    item.get_by_role("button", name="Delete").click()
    expect(card.get_by_text("Nothing scheduled.")).to_be_visible()
    assert schedules(server, person) == []

    # Later, once: a schedule of one occurrence at that local time.
    form.get_by_label("Title").fill("Gate closes")
    form.get_by_label("Later").check()
    form.get_by_role("button", name="Schedule").click()
    expect(form.get_by_text("Pick a date and a time")).to_be_visible()
    form.get_by_label("Date").fill("2020-01-01")
    form.get_by_label("Time").fill("10:30")
    form.get_by_role("button", name="Schedule").click()
    expect(form.get_by_text("Pick a time ahead")).to_be_visible()
    tomorrow = (datetime.now() + timedelta(days=1)).date().isoformat()
    form.get_by_label("Date").fill(tomorrow)
    form.get_by_role("button", name="Schedule").click()
    expect(form.get_by_role("status")).to_contain_text("Scheduled for")
    (once,) = schedules(server, person)
    assert (once["rrule"], once["start"]) == ("FREQ=DAILY;COUNT=1", f"{tomorrow}T10:30:00")
    expect(item.filter(has_text="Gate closes")).to_contain_text("Once · Next")

    # A custom rule: refused in words beside it, then its next five times from the server.
    form.get_by_label("Title").fill("Stand-up")
    form.get_by_label("Repeat").select_option("Custom rule")
    expect(form.get_by_text("The next five times are shown once")).to_be_visible()
    form.get_by_label("Rule (RRULE)").fill("FREQ=SECONDLY")
    form.get_by_role("button", name="Schedule").click()
    expect(form.get_by_label("Rule (RRULE)")).to_have_attribute("aria-invalid", "true")
    form.get_by_label("Rule (RRULE)").fill("FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0")
    form.get_by_role("button", name="Schedule").click()
    expect(times).to_have_count(5)
    for n in range(5):
        expect(times.nth(n)).to_contain_text("Mon")
        expect(times.nth(n)).to_contain_text("09:00")
    expect(item.filter(has_text="Stand-up")).to_contain_text("FREQ=WEEKLY;BYDAY=MO;BYHOUR=9")
    assert len(schedules(server, person)) == 2
    assert not axe_scan(page)
    assert not problems(page)
