"""The inbox at a glance (issue 31, point 2): the stream's name and icon, priority in words
and colour, relative time, unread marked, entries grouped by day, an empty state that
says what to do, and a filter by stream."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from playwright.sync_api import Locator, Page, Route, expect

from tests.browser.conftest import AppServer, axe_scan, problems, sign_in


def _entries(page: Page) -> Locator:
    return page.get_by_role("list", name="Notifications").get_by_role("listitem")


def test_priority_stream_time_and_unread_read_at_a_glance(
    sized_page: Page, server: AppServer
) -> None:
    page = sized_page
    account = server.person()
    ci = server.stream("CI builds", account)
    ci.send("Nightly report", "All quiet")
    ci.send("Deploy slow", "p95 above 800 ms", priority="high")
    ci.send("Build failed", "main #482", priority="critical")
    sign_in(page, account)
    entries = _entries(page)
    expect(entries).to_have_count(3)
    normal, high, critical = (
        entries.filter(has_text=title)
        for title in ("Nightly report", "Deploy slow", "Build failed")
    )
    expect(high.get_by_role("heading", name="High priority Deploy slow")).to_be_visible()
    expect(critical.get_by_role("heading", name="Critical Build failed")).to_be_visible()
    expect(normal).not_to_contain_text("High priority")
    expect(normal).not_to_contain_text("Critical")
    # In colour too: each priority's edge differs, and its mark stands out from the page.
    edges = [
        e.locator(".entry-row").evaluate("(el) => getComputedStyle(el).borderLeftColor")
        for e in (normal, high, critical)
    ]
    assert len(set(edges)) == 3, edges
    marks = [
        e.locator(".priority").evaluate("(el) => getComputedStyle(el).backgroundColor")
        for e in (high, critical)
    ]
    assert marks[0] != marks[1], marks
    for entry in (normal, high, critical):
        expect(entry.get_by_text("CI builds")).to_be_visible()
        expect(entry.get_by_text("just now")).to_be_visible()
        expect(entry.get_by_text("Unread")).to_be_visible()
    expect(page.get_by_role("heading", name="Today")).to_have_count(1)
    assert not axe_scan(page)
    page.get_by_role("button", name="Mark all read").click()
    expect(page.get_by_text("0 unread")).to_be_visible()
    expect(_entries(page).get_by_text("Unread", exact=True)).to_have_count(0)
    assert not problems(page)


def test_entries_are_grouped_by_day_and_a_live_one_joins_today(
    sized_page: Page, server: AppServer
) -> None:
    """The server's inbox answer with older entries moved back a day and three days
    (the server keeps no way to deliver in the past), and a stream icon added."""
    page = sized_page
    account = server.person()
    feed = server.stream("Feed", account)
    for n in range(6):
        feed.send(f"Item {n}")
    icon = f"{server.base}/app/icons/icon-192.png"

    def inbox(route: Route) -> None:
        answer = route.fetch().json()
        for n, item in enumerate(answer["items"]):
            back = timedelta(days=0 if n < 2 else 1 if n < 4 else 3)
            at = datetime.fromisoformat(item["deliveredAt"]) - back
            item["deliveredAt"] = at.isoformat()
        route.fulfill(json=answer)

    def subscriptions(route: Route) -> None:
        answer = route.fetch().json()
        for item in answer:
            item["stream"]["iconUrl"] = icon
        route.fulfill(body=json.dumps(answer), content_type="application/json")

    page.route("**/api/inbox?*", inbox)
    page.route("**/api/streams/subscriptions", subscriptions)
    sign_in(page, account)
    entries = _entries(page)
    expect(entries).to_have_count(6)
    days = page.locator(".inbox .day")
    three_ago = (datetime.now(UTC) - timedelta(days=3)).astimezone()
    expect(days).to_have_count(3)
    expect(days.nth(0)).to_have_text("Today")
    expect(days.nth(1)).to_have_text("Yesterday")
    weekday = page.evaluate(
        "(iso) => new Date(iso).toLocaleDateString(undefined, {weekday: 'long'})",
        three_ago.isoformat(),
    )
    expect(days.nth(2)).to_have_text(weekday)
    # Each heading sits with the first entry of its day.
    expect(entries.nth(0)).to_contain_text("Today")
    expect(entries.nth(2)).to_contain_text("Yesterday")
    expect(entries.nth(4)).to_contain_text(weekday)
    # The stream's icon beside each entry.
    expect(entries.nth(0).locator("img.icon")).to_have_attribute("src", icon)

    feed.send("Fresh one")
    expect(entries.first).to_contain_text("Fresh one")
    expect(entries.first).to_contain_text("Today")
    expect(days).to_have_count(3)
    expect(entries.nth(1)).not_to_contain_text("Today")
    assert not axe_scan(page)
    assert not problems(page)


def test_an_empty_inbox_says_what_to_do_next(sized_page: Page, server: AppServer) -> None:
    page = sized_page
    sign_in(page, server.person())
    expect(page.get_by_role("heading", name="No notifications yet")).to_be_visible()
    expect(page.get_by_text("open a share link")).to_be_visible()
    assert not axe_scan(page)
    page.get_by_role("link", name="Follow a stream").click()
    expect(page.get_by_role("heading", name="Subscriptions")).to_be_visible()
    expect(page.get_by_label("Stream code")).to_be_visible()
    assert not problems(page)


def test_the_inbox_filters_by_stream(sized_page: Page, server: AppServer) -> None:
    page = sized_page
    account = server.person()
    weather = server.stream("Weather", account)
    builds = server.stream("Builds", account)
    weather.send("Sunny")
    builds.send("Green")
    weather.send("Windy")
    sign_in(page, account)
    entries = _entries(page)
    expect(entries).to_have_count(3)
    show = page.get_by_label("Show")
    show.select_option(label="Weather")
    expect(entries).to_have_count(2)
    expect(entries.filter(has_text="Green")).to_have_count(0)
    # Live entries follow the filter too.
    builds.send("Red")
    weather.send("Stormy")
    expect(entries.first).to_contain_text("Stormy")
    expect(entries).to_have_count(3)
    expect(page.get_by_text("5 unread")).to_be_visible()
    show.select_option(label="Builds")
    expect(entries).to_have_count(2)
    expect(entries.first).to_contain_text("Red")
    expect(entries.first).to_contain_text("Today")
    show.select_option(label="All streams")
    expect(entries).to_have_count(5)
    assert not axe_scan(page)
    assert not problems(page)
