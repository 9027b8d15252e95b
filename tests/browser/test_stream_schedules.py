"""A stream's send form in the app: When (Now, Later) and Repeat (Never, Daily,
Weekdays, Weekly, a custom rule) with the next five times; each stream's Schedules with
Pause, Resume and Delete. What the form makes is read back over the API."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from tests.browser.conftest import AppServer, axe_scan, problems, sign_in
from tests.browser.test_streams import _new_stream


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
