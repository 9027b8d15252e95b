"""The recipient's time in the app: Settings' time zone (from the browser), quiet hours
and snooze; each subscription's mute. What the screens save is read back over the API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import AppServer, axe_scan, problems, sign_in, watched

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def berlin(browser: Browser, server: AppServer) -> Iterator[Page]:
    """A phone-sized page whose browser is in Europe/Berlin."""
    ctx = browser.new_context(
        base_url=server.base, viewport={"width": 360, "height": 780}, timezone_id="Europe/Berlin"
    )
    ctx.set_default_timeout(10_000)
    yield watched(ctx.new_page())
    ctx.close()


def account(server: AppServer, person: str) -> dict[str, object]:
    answer = httpx.get(f"{server.base}/api/account", headers=server.bearer(person))
    assert answer.status_code == 200, answer.text
    found: dict[str, object] = answer.json()
    return found


def at(value: object) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def test_time_zone_quiet_hours_and_snooze(berlin: Page, server: AppServer) -> None:
    page = berlin
    person = server.person()
    sign_in(page, person)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    # An account on the default UTC takes the browser's zone.
    expect(page.get_by_label("Time zone")).to_have_value("Europe/Berlin")
    assert account(server, person)["timeZone"] == "Europe/Berlin"

    quiet = page.get_by_role("form", name="Quiet hours")
    quiet.get_by_label("From").fill("22:00")
    quiet.get_by_role("button", name="Save").click()
    expect(quiet.get_by_text("Enter both times, or turn quiet hours off")).to_be_visible()
    quiet.get_by_label("To").fill("07:00")
    quiet.get_by_label("Mode").select_option("silent")
    quiet.get_by_role("button", name="Save").click()
    expect(quiet.get_by_role("status")).to_have_text(
        "Quiet hours: 22:00 to 07:00 (Europe/Berlin); delivered silently."
    )
    saved = account(server, person)["quietHours"]
    assert saved == {
        "start": "22:00",
        "end": "07:00",
        "days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
        "mode": "silent",
        "bypass": ["critical"],
    }
    assert not axe_scan(page)
    quiet.get_by_role("button", name="Turn off quiet hours").click()
    expect(quiet.get_by_role("status")).to_contain_text("Quiet hours are off.")
    assert account(server, person)["quietHours"] is None

    snooze = page.get_by_role("group", name="Snooze")
    snooze.get_by_role("button", name="1 hour").click()
    expect(page.get_by_text("Snoozed until")).to_be_visible()
    until = at(account(server, person)["snoozeUntil"]) - datetime.now(UTC)
    assert timedelta(minutes=58) < until <= timedelta(hours=1)
    snooze.get_by_role("button", name="Until tomorrow morning (08:00)").click()
    expect(page.get_by_text("Snoozed until")).to_contain_text("08:00")
    morning = at(account(server, person)["snoozeUntil"])
    assert morning.astimezone(BERLIN).strftime("%H:%M") == "08:00"
    assert timedelta(0) < morning - datetime.now(UTC) <= timedelta(hours=24)
    snooze.get_by_role("button", name="Off").click()
    expect(page.get_by_text("Not snoozed.")).to_be_visible()
    assert account(server, person)["snoozeUntil"] is None
    assert not problems(page)


def test_mute_a_subscription(page: Page, server: AppServer) -> None:
    person = server.person()
    server.stream("Night builds", person)
    sign_in(page, person)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Subscriptions").click()
    item = page.get_by_role("listitem").filter(has_text="Night builds")
    expect(item.get_by_text("Muted until")).to_have_count(0)
    mute = item.get_by_role("button", name="Mute Night builds")
    # By keyboard: the menu opens on Enter, its items one arrow apart.
    mute.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("menuitem", name="1 hour")).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")  # 8 hours
    expect(item.get_by_text("Muted until")).to_be_visible()
    url = f"{server.base}/api/streams/subscriptions"
    (found,) = httpx.get(url, headers=server.bearer(person)).json()
    left = at(found["mutedUntil"]) - datetime.now(UTC)
    assert timedelta(hours=7, minutes=58) < left <= timedelta(hours=8)
    assert not axe_scan(page)
    item.get_by_role("button", name="Mute Night builds").click()
    page.get_by_role("menuitem", name="1 week").click()
    expect(item.get_by_text("Muted until")).to_be_visible()
    (found,) = httpx.get(url, headers=server.bearer(person)).json()
    assert at(found["mutedUntil"]) - datetime.now(UTC) > timedelta(days=6, hours=23)
    item.get_by_role("button", name="Mute Night builds").click()
    page.get_by_role("menuitem", name="Off").click()
    expect(item.get_by_text("Muted until")).to_have_count(0)
    (found,) = httpx.get(url, headers=server.bearer(person)).json()
    assert found.get("mutedUntil") is None
    assert not problems(page)
